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
from dataclasses import dataclass, field

from xdsl.dialects import affine, arith, gpu, memref
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    i32,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap

from loopopt.analysis.access import Access, Dim
from loopopt.analysis.box import band_box
from loopopt.analysis.dependence import Dependence, carried_by, dependences
from loopopt.analysis.divergence import check_barriers
from loopopt.analysis.footprint import arrays_under
from loopopt.analysis.parallel import parallel_loops
from loopopt.analysis.reduction import Reduction, constant, identity, merge, reductions
from loopopt.diagnostics import LoopoptError
from loopopt.dialects import gpu_ext
from loopopt.dialects.loopopt import LOOP_NAME, MAPPING
from loopopt.loops.affine_maps import Bound, BoundBuilder, lower_bound, upper_bound
from loopopt.loops.bounds import new_loop, replace_bounds
from loopopt.loops.gpu_barrier import (
    Requirement,
    place_barriers,
    shared_requirements,
    thread_private,
)
from loopopt.loops.gpu_kernel import BLOCK_LEVEL_WRITES, guard_op, hoist_to_entry, mark_sequential
from loopopt.loops.gpu_map import (
    MappedDim,
    affine_if,
    constant_trip,
    index_value,
    insert_ids,
    is_shared,
    map_tile_loop,
    move_body,
)
from loopopt.loops.gpu_plan import KernelPlan, coalescing_score
from loopopt.loops.gpu_warp import butterfly, warp_width
from loopopt.loops.nest import body_ops, enclosing_loops, loop_name, loops_in, step_of
from loopopt.loops.outline import defined_outside
from loopopt.loops.scalar_replace import Replaceable, replaceable, scalar_replace
from loopopt.target import SHARED_SPACE, THREADS_PER_BLOCK, WARP_SIZE

REGION = "region"
"""`loopopt.name` of the one-iteration loop that holds a region until it is outlined."""


@dataclass(frozen=True)
class Threads:
    """The threads of a block that share out a region: thread id `index` (along `axis`) of
    `count`. With `lanes` > 1, the block runs that many regions side by side, one per value of
    the thread id `lane` (along x), each with its own partial results."""

    index: SSAValue
    count: int
    axis: str = "x"
    lane: SSAValue | None = None
    lanes: int = 1
    first: SSAValue | None = None
    """The first iteration a thread's share of a loop starts at, when not `index` (a grid-wide
    share: block × count + index)."""
    stride: int = 0
    """The iterations between two of a thread's share, when not `count`."""


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


def keep_in_registers(region: affine.ForOp, itself: bool = False) -> None:
    """Elements that a loop of the region reads and writes at loop-invariant indices become
    its iter_args (loops/scalar_replace), innermost loops first: `x[i] -= L[i, j] * x[j]`
    over j becomes a reduction that the block can share out. `itself`: `region` is such a
    loop too."""
    for loop in reversed([region] * itself + list(loops_in(region))):
        keep_stored_elements(loop)


def keep_stored_elements(loop: affine.ForOp) -> None:
    """The elements `loop` reads and writes at indices invariant in it become its iter_args
    (loops/scalar_replace; read-only ones stay loads)."""
    chosen: list[Replaceable] = []
    for array in arrays_under(loop):
        found = replaceable(loop, array)
        if isinstance(found, Replaceable) and any(e.stored for e in found.elements):
            chosen.append(found)
    if chosen:
        scalar_replace(loop, chosen)


def registers_first(ops: Sequence[Operation]) -> list[Operation]:
    """`keep_in_registers` on the loops of `ops` (consecutive ops of a block, a region not
    wrapped yet), top-level loops included, so that `out[0] += x[i]` is a reduction that
    loops/gpu_grid can share out over a grid; the ops now from the first to the last (the
    loads and stores put around a loop)."""
    block = ops[0].parent_block()
    assert block is not None
    before, after = ops[0].prev_op, ops[-1].next_op
    for op in ops:
        if isinstance(op, affine.ForOp):
            keep_in_registers(op, itself=True)
    current = before.next_op if before is not None else block.first_op
    found: list[Operation] = []
    while current is not None and current is not after:
        found.append(current)
        current = current.next_op
    return found


