"""Tile a perfect band of loops (`loop-tile{tile-sizes=32,32,8}`).

Before:  affine.for %i = 0 to 100 { affine.for %j = 0 to 100 { S } {loopopt.name = "j"} }
             {loopopt.name = "i"}
After:   affine.for %i_t = 0 to 100 step 32 { affine.for %j_t = 0 to 100 step 32 {
           affine.for %i = (d0) -> (d0)(%i_t) to min (d0) -> (d0 + 32, 100)(%i_t) {
             affine.for %j = ... { S } {loopopt.name = "j"} } {loopopt.name = "i"}
         } {loopopt.name = "j_t"} } {loopopt.name = "i_t"}

The band is the loops named by `loops=` (a perfect nest, outermost first), else the outermost
perfect band of each top-level loop of each function. `tile-sizes` shorter than the band tiles
its outermost loops only; a size of 0 leaves that loop untiled. Sizes past the end of a default
band are ignored with a warning (as MLIR's affine-loop-tile does: one size list serves nests of
several depths); past the loops named by `loops=`, they are an error. Tiling is refused (with the
offending dependence) unless the tiled band is fully permutable. Every band is validated and
checked before any is changed. Mechanics and naming: `loopopt.loops.tile`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin

from loopopt.analysis.legality import require_fully_permutable
from loopopt.diagnostics import LoopoptError, warning
from loopopt.loops.nest import (
    bands_by_names,
    describe_loop,
    functions,
    outermost_loops,
    perfect_band,
)
from loopopt.loops.tile import check_tileable, tile_band
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class LoopTilePass(LoopoptPass):
    """Tile a perfect band (default: the outermost band of each function) by tile-sizes."""

    name = "loop-tile"
    option_order = ("loops",)

    tile_sizes: tuple[int, ...] = ()
    """Tile size per band loop, outermost first (0: not tiled; fewer than the band: the rest
    is not tiled)."""

    loops: tuple[str, ...] = ()
    """The band to tile, by loop names (default: the outermost perfect band of each function)."""

    func: str | None = None
    """Only this function."""

    def bands(self, module: builtin.ModuleOp) -> list[list[affine.ForOp]]:
        """The bands to tile, each cut to the loops the sizes reach."""
        if not self.tile_sizes:
            raise LoopoptError(f"{self.name}: tile-sizes is required", op=module)
        for size in self.tile_sizes:
            if size < 0:
                raise LoopoptError(f"{self.name}: tile size {size} is negative", op=module)
        if self.loops and len(self.tile_sizes) > len(self.loops):
            raise LoopoptError(
                f"{self.name}: {len(self.tile_sizes)} tile sizes for {len(self.loops)} loops "
                f"({', '.join(self.loops)})",
                op=module,
            )
        bands: list[list[affine.ForOp]] = []
        if self.loops:
            roots = functions(module, self.func) if self.func else [module]
            bands = [b for root in roots for b in bands_by_names(root, self.loops, self.name)]
        else:
            for fn in functions(module, self.func):
                bands.extend(perfect_band(loop) for loop in outermost_loops(fn))
        for band in bands:
            if len(self.tile_sizes) > len(band):
                warning(
                    f"{self.name}: {len(self.tile_sizes)} tile sizes for the band "
                    f"({', '.join(map(describe_loop, band))}) of {len(band)} loops: "
                    f"{', '.join(map(str, self.tile_sizes[len(band) :]))} ignored",
                    op=band[0],
                )
        return [band[: len(self.tile_sizes)] for band in bands]

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        plans: list[tuple[list[affine.ForOp], list[int]]] = []
        for band in self.bands(op):
            sizes = list(self.tile_sizes[: len(band)])
            tiled = [d for d, size in enumerate(sizes) if size > 0]
            if tiled:
                check_tileable(band, sizes, self.name)
                require_fully_permutable(band[: tiled[-1] + 1], self.name)
                plans.append((band, sizes))
        for band, sizes in plans:
            tile_band(band, sizes, self.name)
