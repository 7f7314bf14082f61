"""Split a loop into one loop per group of its body's statements (`loop-distribute{loop=i}`).

Before:  affine.for %i = 0 to 8 {                   After:  affine.for %i = 0 to 8 {
           affine.store %z, %tmp[%i]                           affine.store %z, %tmp[%i]
           affine.for %j … { tmp[i] += A[i, j] }             } {loopopt.name = "i"}
         } {loopopt.name = "i"}                              affine.for %i = 0 to 8 {
                                                               affine.for %j … { tmp[i] += … }
                                                             } {loopopt.name = "i"}

Every loop named by `loop=` (inner ones first) is split into the finest legal groups of
`loopopt.analysis.distribution`: statements tied by a dependence cycle, by scalar values or by
iter_args stay together, the groups run in an order that keeps every dependence forward (the
original order where it is free), pure ops are duplicated into each group that uses them; each
copy keeps the loop's name and attributes, so each group can become its own parallel band. The
groups are checked again against the dependences (`require_distribution_legal`) before the loop
is changed. A loop whose body is one group is left as it is, with a warning on stderr.
Mechanics: `loopopt.loops.distribute`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin

from loopopt.analysis.distribution import (
    backward_dependence,
    distribution_groups,
    statement_units,
)
from loopopt.analysis.legality import loop_label, require_distribution_legal
from loopopt.diagnostics import LoopoptError, warning
from loopopt.loops.distribute import distribute
from loopopt.loops.nest import functions, named_loops
from loopopt.passes import LoopoptPass


def one_group_reason(loop: affine.ForOp) -> str:
    """Why `loop`'s body is a single group, for the warning."""
    units = statement_units(loop)
    if not units:
        return "its body has no statement"
    if len(units) == 1:
        return "its body is one statement (ops tied by scalar values count as one)"
    cycle = backward_dependence(loop)
    example = f", e.g. {cycle.describe()}" if cycle is not None else ""
    return f"its {len(units)} statements are tied by a dependence cycle{example}"


@dataclass(frozen=True)
class LoopDistributePass(LoopoptPass):
    """Split a loop into one loop per group of statements that no dependence cycle ties."""

    name = "loop-distribute"

    loop: str | None = None
    """The loop(s) to distribute, by name (required; every loop of that name)."""

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.loop is None:
            raise LoopoptError(f"{self.name}: loop=NAME is required", op=op)
        roots = functions(op, self.func) if self.func else [op]
        targets = [loop for root in roots for loop in named_loops(root, self.loop, self.name)]
        for loop in reversed(targets):  # inner loops first: outer copies hold them distributed
            groups = distribution_groups(loop)
            if len(groups) < 2:
                warning(
                    f"{self.name}: loop {loop_label(loop)} left as it is: "
                    + one_group_reason(loop),
                    op=loop,
                )
                continue
            require_distribution_legal(loop, groups, self.name)
            distribute(loop, groups, self.name)