@dataclass
class SpreadPlan:
    """What a region spreads over its threads: parallel loops, and reduction loops (each
    thread reduces its share of the iterations, then the block combines the shares)."""

    loops: list[affine.ForOp] = field(default_factory=list[affine.ForOp])
    reductions: list[tuple[affine.ForOp, list[Reduction]]] = field(
        default_factory=list[tuple[affine.ForOp, list[Reduction]]]
    )

    def all_loops(self) -> list[affine.ForOp]:
        return [*self.loops, *(loop for loop, _ in self.reductions)]


def plan_spread(region: affine.ForOp) -> SpreadPlan | None:
    """The loops to spread over the threads: the outermost parallel loops and reduction loops
    (analysis/reduction, carrying no dependence through memory) of the code every thread runs
    alike. None when some of that code cannot run on every thread (a call, an atomic, a buffer
    of its own)."""
    deps = dependences(region)
    parallel = set(parallel_loops(region))
    plan = SpreadPlan()

    def visit(op: Operation) -> bool:
        if isinstance(op, affine.ForOp) and op is not region:
            if op in parallel:
                plan.loops.append(op)
                return True
            found = reductions(op)
            if found is not None and not carried_by(deps, op) and _has_identities(op, found):
                plan.reductions.append((op, found))
                return True
        if op.name in BLOCK_LEVEL_WRITES:
            return False
        if isinstance(op, memref.AllocaOp | memref.AllocOp) and not is_shared(op.results[0].type):
            return False
        return all(visit(inner) for r in op.regions for b in r.blocks for inner in b.ops)

    return plan if visit(region) else None


def _has_identities(loop: affine.ForOp, found: Sequence[Reduction]) -> bool:
    return all(identity(r.kind, loop.results[r.position].type) is not None for r in found)


def neutral_values(loop: affine.ForOp, found: Sequence[Reduction]) -> list[SSAValue]:
    """The neutral element of each reduction of `loop`, as constants put before it."""
    block = loop.parent_block()
    assert block is not None
    values: list[SSAValue] = []
    for r in found:
        op = constant(r.kind, loop.results[r.position].type)
        assert op is not None
        block.insert_op_before(op, loop)
        values.append(op.result)
    return values


