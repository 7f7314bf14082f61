"""Peeling: split boundary iterations off a loop, or full tiles off the partial last tile.

`peel_front(loop, n)` puts the first n iterations in a copy `<name>_peel` before the loop,
`peel_back(loop, n)` the last n in a copy after it; the loop itself keeps its name and runs the
rest. Iter_args flow from the first part into the second. When the bound that the split point
derives from is a max/min of loop IVs (no SSA value upstream MLIR accepts as a dim can hold it),
`version_bounds` first puts one copy of the loop per result in a chain of affine.if ops (the copy
for `%it + 4` runs under `%it + 4 <= 10`), and each copy is peeled.

    affine.for %i = 0 to 10 {        peel_front 2     affine.for %i = 0 to 2 { S(%i) }
      S(%i)                              ==>              {loopopt.name = "i_peel"}
    } {loopopt.name = "i"}                              affine.for %i = 2 to 10 { S(%i) }
                                                          {loopopt.name = "i"}

`separate_full_tiles(tile)` splits a tile loop (as loop-tile and loop-strip-mine make them: the
tile loop steps by S, a point loop inside runs from the tile IV to `min(iv_t + S, N)`) into the
tiles that are full, where the point loop becomes `iv_t to iv_t + S` (no min, constant trip
count), and the partial last tile, a copy `<name>_peel` that keeps the min.

    affine.for %it = 0 to 100 step 32 {               affine.for %it = 0 to 96 step 32 {
      affine.for %i = (d0)->(d0)(%it)        ==>        affine.for %i = (d0)->(d0)(%it)
          to min (d0)->(d0 + 32, 100)(%it)                  to (d0)->(d0 + 32)(%it)
                                                      affine.for %it = 96 to 100 step 32 {...min...}

Where the end of the full tiles is a min of loop IVs, the tile loop's body is versioned instead:
`affine.if (%it + 32 <= other ...) { full tile } else { partial tile }` (`guard_full_tiles`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from xdsl.dialects import affine
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineExpr, AffineMap

from loopopt.diagnostics import LoopoptError
from loopopt.loops.affine_maps import (
    Bound,
    BoundKind,
    MapBuilder,
    lower_bound,
    set_bounds,
    upper_bound,
)
from loopopt.loops.bounds import materialize_min, single_lower, single_upper, split_loop
from loopopt.loops.guard import Guard, IterationDomain, materializable, new_if
from loopopt.loops.nest import (
    body_ops,
    defined_inside,
    describe_loop,
    enclosing_loops,
    loops_in,
    step_of,
    trip_count,
)

PEEL_SUFFIX = "_peel"
"""Name suffix of the part that loop-peel splits off (peeled iterations, the partial tile)."""


def _check_count(loop: affine.ForOp, count: int, pass_name: str) -> None:
    name = describe_loop(loop)
    if count < 1:
        raise LoopoptError(f"{pass_name}: cannot peel {count} iterations off '{name}'", op=loop)
    known = trip_count(loop)
    if known is not None and count >= known:
        raise LoopoptError(
            f"{pass_name}: cannot peel {count} iterations off '{name}': it runs only {known}",
            op=loop,
        )


def _extreme_results(loop: affine.ForOp, builder: MapBuilder) -> tuple[Bound, Bound]:
    """`loop`'s max lower and min upper bounds without dominated results."""
    lowers = builder.build(builder.exprs(lower_bound(loop)), "max")
    return lowers, builder.build(builder.exprs(upper_bound(loop)), "min")


def _needs_version(bound: Bound) -> bool:
    return len(bound.map.results) > 1 and not materializable(bound.operands)


def _narrow(bound: Bound, kind: BoundKind, loop: affine.ForOp) -> Bound:
    """`bound` (a max or min of several results that no affine.max/min op can hold) reduced to
    the result that is always the extreme one in the iterations of the loops around `loop`."""
    if not _needs_version(bound):
        return bound
    builder = MapBuilder()
    exprs = builder.exprs(bound)
    domain = IterationDomain(enclosing_loops(loop))
    for k, expr in enumerate(exprs):
        gaps = [other - expr if kind == "min" else expr - other for other in exprs]
        if all(domain.holds(gap, builder.values) for j, gap in enumerate(gaps) if j != k):
            return builder.build([expr])
    return bound


