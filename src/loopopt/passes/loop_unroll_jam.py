"""Unroll a loop and jam the copies into its inner loops (`loop-unroll-jam`): register tiling.

Before:  affine.for %j = 0 to 6 {                              unroll-jam-factor=2
           affine.for %k = 0 to 8 { S(%j, %k) }
         } {loopopt.name = "j"}
After:   affine.for %j = 0 to 6 step 2 {
           affine.for %k = 0 to 8 { S(%j, %k)  S(%j + 1, %k) }
         } {loopopt.name = "j"}

Targets: the loop named by `loop=`, else each loop just outside an innermost loop and each lone
loop (no loop around or inside it), deepest first.
The factor defaults to 4 and is lowered to a smaller constant trip count. Leftover iterations run
in a remainder loop `<name>_rem` (not jammed), or, when the loop is bounded by a max/min of loop
IVs (a point loop), the jammed statements of each copy run under an `affine.if` that keeps them in
bounds; jammed inner loops keep their names. A loop with no loop inside has nothing to jam: it is
unrolled (`loop-unroll`'s mechanics: iter_args flow through the copies in order, where MLIR's
affine-loop-unroll-jam gives each copy its own accumulator). Refused with a diagnostic: a loop
carrying iter_args around inner loops, inner loops whose bounds vary with the unrolled IV
(triangular nests), and any dependence that jamming would reverse
(`loopopt.analysis.legality.require_unroll_jam_legal`), and copies that would be more than
`max-ops` ops (65536 by default). Mechanics: `loopopt.loops.unroll_jam`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin
from xdsl.ir import Operation

from loopopt.analysis.legality import require_unroll_jam_legal
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import enclosing_loops, function_ops, innermost_loops, named_loops
from loopopt.loops.unroll import MAX_OPS, unroll
from loopopt.loops.unroll_jam import unroll_jam, unroll_jam_obstacle
from loopopt.passes import LoopoptPass


def jam_targets(root: Operation) -> list[affine.ForOp]:
    """The loops just outside innermost loops under `root`, and lone loops (no loop around or
    inside them: nothing to jam, they are unrolled, as MLIR's pass does), deepest first (each
    once)."""
    found: list[affine.ForOp] = []
    for inner in innermost_loops(root):
        outer = enclosing_loops(inner) or [inner]
        if not any(outer[-1] is known for known in found):
            found.append(outer[-1])
    return sorted(found, key=lambda loop: -len(enclosing_loops(loop)))


@dataclass(frozen=True)
class LoopUnrollJamPass(LoopoptPass):
    """Unroll a loop (default: each loop just outside the innermost) and jam the copies inside."""

    name = "loop-unroll-jam"
    option_order = ("loop",)

    unroll_jam_factor: int = 4
    """Copies of the body per iteration of the unrolled loop (>= 1)."""

    loop: str | None = None
    """The loop to unroll and jam, by name (default: the loops just outside the innermost)."""

    func: str | None = None
    """Only this function."""

    max_ops: int = MAX_OPS
    """The most ops one unroll-and-jam may create (copies × ops of the body); more is refused."""

    def spelled_out(self) -> tuple[str, ...]:
        return ("unroll_jam_factor",)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        factor = self.unroll_jam_factor
        if factor < 1:
            raise LoopoptError(
                f"{self.name}: unroll-jam-factor must be at least 1, got {factor}", op=op
            )
        if self.max_ops < 0:
            raise LoopoptError(f"{self.name}: max-ops must be >= 0, got {self.max_ops}", op=op)
        if self.loop is not None:
            roots = function_ops(op, self.func) if self.func else [op]
            targets = [loop for root in roots for loop in named_loops(root, self.loop, self.name)]
        else:
            targets = [loop for fn in function_ops(op, self.func) for loop in jam_targets(fn)]
        for loop in targets:
            if not any(
                isinstance(inner, affine.ForOp) for inner in loop.walk() if inner is not loop
            ):
                unroll(loop, factor, self.name, self.max_ops)  # nothing to jam
                continue
            obstacle = unroll_jam_obstacle(loop)
            if obstacle is not None:
                raise LoopoptError(f"{self.name}: {obstacle[0]}", op=obstacle[1])
            require_unroll_jam_legal(loop, self.name, factor)
            unroll_jam(loop, factor, self.name, self.max_ops)