def reduce_over_block(
    loop: affine.ForOp, found: Sequence[Reduction], threads: Threads, entry: Block
) -> affine.ForOp:
    """Each thread reduces iterations t, t + T, … from the neutral element; the block then
    combines the T partial results (of each lane) in a workgroup buffer, a tree with a barrier
    after each level, down to W of them, and every thread combines those W by warp shuffles
    (loops/gpu_warp: W = 32 where T is a multiple of 32); thread 0 hands the total to all
    (`_shuffle_totals`), which combine the loop's initial value with it. With lanes (threads
    along y, `map_lanes`) a warp holds 32 lanes' partials, not one lane's, so no shuffle
    applies: the tree runs to the end (W = 1) and every thread reads the total of its lane
    from the buffer. Transposing the roles (warp y reduces lane y's partials, then a barrier
    hands each lane its total) would save levels only where a lane has 32 threads.
    Returns the thread's partial loop."""
    block = loop.parent_block()
    assert block is not None
    neutral = neutral_values(loop, found)
    initial = list(loop.inits)
    partial = _spread_bounds(loop, threads, neutral)
    partial.attributes[MAPPING] = StringAttr(f"threads {threads.axis} reduction")
    users = [list(partial.results[r.position].uses) for r in found]
    after = partial.next_op
    assert after is not None
    builder = BoundBuilder()
    t = builder.dim(threads.index)
    lane = [] if threads.lane is None else [builder.dim(threads.lane)]
    buffers = []
    for r in found:
        element = partial.results[r.position].type
        shape = [threads.count] if threads.lane is None else [threads.count, threads.lanes]
        buffer = memref.AllocaOp.get(element, shape=shape, memory_space=_workgroup())
        buffer.memref.name_hint = "partials"
        entry.insert_op_before(buffer, _after_ids(entry))
        buffers.append(buffer.memref)
    ops: list[Operation] = []
    for r, buffer in zip(found, buffers, strict=True):
        ops.append(_store(partial.results[r.position], buffer, builder, [t, *lane]))
    ops.append(gpu_ext.BarrierOp())
    elements = [partial.results[r.position].type for r in found]
    width = 1 if threads.lane is not None else warp_width(threads.count, elements)
    count = threads.count
    while count > width:
        half = max(width, (count + 1) // 2)
        guard = affine_if(builder, [AffineExpr.constant(count - half - 1) - t])
        then = guard.then_region.block
        for r, buffer in zip(found, buffers, strict=True):
            mine = _load(buffer, builder, [t, *lane])
            theirs = _load(buffer, builder, [t + half, *lane])
            both = merge(r, mine.results[0], theirs.results[0])
            then.insert_ops_before(
                [mine, theirs, both, _store(both.results[0], buffer, builder, [t, *lane])],
                then.last_op,  # type: ignore[arg-type]
            )
        ops += [guard, gpu_ext.BarrierOp()]
        count = half
    if width == 1:
        results = [_load(buffer, builder, [AffineExpr.constant(0), *lane]) for buffer in buffers]
        ops += [*results, gpu_ext.BarrierOp()]  # the buffer is reused by the next reduction
    else:
        results = _shuffle_totals(found, buffers, threads, width, entry, builder, ops)
    totals: list[SSAValue] = []
    for r, result, init in zip(found, results, initial, strict=True):
        final = merge(r, init, result.results[0])
        ops.insert(ops.index(result) + 1, final)
        totals.append(final.results[0])
    for uses, total in zip(users, totals, strict=True):
        for use in uses:
            use.operation.operands[use.index] = total
    block.insert_ops_before(ops, after)
    return partial


def _shuffle_totals(
    found: Sequence[Reduction],
    buffers: Sequence[SSAValue],
    threads: Threads,
    width: int,
    entry: Block,
    builder: BoundBuilder,
    ops: list[Operation],
) -> list[affine.LoadOp]:
    """Every thread combines partials `t mod width` by a butterfly (loops/gpu_warp); thread 0
    stores its total in a workgroup cell that every thread reads after a barrier, so the
    total is one block-uniform value (the divergence analysis sees a uniform load; the
    tree's buffer may be read by other warps still, hence a cell of its own). The next use
    of the cell or the buffer comes after the next reduction's first barrier."""
    t = builder.dim(threads.index)
    guard = affine_if(builder, [], [t])
    then = guard.then_region.block
    cells: list[SSAValue] = []
    for r, buffer in zip(found, buffers, strict=True):
        mine = _load(buffer, builder, [t % width])
        shuffles, value = butterfly(r, mine.results[0], width, threads.count, threads.index)
        ops += [mine, *shuffles]
        element = mine.results[0].type
        cell = memref.AllocaOp.get(element, shape=[1], memory_space=_workgroup())
        cell.memref.name_hint = "reduced"
        entry.insert_op_before(cell, _after_ids(entry))
        cells.append(cell.memref)
        store = _store(value, cell.memref, builder, [AffineExpr.constant(0)])
        then.insert_op_before(store, then.last_op)  # type: ignore[arg-type]
    ops += [guard, gpu_ext.BarrierOp()]
    results = [_load(cell, builder, [AffineExpr.constant(0)]) for cell in cells]
    ops += results
    return results


def _block_level_stores(region: affine.ForOp, spread: Sequence[affine.ForOp]) -> list[Operation]:
    """The stores outside the spread loops (thread 0 runs them)."""
    inside = {op for loop in spread for op in loop.walk()}
    return [
        op
        for op in region.walk()
        if isinstance(op, affine.StoreOp | memref.StoreOp) and op not in inside
    ]


def thread_local(dep: Dependence, spread: Sequence[affine.ForOp]) -> bool:
    """Both accesses run on the same thread: they lie in one iteration of a spread loop (the
    dependence is carried deeper, or by no loop), or in iterations of equal value of a spread
    loop whose bounds do not change in the loops around it, or touch a buffer of each thread's
    own."""
    if thread_private(dep.source.memref) and thread_private(dep.sink.memref):
        return True
    if any(loop in spread for loop in dep.loops[: dep.level]):
        return True
    # Across iterations of an outer loop: a spread loop whose start does not change in the
    # loops around it gives an iteration to the same thread every time.
    for position, loop in enumerate(dep.loops):
        if loop in spread and dep.distance(position) == 0:
            starts = lower_bound(loop).operands
            if all(defined_outside(v, dep.loops[0]) for v in starts):
                return True
    return False


def spread(loop: affine.ForOp, threads: Threads) -> affine.ForOp:
    """`for i = lb to ub step s` → `for i = lb + t * s to ub step T * s`."""
    new = _spread_bounds(loop, threads, None)
    new.attributes[MAPPING] = StringAttr(f"threads {threads.axis}")
    return new


def _spread_bounds(
    loop: affine.ForOp, threads: Threads, inits: Sequence[SSAValue] | None
) -> affine.ForOp:
    builder = BoundBuilder()
    t = builder.dim(threads.index if threads.first is None else threads.first)
    step = step_of(loop)
    lows = [e + t * step for e in builder.results_of(lower_bound(loop))]
    stride = threads.stride or threads.count
    return replace_bounds(loop, builder.build(lows), upper_bound(loop), step * stride, inits)


def _workgroup() -> IntegerAttr:
    return IntegerAttr(SHARED_SPACE, i64)


def _after_ids(entry: Block) -> Operation:
    return next(op for op in entry.ops if not isinstance(op, gpu.BlockIdOp | gpu.ThreadIdOp))


def _indices(
    builder: BoundBuilder, at: Sequence[AffineExpr]
) -> tuple[list[SSAValue], AffineMapAttr]:
    """An access map of `at` (one result per index) over the builder's dims that it uses."""
    count = len(builder.dims)
    used = sorted({e.position for x in at for e in x.dfs() if isinstance(e, AffineDimExpr)})
    dims = [
        AffineExpr.dimension(used.index(d)) if d in used else AffineExpr.constant(0)
        for d in range(count)
    ]
    amap = AffineMap(count, 0, tuple(at)).replace_dims_and_symbols(dims, [], len(used), 0)
    return [builder.dims[d] for d in used], AffineMapAttr(amap)


def _store(
    value: SSAValue, buffer: SSAValue, builder: BoundBuilder, at: Sequence[AffineExpr]
) -> Operation:
    operands, amap = _indices(builder, at)
    return affine.StoreOp(value, buffer, operands, amap)


def _load(buffer: SSAValue, builder: BoundBuilder, at: Sequence[AffineExpr]) -> affine.LoadOp:
    operands, amap = _indices(builder, at)
    return affine.LoadOp(buffer, operands, amap)


@dataclass(frozen=True)
class Lanes:
    """Regions side by side in one block: thread id x (`lane`, `count` of them) runs its own
    iteration `value` of a parallel loop, a real one where `value` < `trip` (the others compute
    a copy of the last and store nothing); the region's threads then run along y."""

    lane: SSAValue
    count: int
    value: SSAValue
    trip: int


def map_region(
    kernel: gpu.FuncOp,
    region: affine.ForOp,
    threads: int,
    pass_name: str,
    lanes: Lanes | None = None,
) -> int:
    """Map the outlined region (a `wrap` loop) of `kernel` onto one block (or the block's
    threads of each lane); the number of threads it runs on (`threads`, or 1: see the module
    docstring)."""
    keep_in_registers(region)
    plan = plan_spread(region) if threads > 1 else None
    mapped = None
    if plan is not None and plan.all_loops():
        backup = region.clone()
        try:
            _spread_region(kernel, region, plan, threads, pass_name, lanes)
            mapped = threads
            backup.erase()  # a detached copy keeps uses of the kernel's values: drop them
        except LoopoptError:
            # Barriers the region needs cannot go where every thread reaches them (a branch on
            # a loaded value): run it on one thread instead.
            _restore(kernel, region, backup)
            region = backup
    if mapped is None:
        mapped = 1
        if lanes is not None:
            for store in _block_level_stores(region, []):
                _guard(store, [], lanes)
        mark_sequential(kernel)
        kernel.attributes[MAPPING] = DictionaryAttr({"region": StringAttr("one thread")})
    _inline(region)
    shape = [mapped, 1, 1] if lanes is None else [lanes.count, mapped, 1]
    kernel.known_block_size = DenseArrayBase.from_list(i32, shape)
    return mapped


def _guard(store: Operation, zero: Sequence[SSAValue], lanes: Lanes | None) -> None:
    """Run `store` only where each of `zero` is 0, and in a lane with a real iteration."""
    builder = BoundBuilder()
    valid = []
    if lanes is not None:
        valid.append(AffineExpr.constant(lanes.trip - 1) - builder.dim(lanes.value))
    guard_op(store, builder, valid, [builder.dim(v) for v in zero])


def _spread_region(
    kernel: gpu.FuncOp,
    region: affine.ForOp,
    plan: SpreadPlan,
    count: int,
    pass_name: str,
    lanes: Lanes | None,
) -> None:
    loops = plan.all_loops()
    requirements = [
        Requirement(dep.source.op, dep.sink.op, dep.carrier, dep.describe())
        for dep in dependences(region)
        if not thread_local(dep, loops)
    ]
    stores = _block_level_stores(region, loops)
    spread_stores = [op for op in _block_level_stores(region, []) if op not in stores]
    workgroup = [op for op in kernel.walk() if _workgroup_alloca(op)]
    axis = "x" if lanes is None else "y"
    thread = gpu_ext.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum(axis)))
    thread.result.name_hint = f"t{axis}"
    entry = kernel.body.block
    entry.insert_op_before(thread, entry.first_op)
    threads = Threads(thread.result, count, axis)
    if lanes is not None:
        threads = Threads(thread.result, count, axis, lanes.lane, lanes.count)
    spread_ops = [spread(loop, threads) for loop in plan.loops]
    spread_ops += [
        reduce_over_block(loop, found, threads, entry) for loop, found in plan.reductions
    ]
    for store in stores:
        _guard(store, [thread.result], lanes)
    if lanes is not None:  # lanes past the trip count write nothing
        for store in spread_stores:
            _guard(store, [], lanes)
    requirements += shared_requirements(kernel)
    hoist_to_entry(kernel, workgroup)
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
        {"region": StringAttr("one block"), f"threads_{axis}": StringAttr(names)}
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