def version_bounds(loop: affine.ForOp, *, lower: bool, upper: bool) -> list[affine.ForOp]:
    """Replace `loop` by one copy per choice of the result of its max lower bound (`lower`) and
    of its min upper bound (`upper`) that is the extreme one, each copy bounded by that result
    alone, in a chain of affine.if ops (`%l0 >= %l1` ...; the last copy runs in the innermost
    else); returns the copies. Results flow out of the ifs.

    Choices that are never extreme in the iterations of the enclosing loops are left out; a
    choice that always is bounds `loop` itself, with no if (`[loop]` is returned)."""
    builder = MapBuilder()
    lowers, uppers = (builder.exprs(b) for b in _extreme_results(loop, builder))
    lower_choices = range(len(lowers)) if lower and len(lowers) > 1 else [None]
    upper_choices = range(len(uppers)) if upper and len(uppers) > 1 else [None]
    choices: list[tuple[tuple[int | None, int | None], list[AffineExpr]]] = []
    for low, up in product(lower_choices, upper_choices):
        conditions: list[AffineExpr] = []
        if low is not None:
            conditions += [lowers[low] - other for j, other in enumerate(lowers) if j != low]
        if up is not None:
            conditions += [other - uppers[up] for j, other in enumerate(uppers) if j != up]
        choices.append(((low, up), conditions))
    domain = IterationDomain(enclosing_loops(loop))
    always = [c for c in choices if all(domain.holds(e, builder.values) for e in c[1])]
    possible = [c for c in choices if domain.feasible(c[1], builder.values)]
    choices = always[:1] or possible or choices[-1:]

    def bounded(version: affine.ForOp, low: int | None, up: int | None) -> affine.ForOp:
        set_bounds(
            version,
            lower=builder.build([lowers[low]]) if low is not None else None,
            upper=builder.build([uppers[up]]) if up is not None else None,
        )
        return version

    if len(choices) == 1:
        return [bounded(loop, *choices[0][0])]
    versions = [bounded(loop.clone(), low, up) for (low, up), _ in choices]
    tail: Operation = versions[-1]
    for (_, conditions), version in reversed(list(zip(choices[:-1], versions[:-1], strict=True))):
        condition = builder.build(conditions)
        then_block = Block([version, affine.YieldOp.get(*version.results)])
        else_block = Block([tail, affine.YieldOp.get(*tail.results)])
        tail = new_if(Guard(condition.map, condition.operands), then_block, else_block)
    block = loop.parent_block()
    if block is None:
        raise LoopoptError("cannot version a loop outside any block", op=loop)
    block.insert_op_before(tail, loop)
    for old, new in zip(loop.results, tail.results, strict=True):
        old.replace_all_uses_with(new)
    block.erase_op(loop)
    return versions


def peel_front(loop: affine.ForOp, count: int, pass_name: str = "loop-peel") -> list[affine.ForOp]:
    """Split off the first `count` iterations (count >= 1) into a loop placed before `loop`;
    returns the peeled loop. With symbolic bounds it ends at `min(ub, lb + count * step)`.

    A max lower bound that no affine.max op can hold (it uses loop IVs) first versions the loop
    (`version_bounds`); each version is peeled, and the peeled loop of each is returned."""
    _check_count(loop, count, pass_name)
    builder = MapBuilder()
    lowers, _ = _extreme_results(loop, builder)
    versions = version_bounds(loop, lower=_needs_version(lowers), upper=False)
    return [_peel_front(version, count) for version in versions]


def _peel_front(loop: affine.ForOp, count: int) -> affine.ForOp:
    step = step_of(loop)
    builder = MapBuilder()
    boundary = single_lower(loop, builder) + count * step
    first_upper = builder.build([*builder.exprs(upper_bound(loop)), boundary], "min")
    shifted = [r + count * step for r in builder.exprs(lower_bound(loop))]
    second_lower = builder.build(shifted, "max")
    return split_loop(loop, first_upper, second_lower, PEEL_SUFFIX, before=True)


