"""Peeling: split boundary iterations off a loop, or full tiles off the partial last tile.

`peel_front(loop, n)` puts the first n iterations in a copy `<name>_peel` before the loop,
`peel_back(loop, n)` the last n in a copy after it; the loop itself keeps its name and runs the
rest. Iter_args flow from the first part into the second.

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
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import affine
from xdsl.ir.affine import AffineConstantExpr, AffineMap

from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import describe_loop, loops_in, step_of
from loopopt.loops.unroll import (
    Bound,
    MapBuilder,
    defined_inside,
    lower_bound,
    materialize_min,
    set_bounds,
    single_lower,
    single_upper,
    split_loop,
    trip_count,
    upper_bound,
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


def peel_front(loop: affine.ForOp, count: int, pass_name: str = "loop-peel") -> affine.ForOp:
    """Split off the first `count` iterations (count >= 1) into a loop placed before `loop`;
    returns it. With symbolic bounds the peeled loop ends at `min(ub, lb + count * step)`."""
    _check_count(loop, count, pass_name)
    step = step_of(loop)
    builder = MapBuilder()
    boundary = single_lower(loop, builder) + count * step
    first_upper = builder.build([*builder.exprs(upper_bound(loop)), boundary], "min")
    shifted = [r + count * step for r in builder.exprs(lower_bound(loop))]
    second_lower = builder.build(shifted, "max")
    return split_loop(loop, first_upper, second_lower, PEEL_SUFFIX, before=True)


def peel_back(loop: affine.ForOp, count: int, pass_name: str = "loop-peel") -> affine.ForOp:
    """Split off the last `count` iterations (count >= 1) into a loop placed after `loop`;
    returns it. The boundary is `ub - count` for step 1, else
    `lb + (ceildiv(ub - lb, step) - count) * step`."""
    _check_count(loop, count, pass_name)
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
    `point_loops(tile)` is empty."""
    points = point_loops(tile)
    name = describe_loop(tile)
    if not points:
        raise LoopoptError(
            f"{pass_name}: '{name}' has no point loop bounded by min({name} + size, ...): "
            "no full tiles to separate",
            op=tile,
        )
    end_bound = full_tile_end(tile, points)
    builder = MapBuilder()
    lower = single_lower(tile, builder)
    if len(end_bound.map.results) == 1:
        [end] = builder.exprs(end_bound)
    else:
        end = builder.value(materialize_min(end_bound, tile))
    step = step_of(tile)
    split_at = end if step == 1 else lower + (end - lower).ceil_div(step) * step
    first_upper = builder.build([split_at])
    second_lower = builder.build([*builder.exprs(lower_bound(tile)), split_at], "max")
    split_value = _constant(first_upper)
    tile_lower, tile_upper = _constant(lower_bound(tile)), _constant(upper_bound(tile))
    partial: affine.ForOp | None = None
    if split_value is not None and tile_lower is not None and split_value <= tile_lower:
        return None  # no full tile
    if split_value is None or tile_upper is None or split_value < tile_upper:
        partial = split_loop(tile, first_upper, second_lower, PEEL_SUFFIX)
    for point in points:
        upper = upper_bound(point.loop)
        kept = AffineMap(
            upper.map.num_dims, upper.map.num_symbols, (upper.map.results[point.full],)
        )
        only_full = MapBuilder()
        set_bounds(point.loop, upper=only_full.build(only_full.exprs(Bound(kept, upper.operands))))
    return partial