def inner_work_spreads(plan: KernelPlan, accesses: Sequence[Access], threads: int) -> bool:
    """A block per iteration of the mapped loops (their bodies run as regions, see
    `map_per_block`) reads memory more contiguously than a thread per iteration, or as
    contiguously where the mapped loops run few iterations (`_few_iterations`): some loop in
    the body indexes the contiguous dimension in more accesses than the loop threadIdx.x would
    get (`_better`) and runs a warp's worth of iterations or more (conv1d's 5 taps would leave
    251 of 256 threads idle: a thread per output reads as contiguously), and the body, with its
    elements kept in registers, has a loop to spread (checked on a copy). Only untiled loops
    qualify. `threads`: the block's."""
    if any(c.tile is not None for c in plan.chosen):
        return False
    innermost = max((c.point for c in plan.chosen), key=lambda loop: len(enclosing_loops(loop)))
    inner = [loop for op in body_ops(innermost) for loop in _loops_at(op)]
    x = plan.chosen[0].point
    few = _few_iterations(plan, threads)
    if not any(_better(loop, x, accesses, few) and _fills_a_warp(loop) for loop in inner):
        return False
    return _body_spreads(innermost)


def _better(inner: affine.ForOp, x: affine.ForOp, accesses: Sequence[Access], few: bool) -> bool:
    """Of the accesses that change with each iteration of `inner` (the traffic), more run along
    the contiguous dimension with `inner` than with `x`; or, where the mapped loops run few
    iterations, not fewer (mvt's column sums keep a thread per column, read along rows)."""
    moving = [a for a in accesses if inner in a.loops and _varies(a, inner)]
    along, across = coalescing_score(inner, moving)[0], coalescing_score(x, moving)[0]
    return along > across or (few and along == across)