def peel_back(loop: affine.ForOp, count: int, pass_name: str = "loop-peel") -> list[affine.ForOp]:
    """Split off the last `count` iterations (count >= 1) into a loop placed after `loop`;
    returns the peeled loop. The boundary is `ub - count` for step 1, else
    `lb + (ceildiv(ub - lb, step) - count) * step`.

    A min upper bound (or, with a step, a max lower bound) that no affine.min/max op can hold
    first versions the loop (`version_bounds`); each version is peeled, and the peeled loop of
    each is returned."""
    _check_count(loop, count, pass_name)
    builder = MapBuilder()
    lowers, uppers = _extreme_results(loop, builder)
    versions = version_bounds(
        loop, lower=step_of(loop) != 1 and _needs_version(lowers), upper=_needs_version(uppers)
    )
    return [_peel_back(version, count) for version in versions]


def _peel_back(loop: affine.ForOp, count: int) -> affine.ForOp:
    step = step_of(loop)
    builder = MapBuilder()
    uppers = builder.exprs(upper_bound(loop))
    if step == 1:  # ub - count = min(ub_k - count): one boundary per result of a min bound
        boundaries = builder.build([u - count for u in uppers], "min")
        first_upper = builder.build([*uppers, *builder.exprs(boundaries)], "min")
        if len(boundaries.map.results) == 1:
            [boundary] = builder.exprs(boundaries)
        else:
            boundary = builder.value(materialize_min(boundaries, loop))
    else:
        lower = single_lower(loop, builder)
        iterations = (single_upper(loop, builder) - lower).ceil_div(step)
        boundary = lower + (iterations - count) * step
        first_upper = builder.build([*uppers, boundary], "min")
    second_lower = builder.build([*builder.exprs(lower_bound(loop)), boundary], "max")
    return split_loop(loop, first_upper, second_lower, PEEL_SUFFIX)


@dataclass(frozen=True)
class PointLoop:
    """A loop under a tile loop whose upper bound is `min(iv_t + size, others...)`."""

    loop: affine.ForOp
    size: int
    """The constant `size` of the result `iv_t + size`."""
    full: int
    """The index of that result in the upper bound map."""


def point_loops(tile: affine.ForOp) -> list[PointLoop]:
    """The loops under `tile` bounded by `min(iv_t + size, others)` where the other results use
    only values defined outside `tile` (so the tiles where the min is `iv_t + size` are a prefix
    of `tile`'s iterations)."""
    found: list[PointLoop] = []
    for loop in loops_in(tile):
        upper = upper_bound(loop)
        if len(upper.map.results) < 2:
            continue
        builder = MapBuilder()
        tile_iv = builder.value(tile.body.block.args[0])
        exprs = builder.exprs(upper)
        sizes = [builder.simplified(e - tile_iv) for e in exprs]
        full = [(i, s.value) for i, s in enumerate(sizes) if isinstance(s, AffineConstantExpr)]
        if len(full) != 1:
            continue
        index, size = full[0]
        others = [e for i, e in enumerate(exprs) if i != index]
        used = set().union(*(e.used_dims() for e in others))
        if any(defined_inside(builder.values[d], tile) for d in used):
            continue
        found.append(PointLoop(loop, size, index))
    return found


def full_tile_end(tile: affine.ForOp, points: list[PointLoop]) -> Bound:
    """`min(ub_t, other - size + 1 ...)`: the tile IVs below it have only full tiles."""
    builder = MapBuilder()
    limits = builder.exprs(upper_bound(tile))
    for point in points:
        exprs = builder.exprs(upper_bound(point.loop))
        limits += [e - point.size + 1 for i, e in enumerate(exprs) if i != point.full]
    return builder.build(limits, "min")


def _constant(bound: Bound) -> int | None:
    results = bound.map.results
    if bound.operands or len(results) != 1 or not isinstance(results[0], AffineConstantExpr):
        return None
    return results[0].value


