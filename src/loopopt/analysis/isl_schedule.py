"""Exact dependences between statement instances, a new schedule from isl's scheduler, and the
isl AST of that schedule (what `loop-reschedule` turns back into affine loops).

    lu (in place):                          dependences: RAW/WAR/WAW union maps, e.g.
      for i: for j < i: for k < j: S0         S2[i, j, k] -> S0[i', j', k'] : … (A[i, j])
                        S1 (A[i,j] /= A[j,j]) schedule (outer coincidence): k outer, then
             for j >= i: for k < i: S2        i, j coincident (parallel) inside it
                                              AST: for c0 { for c1 { S1(c1, c0); for c2 … } }

Dependences are the pairs of instances touching the same element of the same memref (at least
one writing) that the original 2d+1 schedule orders (`UnionMap.lex_lt_union_map`): RAW, WAR and
WAW, all exact (`analysis.statements` refused everything else). They are the validity,
coincidence and proximity constraints of `isl.ScheduleConstraints`; the scheduler runs in a
context of its own with `schedule_outer_coincidence` (an outer band member is coincident, i.e.
parallel, where one exists: the right-looking lu, the wavefronts of seidel-2d) and
`schedule_whole_component` (the statements of a component stay fused under their sequential
loop), and `schedule_serialize_sccs`: inside that loop, each strongly connected component gets
loops of its own, so that each is a perfect parallel nest that gpu-map-loops spreads over a 2-D
grid (fused under one parallel i, lu's two updates left j sequential in each thread: 1.29 s
against 16.6 s for lu at n=2000 on the H200, with the triangular boxes of loops/box.py).
"""

from __future__ import annotations

import islpy as isl

from loopopt.analysis.statements import NestStatements
from loopopt.diagnostics import LoopoptError

CTX = isl.Context()
CTX.set_schedule_outer_coincidence(1)
CTX.set_schedule_whole_component(1)
CTX.set_schedule_serialize_sccs(1)  # one perfect nest per component (see the docstring)


def domain(nest: NestStatements) -> isl.UnionSet:
    """The union of the statements' domains."""
    params = list(nest.params)
    result = isl.UnionSet.empty(isl.Space.params_alloc(CTX, 0))
    for stmt in nest.statements:
        result = result.union(isl.UnionSet(stmt.domain_text(params), context=CTX))
    return result


def original_schedule(nest: NestStatements) -> isl.UnionMap:
    """The 2d+1 schedule of the statements as written, on their domains."""
    params, width = list(nest.params), nest.width
    result = isl.UnionMap.empty(isl.Space.params_alloc(CTX, 0))
    for stmt in nest.statements:
        result = result.union(isl.UnionMap(stmt.schedule_text(params, width), context=CTX))
    return result.intersect_domain(domain(nest))


def accesses(nest: NestStatements, writes: bool) -> isl.UnionMap:
    """{ S[s] -> M[o] } of the writes (or reads), on the statements' domains."""
    result = isl.UnionMap.empty(isl.Space.params_alloc(CTX, 0))
    for stmt in nest.statements:
        for access in stmt.accesses:
            if access.is_write == writes:
                text = nest.access_text(access, stmt)
                result = result.union(isl.UnionMap(text, context=CTX))
    return result.intersect_domain(domain(nest))


def dependences(nest: NestStatements) -> isl.UnionMap:
    """RAW ∪ WAR ∪ WAW between statement instances, in the original order."""
    schedule = original_schedule(nest)
    before = schedule.lex_lt_union_map(schedule)
    writes, reads = accesses(nest, True), accesses(nest, False)
    raw = writes.apply_range(reads.reverse())
    war = reads.apply_range(writes.reverse())
    waw = writes.apply_range(writes.reverse())
    return raw.union(war).union(waw).intersect(before).coalesce()


def new_schedule(nest: NestStatements) -> isl.Schedule:
    """isl's schedule of the statements under their dependences (validity, coincidence and
    proximity all the dependences)."""
    deps = dependences(nest)
    constraints = (
        isl.ScheduleConstraints.on_domain(domain(nest))
        .set_validity(deps)
        .set_coincidence(deps)
        .set_proximity(deps)
    )
    try:
        return constraints.compute_schedule()
    except isl.Error as e:  # e.g. "unable to carry dependences" (bounded coefficients)
        reason = str(e).split("failed:", 1)[-1].split(" in /")[0].strip() or str(e)
        raise LoopoptError(
            f"loop-reschedule: isl's scheduler found no schedule ({reason})", op=nest.root
        ) from None


def ast_of(nest: NestStatements, schedule: isl.Schedule) -> isl.AstNode:
    """The isl AST that runs `schedule` (valid for every value of the parameters)."""
    context = isl.Set(f"[{', '.join(nest.params)}] -> {{ : }}", context=CTX)
    return isl.AstBuild.from_context(context).node_from_schedule(schedule)