def _few_iterations(plan: KernelPlan, threads: int) -> bool:
    """The mapped loops' bounds move with host loops around them (so `lanes_pay`, which needs
    a constant trip count, cannot apply) and they run too few iterations for a thread each to
    fill the GPU (a block of `threads` each still would, within FEW_FACTOR times BUSY_THREADS),
    at most over the iterations of those host loops: nussinov's diagonals, up to 2,499 cells,
    each a max over up to 2,499 terms. Constant and unknown sizes are not few."""
    total = 1
    for chosen in plan.chosen:
        loop = chosen.point
        if constant_trip(loop) is not None:
            return False
        box = band_box([*enclosing_loops(loop), loop])
        if box is None:
            return False
        total *= (box[-1][1] - box[-1][0]) // step_of(loop) + 1
    return total * threads <= BUSY_THREADS * FEW_FACTOR


FEW_FACTOR = 8
"""How many times BUSY_THREADS a block per iteration may ask for: blocks beyond what the GPU
holds at once run in waves, which still beats a few thousand threads alone (2,500 x 256 threads
is 9.5 of them)."""


def _fills_a_warp(loop: affine.ForOp) -> bool:
    """`loop` runs WARP_SIZE iterations or more (or a number known only at run time)."""
    trip = constant_trip(loop)
    return trip is None or trip >= WARP_SIZE


