"""Give each iteration of a band its own copy of a scratch array (`array-expand`).

    array-expand{array=sum loop=q}

Before:  affine.for %r = 0 to 4 {
           affine.for %q = 0 to 5 {
             … sum[p] = 0 … sum[p] += A[r, q, s] * C4[s, p] … A[r, q, p] = sum[p] …
         } }
After:   %sum_x = memref.alloc() : memref<4x5x6xf64>
         affine.for %r = 0 to 4 {
           affine.for %q = 0 to 5 {
             … sum_x[r, q, p] = 0 … sum_x[r, q, p] += … A[r, q, p] = sum_x[r, q, p] …
         } }
         affine.for %sum_out0 = 0 to 6 { sum[sum_out0] = sum_x[3, 4, sum_out0] }
         memref.dealloc %sum_x

A scratch array (doitgen's `sum`, a row buffer, a temporary per outer iteration) makes the
loops around it sequential: every iteration overwrites the same elements, so each must wait for
the previous one to have read them. When every read of the array takes a value written earlier
in the same iteration and every iteration writes the same box of it (islpy proves both:
analysis/expansion.py), those dependences are false, and expanding the array by the band's
iteration numbers removes them: the loops become parallel. After the band the array gets what
the last iteration wrote, so the function's results are unchanged. Mechanics: loops/expand.py.

`array=X loop=L`: X is expanded over L and every loop around it (the nest's outermost loop
included); refused with the reason when that is not exact, or when the new buffer would exceed
`max-bytes`.

Without options: in each function (or `func=`), every array that some loop of a top-level nest
carries a dependence through is expanded over the deepest band of loops around all its
accesses for which that is exact and that carries such a dependence, when the buffer fits in
`max-bytes` and the accesses lie under at most 12 loops (`MAX_DEPTH`: the exactness check grows
with the depth); nothing else changes. `auto-schedule` runs this before it maps a function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin, memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue

from loopopt.analysis.access import Access, collect_accesses, memref_name
from loopopt.analysis.dependence import dependences
from loopopt.analysis.expansion import Expansion, expandable
from loopopt.diagnostics import LoopoptError
from loopopt.loops.expand import expand
from loopopt.loops.nest import enclosing_loops, functions, named_loops, outermost_loops
from loopopt.lowering.llvm_common import element_bytes
from loopopt.passes import LoopoptPass

MAX_BYTES = 1 << 30
"""The largest buffer an expansion makes unless `max-bytes` says otherwise (1 GiB)."""
MAX_DEPTH = 12
"""Without options, arrays accessed under more loops than this are not tried: the exactness
check's isl problem grows with the depth (seconds at 60 loops), and such nests are rare."""


def expanded_bytes(array: SSAValue, plan: Expansion) -> int:
    t = array.type
    assert isinstance(t, MemRefType)
    count = 1
    for size in (*plan.trips, *t.get_shape()):
        count *= size
    return count * element_bytes(t.element_type, None)


def _static(array: SSAValue) -> bool:
    t = array.type
    return isinstance(t, MemRefType) and all(size >= 0 for size in t.get_shape())


def _carried_arrays(nest: affine.ForOp) -> dict[SSAValue, set[affine.ForOp]]:
    """Each array with a dependence carried by a loop of `nest`, and those loops."""
    found: dict[SSAValue, set[affine.ForOp]] = {}
    for dep in dependences(nest):
        carrier = dep.carrier
        if carrier is not None and dep.source.memref is dep.sink.memref and dep.source.memref:
            found.setdefault(dep.source.memref, set()).add(carrier)
    return found


def _around(array: SSAValue, accesses: Sequence[Access]) -> tuple[list[affine.ForOp], int]:
    """The loops around every access of `array` (outermost first), and the most loops
    around any one of them."""
    nests = [access.loops for access in accesses if access.memref is array]
    common = list(nests[0]) if nests else []
    for loops in nests[1:]:
        n = 0
        while n < min(len(common), len(loops)) and common[n] is loops[n]:
            n += 1
        del common[n:]
    return common, max((len(loops) for loops in nests), default=0)


def _plan(
    array: SSAValue, band: list[affine.ForOp], carriers: set[affine.ForOp], max_bytes: int
) -> tuple[list[affine.ForOp], Expansion] | None:
    """The longest prefix of `band` over which `array` expands, cut after its deepest loop in
    `carriers`. Expanding over a prefix is exact whenever it is over a longer one (fewer
    iterations to keep apart, the same box written), so prefixes are tried from the shortest,
    up to the first that fails: one isl check where the outermost loop already fails."""
    best: tuple[list[affine.ForOp], Expansion] | None = None
    for n in range(1, len(band) + 1):
        plan = expandable(array, band[:n])
        if isinstance(plan, str) or expanded_bytes(array, plan) > max_bytes:
            break
        if band[n - 1] in carriers:
            best = (band[:n], plan)
    return best


