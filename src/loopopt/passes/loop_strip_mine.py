"""Strip-mine a loop into a strided outer loop and a short inner loop (`loop-strip-mine`).

Before:  affine.for %i = 0 to 100 { S } {loopopt.name = "i"}                         factor=32
After:   affine.for %i_s = 0 to 100 step 32 {
           affine.for %i = (d0) -> (d0)(%i_s) to min (d0) -> (d0 + 32, 100)(%i_s) { S }
             {loopopt.name = "i"}
         } {loopopt.name = "i_s"}

The loop is the one named by `loop=`, else every top-level loop of each function. The iteration
order does not change, so strip-mining is always legal. Mechanics: `loopopt.loops.strip_mine`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin

from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import functions, named_loops, outermost_loops
from loopopt.loops.strip_mine import strip_mine
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class LoopStripMinePass(LoopoptPass):
    """Split a loop (default: each top-level loop) into strips of factor iterations."""

    name = "loop-strip-mine"

    factor: int = 0
    """Iterations per strip (required, >= 1)."""

    loop: str | None = None
    """The loop to strip-mine, by name (default: the top-level loops of each function)."""

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.loop is not None:
            roots = functions(op, self.func) if self.func else [op]
            loops = [loop for root in roots for loop in named_loops(root, self.loop, self.name)]
        else:
            loops = [loop for fn in functions(op, self.func) for loop in outermost_loops(fn)]
        if self.factor < 1:
            raise LoopoptError(
                f"{self.name}: factor must be a positive integer, got {self.factor}",
                op=loops[0] if loops else op,
            )
        for loop in loops:
            strip_mine(loop, self.factor, self.name)