def _varies(access: Access, loop: affine.ForOp) -> bool:
    depth = access.loops.index(loop)
    return any(
        index is None or dict(index.terms).get(Dim(depth), 0) != 0 for index in access.indices
    )


def _loops_at(op: Operation) -> list[affine.ForOp]:
    return [inner for inner in op.walk() if isinstance(inner, affine.ForOp)]


def map_per_block(
    kernel: gpu.FuncOp, dims: Sequence[MappedDim], threads: int, pass_name: str
) -> int:
    """The outlined nest's mapped loops run over the blocks, one iteration per block (or a
    loop over them, uniform in the block), and the body of the innermost one is a region of
    that block (`map_region`); the number of threads per block."""
    innermost = max((d.tile for d in dims), key=lambda loop: len(enclosing_loops(loop)))
    body = body_ops(innermost)
    ids = insert_ids(kernel.body.block, dims)
    for dim in sorted(dims, key=lambda d: len(enclosing_loops(d.tile))):
        map_tile_loop(dim, ids)
    region = wrap(body)
    mapped = map_region(kernel, region, threads, pass_name)
    summary = dict(kernel.attributes[MAPPING].data)  # type: ignore[attr-defined]
    for dim in sorted(dims, key=lambda d: d.axis):
        summary[f"block_{dim.axis}"] = StringAttr(_name_of(dim.tile))
    kernel.attributes[MAPPING] = DictionaryAttr(summary)
    return mapped


def _name_of(loop: affine.ForOp) -> str:
    attr = loop.attributes.get(LOOP_NAME)
    return attr.data if isinstance(attr, StringAttr) else "?"


LANE_WIDTH = WARP_SIZE
"""Iterations of the parallel loop side by side in a block (`map_lanes`): a warp's worth, so
a warp's loads along that loop are one contiguous segment."""
BUSY_THREADS = 2 * 132 * 1024
"""Threads that keep an H200 (132 SMs) busy with two 1024-thread blocks each: `map_lanes` gives
each lane enough threads to reach it."""


