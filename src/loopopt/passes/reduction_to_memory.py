"""Keep a loop's iter_args in memory instead of registers (`reduction-to-memory`).

    reduction-to-memory{loop=k func=lu}

Before:  %0 = affine.load %A[%i, %j]
         %1 = affine.for %k = 0 to %j iter_args(%w = %0) -> (f64) {
           %4 = arith.mulf %2, %3          (%2 = A[i, k], %3 = A[k, j])
           %5 = arith.subf %w, %4
           affine.yield %5 : f64 } {loopopt.name = "k"}
         %7 = arith.divf %1, %6            (%6 = A[j, j])
         affine.store %7, %A[%i, %j]
After:   affine.for %k = 0 to %j {
           %w = affine.load %A[%i, %j]
           %4 = arith.mulf %2, %3
           %5 = arith.subf %w, %4
           affine.store %5, %A[%i, %j] } {loopopt.name = "k"}
         %w_1 = affine.load %A[%i, %j]
         %7 = arith.divf %w_1, %6
         affine.store %7, %A[%i, %j]

The inverse of `scalar-replace`: the front-end turns a Python scalar temporary into iter_args;
statements that communicate only through memory are what a polyhedral scheduler reorders. Each
iter_arg moves into the element X[f] its result is stored to after the loop, when islpy proves
that nothing from the loop to that store touches X[f] in the same iteration of the loops around
(analysis/demotion.py); with `scratch`, an iter_arg without such an element moves into a new
rank-0 `memref.alloca` before the loop instead (private to each iteration of the loops around,
so the dependence analysis sees no dependence carried by them through it). Mechanics:
loops/demote.py.

A loop is demoted when all its iter_args can be (the loop then has none left). `loop=NAME`:
every loop of that name with iter_args must be, else an error says why. Without `loop=`: every
loop with iter_args (of `func=`, or every function), innermost first, those that cannot be
with a warning that says why; a warning too when there is no loop with iter_args.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin

from loopopt.analysis.demotion import Home, home, storable
from loopopt.analysis.legality import loop_label
from loopopt.diagnostics import LoopoptError, warning
from loopopt.loops.demote import demote
from loopopt.loops.nest import functions, loops_in, named_loops
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class ReductionToMemoryPass(LoopoptPass):
    """Move loop iter_args into the element their result is stored to (or a scratch buffer)."""

    name = "reduction-to-memory"
    option_order = ("loop",)

    loop: str | None = None
    """Only the loops of this name (each must qualify); default: every loop that qualifies."""

    scratch: bool = False
    """An iter_arg whose result has no element to live in goes to a new rank-0 alloca."""

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        roots = functions(op, self.func) if self.func or self.loop is None else [op]
        if self.loop is not None:
            named = [loop for root in roots for loop in named_loops(root, self.loop, self.name)]
            loops = [loop for loop in named if loop.inits]
            if not loops:
                raise LoopoptError(
                    f"{self.name}: no loop named '{self.loop}' has iter_args", op=named[0]
                )
        else:
            loops = [loop for root in roots for loop in loops_in(root) if loop.inits]
        for loop in reversed(loops):  # inner loops first
            plan = self.plan(loop)
            if isinstance(plan, str):
                message = f"{self.name}: loop {loop_label(loop)} left as it is: {plan}"
                if self.loop is not None:
                    raise LoopoptError(message, op=loop)
                warning(message, op=loop)
                continue
            demote(loop, plan)
        if not loops:
            where = f"@{self.func}" if self.func else "the module"
            warning(f"{self.name}: no affine.for with iter_args in {where}", op=op)

    def plan(self, loop: affine.ForOp) -> list[Home | None] | str:
        """Where each iter_arg of `loop` goes (None: a scratch buffer), or why it cannot."""
        homes: list[Home | None] = []
        for position, arg in enumerate(loop.body.block.args[1:]):
            found = home(loop, position)
            label = f"iter_arg %{arg.name_hint}" if arg.name_hint else f"iter_arg {position}"
            shared = isinstance(found, Home) and any(
                h is not None and h.store is found.store for h in homes
            )
            if shared:
                found = "its result is stored where another iter_arg's result is"
            if isinstance(found, Home):
                homes.append(found)
            elif not self.scratch:
                return f"{label}: {found}"
            elif not storable(arg.type):
                return f"{label}: {found}, and a {arg.type} cannot live in a scratch buffer"
            else:
                homes.append(None)
        return homes
