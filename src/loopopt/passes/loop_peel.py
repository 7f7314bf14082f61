"""Peel boundary iterations off a loop, or separate full tiles from partial ones (`loop-peel`).

Before:  affine.for %k = 0 to 10 { S(%k) } {loopopt.name = "k"}                 loop=k count=2
After:   affine.for %k = 0 to 2 { S(%k) } {loopopt.name = "k_peel"}
         affine.for %k = 2 to 10 { S(%k) } {loopopt.name = "k"}

`count=N` with N > 0 peels the first N iterations into a loop `<name>_peel` before the loop;
N < 0 peels the last |N| iterations into `<name>_peel` after it (count needs `loop=`; it must be
smaller than a constant trip count). The loop keeps its name and runs the rest. A bound that
is a max/min of loop IVs (`min(%it + 4, 10)`) is first versioned: an affine.if chain holds one
copy of the loop per result (`%it + 4 <= 10`: the copy ending at `%it + 4`), each one peeled.

`full-tiles` splits a tile loop (as loop-tile / loop-strip-mine make it: a point loop inside runs
to `min(iv_t + S, N)`) into the full tiles, where the point loops run exactly S iterations with
no min, and the partial tile, a copy `<name>_peel` after it that keeps the min:

Before:  affine.for %i_t = 0 to 100 step 32 {
           affine.for %i = (d0)->(d0)(%i_t) to min (d0)->(d0 + 32, 100)(%i_t) { S } }
After:   affine.for %i_t = 0 to 96 step 32 {
           affine.for %i = (d0)->(d0)(%i_t) to (d0)->(d0 + 32)(%i_t) { S } }
         affine.for %i_t = 96 to 100 step 32 { ...min... } {loopopt.name = "i_t_peel"}

When the end of the full tiles is a min of loop IVs, the body of the tile loop is versioned
instead: `affine.if` (full tile: point loops without min) `else` (the original body).

With `loop=` that tile loop is split; without, every tile loop in turn, outer ones first (the
partial copy of an outer tile loop has its inner tile loops split too). Peeling keeps the order
of iterations, so it is always legal. Mechanics: `loopopt.loops.peel`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation

from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import functions, loops_in, named_loops
from loopopt.loops.peel import peel_back, peel_front, point_loops, separate_full_tiles
from loopopt.passes import LoopoptPass


def separate_all_full_tiles(fn: Operation, pass_name: str) -> None:
    """Separate the full tiles of every tile loop under `fn`, outermost first."""
    done: set[int] = set()
    while True:
        tile = next(
            (loop for loop in loops_in(fn) if id(loop) not in done and point_loops(loop)), None
        )
        if tile is None:
            return
        partial = separate_full_tiles(tile, pass_name)
        done.update((id(tile), id(partial)) if partial is not None else (id(tile),))


@dataclass(frozen=True)
class LoopPeelPass(LoopoptPass):
    """Peel count iterations off a loop (count<0: the last ones), or separate full tiles."""

    name = "loop-peel"

    loop: str | None = None
    """The loop to peel (required with count), or the tile loop to split (full-tiles)."""

    count: int = 0
    """Iterations to peel: N > 0 the first N, N < 0 the last |N|."""

    full_tiles: bool = False
    """Split tile loops into full tiles (point loops without min) and the partial tile."""

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.full_tiles and self.count != 0:
            raise LoopoptError(f"{self.name}: give count= or full-tiles, not both", op=op)
        if not self.full_tiles and self.count == 0:
            raise LoopoptError(
                f"{self.name}: needs count=N (N > 0: first N iterations, N < 0: last |N|) or "
                "full-tiles",
                op=op,
            )
        if self.loop is None:
            if not self.full_tiles:
                raise LoopoptError(f"{self.name}: count= needs loop=NAME", op=op)
            for fn in functions(op, self.func):
                separate_all_full_tiles(fn, self.name)
            return
        roots = functions(op, self.func) if self.func else [op]
        targets = [loop for root in roots for loop in named_loops(root, self.loop, self.name)]
        for loop in targets:
            if self.full_tiles:
                separate_full_tiles(loop, self.name)
            elif self.count > 0:
                peel_front(loop, self.count, self.name)
            else:
                peel_back(loop, -self.count, self.name)
