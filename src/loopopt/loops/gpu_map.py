"""Mapping tile loops onto GPU blocks and point loops onto threads (`gpu-map-loops`).

Before (in the kernel):                       After:
    affine.for %j_t = 0 to 100 step 16 {        %bx = gpu.block_id x   %tx = gpu.thread_id x
      affine.for %j = (d0)(%j_t)                %j_t = affine.apply (d0 * 16)(%bx)
          to min (d0 + 16, 100)(%j_t) {         %j = affine.apply (d0 + d1)(%j_t, %tx)
        S(j) } }                                affine.if (%j < min(%j_t + 16, 100)) { S(j) }

A tile loop becomes `lb + blockIdx * step` when its trip count is a constant within the grid
cap (one tile per block); otherwise it stays a loop over the block's tiles,
`for t = lb + blockIdx * step to ub step cap * step` (uniform in the block, so barriers may
sit in it). A point loop becomes `lb + threadIdx * step` under an affine.if guarding its upper
bound when its trip count is at most the block size (no guard where the bounds prove it),
else a loop `for p = lb + threadIdx * step to ub step block * step` (cyclic: thread t runs
iterations t, t + block, ...; when the block divides a constant trip count n, its upper bound
is `lb + threadIdx * step + n * step`, so that its trip count n / block is a constant that
loop-unroll can unroll: strided per-thread fragments of a register tile). Untiled loops are first
tiled by the block size (loops/tile.py), so both cases are one. The host launches
`min(trip count of the tile loop, cap)` blocks per dimension (a constant, or computed before
the launch with affine.min/max and guarded against an empty grid).

Not checked here: legality (the loops must be parallel: gpu_plan) and what lies between the
tile and point loops (gpu_kernel).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import affine, arith, gpu
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap, AffineSymExpr
from xdsl.ir.affine.affine_set import AffineConstraintExpr, AffineConstraintKind, AffineSet

from loopopt.dialects import affine_ext, gpu_ext
from loopopt.dialects.loopopt import LOOP_NAME, MAPPING
from loopopt.loops.affine_maps import BoundBuilder, lower_bound, upper_bound
from loopopt.loops.bounds import replace_bounds
from loopopt.loops.gpu_plan import AXES, KernelPlan, max_trip_count, upper_always_holds
from loopopt.loops.nest import body_ops, iv, loop_name, perfect_band, step_of, trip_count
from loopopt.loops.tile import tile_band
from loopopt.target import SHARED_SPACE, WARP_SIZE


def is_shared(t: Attribute) -> bool:
    """`t` is a memref type in workgroup memory (address space 3)."""
    if not isinstance(t, MemRefType):
        return False
    space = t.memory_space
    return isinstance(space, IntegerAttr) and space.value.data == SHARED_SPACE


@dataclass
class MappedDim:
    """One grid/block dimension: `tile` runs over blocks, `point` over `block` threads, with
    at most `cap` blocks."""

    axis: str
    tile: affine.ForOp
    point: affine.ForOp
    block: int
    cap: int
    trip: int | None = None
    """The tile loop's trip count when constant."""

    @property
    def one_tile_per_block(self) -> bool:
        return self.trip is not None and self.trip <= self.cap


