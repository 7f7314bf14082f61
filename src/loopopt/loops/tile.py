"""Tiling a perfect band of `affine.for` loops (MLIR LoopUtils `tilePerfectlyNested`).

    affine.for %i = 0 to 100 { body } {loopopt.name = "i"}                 tile-sizes=32
becomes
    affine.for %i_t = 0 to 100 step 32 {
      affine.for %i = affine_map<(d0) -> (d0)>(%i_t)
          to min affine_map<(d0) -> (d0 + 32, 100)>(%i_t) { body } {loopopt.name = "i"}
    } {loopopt.name = "i_t"}

Names: the original loop ops become the *point* loops and keep their name, IV, body and all
attributes, so later passes that address `i` keep working; the new *tile* loop of `i` is named
`i_t` (`i_t2`, `i_t3` … when that name is taken in the function; unnamed loops get unnamed tile
loops); it is marked `loopopt.parallel` when its loop and all band loops outside it were (a
dependence carried by an outer loop may be carried by an inner tile loop). Tile loops run over
the original bounds with step `size * step`; point loops run from the tile IV to
`min(tile IV + size * step, upper bound)` (no min when the size divides a known trip count:
constant bounds, or bounds a constant apart like the point loop `%i_t to %i_t + 128` of an
outer tiling).

Bounds that depend on outer band loops (triangular nests) are supported for linear
dependences: a tile loop's bounds take the extreme value over the outer loops' current tiles
(its lower bound the minimum, its upper bound the maximum), and the point loop clips to the exact
bound with `max`/`min`, so every original iteration runs exactly once. A size of 0 leaves a loop
untiled: it has no tile loop and stays, with its bounds, in the point band (tile loops whose
bounds use it take the extreme over its whole range, itself bounded over the outer tiles).

Not checked here: legality (the band must be fully permutable: analysis.legality), and that
`band` is a perfect nest. Refused with a diagnostic: iter_args on a tiled loop, a negative size,
bounds that a tile loop needs and that are not linear in the band's IVs, and a step other than 1
on a tiled loop whose lower bound is a max that depends on a band loop.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence

from xdsl.dialects import affine, func
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import PARALLEL
from loopopt.loops.affine_maps import (
    Bound,
    BoundBuilder,
    bound_values,
    coefficient,
    lower_bound,
    upper_bound,
)
from loopopt.loops.bounds import new_loop, replace_bounds
from loopopt.loops.nest import (
    describe_loop,
    iv,
    loop_name,
    loops_in,
    set_loop_name,
    step_of,
    trip_count,
)


def fresh_loop_name(anchor: Operation, base: str) -> str:
    """`base`, or `base2`, `base3` … : a loop name not used in the function around `anchor`."""
    scope = anchor
    while not isinstance(scope, func.FuncOp) and scope.parent_op() is not None:
        scope = scope.parent_op()  # type: ignore[assignment]
    return fresh_name({loop_name(loop) for loop in loops_in(scope)}, base)


def fresh_name(taken: Collection[str | None], base: str) -> str:
    """`base`, or `base2`, `base3` … : the first not in `taken` (loop-tile's naming of tile
    loops, which the schedule model asks too)."""
    name, counter = base, 2
    while name in taken:
        name, counter = f"{base}{counter}", counter + 1
    return name


def name_iv(loop: affine.ForOp, name: str) -> None:
    """Print `loop`'s IV as `%name` when `name` is a valid SSA name."""
    if SSAValue.is_valid_name(name):
        iv(loop).name_hint = name


