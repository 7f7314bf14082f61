"""Rescheduling one loop nest with isl's scheduler, where it pays: `reschedule_nest`.

    lu, in place, as written: i sequential, j sequential (first half), k sequential
    → c0 (the old k) sequential, then i, j parallel for every statement (right-looking lu)

The nest's statements (`analysis.statements`) get a new schedule from isl
(`analysis.isl_schedule`), or from isl after index-set splitting (`split`:
`analysis.index_split`, the pieces' depths counted for their statement), or Lamport's
hyperplane (`wavefront`: `analysis.hyperplane`), whose AST becomes affine loops
(`loops.isl_ast`) built before the nest. Each statement's *parallel depth* is the depth of
the outermost parallel loop around it (`analysis.parallel`: no dependence carried), taking
the worst over the copies of a statement the AST makes; none is deeper than any. The new
loops replace the nest when the new schedule pays: no statement's parallel depth gets worse
and one gets better (or always with `force`); else they are erased and the nest stays as it
is, with the reason in the outcome. Nests deeper than `MAX_LOOPS` are left as they are
(isl's scheduler's time grows steeply with the number of loops).

Refused (a `LoopoptError`, the IR unchanged): what `nest_statements` refuses and an AST that
`isl_ast.generate` cannot translate. Not checked here: nothing more (legality is isl's validity
constraints on exact dependences; for a hyperplane, h·d >= 1 for every exact distance d).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import affine
from xdsl.ir import Operation

from loopopt.analysis.hyperplane import MAX_COEFFICIENT, ast_of_map, hyperplane, hyperplane_schedule
from loopopt.analysis.hyperplane import MAX_LOOPS as HYPERPLANE_LOOPS
from loopopt.analysis.index_split import split_statements
from loopopt.analysis.isl_schedule import ast_of, new_schedule
from loopopt.analysis.parallel import parallel_loops
from loopopt.analysis.statements import NestStatements, nest_statements
from loopopt.loops.isl_ast import Generated, generate

Depths = dict[str, int | None]
"""Statement name -> depth of the outermost parallel loop around it (None: none)."""


MAX_LOOPS = 8
"""Deeper nests are left as they are: isl's scheduler takes seconds on 8 loops whose
dependences couple them all and minutes on 10 (16 loops of an output dependence: 18 s)."""


@dataclass(frozen=True)
class Outcome:
    """What `reschedule` did: `changed`, the parallel depths before and after, and why the
    nest was left as it is (`reason`, empty when changed)."""

    changed: bool
    old: Depths
    new: Depths
    reason: str = ""
    inner: int = 0
    """The most sequential loops inside a statement's outermost parallel loop (run in each
    thread) in the new schedule."""

    def depths_text(self) -> str:
        """`S0 -/1, S1 2/1` (old/new per statement, `-` for no parallel loop)."""

        def show(d: int | None) -> str:
            return "-" if d is None else str(d)

        return ", ".join(
            f"{name} {show(depth)}/{show(self.new[name])}"
            for name, depth in self.old.items()
            if name in self.new
        )


def _parallel_ids(roots: Sequence[Operation]) -> set[int]:
    return {id(loop) for root in roots for loop in parallel_loops(root)}


def _first_parallel(loops: Sequence[affine.ForOp], parallel: set[int]) -> int | None:
    return next((d for d, loop in enumerate(loops) if id(loop) in parallel), None)


def old_depths(nest: NestStatements) -> Depths:
    parallel = _parallel_ids([nest.root])
    return {s.name: _first_parallel(s.loops, parallel) for s in nest.statements}


def new_depths(generated: Generated) -> Depths:
    parallel = _parallel_ids(generated.ops)
    depths: Depths = {}
    for name, copies in generated.copies.items():
        found = [_first_parallel(loops, parallel) for loops in copies]
        depths[name] = None if None in found else max(d for d in found if d is not None)
    return depths


def _per_statement(generated: Generated, origin: dict[str, str]) -> Depths:
    """The parallel depths of the statements whose pieces (index-set splitting) the AST runs:
    the worst over the pieces, where a piece with no parallel loop that is no deeper than the
    other pieces' parallel loops (floyd-warshall's i = j = k: one instance per k) does not
    count."""
    depths = new_depths(generated)
    loops = {name: max(len(c) for c in copies) for name, copies in generated.copies.items()}
    merged: Depths = {}
    for key in dict.fromkeys(origin.values()):
        mine = [name for name in depths if origin[name] == key]
        if not mine:
            continue
        found = [d for name in mine if (d := depths[name]) is not None]
        deepest = max(found, default=None)
        worse = any(
            depths[name] is None and (deepest is None or loops[name] > deepest) for name in mine
        )
        merged[key] = None if worse else deepest
    return merged


def inner_sequential(generated: Generated) -> int:
    """The most loops inside a statement's outermost parallel loop that are not parallel."""
    parallel = _parallel_ids(generated.ops)
    most = 0
    for copies in generated.copies.values():
        for loops in copies:
            first = _first_parallel(loops, parallel)
            if first is not None:
                most = max(most, sum(id(loop) not in parallel for loop in loops[first:]))
    return most


