"""Run the diagonal's guards only on the diagonal: version a loop body on them (`version-guards`).

    version-guards{loop=k_t func=symm_k2}

Before:  affine.for %k_t = 0 to 1000 step 8 {
           … %c = arith.cmpi slt, %k, %i   %a = arith.select %c, %x, %zero {loopopt.padded} …
           %s = arith.addf %acc, %p …   affine.yield %s }
After:   affine.for %k_t = 0 to 1000 step 8 {
           %s = affine.if (%i_min - %k_max - 1 >= 0) -> f32 {   … no selects …   affine.yield %s }
                else {   … as before …   affine.yield %s }
           affine.yield %s }

`pad-tiles` zeroes the factors of an accumulation past a reduction loop's original bound with
`arith.select` (a triangle's `k < i`); in the loops named `loop=` (of `func=`, or of every
function, func.func and gpu.func), each run of body ops between barriers that holds such selects
gets a copy without them, under an `affine.if` on all their conditions (the tightest of those
that differ by a constant), so that the tiles off the diagonal run without them; where every
condition fails and the ops only add terms with such a select as a factor (the tiles of the
bounding box past the diagonal), they do not run. Exact: where the condition holds every select
takes its first operand; where all fail, the original loops ran nothing. Run it after the
body is unrolled (selects directly in the loop's body) and after `scalar-replace`. A loop
without such selects is left as it is. Mechanics: `loopopt.loops.version_guards`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin

from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import find_loops, function_ops
from loopopt.loops.version_guards import version_guards
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class VersionGuardsPass(LoopoptPass):
    """Copy a loop body's padded guard selects away where all of them hold."""

    name = "version-guards"
    option_order = ("loop",)

    loop: str = ""
    """The loops whose bodies are versioned, by loopopt.name (required)."""

    func: str | None = None
    """Only this function (func.func or gpu.func)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if not self.loop:
            raise LoopoptError(f"{self.name}: loop=NAME is required", op=op)
        loops = [loop for fn in function_ops(op, self.func) for loop in find_loops(fn, self.loop)]
        if not loops:
            raise LoopoptError(f"{self.name}: no loop named '{self.loop}'", op=op)
        for loop in loops:
            version_guards(loop)
