"""Placing gpu.barrier ops in a kernel where the threads of a block must wait for each other.

    affine.for %k_t = 0 to 70 step 8 {
      <copy A into %A_shared, spread over the threads>
      <copy B into %B_shared, spread over the threads>
      gpu.barrier                       ← the copies (by all threads) before the reads below
      affine.if (%i < 100, %j < 90) { ... %A_shared ... %B_shared ... }
      gpu.barrier                       ← the reads before the next iteration's copies
    }

A *requirement* says a barrier must separate two memory accesses of different threads of a
block: in one execution of their innermost common block (a loop-independent dependence), or
from one iteration of a loop to a later one (a dependence carried by it). The requirements are
the dependences of the mapped nest that are not thread-local (a dependence is thread-local when
both accesses lie under every thread-mapped loop with distance 0 on them, or go to a buffer
private to each thread), plus, for every workgroup buffer, its accesses across iterations of
the loops it was allocated in (it is hoisted to the kernel entry, one buffer per block).
Barriers go only into blocks every thread of the block executes alike (analysis/divergence);
a requirement in thread-dependent code is refused. In each block, barriers are placed greedily:
just before the later access's op for loop-independent requirements, then at the end of the
loop body for carried ones not yet separated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import affine, gpu, memref
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.traits import MemoryEffectKind, get_effects

from loopopt.analysis.dependence import Dependence, dependences
from loopopt.analysis.divergence import Divergence
from loopopt.diagnostics import LoopoptError
from loopopt.dialects import gpu_ext
from loopopt.loops.gpu_map import is_shared


@dataclass(frozen=True)
class Requirement:
    """A barrier must order `source` before `sink` (both access ops): within one execution of
    their innermost common block (`carrier` None) or across iterations of `carrier`."""

    source: Operation
    sink: Operation
    carrier: affine.ForOp | None
    why: str


def thread_private(value: SSAValue | None) -> bool:
    """A buffer allocated in the kernel outside workgroup memory: each thread has its own."""
    if not isinstance(value, OpResult):
        return False
    op = value.op
    return isinstance(op, memref.AllocaOp | memref.AllocOp) and not is_shared(value.type)


def thread_local(dep: Dependence, thread_loops: Sequence[affine.ForOp]) -> bool:
    """Both accesses run in the same thread: they share every thread-mapped loop, with
    distance 0 on each (or the memory is private to each thread)."""
    if thread_private(dep.source.memref) and thread_private(dep.sink.memref):
        return True
    for loop in thread_loops:
        position = next((k for k, common in enumerate(dep.loops) if common is loop), None)
        if position is None or dep.distance(position) != 0:
            return False
    return True


def dependence_requirements(
    root: Operation, thread_loops: Sequence[affine.ForOp]
) -> list[Requirement]:
    """The requirements from the dependences of `root` (run before the loops are mapped).
    Dependences carried by loops around `root` are left out: those loops stay on the host, and
    each of their iterations launches the kernel anew."""
    return [
        Requirement(dep.source.op, dep.sink.op, dep.carrier, dep.describe())
        for dep in dependences(root)
        if not thread_local(dep, thread_loops)
        and (dep.carrier is None or root.is_ancestor(dep.carrier))
    ]


def _accesses(kernel: Operation, buffer: SSAValue) -> list[tuple[Operation, bool]]:
    found: list[tuple[Operation, bool]] = []
    for op in kernel.walk():
        if isinstance(op, affine.LoadOp | memref.LoadOp) and op.memref is buffer:
            found.append((op, False))
        elif isinstance(op, affine.StoreOp | memref.StoreOp) and op.memref is buffer:
            found.append((op, True))
        elif buffer in op.operands and not op.regions:  # nvgpu.ldmatrix: by its effects
            kinds = {e.kind for e in get_effects(op) or ()}
            if kinds & {MemoryEffectKind.READ, MemoryEffectKind.WRITE}:
                found.append((op, MemoryEffectKind.WRITE in kinds))
    return found


def shared_requirements(kernel: Operation) -> list[Requirement]:
    """Workgroup buffers are reused by every iteration of the loops around their alloca: each
    pair of accesses (one a write) needs a barrier across those iterations. Run before the
    allocas are hoisted."""
    result: list[Requirement] = []
    for alloca in kernel.walk():
        if not isinstance(alloca, memref.AllocaOp) or not is_shared(alloca.memref.type):
            continue
        accesses = _accesses(kernel, alloca.memref)
        loops: list[affine.ForOp] = []
        parent = alloca.parent_op()
        while parent is not None and parent is not kernel:
            if isinstance(parent, affine.ForOp):
                loops.append(parent)
            parent = parent.parent_op()
        name = alloca.memref.name_hint or "a workgroup buffer"
        for loop in loops:
            for source, writes in accesses:
                for sink, sink_writes in accesses:
                    if writes or sink_writes:
                        why = f"%{name} is reused by the next iteration"
                        result.append(Requirement(source, sink, loop, why))
    return result


def common_block(a: Operation, b: Operation) -> Block | None:
    """The innermost block holding both ops (at any depth)."""
    blocks: set[Block] = set()
    x: Operation | None = a
    while x is not None:
        block = x.parent_block()
        if block is not None:
            blocks.add(block)
        x = x.parent_op()
    y: Operation | None = b
    while y is not None:
        block = y.parent_block()
        if block in blocks:
            return block
        y = y.parent_op()
    return None


def ancestor_in(block: Block, op: Operation) -> Operation | None:
    """The op of `block` that is or contains `op`."""
    x: Operation | None = op
    while x is not None and x.parent_block() is not block:
        x = x.parent_op()
    return x


def place_barriers(kernel: Operation, requirements: Sequence[Requirement], pass_name: str) -> None:
    """Insert the barriers that the requirements need (see the module docstring)."""
    divergence = Divergence(kernel)
    linear: dict[Block, list[tuple[Operation, Operation]]] = {}
    cyclic: dict[Block, list[tuple[Operation, Operation]]] = {}
    for req in requirements:
        if req.carrier is not None and not kernel.is_ancestor(req.carrier):
            raise LoopoptError(f"internal: {pass_name}: the loop carrying {req.why} is gone")
        block = (
            common_block(req.source, req.sink) if req.carrier is None else req.carrier.body.block
        )
        if block is None:
            raise LoopoptError(f"internal: {pass_name}: accesses outside the kernel")
        branch = divergence.divergent_parent(block)
        if branch is not None:
            raise LoopoptError(
                f"{pass_name}: {req.why}: the threads of a block must wait for each other "
                f"inside a thread-dependent {branch.name}, where no barrier can go",
                op=req.sink,
            )
        a, b = ancestor_in(block, req.source), ancestor_in(block, req.sink)
        if a is None or b is None:
            raise LoopoptError(f"internal: {pass_name}: access outside its common block")
        (linear if req.carrier is None else cyclic).setdefault(block, []).append((a, b))
    for block in [*linear, *(b for b in cyclic if b not in linear)]:
        _place_in(block, linear.get(block, []), cyclic.get(block, []))


def _place_in(
    block: Block,
    linear: Sequence[tuple[Operation, Operation]],
    cyclic: Sequence[tuple[Operation, Operation]],
) -> None:
    ops = list(block.ops)
    index = {op: i for i, op in enumerate(ops)}
    chosen = {i for i, op in enumerate(ops) if isinstance(op, gpu.BarrierOp)}
    intervals = sorted(((index[a] + 1, index[b]) for a, b in linear), key=lambda lh: lh[1])
    for low, high in intervals:
        if low > high:
            raise LoopoptError("internal: a dependence runs backwards in its block", op=ops[high])
        if not any(low <= p <= high for p in chosen):
            chosen.add(high)
    end = len(ops) - 1  # before the terminator
    for a, b in cyclic:
        if not any(p > index[a] or p <= index[b] for p in chosen):
            chosen.add(end)
    for p in sorted(chosen):
        if not isinstance(ops[p], gpu.BarrierOp):
            block.insert_op_before(gpu_ext.BarrierOp(), ops[p])
