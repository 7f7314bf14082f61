"""Let reads that see no write of their nest read a copy taken before it (`array-snapshot`).

    array-snapshot{array=B}

Before:  affine.for %i = 0 to 6 {
           affine.for %j = 0 to 8 {
             affine.for %k = %i + 1 to 6 { B[i, j] += A[k, i] * B[k, j] }
             B[i, j] = alpha * B[i, j] } }
After:   %B_snap = memref.alloc() : memref<6x8xf64>
         affine.for %B_snap0 = 0 to 6 { affine.for %B_snap1 = 0 to 8 { B_snap[..] = B[..] } }
         affine.for %i = 0 to 6 {
           affine.for %j = 0 to 8 {
             affine.for %k = %i + 1 to 6 { B[i, j] += A[k, i] * B_snap[k, j] }
             B[i, j] = alpha * B[i, j] } }
         memref.dealloc %B_snap

trmm's i is sequential only through anti dependences: B[k, j] (k > i) reads rows that later
iterations overwrite, but no statement of the nest has written them yet. A read into which no
flow dependence from inside its nest arrives (islpy, exact: analysis/snapshot.py) reads what the
array held before the nest, so it may read a copy taken then; the anti dependences from it go,
and i becomes parallel (then `loop-distribute` splits the epilogue off, and the k nest is a
triangular AᵀB contraction). Mechanics: loops/snapshot.py (the copy is a parallel nest; the
buffer is a device allocation the host makes once).

`array=X`: every such read of X in each top-level nest that writes X reads the snapshot;
refused with the reason (one flow dependence into a read) when no read of X in any nest
qualifies. Without options: in each function (or `func=`), the reads whose snapshot makes some
loop parallel (every dependence that loop carries is an anti dependence from such a read), in
nests of at most 12 loops (array-expand's MAX_DEPTH: the analysis grows with the depth).
`auto-schedule` runs this before it maps a function on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin
from xdsl.ir import Operation

from loopopt.analysis.access import collect_accesses, memref_name
from loopopt.analysis.nest import enclosing_loops, functions, outermost_loops
from loopopt.analysis.snapshot import freeing, refusal, unflowed
from loopopt.diagnostics import LoopoptError
from loopopt.loops.snapshot import snapshot
from loopopt.passes import LoopoptPass
from loopopt.passes.array_expand import MAX_DEPTH


def _depth(loop: affine.ForOp) -> int:
    """The most loops around any op of `loop`'s body, `loop` included."""
    inner = [op for op in loop.body.ops if isinstance(op, affine.ForOp)]
    return 1 + max((_depth(op) for op in inner), default=0)


def snapshot_function(fn: Operation) -> int:
    """Every snapshot that frees a loop in `fn`'s top-level nests of at most MAX_DEPTH loops;
    how many were made."""
    made = 0
    for nest in outermost_loops(fn):
        if enclosing_loops(nest) or _depth(nest) > MAX_DEPTH:
            continue
        for array, reads in freeing(nest).items():
            loads = [a.op for a in reads if isinstance(a.op, affine.LoadOp)]
            snapshot(array, nest, loads)
            made += 1
    return made


@dataclass(frozen=True)
class ArraySnapshotPass(LoopoptPass):
    """Reads that see no write of their nest read a copy taken before it (array=X, or where that
    frees a loop)."""

    name = "array-snapshot"
    option_order = ("array",)

    array: str | None = None
    """The array, by SSA name (`%B` -> B)."""

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        fns = functions(op, self.func)
        if self.array is None:
            for fn in fns:
                snapshot_function(fn)
            return
        nests = [n for fn in fns for n in outermost_loops(fn) if not enclosing_loops(n)]
        self.snapshot_named(op, nests, self.array)

    def snapshot_named(self, op: Operation, nests: list[affine.ForOp], name: str) -> None:
        """Snapshot `name` in each of `nests` that writes it, or say why not."""
        writers = [
            (nest, access.memref)
            for nest in nests
            for access in collect_accesses(nest)
            if access.is_write and access.memref is not None
            if memref_name(access.memref) == name
        ]
        if not writers:
            raise LoopoptError(f"{self.name}: no loop nest writes an array named '{name}'", op=op)
        why = ""
        done = False
        for nest, array in dict.fromkeys(writers):
            reads = unflowed(nest).get(array, [])
            if not reads:
                why = why or (refusal(nest, array) or "")
                continue
            snapshot(array, nest, [a.op for a in reads if isinstance(a.op, affine.LoadOp)])
            done = True
        if not done:
            raise LoopoptError(f"{self.name}: cannot snapshot '{name}': {why}", op=writers[0][0])