def separate_full_tiles(tile: affine.ForOp, pass_name: str = "loop-peel") -> affine.ForOp | None:
    """Split `tile` into its full tiles (the point loops lose their min) and the rest, a copy
    `<name>_peel` after it (returned). With constant bounds, no copy is made when every tile is
    full (the mins just go) and nothing changes when none is. Raises LoopoptError when
    `point_loops(tile)` is empty.

    Where the end of the full tiles (or, with a step, the tile loop's max lower bound) uses loop
    IVs, no SSA value can hold it: the body of `tile` is versioned instead (`guard_full_tiles`)
    and None is returned."""
    points = point_loops(tile)
    name = describe_loop(tile)
    if not points:
        raise LoopoptError(
            f"{pass_name}: '{name}' has no point loop bounded by min({name} + size, ...): "
            "no full tiles to separate",
            op=tile,
        )
    end_bound = _narrow(full_tile_end(tile, points), "min", tile)
    step = step_of(tile)
    builder = MapBuilder()
    lowers = _narrow(_extreme_results(tile, builder)[0], "max", tile)
    if _needs_version(end_bound) or (step != 1 and _needs_version(lowers)):
        guard_full_tiles(tile, points)
        return None
    if len(end_bound.map.results) == 1:
        [end] = builder.exprs(end_bound)
    else:
        end = builder.value(materialize_min(end_bound, tile))
    if step == 1:
        split_at = end
    else:
        if len(lowers.map.results) == 1:
            [lower] = builder.exprs(lowers)
        else:
            lower = single_lower(tile, builder)
        split_at = lower + (end - lower).ceil_div(step) * step
    first_upper = builder.build([split_at])
    second_lower = builder.build([*builder.exprs(lower_bound(tile)), split_at], "max")
    split_value = _constant(first_upper)
    tile_lower, tile_upper = _constant(lower_bound(tile)), _constant(upper_bound(tile))
    partial: affine.ForOp | None = None
    if split_value is not None and tile_lower is not None and split_value <= tile_lower:
        return None  # no full tile
    if split_value is None or tile_upper is None or split_value < tile_upper:
        partial = split_loop(tile, first_upper, second_lower, PEEL_SUFFIX)
    _drop_mins(points)
    return partial


def guard_full_tiles(tile: affine.ForOp, points: list[PointLoop]) -> None:
    """Version the body of `tile` on `iv_t + size <= other` for every other result of every
    point loop: there the point loops lose their min; the else-region runs a copy of the
    original body (the partial tiles).

        affine.for %jt = max(0, %i - 2) to min(%i + 3, %m) step 4 {
          affine.if (%jt + 4 <= %i + 3, %jt + 4 <= %m) { affine.for %j = %jt to %jt + 4 {...} }
          else { affine.for %j = %jt to min(%jt + 4, %i + 3, %m) {...} }
    """
    builder = MapBuilder()
    tile_iv = builder.value(tile.body.block.args[0])
    conditions: list[AffineExpr] = []
    for point in points:
        exprs = builder.exprs(upper_bound(point.loop))
        conditions += [e - tile_iv - point.size for i, e in enumerate(exprs) if i != point.full]
    condition = builder.build(conditions)
    block = tile.body.block
    terminator = block.last_op
    if not isinstance(terminator, affine.YieldOp):
        raise LoopoptError("affine.for body does not end with affine.yield", op=tile)
    ops = body_ops(tile)
    yielded = list(terminator.operands)
    mapper: dict[SSAValue, SSAValue] = {}
    else_block = Block([op.clone(value_mapper=mapper) for op in ops])
    else_block.add_op(affine.YieldOp.get(*(mapper.get(v, v) for v in yielded)))
    then_block = Block()
    for op in ops:
        op.detach()
        then_block.add_op(op)
    then_block.add_op(affine.YieldOp.get(*yielded))
    if_op = new_if(Guard(condition.map, condition.operands), then_block, else_block)
    block.insert_op_before(if_op, terminator)
    terminator.operands = if_op.results
    _drop_mins(points)


def _drop_mins(points: list[PointLoop]) -> None:
    """Bound each point loop by its full-tile result `iv_t + size` alone."""
    for point in points:
        upper = upper_bound(point.loop)
        kept = AffineMap(
            upper.map.num_dims, upper.map.num_symbols, (upper.map.results[point.full],)
        )
        only_full = MapBuilder()
        set_bounds(point.loop, upper=only_full.build(only_full.exprs(Bound(kept, upper.operands))))
