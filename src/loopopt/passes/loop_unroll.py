"""Unroll loops by a factor with a remainder loop, or fully (`loop-unroll`).

Before:  affine.for %k = 0 to 10 { S(%k) } {loopopt.name = "k"}                  unroll-factor=4
After:   affine.for %k = 0 to 8 step 4 { S(%k) S(%k + 1) S(%k + 2) S(%k + 3) } {loopopt.name = "k"}
         affine.for %k = 8 to 10 { S(%k) } {loopopt.name = "k_rem"}

Targets: the loop named by `loop=`, else every innermost loop of each function. The factor
defaults to 4; a constant trip count of at most the factor unrolls fully, and a factor that
divides a constant trip count leaves no remainder. Copies of inner loops keep their names; the
remainder loop is named `<name>_rem`. A loop bounded by a max/min of loop IVs (a point loop of
loop-tile: `min(%it + 8, %n)`) gets no remainder: copy u runs under an `affine.if` on `iv + u *
step` being below every upper bound (upstream MLIR takes no affine.min of IVs as a loop bound
operand, so the split point cannot be computed). `unroll-full` replaces a loop with a constant
trip count by its iterations (a default target whose trip count is not constant is left alone;
a named one is an error); with `in-llvm` the loop stays rolled, marked
`loopopt.unroll_in_llvm`, and LLVM unrolls it fully (`llvm.loop.unroll.full` on its back edge:
the same code without thousands of ops for the passes after it and the lowering to walk).
Unrolling keeps the order of iterations, so it is always legal. An unroll that would create
more than `max-ops` ops (65536 by default) is refused before anything changes. Mechanics:
`loopopt.loops.unroll`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import UnitAttr

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import UNROLL_IN_LLVM
from loopopt.loops.nest import describe_loop, function_ops, innermost_loops, named_loops, trip_count
from loopopt.loops.unroll import MAX_OPS, unroll
from loopopt.loops.unroll import unroll_full as unroll_fully
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class LoopUnrollPass(LoopoptPass):
    """Unroll loops (default: the innermost) by unroll-factor with a remainder loop, or fully."""

    name = "loop-unroll"

    unroll_factor: int = 4
    """Copies of the body per iteration of the unrolled loop (>= 1)."""

    unroll_full: bool = False
    """Unroll completely (loops with a constant trip count)."""

    loop: str | None = None
    """The loop to unroll, by name (default: the innermost loops)."""

    func: str | None = None
    """Only this function."""

    max_ops: int = MAX_OPS
    """The most ops one unroll may create (copies × ops of the body); more is refused."""

    in_llvm: bool = False
    """With unroll-full: leave the loop rolled and mark it for LLVM to unroll fully."""

    def spelled_out(self) -> tuple[str, ...]:
        return () if self.unroll_full else ("unroll_factor",)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.unroll_factor < 1:
            raise LoopoptError(
                f"{self.name}: unroll-factor must be at least 1, got {self.unroll_factor}", op=op
            )
        if self.max_ops < 0:
            raise LoopoptError(f"{self.name}: max-ops must be >= 0, got {self.max_ops}", op=op)
        if self.loop is not None:
            roots = function_ops(op, self.func) if self.func else [op]
            targets = [loop for root in roots for loop in named_loops(root, self.loop, self.name)]
        else:
            targets = [loop for fn in function_ops(op, self.func) for loop in innermost_loops(fn)]
        if self.in_llvm and not self.unroll_full:
            raise LoopoptError(f"{self.name}: in-llvm needs unroll-full", op=op)
        for loop in targets:
            if self.in_llvm and trip_count(loop) is not None:
                loop.attributes[UNROLL_IN_LLVM] = UnitAttr()
            elif not self.unroll_full:
                unroll(loop, self.unroll_factor, self.name, self.max_ops)
            elif trip_count(loop) is not None:
                unroll_fully(loop, self.name, self.max_ops)
            elif self.loop is not None:
                raise LoopoptError(
                    f"{self.name}: cannot fully unroll '{describe_loop(loop)}': its trip count "
                    "is not constant",
                    op=loop,
                )
