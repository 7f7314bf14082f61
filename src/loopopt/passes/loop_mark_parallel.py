"""Mark the loops that carry no dependence with the unit attribute `loopopt.parallel`.

Before:  affine.for %i … { affine.for %k … { C[i] += A[i, k] } {loopopt.name = "k"} }
             {loopopt.name = "i"}
After:   affine.for %i … { affine.for %k … { … } {loopopt.name = "k"} }
             {loopopt.name = "i", loopopt.parallel}

The attribute is removed from loops that carry a dependence, so the marks always match the IR
as it is now (`gpu-map-loops` reads them). Dependences are exact (islpy), see
`loopopt.analysis.parallel`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin

from loopopt.analysis.parallel import parallel_loops
from loopopt.loops.nest import functions, loops_in, mark_parallel
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class LoopMarkParallelPass(LoopoptPass):
    """Mark loops that carry no dependence with loopopt.parallel (and unmark the others)."""

    name = "loop-mark-parallel"

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for fn in functions(op, self.func):
            parallel = set(parallel_loops(fn))
            for loop in loops_in(fn):
                mark_parallel(loop, loop in parallel)