def check_tileable(band: Sequence[affine.ForOp], sizes: Sequence[int], pass_name: str) -> None:
    """Raise a diagnostic if `tile_band(band, sizes)` cannot build the tiled nest."""
    if len(sizes) > len(band):
        raise LoopoptError(
            f"{pass_name}: {len(sizes)} tile sizes for a band of {len(band)} loops "
            f"({', '.join(map(describe_loop, band))})",
            op=band[0],
        )
    position = {iv(loop): d for d, loop in enumerate(band)}
    for d, size in enumerate(sizes):
        if size < 0:
            raise LoopoptError(f"{pass_name}: tile size {size} is negative", op=band[d])
        if size > 0 and band[d].inits:
            raise LoopoptError(
                f"{pass_name}: cannot tile loop '{describe_loop(band[d])}': it has iter_args",
                op=band[d],
            )
    # Loops whose bounds enter the bounds of tile loops: tiled ones, and loops they depend on.
    needed = [size > 0 for size in sizes]
    for d in reversed(range(len(sizes))):
        if not needed[d]:
            continue
        loop = band[d]
        for which, bound in (("lower", lower_bound(loop)), ("upper", upper_bound(loop))):
            for value in bound_values(bound) & position.keys():
                outer = band[position[value]]
                needed[position[value]] = True
                stepped = which == "lower" and sizes[d] > 0 and step_of(loop) != 1
                if stepped and len(bound.map.results) > 1:
                    raise LoopoptError(
                        f"{pass_name}: cannot tile loop '{describe_loop(loop)}': step "
                        f"{step_of(loop)} with a max lower bound that depends on loop "
                        f"'{describe_loop(outer)}'",
                        op=loop,
                    )
                if _coefficients(bound, value) is None:
                    raise LoopoptError(
                        f"{pass_name}: cannot tile loop '{describe_loop(band[d])}': the "
                        f"{which} bound of loop '{describe_loop(loop)}' is not linear in loop "
                        f"'{describe_loop(outer)}'",
                        op=loop,
                    )


def tile_band(
    band: Sequence[affine.ForOp],
    sizes: Sequence[int],
    pass_name: str = "loop-tile",
    suffix: str = "_t",
) -> tuple[list[affine.ForOp], list[affine.ForOp]]:
    """Tile the outermost `len(sizes)` loops of the perfect `band` (size 0: not tiled).

    Returns (tile loops, point loops), outermost first: one tile loop per non-zero size, and
    the loops of `band[:len(sizes)]` (replaced ops: do not use `band` afterwards).
    """
    check_tileable(band, sizes, pass_name)
    band = list(band[: len(sizes)])
    tiled = [d for d, size in enumerate(sizes) if size > 0]
    if not tiled:
        return [], band
    position = {iv(loop): d for d, loop in enumerate(band)}
    tile_iv: dict[int, SSAValue] = {}
    tile_loops: list[affine.ForOp] = []
    for d in tiled:
        loop, size = band[d], sizes[d]
        lb = _tile_range_bound(lower_bound(loop), band, sizes, position, tile_iv, low=True)
        ub = _tile_range_bound(upper_bound(loop), band, sizes, position, tile_iv, low=False)
        tile = new_loop(lb, ub, size * step_of(loop))
        tile.location = loop.location
        name = loop_name(loop)
        if name is not None:
            tile_name = fresh_loop_name(band[0], name + suffix)
            set_loop_name(tile, tile_name)
            name_iv(tile, tile_name)
        if all(PARALLEL in outer.attributes for outer in band[: d + 1]):
            tile.attributes[PARALLEL] = loop.attributes[PARALLEL]
        _insert_around(tile, tile_loops[-1] if tile_loops else None, band[0])
        tile_loops.append(tile)
        tile_iv[d] = iv(tile)
    _move_into(band[0], tile_loops[-1])

    points: list[affine.ForOp] = []
    for d, loop in enumerate(band):
        if d in tile_iv:
            lb, ub = point_bounds(loop, sizes[d], tile_iv[d], position.keys())
            loop = replace_bounds(loop, lb, ub)
        points.append(loop)
    return tile_loops, points


def _coefficients(bound: Bound, value: SSAValue) -> list[int] | None:
    """The coefficient of operand `value` in each result of `bound` (None: not linear)."""
    amap, operands = bound.map, bound.operands
    targets = [AffineExpr.dimension(k) for k in range(amap.num_dims)]
    targets += [AffineExpr.symbol(k) for k in range(amap.num_symbols)]
    result: list[int] = []
    for expr in amap.results:
        total = 0
        for operand, target in zip(operands, targets, strict=True):
            if operand is value:
                c = coefficient(expr, target)
                if c is None:
                    return None
                total += c
        result.append(total)
    return result


def _tile_range_bound(
    bound: Bound,
    band: Sequence[affine.ForOp],
    sizes: Sequence[int],
    position: dict[SSAValue, int],
    tile_iv: dict[int, SSAValue],
    low: bool,
) -> Bound:
    """A tile loop's bound: `bound` with each band IV replaced by its extreme value (the
    lowest value for a lower bound, highest for an upper bound, per the sign of its
    coefficient): over the loop's current tile, or over its whole range if it is not tiled."""
    if not bound_values(bound) & position.keys():
        return bound
    builder = BoundBuilder()
    extremes = _Extremes(band, sizes, position, tile_iv, builder)
    return builder.build(extremes.of_bound(bound, high=not low))


