"""Permute the loops of a perfect band (`loop-interchange{permutation=1,0,2}`).

Before:  affine.for %i = 0 to 8 { affine.for %j = 0 to 4 { S } {loopopt.name = "j"} }
             {loopopt.name = "i"}
After:   affine.for %j = 0 to 4 { affine.for %i = 0 to 8 { S } {loopopt.name = "i"} }
             {loopopt.name = "j"}                                           permutation=1,0

The loop at depth d moves to depth permutation[d] (MLIR `permuteLoops`). The band is the loops
named by `loops=`, else the outermost perfect band of each top-level loop of each function; a
permutation shorter than that band permutes its outermost loops. Refused (with the offending
dependence) when a dependence would be reversed. Triangular bounds are recomputed exactly.
Every band is validated and checked before any is changed. Mechanics: `loopopt.loops.interchange`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin

from loopopt.analysis.legality import require_permutation_legal
from loopopt.diagnostics import LoopoptError
from loopopt.loops.interchange import check_permutation, new_bounds, permute_band
from loopopt.loops.nest import (
    bands_by_names,
    describe_loop,
    functions,
    outermost_loops,
    perfect_band,
)
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class LoopInterchangePass(LoopoptPass):
    """Permute a perfect band: the loop at depth d moves to depth permutation[d]."""

    name = "loop-interchange"
    option_order = ("loops",)

    permutation: tuple[int, ...] = ()
    """New depth of each band loop, outermost first (a permutation of 0..n-1)."""

    loops: tuple[str, ...] = ()
    """The band, by loop names (default: the outermost perfect band of each function)."""

    func: str | None = None
    """Only this function."""

    def bands(self, module: builtin.ModuleOp) -> list[list[affine.ForOp]]:
        """The bands to permute, each cut to the permutation's length."""
        n = len(self.permutation)
        if not self.permutation:
            raise LoopoptError(f"{self.name}: permutation is required", op=module)
        if sorted(self.permutation) != list(range(n)):
            raise LoopoptError(
                f"{self.name}: permutation={','.join(map(str, self.permutation))} is not a "
                f"permutation of 0..{n - 1}",
                op=module,
            )
        if self.loops:
            if len(self.loops) != n:
                raise LoopoptError(
                    f"{self.name}: permutation has {n} entries for {len(self.loops)} loops "
                    f"({', '.join(self.loops)})",
                    op=module,
                )
            roots = functions(module, self.func) if self.func else [module]
            return [b for root in roots for b in bands_by_names(root, self.loops, self.name)]
        bands: list[list[affine.ForOp]] = []
        for fn in functions(module, self.func):
            for loop in outermost_loops(fn):
                band = perfect_band(loop)
                if len(band) < n:
                    raise LoopoptError(
                        f"{self.name}: permutation has {n} entries but the band "
                        f"({', '.join(map(describe_loop, band))}) has {len(band)} loops",
                        op=loop,
                    )
                bands.append(band[:n])
        return bands

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        bands = self.bands(op)
        if list(self.permutation) == list(range(len(self.permutation))):
            return
        for band in bands:
            check_permutation(band, self.permutation, self.name)
            require_permutation_legal(band, self.permutation, self.name)
            new_bounds(band, self.permutation, self.name)
        for band in bands:
            permute_band(band, self.permutation, self.name)
