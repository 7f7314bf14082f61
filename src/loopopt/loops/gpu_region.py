"""Sequential regions of a function as single-block GPU kernels (`gpu-map-loops`).

Before (host code of a function):           After (one kernel, one block of T threads):
    %a = affine.load %r[0]                      %tx = gpu.thread_id x
    affine.store %a, %y[0]                      %a = affine.load %r[0]          (every thread)
    affine.for %k = 1 to %n {                   affine.if (tx == 0) { affine.store %a, %y[0] }
      %s = affine.for %i = 0 to %k iter_args    gpu.barrier
        (...) { ... }                           affine.for %k = 1 to %n {       (every thread)
      affine.for %i = 0 to %k {                   %s = affine.for %i … iter_args (every thread)
        z[i] = y[i] + %s * y[k - i - 1] }         affine.for %i = %tx to %k step T {  (spread)
      ... }                                          z[i] = … }
                                                  gpu.barrier … }

Code that no parallel band covers (scalar statements, recurrences, reductions the host cannot
hold, loops whose bounds come from memory) still runs on the device, so arrays never travel to
the host in the middle of a function. The ops of a region are wrapped in a one-iteration loop
(`wrap`) and outlined as a kernel launched with one block. In it (`map_region`), every thread
runs the region's control flow and scalar code alike; the outermost loops that carry no
dependence are spread over the threads (`for i = lb + tx to ub step T`); stores outside them
run on thread 0 only; barriers separate the accesses of different threads that depend on each
other (loops/gpu_barrier), so every read sees the region's earlier writes. A region with no
such loop, or with code that cannot run on every thread alike (calls, atomics, local buffers,
barriers needed under a branch on loaded values), runs on a single thread.

Not checked here: that the region's ops may leave the host (gpu_host keeps on the host the
values it needs), and resource limits.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, arith, memref
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, IntegerAttr, StringAttr, i32
from xdsl.ir import Operation

from loopopt.analysis.dependence import Dependence, dependences
from loopopt.analysis.divergence import check_barriers
from loopopt.analysis.parallel import parallel_loops
from loopopt.diagnostics import LoopoptError
from loopopt.dialects import gpu_ext as gpu
from loopopt.loops.affine_maps import Bound, BoundBuilder, lower_bound, upper_bound
from loopopt.loops.bounds import new_loop, replace_bounds
from loopopt.loops.gpu_barrier import (
    Requirement,
    place_barriers,
    shared_requirements,
    thread_private,
)
from loopopt.loops.gpu_kernel import BLOCK_LEVEL_WRITES, hoist_to_entry, mark_sequential, one_thread
from loopopt.loops.gpu_map import MAPPING, KernelIds, is_shared, move_body
from loopopt.loops.nest import LOOP_NAME, step_of

REGION = "region"
"""`loopopt.name` of the one-iteration loop that holds a region until it is outlined."""


def wrap(ops: Sequence[Operation]) -> affine.ForOp:
    """Move consecutive ops of one block into a new `affine.for 0 to 1` put in their place.
    Their results must not be used after the last of them (not checked here)."""
    first = ops[0]
    block = first.parent_block()
    if block is None:
        raise LoopoptError("internal: cannot wrap detached ops", op=first)
    loop = new_loop(Bound.constant(0), Bound.constant(1), 1)
    loop.attributes[LOOP_NAME] = StringAttr(REGION)
    loop.location = first.location
    block.insert_op_before(loop, first)
    body = loop.body.block
    terminator = body.last_op
    assert terminator is not None
    for op in ops:
        op.detach()
        body.insert_op_before(op, terminator)
    return loop


def spread_loops(region: affine.ForOp) -> list[affine.ForOp] | None:
    """The loops to spread over the threads: the outermost parallel loops of the code every
    thread runs alike. None when some of that code cannot run on every thread (a call, an
    atomic, a buffer of its own)."""
    parallel = set(parallel_loops(region))
    found: list[affine.ForOp] = []

    def visit(op: Operation) -> bool:
        if isinstance(op, affine.ForOp) and op is not region and op in parallel:
            found.append(op)
            return True
        if op.name in BLOCK_LEVEL_WRITES:
            return False
        if isinstance(op, memref.AllocaOp | memref.AllocOp) and not is_shared(op.results[0].type):
            return False
        return all(visit(inner) for r in op.regions for b in r.blocks for inner in b.ops)

    return found if visit(region) else None


def _block_level_stores(region: affine.ForOp, spread: Sequence[affine.ForOp]) -> list[Operation]:
    inside = {op for loop in spread for op in loop.walk()}
    return [
        op
        for op in region.walk()
        if isinstance(op, affine.StoreOp | memref.StoreOp) and op not in inside
    ]


def thread_local(dep: Dependence, spread: Sequence[affine.ForOp]) -> bool:
    """Both accesses run on the same thread: they lie in one iteration of a spread loop (the
    dependence is carried deeper, or by no loop), or touch a buffer of each thread's own."""
    if thread_private(dep.source.memref) and thread_private(dep.sink.memref):
        return True
    return any(loop in spread for loop in dep.loops[: dep.level])