def pays(old: Depths, new: Depths) -> bool:
    """No statement's parallel depth worse, one better (statements the AST dropped, with an
    empty domain, do not count)."""
    better = False
    for name, n in new.items():
        o = old[name]
        if o is None:
            better = better or n is not None
        elif n is None or n > o:
            return False
        else:
            better = better or n < o
    return better


def reschedule(
    nest: affine.ForOp,
    force: bool = False,
    accept: Callable[[Depths, Depths], bool] | None = None,
    wavefront: bool = False,
    min_width: float = 0.0,
    split: bool = False,
) -> Outcome:
    """Reschedule `nest` where it pays (always if `force`; `accept(old, new)` instead of `pays`
    where given), with isl's scheduler or, with `wavefront`, the hyperplane schedule of
    `analysis.hyperplane` (left where there is none, or where its wavefronts hold fewer than
    `min_width` iterations on average); with `split`, isl's scheduler on the statements cut
    where their self-dependences change direction (`analysis.index_split`; left where none
    is); see the module docstring."""
    statements = nest_statements(nest)
    scheduled, origin = statements, {s.name: s.name for s in statements.statements}
    if statements.width > MAX_LOOPS:
        return Outcome(
            False, {}, {}, f"{statements.width} loops deep (isl's scheduler: at most {MAX_LOOPS})"
        )
    if wavefront:
        plane = hyperplane(statements)
        if plane is None:
            reason = (
                "no hyperplane carries every dependence (statements in other loops, over "
                f"{HYPERPLANE_LOOPS} loops, or coefficients over {MAX_COEFFICIENT})"
            )
            return Outcome(False, {}, {}, reason)
        if plane.width < min_width:
            reason = f"the wavefronts of {plane.coefficients} hold {plane.width:.0f} iterations"
            return Outcome(False, {}, {}, reason)
        ast = ast_of_map(statements, hyperplane_schedule(statements, plane))
    elif split:
        cut = split_statements(statements)
        if cut is None:
            return Outcome(False, {}, {}, "no statement has a surface to split along")
        scheduled, origin = cut
        ast = ast_of(scheduled, new_schedule(scheduled))
    else:
        ast = ast_of(statements, new_schedule(statements))
    generated = generate(scheduled, ast)
    block = nest.parent_block()
    assert block is not None, "a nest is in a block"
    for op in generated.ops:
        block.insert_op_before(op, nest)
    generated.fold()
    old, new = old_depths(statements), _per_statement(generated, origin)
    inner = inner_sequential(generated)
    if not force and not (accept or pays)(old, new):
        for op in reversed(generated.ops):  # users before the values they use
            op.detach()
            op.erase()
        depths = Outcome(False, old, new).depths_text() or "no statement"
        reason = (
            "isl's schedule makes no statement parallel at a shallower depth (outermost "
            f"parallel loop depth, old/new: {depths})"
        )
        return Outcome(False, old, new, reason, inner)
    nest.detach()
    nest.erase()
    generated.name_loops()
    return Outcome(True, old, new, inner=inner)


def reschedule_nest(nest: affine.ForOp, force: bool = False) -> bool:
    """Whether `nest` was rescheduled (for auto-schedule; raises what `reschedule` refuses)."""
    return reschedule(nest, force).changed