def automatic(
    nest: affine.ForOp, max_bytes: int
) -> list[tuple[SSAValue, list[affine.ForOp], Expansion]]:
    """The expansions `array-expand` without options makes in the top-level `nest`: those
    that make some loop parallel (every array it carries a dependence through is expanded
    over it), each over the band down to the deepest such loop."""
    carried = _carried_arrays(nest)
    accesses = collect_accesses(nest)
    plans: dict[SSAValue, tuple[list[affine.ForOp], Expansion]] = {}
    for array, carriers in carried.items():
        band, depth = _around(array, accesses)
        if not _static(array) or depth > MAX_DEPTH:
            continue
        found = _plan(array, band, carriers, max_bytes)
        if found is not None:
            plans[array] = found
    while True:
        freed = {
            loop
            for loop in {loop for loops in carried.values() for loop in loops}
            if all(a in plans and loop in plans[a][0] for a, ls in carried.items() if loop in ls)
        }
        kept = {}
        for array, (band, _) in plans.items():
            trimmed = _plan(array, band, freed & carried[array], max_bytes)
            if trimmed is not None:
                kept[array] = trimmed
        if len(kept) == len(plans) and all(len(kept[a][0]) == len(plans[a][0]) for a in kept):
            return [(array, band, plan) for array, (band, plan) in kept.items()]
        plans = kept


def expand_function(fn: Operation, max_bytes: int = MAX_BYTES) -> int:
    """Every automatic expansion in `fn`'s top-level nests; how many were made."""
    made = 0
    for nest in outermost_loops(fn):
        if enclosing_loops(nest):
            continue
        for array, band, plan in automatic(nest, max_bytes):
            expand(array, band, plan)
            made += 1
    return made


@dataclass(frozen=True)
class ArrayExpandPass(LoopoptPass):
    """Expand a scratch array over a loop band (array=X loop=L), or every one that pays."""

    name = "array-expand"
    option_order = ("array", "loop")

    array: str | None = None
    """The array, by SSA name (`%sum` -> sum)."""

    loop: str | None = None
    """The innermost loop of the band: the array is expanded over it and the loops around it."""

    max_bytes: int = MAX_BYTES
    """The largest buffer an expansion may allocate."""

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if (self.array is None) != (self.loop is None):
            raise LoopoptError(f"{self.name}: give both array= and loop=, or neither", op=op)
        if self.loop is None:
            for fn in functions(op, self.func):
                expand_function(fn, self.max_bytes)
            return
        roots = functions(op, self.func) if self.func else [op]
        for loop in [loop for root in roots for loop in named_loops(root, self.loop, self.name)]:
            self.expand_named(loop)

    def expand_named(self, loop: affine.ForOp) -> None:
        """Expand `array=` over `loop` and the loops around it, or say why not."""
        assert self.array is not None
        band = [*enclosing_loops(loop), loop]
        array = _named_array(band[0], self.array)
        where = f"'{self.array}' over loop '{self.loop}'"
        if array is None:
            raise LoopoptError(
                f"{self.name}: no array named '{self.array}' is used under loop '{self.loop}'",
                op=loop,
            )
        plan = expandable(array, band)
        if isinstance(plan, str):
            raise LoopoptError(f"{self.name}: cannot expand {where}: {plan}", op=loop)
        size = expanded_bytes(array, plan)
        if size > self.max_bytes:
            raise LoopoptError(
                f"{self.name}: expanding {where} needs {size} bytes, more than "
                f"max-bytes={self.max_bytes}",
                op=loop,
            )
        expand(array, band, plan)


def _named_array(root: affine.ForOp, name: str) -> SSAValue | None:
    for access in collect_accesses(root):
        if access.memref is not None and memref_name(access.memref) == name:
            return access.memref
    return None


def expand_scratch(nest: affine.ForOp, scratch: Sequence[memref.AllocaOp]) -> bool:
    """Give each rank-0 scratch buffer that `reduction-to-memory{scratch}` made inside the
    top-level `nest` (symm's `temp2`) one element per iteration of the loops around it: the
    alloca moves before the nest (each iteration stores the buffer before it reads it, so only
    false dependences come of that), and `automatic` expands it over the band that carries them
    (`temp2_mem_x[i, j]`). The copy-out of the last value is dropped with the alloca, which
    nothing reads after the nest. False when some buffer is not expanded, or is read outside
    the band it is expanded over: the caller then restores its copy of the nest (what lies
    between the ops around the nest: the moved allocas, the expanded buffers, the copy-outs)."""
    block = nest.parent_block()
    assert block is not None
    for alloca in scratch:
        alloca.detach()
        block.insert_op_before(alloca, nest)
    buffers = {alloca.memref for alloca in scratch}
    plans = [(a, band, plan) for a, band, plan in automatic(nest, MAX_BYTES) if a in buffers]
    if {a for a, _, _ in plans} != buffers:
        return False
    for array, band, plan in plans:
        expand(array, band, plan)
    for alloca in scratch:
        uses = [use.operation for use in alloca.memref.uses]
        if not all(isinstance(u, affine.StoreOp) and u.memref is alloca.memref for u in uses):
            return False  # read outside the expanded band: the caller restores the nest
    for alloca in scratch:
        for store in [use.operation for use in alloca.memref.uses]:  # the copy-out: x[last]
            assert isinstance(store, affine.StoreOp)
            source = store.value.owner
            store.detach()
            store.erase()
            if isinstance(source, affine.LoadOp) and not source.result.uses:
                source.detach()
                source.erase()
        alloca.detach()
        alloca.erase()
    return True