class _Extremes:
    """Valid bounds on the values that band IVs (and bounds using them) take in a tile."""

    def __init__(
        self,
        band: Sequence[affine.ForOp],
        sizes: Sequence[int],
        position: dict[SSAValue, int],
        tile_iv: dict[int, SSAValue],
        builder: BoundBuilder,
    ):
        self.band, self.sizes, self.position = band, sizes, position
        self.tile_iv, self.builder = tile_iv, builder

    def of_bound(self, bound: Bound, high: bool) -> list[AffineExpr]:
        """Expressions without band IVs, each >= (high) or <= (not high) every value that a
        result of `bound` takes over the tile; as loop bounds they combine by min (high) or max."""
        amap, operands = bound.map, bound.operands
        band_operands = [v for v in bound_values(bound) if v in self.position]
        exprs: list[AffineExpr] = []
        for result in amap.results:
            single = Bound(AffineMap(amap.num_dims, amap.num_symbols, (result,)), operands)
            choices: list[list[AffineExpr]] = []
            for value in band_operands:
                coefficients = _coefficients(single, value)
                if coefficients is None:  # refused by check_tileable
                    raise LoopoptError("internal: non-linear tiled bound", op=self.band[0])
                choices.append(self.of_iv(self.position[value], (coefficients[0] > 0) == high))
            for picked in itertools.product(*choices):
                replace = dict(zip(band_operands, picked, strict=True))
                exprs.extend(self.builder.results_of(single, replace))
        return exprs

    def of_iv(self, d: int, high: bool) -> list[AffineExpr]:
        """Bounds on the IV of band[d] in the current tile (highest or lowest value); an
        untiled loop ranges over its bounds, themselves bounded over the outer loops' tiles."""
        loop = self.band[d]
        if self.sizes[d] > 0:
            start = self.builder.dim(self.tile_iv[d])
            return [start + (self.sizes[d] - 1) * step_of(loop)] if high else [start]
        if high:
            return [expr - 1 for expr in self.of_bound(upper_bound(loop), high=True)]
        return self.of_bound(lower_bound(loop), high=False)


def point_bounds(
    loop: affine.ForOp, size: int, tile: SSAValue, band_ivs: Collection[SSAValue]
) -> tuple[Bound, Bound]:
    """A point loop's bounds: [max(tile, lb), min(tile + size * step, ub)); the max only when
    lb uses a loop of the band (`band_ivs`), the min only when `size` may not divide the trip
    count or lb uses a loop of the band (the tiles then start where the band's lowest lb does,
    not at each lb: a skewed band `2i to 2i + 12` has a constant trip count all the same).
    With a step s and such an lb (one result l), the start is kept on l's stride:
    max(l, l + ceildiv(tile - l, s) * s)."""
    builder = BoundBuilder()
    start = builder.dim(tile)
    step = step_of(loop)
    lower = [start]
    banded = bool(bound_values(lower_bound(loop)) & set(band_ivs))
    if banded:
        original = builder.results_of(lower_bound(loop))
        if step == 1:
            lower += original
        else:  # one result: refused otherwise by check_tileable
            first = original[0]
            lower = [first, first + (start - first).ceil_div(step) * step]
    upper = [start + size * step]
    trip = trip_count(loop)  # also `%t to %t + 128`: a point loop of an outer tiling
    if banded or trip is None or trip % size != 0:  # banded: tiles not aligned to lb
        upper += builder.results_of(upper_bound(loop))
    return builder.build(lower), builder.build(upper)


def _insert_around(tile: affine.ForOp, parent: affine.ForOp | None, first: affine.ForOp) -> None:
    """Put `tile` inside `parent` (the previous tile loop) or, for the first, before `first`."""
    if parent is None:
        block = first.parent_block()
        if block is None:
            raise LoopoptError("internal: cannot tile a detached loop", op=first)
        block.insert_op_before(tile, first)
    else:
        _move_into(tile, parent)


def _move_into(op: affine.ForOp, loop: affine.ForOp) -> None:
    """Move `op` to the end of `loop`'s body (before its terminator)."""
    if op.parent is not None:
        op.detach()
    terminator = loop.body.block.last_op
    if terminator is None:
        loop.body.block.add_op(op)
    else:
        loop.body.block.insert_op_before(op, terminator)
