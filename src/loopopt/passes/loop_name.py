"""Name unnamed loops `i0, i1, …` in pre-order within each function.

Before:  affine.for %a = 0 to 8 { affine.for %b = 0 to 8 {...} }
After:   affine.for %a = 0 to 8 { affine.for %b = 0 to 8 {...} {loopopt.name = "i1"} }
             {loopopt.name = "i0"}

Names already present are kept, and a generated name never repeats one that exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin

from loopopt.loops.nest import functions, loop_name, loops_in, name_unnamed
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class LoopNamePass(LoopoptPass):
    """Name unnamed loops i0, i1, ... in pre-order within each function."""

    name = "loop-name"

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for fn in functions(op, self.func):
            loops = list(loops_in(fn))
            name_unnamed(loops, {n for n in map(loop_name, loops) if n is not None})
