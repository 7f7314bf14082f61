"""Index-set splitting: a statement's domain cut where its self-dependences change direction,
so that isl's scheduler can give each piece parallel loops (`loop-reschedule{split}`).

    floyd-warshall: for k: for i: for j: p[i, j] = min(p[i, j], p[i, k] + p[k, j])
    writes p[i, j]; reads p[i, k] and p[k, j]: rows and columns k are read by every (i, j) of
    step k and written by some, before some readers and after others, so neither i nor j is
    parallel as written
    surfaces: j - k (p[i, j] against p[i, k]) and i - k (p[i, j] against p[k, j])
    pieces: S0 with i < k, i = k, i > k, each with j < k, j = k, j > k: 9 statements
    isl's schedule then: k sequential, each piece a parallel (i, j) nest inside it

A surface comes from a write and a read of the same array in one statement: at each subscript
position where the two differ by a non-constant affine form of the statement's loop variables
(no parameters, no divisions), that form (sign normalized, duplicates dropped). A constant
difference (a stencil's `A[i - 1]`) is a uniform dependence that splitting does not help.
Each piece adds `f < 0`, `f = 0` or `f > 0` to the statement's domain; the pieces keep the
statement's ops, loops and textual position, so the original schedule and the dependences are
those of the statement cut into parts. At most MAX_SURFACES surfaces a statement (3^n pieces).
"""

from __future__ import annotations

from dataclasses import replace

from loopopt.analysis.access import Aff, Constraint, Dim
from loopopt.analysis.statements import NestStatements, Statement

MAX_SURFACES = 2
"""Surfaces used per statement (the first found): 9 pieces at most."""


def _normalized(form: Aff) -> Aff:
    """The form with a positive first coefficient (f and -f cut the same way)."""
    first = form.terms[0][1]
    return form if first > 0 else form.scale(-1)


def _depth(term: tuple[object, int]) -> int:
    dim = term[0]
    assert isinstance(dim, Dim)
    return dim.depth


def surfaces(stmt: Statement) -> list[Aff]:
    """The cutting forms of `stmt` (see the module docstring), in the order found."""
    found: list[Aff] = []
    writes = [a for a in stmt.accesses if a.is_write and a.memref is not None]
    reads = [a for a in stmt.accesses if not a.is_write]
    for w in writes:
        for r in reads:
            if r.memref is not w.memref:
                continue
            for wi, ri in zip(w.indices, r.indices, strict=True):
                if wi is None or ri is None:
                    continue
                diff = wi + ri.scale(-1)
                if diff.is_const() or not all(isinstance(t, Dim) for t, _ in diff.terms):
                    continue
                form = _normalized(Aff(tuple(sorted(diff.terms, key=_depth))))
                if form not in found:
                    found.append(form)
    return found[:MAX_SURFACES]


def _sides(form: Aff) -> list[Constraint]:
    """f < 0, f = 0, f > 0 as constraints."""
    return [
        Constraint(form.scale(-1) + Aff(const=-1)),
        Constraint(form, eq=True),
        Constraint(form + Aff(const=-1)),
    ]


def split_statements(nest: NestStatements) -> tuple[NestStatements, dict[str, str]] | None:
    """The nest with each statement cut along its surfaces, and each piece's original
    statement name; None where no statement has a surface."""
    pieces: list[Statement] = []
    origin: dict[str, str] = {}
    for stmt in nest.statements:
        cuts: list[tuple[Constraint, ...]] = [()]
        for form in surfaces(stmt):
            cuts = [(*cut, side) for cut in cuts for side in _sides(form)]
        if len(cuts) == 1:
            pieces.append(stmt)
            origin[stmt.name] = stmt.name
            continue
        for k, cut in enumerate(cuts):
            name = f"{stmt.name}_{k}"
            pieces.append(replace(stmt, name=name, domain=(*stmt.domain, *cut)))
            origin[name] = stmt.name
    if len(pieces) == len(nest.statements):
        return None
    return replace(nest, statements=tuple(pieces)), origin