def spread(loop: affine.ForOp, ids: KernelIds) -> affine.ForOp:
    """`for i = lb to ub step s` → `for i = lb + tx * s to ub step T * s`."""
    builder = BoundBuilder()
    tx = builder.dim(ids.threads["x"])
    step = step_of(loop)
    lows = [e + tx * step for e in builder.results_of(lower_bound(loop))]
    new = replace_bounds(loop, builder.build(lows), upper_bound(loop), step * ids.sizes["x"])
    new.attributes[MAPPING] = StringAttr("threads x")
    return new


def map_region(kernel: gpu.FuncOp, region: affine.ForOp, threads: int, pass_name: str) -> int:
    """Map the outlined region (a `wrap` loop) of `kernel` onto one block; the number of
    threads it runs on (`threads`, or 1: see the module docstring)."""
    loops = spread_loops(region) if threads > 1 else None
    mapped = None
    if loops:
        backup = region.clone()
        try:
            _spread_region(kernel, region, loops, threads, pass_name)
            mapped = threads
        except LoopoptError:
            # Barriers the region needs cannot go where every thread reaches them (a branch on
            # a loaded value): run it on one thread instead.
            _restore(kernel, region, backup)
            region = backup
    if mapped is None:
        mapped = 1
        mark_sequential(kernel)
        kernel.attributes[MAPPING] = DictionaryAttr({"region": StringAttr("one thread")})
    _inline(region)
    kernel.known_block_size = DenseArrayBase.from_list(i32, [mapped, 1, 1])
    return mapped


def _spread_region(
    kernel: gpu.FuncOp,
    region: affine.ForOp,
    loops: Sequence[affine.ForOp],
    threads: int,
    pass_name: str,
) -> None:
    requirements = [
        Requirement(dep.source.op, dep.sink.op, dep.carrier, dep.describe())
        for dep in dependences(region)
        if not thread_local(dep, loops)
    ]
    stores = _block_level_stores(region, loops)
    tx = gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum("x")))
    tx.result.name_hint = "tx"
    entry = kernel.body.block
    entry.insert_op_before(tx, entry.first_op)
    ids = KernelIds(threads={"x": tx.result}, sizes={"x": threads})
    spread_ops = [spread(loop, ids) for loop in loops]
    for store in stores:
        one_thread(store, ids)
    requirements += shared_requirements(kernel)
    hoist_to_entry(kernel, [op for op in kernel.walk() if _workgroup_alloca(op)])
    mark_sequential(kernel)
    region.attributes[MAPPING] = StringAttr("one block")
    place_barriers(kernel, requirements, pass_name)
    check_barriers(kernel, pass_name)
    names = ", ".join(
        str(op.attributes[LOOP_NAME].data)  # type: ignore[attr-defined]
        for op in spread_ops
        if LOOP_NAME in op.attributes
    )
    kernel.attributes[MAPPING] = DictionaryAttr(
        {"region": StringAttr("one block"), "threads_x": StringAttr(names)}
    )


def _restore(kernel: gpu.FuncOp, mapped: affine.ForOp, backup: affine.ForOp) -> None:
    """Put `backup` in the place of the partly mapped region; drop the ids and buffers that
    only the mapped region used."""
    block = mapped.parent_block()
    assert block is not None
    block.insert_op_before(backup, mapped)
    mapped.detach()
    mapped.erase()
    entry = kernel.body.block
    for op in list(entry.ops):
        unused = all(not result.uses for result in op.results)
        if unused and (isinstance(op, gpu.ThreadIdOp) or _workgroup_alloca(op)):
            op.detach()
            op.erase()


def _workgroup_alloca(op: Operation) -> bool:
    return isinstance(op, memref.AllocaOp) and is_shared(op.memref.type) and not op.operands


def _inline(region: affine.ForOp) -> None:
    """Replace the one-iteration loop by its body (its IV is 0)."""
    block = region.parent_block()
    assert block is not None
    zero = arith.ConstantOp(IntegerAttr.from_index_int_value(0))
    zero.result.name_hint = "c0"
    if region.body.block.args[0].uses:
        block.insert_op_before(zero, region)
    move_body(region, zero.result, block, region)
    region.detach()
    region.erase()