def lanes_pay(plan: KernelPlan) -> int:
    """Threads per lane (> 1) when a block should run `LANE_WIDTH` iterations of the nest's one
    parallel loop side by side, each shared out over its own threads (`map_lanes`): the loop
    has a constant trip count too small to keep the GPU busy with a thread per iteration, and
    its body has a reduction or loop to share out (checked on a copy). No more threads per
    lane than the body's longest loop runs iterations (conv1d's 5 taps: 8). 0 otherwise."""
    if len(plan.chosen) != 1 or plan.chosen[0].tile is not None:
        return 0
    loop = plan.chosen[0].point
    trip = constant_trip(loop)
    if trip is None or trip * 2 > BUSY_THREADS:
        return 0
    if not _body_spreads(loop):
        return 0
    trips = [constant_trip(inner) for op in body_ops(loop) for inner in _loops_at(op)]
    longest = None if None in trips else max(t for t in trips if t is not None)
    per_lane = 2
    while (
        per_lane < THREADS_PER_BLOCK // LANE_WIDTH
        and trip * per_lane < BUSY_THREADS
        and (longest is None or per_lane < longest)
    ):
        per_lane *= 2
    return per_lane


def _body_spreads(loop: affine.ForOp) -> bool:
    """Whether `loop`'s body, as a region, would spread over a block (tried on a copy, which is
    erased after: a detached copy keeps uses of the values it reads, which later rewrites of
    those values would visit)."""
    copy = loop.clone()
    try:
        ops = body_ops(copy)
        if not ops:
            return False
        region = wrap(ops)
        keep_in_registers(region)
        spread_plan = plan_spread(region)
        return spread_plan is not None and bool(spread_plan.all_loops())
    finally:
        copy.erase()


def map_lanes(kernel: gpu.FuncOp, loop: affine.ForOp, per_lane: int, pass_name: str) -> int:
    """The outlined parallel loop `loop` runs `LANE_WIDTH` iterations per block, one per
    thread x; lanes past the trip count compute a copy of the last iteration (their indices
    stay in range) and store nothing. The body of each is a region shared out over `per_lane`
    threads along y (`map_region` with `Lanes`). Returns the threads per lane it runs on."""
    trip = constant_trip(loop)
    assert trip is not None and trip > 0
    entry = kernel.body.block
    bx = gpu_ext.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum("x")))
    tx = gpu_ext.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum("x")))
    bx.result.name_hint, tx.result.name_hint = "bx", "tx"
    builder = BoundBuilder()
    value = builder.dim(bx.result) * LANE_WIDTH + builder.dim(tx.result)
    k = index_value(builder, [value], "lane")
    kept = affine.MinOp(
        [k.results[0]],
        AffineMapAttr(AffineMap(1, 0, (AffineExpr.dimension(0), AffineExpr.constant(trip - 1)))),
    )
    start = BoundBuilder()
    lows = [e + start.dim(kept.result) * step_of(loop) for e in start.results_of(lower_bound(loop))]
    index = index_value(start, lows, loop_name(loop))
    entry.insert_ops_before([bx, tx, k, kept, index], entry.first_op)  # type: ignore[list-item]
    body = body_ops(loop)
    parent = loop.parent_block()
    assert parent is not None
    move_body(loop, index.results[0], parent, loop)
    loop.detach()
    loop.erase()
    region = wrap(body)
    lanes = Lanes(tx.result, LANE_WIDTH, k.results[0], trip)
    mapped = map_region(kernel, region, per_lane, pass_name, lanes)
    summary = dict(kernel.attributes[MAPPING].data)  # type: ignore[attr-defined]
    name = index.results[0].name_hint or "?"
    summary["block_x"] = StringAttr(name)
    summary["thread_x"] = StringAttr(name)
    kernel.attributes[MAPPING] = DictionaryAttr(summary)
    return mapped
