"""Lamport's hyperplane (wavefront) schedule of a nest whose statements share all their loops:
one outer loop `w = h·x` carries every dependence, so every loop inside it is parallel.

    seidel-2d, in place (every loop carries a dependence):
      for t: for i: for j: A[i, j] = (A[i-1, j-1] + … + A[i+1, j+1]) / 9
    dependence distances (t, i, j): (0, 0, 1), (0, 1, -1), (1, -1, -1), … (exact, islpy)
    h = (4, 2, 1): the cheapest h with h·d >= 1 for every distance d
    schedule S[t, i, j] -> [4t + 2i + j, t, i]: w sequential (a host loop), t and i parallel,
    j = w - 4t - 2i

isl's scheduler (`analysis.isl_schedule`) finds the outermost parallel loops it can, but may
leave sequential loops inside them (seidel-2d: c0 = 2t + i, t parallel, j sequential in each
thread: 6.1 s at PolyBench's LARGE size on an H200). The hyperplane trades those for one
sequential loop around everything.

`hyperplane(nest)` searches the coefficient vectors h in [0, MAX_COEFFICIENT]^n in order of
the number of wavefronts they make (`Σ h_k·(extent_k - 1) + 1`, extents from the domain's
bounding box, `PARAMETRIC_EXTENT` where a parameter bounds it) and returns the first with
h·d >= 1 for every dependence distance d between two different iterations (islpy, exact:
the set of distances with h·d <= 0 is empty); dependences within one iteration keep the
statements' textual order, which the schedule's last dimension keeps. `hyperplane_schedule`
is the schedule map: S_k[x] -> [h·x, x without one dimension d, position of S_k], d the
innermost with h_d = 1 (x_d is then w minus the rest), or x whole where no h_d is 1.

None (no such schedule) where the statements do not all sit in the same loops, the nest is
deeper than `MAX_LOOPS`, or no h in the box carries every dependence.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import islpy as isl

from loopopt.analysis.isl_schedule import CTX, dependences, domain
from loopopt.analysis.statements import NestStatements

MAX_COEFFICIENT = 4
"""The largest coefficient of h tried (seidel-2d needs 4 on t)."""
MAX_LOOPS = 4
"""Deeper nests are not searched (5^n candidates)."""
PARAMETRIC_EXTENT = 1024
"""The extent assumed for a loop whose bounds depend on a parameter."""


@dataclass(frozen=True)
class Hyperplane:
    """The coefficients h (outermost loop first) and the wavefront count they make."""

    coefficients: tuple[int, ...]
    wavefronts: int
    points: int
    """Iterations of the bounding box (with PARAMETRIC_EXTENT for parametric extents)."""

    @property
    def width(self) -> float:
        """Iterations per wavefront, on average: the parallelism each launch has."""
        return self.points / self.wavefronts


def shared_loops(nest: NestStatements) -> int | None:
    """The loop count of every statement when all sit in the same loops, else None."""
    first = nest.statements[0].loops if nest.statements else ()
    if not first or any(s.loops != first for s in nest.statements):
        return None
    return len(first)


def _common(nest: NestStatements, n: int) -> isl.UnionMap:
    """S_k[s0 … s(n-1)] -> T[s0 … s(n-1), k] for every statement."""
    params = ", ".join(nest.params)
    dims = ", ".join(f"s{k}" for k in range(n))
    result = isl.UnionMap.empty(isl.Space.params_alloc(CTX, 0))
    for position, stmt in enumerate(nest.statements):
        text = f"[{params}] -> {{ {stmt.name}[{dims}] -> T[{dims}, {position}] }}"
        result = result.union(isl.UnionMap(text, context=CTX))
    return result


def _constant(bound: isl.PwAff, pick: type[min] | type[max]) -> int | None:
    """The bound's value where every piece is the same constant kind, else None."""
    pieces = bound.get_pieces()
    if not pieces or not all(aff.is_cst() for _, aff in pieces):
        return None
    return pick(int(aff.get_constant_val().to_python()) for _, aff in pieces)


def _extents(space: isl.Set, n: int) -> list[int]:
    extents: list[int] = []
    for k in range(n):
        low, high = _constant(space.dim_min(k), min), _constant(space.dim_max(k), max)
        extents.append(PARAMETRIC_EXTENT if low is None or high is None else max(high - low + 1, 1))
    return extents


def hyperplane(nest: NestStatements) -> Hyperplane | None:
    """The cheapest h carrying every dependence between iterations; see the module docstring."""
    n = shared_loops(nest)
    if n is None or n > MAX_LOOPS:
        return None
    common = _common(nest, n)
    deps = dependences(nest).apply_domain(common).apply_range(common)
    points_set = domain(nest).apply(common)
    if points_set.is_empty():
        return None
    box = isl.Set.from_union_set(points_set).project_out(isl.dim_type.set, n, 1)
    extents = _extents(box, n)
    points = 1
    for e in extents:
        points *= e
    params = ", ".join(nest.params)
    dims = [f"d{k}" for k in range(n)]
    between = " or ".join(f"{d} != 0" for d in dims)
    if deps.is_empty():
        return Hyperplane((0,) * n, 1, points)
    distances = isl.Set.from_union_set(deps.deltas())

    def wavefronts(h: tuple[int, ...]) -> int:
        return sum(c * (e - 1) for c, e in zip(h, extents, strict=True)) + 1

    candidates = sorted(
        (h for h in itertools.product(range(MAX_COEFFICIENT + 1), repeat=n) if any(h)),
        key=lambda h: (wavefronts(h), h[::-1]),
    )
    for h in candidates:
        dot = " + ".join(f"{c}*{d}" for c, d in zip(h, dims, strict=True) if c) or "0"
        text = f"[{params}] -> {{ T[{', '.join(dims)}, p] : {dot} <= 0 and ({between}) }}"
        if distances.intersect(isl.Set(text, context=CTX)).is_empty():
            return Hyperplane(h, wavefronts(h), points)
    return None


def hyperplane_schedule(nest: NestStatements, plane: Hyperplane) -> isl.UnionMap:
    """S_k[x] -> [h·x, x without its innermost dimension of coefficient 1, position k]."""
    h = plane.coefficients
    n = len(h)
    dims = [f"s{k}" for k in range(n)]
    dropped = next((k for k in reversed(range(n)) if h[k] == 1), None)
    kept = [d for k, d in enumerate(dims) if k != dropped]
    w = " + ".join(f"{c}*{d}" for c, d in zip(h, dims, strict=True) if c) or "0"
    params = ", ".join(nest.params)
    result = isl.UnionMap.empty(isl.Space.params_alloc(CTX, 0))
    for position, stmt in enumerate(nest.statements):
        out = ", ".join([w, *kept, str(position)])
        text = f"[{params}] -> {{ {stmt.name}[{', '.join(dims)}] -> [{out}] }}"
        result = result.union(isl.UnionMap(text, context=CTX))
    return result.intersect_domain(domain(nest))


def ast_of_map(nest: NestStatements, schedule: isl.UnionMap) -> isl.AstNode:
    """The isl AST that runs the schedule map (valid for every value of the parameters)."""
    context = isl.Set(f"[{', '.join(nest.params)}] -> {{ : }}", context=CTX)
    return isl.AstBuild.from_context(context).node_from_schedule_map(schedule)