def constant_trip(loop: affine.ForOp) -> int | None:
    """The trip count of a loop whose bounds are constants (max/min of several included)."""
    lb, ub = lower_bound(loop), upper_bound(loop)
    if lb.operands or ub.operands:
        return None
    low, high = max(lb.map.eval([], [])), min(ub.map.eval([], []))
    return max(0, -(-(high - low) // step_of(loop)))


def realize(plan: KernelPlan, pass_name: str) -> tuple[affine.ForOp, list[MappedDim]]:
    """The nest root and its dimensions, x first; untiled loops are tiled by their block size
    first (their tile loops become the outermost loops of the nest)."""
    band = perfect_band(plan.root)
    untiled = {
        next(p for p, loop in enumerate(band) if loop is c.point): d
        for d, c in enumerate(plan.chosen)
        if c.tile is None
    }
    pairs: list[tuple[affine.ForOp, affine.ForOp]] = [
        (c.tile, c.point) if c.tile is not None else (c.point, c.point) for c in plan.chosen
    ]
    root = plan.root
    if untiled:
        sizes = [plan.blocks[untiled[p]] if p in untiled else 0 for p in range(max(untiled) + 1)]
        tiles, points = tile_band(band, sizes, pass_name)
        for tile, p in zip(tiles, sorted(untiled), strict=True):
            pairs[untiled[p]] = (tile, points[p])
        root = tiles[0]
    dims = [
        MappedDim(AXES[d], tile, point, plan.blocks[d], plan.caps[d])
        for d, (tile, point) in enumerate(pairs)
    ]
    for dim in dims:
        dim.trip = constant_trip(dim.tile)
    return root, dims


@dataclass
class LaunchSizes:
    """Host values of the grid and block sizes (x, y, z), and a condition that the grid is
    not empty (None: it has constant sizes)."""

    grid: list[SSAValue]
    block: list[SSAValue]
    nonempty: SSAValue | None


def launch_sizes(dims: Sequence[MappedDim], before: Operation) -> LaunchSizes:
    """Compute the launch sizes on the host, before `before` (a constant trip count of 0 is
    the caller's to handle: the nest never runs)."""
    ops: list[Operation] = []
    constants: dict[int, SSAValue] = {}

    def constant(value: int) -> SSAValue:
        if value not in constants:
            op = arith.ConstantOp(IntegerAttr.from_index_int_value(value))
            op.result.name_hint = f"c{value}"
            ops.append(op)
            constants[value] = op.result
        return constants[value]

    by_axis = {dim.axis: dim for dim in dims}
    grid: list[SSAValue] = []
    conditions: list[SSAValue] = []
    for axis in AXES:
        dim = by_axis.get(axis)
        if dim is None:
            grid.append(constant(1))
        elif dim.trip is not None:
            grid.append(constant(min(dim.trip, dim.cap)))
        else:
            builder = BoundBuilder()
            step = step_of(dim.tile)
            highs = builder.results_of(upper_bound(dim.tile))
            lows = builder.results_of(lower_bound(dim.tile))
            exprs = [(h - lo).ceil_div(step) for h in highs for lo in lows]
            bound = builder.build([*exprs, AffineExpr.constant(dim.cap)])
            blocks = affine.MinOp(list(bound.operands), AffineMapAttr(bound.map))
            zero_map = AffineMap(1, 0, (AffineExpr.dimension(0), AffineExpr.constant(0)))
            count = affine_ext.MaxOp([blocks.result], AffineMapAttr(zero_map))
            count.result.name_hint = f"g{axis}"
            positive = arith.CmpiOp(count.result, constant(0), "sgt")
            ops += [blocks, count, positive]
            grid.append(count.result)
            conditions.append(positive.result)
    block = [constant(by_axis[a].block if a in by_axis else 1) for a in AXES]
    nonempty: SSAValue | None = None
    for condition in conditions:
        if nonempty is None:
            nonempty = condition
        else:
            both = arith.AndIOp(nonempty, condition)
            ops.append(both)
            nonempty = both.result
    host = before.parent_block()
    assert host is not None
    host.insert_ops_before(ops, before)
    return LaunchSizes(grid, block, nonempty)


@dataclass
class KernelIds:
    """The block and thread ids of a kernel (a thread id only along axes of > 1 thread)."""

    blocks: dict[str, SSAValue] = field(default_factory=dict[str, SSAValue])
    threads: dict[str, SSAValue] = field(default_factory=dict[str, SSAValue])
    sizes: dict[str, int] = field(default_factory=dict[str, int])

    def total(self) -> int:
        count = 1
        for size in self.sizes.values():
            count *= size
        return count

    def linear(self, builder: BoundBuilder) -> AffineExpr:
        """tx + bdx * ty + bdx * bdy * tz: consecutive threads of a warp are consecutive."""
        expr, stride = AffineExpr.constant(0), 1
        for axis in AXES:
            if axis in self.threads:
                expr = expr + builder.dim(self.threads[axis]) * stride
            stride *= self.sizes.get(axis, 1)
        return expr


def insert_ids(entry: Block, dims: Sequence[MappedDim]) -> KernelIds:
    """gpu.block_id / gpu.thread_id ops at the start of the kernel's entry block."""
    ids = KernelIds()
    ops: list[Operation] = []
    for dim in sorted(dims, key=lambda d: d.axis):
        ids.sizes[dim.axis] = dim.block
        block_id = gpu_ext.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum(dim.axis)))
        block_id.result.name_hint = f"b{dim.axis}"
        ids.blocks[dim.axis] = block_id.result
        ops.append(block_id)
    for dim in sorted(dims, key=lambda d: d.axis):
        if dim.block > 1:
            thread_id = gpu_ext.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum(dim.axis)))
            thread_id.result.name_hint = f"t{dim.axis}"
            ids.threads[dim.axis] = thread_id.result
            ops.append(thread_id)
    first = entry.first_op
    assert first is not None
    entry.insert_ops_before(ops, first)
    return ids


def group_rows(rows: int, group: int) -> int:
    """The block rows of one group of grouped rasterization: the largest divisor of `rows`
    that is at most `group` (1: plain order)."""
    return max(g for g in range(1, max(1, min(group, rows)) + 1) if rows % g == 0)


def group_blocks(entry: Block, dims: Sequence[MappedDim], ids: KernelIds, group: int) -> int:
    """Grouped rasterization: blocks start in blockIdx order (x fastest); renumber them so that
    consecutive blocks cover `g` block rows (y) of one block column (x) before the next
    column, g = group_rows(rows, group). Blocks that run together then share their operands'
    tiles in L2 (a matmul's A row panels and B column panels) instead of sweeping whole rows.

        pid = by * gx + bx
        y' = (pid floordiv (g * gx)) * g + pid mod g      x' = (pid mod (g * gx)) floordiv g

    a bijection of the gx × gy grid onto itself (g divides gy). Only where x and y both have
    one tile per block (the grid is the tile counts); returns g (1: unchanged)."""
    by_axis = {d.axis: d for d in dims}
    x, y = by_axis.get("x"), by_axis.get("y")
    if x is None or y is None or not (x.one_tile_per_block and y.one_tile_per_block):
        return 1
    assert x.trip is not None and y.trip is not None
    g = group_rows(y.trip, group)
    if g == 1 or x.trip == 1:
        return 1
    pid = AffineExpr.dimension(1) * x.trip + AffineExpr.dimension(0)
    rows = (pid // (g * x.trip)) * g + pid % g
    cols = (pid % (g * x.trip)) // g
    operands = [ids.blocks["x"], ids.blocks["y"]]
    ops = []
    for axis, expr in (("x", cols), ("y", rows)):
        op = affine.ApplyOp(operands, AffineMapAttr(AffineMap(2, 0, (expr,))))
        op.result.name_hint = f"b{axis}_group"
        ops.append(op)
    anchor = next(op for op in entry.ops if not isinstance(op, gpu.BlockIdOp | gpu.ThreadIdOp))
    entry.insert_ops_before(ops, anchor)
    ids.blocks["x"], ids.blocks["y"] = ops[0].result, ops[1].result
    return g


def warp_lanes_fit(lanes: Sequence[int], block: Sequence[int]) -> str | None:
    """Why `lanes` (lanes of a warp along x, y) cannot arrange a block of `block` threads
    (x, y, z) into warp tiles, or None when they can: their product is a warp, they divide
    the block's x and y sizes, and the block has no z threads."""
    if len(lanes) != 2 or lanes[0] < 1 or lanes[1] < 1 or lanes[0] * lanes[1] != WARP_SIZE:
        return f"warp-lanes={','.join(map(str, lanes))} must be two sizes whose product is 32"
    bx, by, bz = (*block, 1, 1, 1)[:3]
    if bz != 1 or bx % lanes[0] or by % lanes[1]:
        return (
            f"warp-lanes={lanes[0]},{lanes[1]} does not divide the block of "
            f"{bx}x{by}x{bz} threads (x by {lanes[0]}, y by {lanes[1]}, no z)"
        )
    return None


def warp_tile_ids(tx: Any, ty: Any, bx: int, lanes: Sequence[int]) -> tuple[Any, Any]:
    """The (x, y) thread position that thread (tx, ty) of a block bx wide runs under warp
    tiles of lanes[0] x lanes[1] (see `arrange_warps`): of affine expressions (the pass) or
    of integer arrays (the cost model's lanes, schedule/warp.py)."""
    lx, ly = lanes
    linear = ty * bx + tx
    warp, lane = linear // WARP_SIZE, linear % WARP_SIZE
    columns = bx // lx
    return (warp % columns) * lx + lane % lx, (warp // columns) * ly + lane // lx


def cyclic_offsets(offsets: Any, piece: int, threads: int) -> Any:
    """The iterations a thread runs, relative to its first, of a loop tiled by `piece` whose
    chunk loop is spread cyclically over `threads` threads (`map_point_loop`): the thread's
    offsets 0, 1, ... (integers or an integer array) are its chunks' elements in order,
    chunk c at c * threads * piece."""
    return offsets % piece + (offsets // piece) * (threads * piece)


def arrange_warps(entry: Block, ids: KernelIds, lanes: Sequence[int]) -> KernelIds:
    """Warp tiles: the ids that the point loops read, renumbered so that each warp covers a
    lanes[0] x lanes[1] (x, y) sub-grid of the block's bx x by threads, the warps side by side
    along x first (`warp_lanes_fit` must hold). With l = ty * bx + tx (warps are 32
    consecutive l), w = l floordiv 32, lane = l mod 32, c = bx / lanes[0]:

        tx' = (w mod c) * lanes[0] + lane mod lanes[0]
        ty' = (w floordiv c) * lanes[1] + lane floordiv lanes[0]

    a bijection of the block's threads onto itself, so every thread still runs one point of
    each loop; a warp's register-tile fragments then come from lanes[1] row blocks of A and
    lanes[0] column blocks of B. The returned ids share the block ids; copies keep the
    plain ids (consecutive lanes copy consecutive elements)."""
    x, y = warp_tile_ids(AffineExpr.dimension(0), AffineExpr.dimension(1), ids.sizes["x"], lanes)
    exprs = {"x": x, "y": y}
    operands = [ids.threads["x"], ids.threads["y"]]
    ops = []
    for axis, expr in exprs.items():
        op = affine.ApplyOp(operands, AffineMapAttr(AffineMap(2, 0, (expr,))))
        op.result.name_hint = f"t{axis}_warp"
        ops.append(op)
    anchor = next(op for op in entry.ops if not isinstance(op, gpu.BlockIdOp | gpu.ThreadIdOp))
    entry.insert_ops_before(ops, anchor)
    threads = {"x": ops[0].result, "y": ops[1].result}
    return KernelIds(dict(ids.blocks), threads, dict(ids.sizes))


def index_value(builder: BoundBuilder, exprs: Sequence[AffineExpr], name: str | None) -> Operation:
    """affine.apply of one expression, affine.max of several."""
    bound = builder.build(exprs)
    op: Operation
    if len(bound.map.results) == 1:
        op = affine.ApplyOp(list(bound.operands), AffineMapAttr(bound.map))
    else:
        op = affine_ext.MaxOp(list(bound.operands), AffineMapAttr(bound.map))
    if name is not None and SSAValue.is_valid_name(name):
        op.results[0].name_hint = name
    return op


def affine_if(
    builder: BoundBuilder, nonnegative: Sequence[AffineExpr], zero: Sequence[AffineExpr] = ()
) -> affine.IfOp:
    """`affine.if` (each of `nonnegative` >= 0, each of `zero` == 0) with an empty body; its
    operands are the builder's values that the conditions use."""
    nd, ns = len(builder.dims), len(builder.syms)
    exprs = [e.simplify(nd, ns) for e in [*nonnegative, *zero]]
    used_dims = sorted({e.position for x in exprs for e in x.dfs() if isinstance(e, AffineDimExpr)})
    used_syms = sorted({e.position for x in exprs for e in x.dfs() if isinstance(e, AffineSymExpr)})
    dims = [
        AffineExpr.dimension(used_dims.index(d)) if d in used_dims else AffineExpr.constant(0)
        for d in range(nd)
    ]
    syms = [
        AffineExpr.symbol(used_syms.index(k)) if k in used_syms else AffineExpr.constant(0)
        for k in range(ns)
    ]
    kinds = [AffineConstraintKind.ge] * len(nonnegative) + [AffineConstraintKind.eq] * len(zero)
    constraints = tuple(
        AffineConstraintExpr(kind, e.replace_dims_and_symbols(dims, syms), AffineExpr.constant(0))
        for kind, e in zip(kinds, exprs, strict=True)
    )
    condition = AffineSetAttr(AffineSet(len(used_dims), len(used_syms), constraints))
    operands = [builder.dims[d] for d in used_dims] + [builder.syms[k] for k in used_syms]
    return affine_ext.IfOp.build(
        operands=[operands],
        result_types=[[]],
        properties={"condition": condition},
        regions=[Region(Block([affine.YieldOp.get()])), Region()],
    )


def move_body(loop: affine.ForOp, value: SSAValue, block: Block, before: Operation) -> None:
    """Move `loop`'s body (not its terminator) before `before` in `block`, its IV replaced by
    `value`."""
    iv(loop).replace_all_uses_with(value)
    for op in body_ops(loop):
        op.detach()
        block.insert_op_before(op, before)


def _mark(op: Operation, name: str | None, mapping: str) -> None:
    if name is not None:
        op.attributes[LOOP_NAME] = StringAttr(name)
    op.attributes[MAPPING] = StringAttr(mapping)


def map_tile_loop(dim: MappedDim, ids: KernelIds) -> None:
    """The tile loop runs over blocks: blockIdx picks the tile (see the module docstring)."""
    tile, step = dim.tile, step_of(dim.tile)
    builder = BoundBuilder()
    block_id = builder.dim(ids.blocks[dim.axis])
    lows = [e + block_id * step for e in builder.results_of(lower_bound(tile))]
    if not dim.one_tile_per_block:
        new = replace_bounds(tile, builder.build(lows), upper_bound(tile), step * dim.cap)
        _mark(new, None, f"block {dim.axis}")
        dim.tile = new
        return
    start = index_value(builder, lows, loop_name(tile))
    parent = tile.parent_block()
    assert parent is not None
    parent.insert_op_before(start, tile)
    move_body(tile, start.results[0], parent, tile)
    tile.detach()
    tile.erase()


def map_point_loop(dim: MappedDim, ids: KernelIds) -> None:
    """The point loop runs over the block's threads (see the module docstring)."""
    point, step = dim.point, step_of(dim.point)
    builder = BoundBuilder()
    offset = AffineExpr.constant(0)
    if dim.axis in ids.threads:
        offset = builder.dim(ids.threads[dim.axis]) * step
    lows = [e + offset for e in builder.results_of(lower_bound(point))]
    trip = max_trip_count(point)
    if trip is None or trip > dim.block:
        upper = upper_bound(point)
        exact = trip_count(point)
        if exact is not None and exact % dim.block == 0 and len(lows) == 1:
            # every thread runs exact / block iterations: a constant trip count (unrollable)
            upper = builder.build([lows[0] + exact * step])
        new = replace_bounds(point, builder.build(lows), upper, step * dim.block)
        _mark(new, None, f"thread {dim.axis}")
        dim.point = new
        return
    start = index_value(builder, lows, loop_name(point))
    parent = point.parent_block()
    assert parent is not None
    parent.insert_op_before(start, point)
    value = start.results[0]
    ub = upper_bound(point)
    guard_builder = BoundBuilder()
    here = guard_builder.dim(value)
    highs = guard_builder.results_of(ub)
    checks = [
        h - here - 1 for r, h in enumerate(highs) if not upper_always_holds(point, r, dim.block)
    ]
    if not checks:
        move_body(point, value, parent, point)
    else:
        guard = affine_if(guard_builder, checks)
        _mark(guard, loop_name(point), f"thread {dim.axis}")
        parent.insert_op_before(guard, point)
        then = guard.then_region.block
        terminator = then.last_op
        assert terminator is not None
        move_body(point, value, then, terminator)
    point.detach()
    point.erase()
