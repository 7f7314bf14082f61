"""The bounding box of a band whose bounds are affine in its outer loops (a triangle, a trapezoid).

    affine.for %i = 0 to 1200 {                          band_box([i, j])
      affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {    == [(0, 1199), (0, 1199)]
    affine.for %k = affine_map<(d0) -> (d0 + 1)>(%i) to 1000    k: (1, 999)

Each loop's IV ranges over the exact iteration set (islpy: every loop's bounds, and the stride
of a loop with a one-result lower bound); the box is the smallest and largest value of each IV
over that set. Nothing here changes the IR.
"""

from __future__ import annotations

from collections.abc import Sequence

import islpy as isl
from xdsl.dialects import affine
from xdsl.ir import SSAValue

from loopopt.analysis.footprint import isl_expr
from loopopt.analysis.nest import iv, step_of


def band_box(band: Sequence[affine.ForOp]) -> list[tuple[int, int]] | None:
    """(lowest, highest) value of each loop's IV over the band's iterations, outermost first;
    None when a bound uses a value that is not the IV of an outer loop of the band, or when the
    band runs no iteration."""
    names: dict[SSAValue, str] = {}
    constraints: list[str] = []
    exists: list[str] = []
    for depth, loop in enumerate(band):
        for bound_map, operands, relation in (
            (loop.lowerBoundMap.data, loop.lowerBoundOperands, ">="),
            (loop.upperBoundMap.data, loop.upperBoundOperands, "<"),
        ):
            if bound_map.num_symbols or any(v not in names for v in operands):
                return None
            dims = [names[v] for v in operands]
            exprs = [isl_expr(r, dims, []) for r in bound_map.results]
            constraints += [f"v{depth} {relation} {e}" for e in exprs]
            if relation == ">=" and step_of(loop) > 1 and len(exprs) == 1:
                exists.append(f"e{depth}")
                constraints.append(f"v{depth} = {exprs[0]} + {step_of(loop)} * e{depth}")
        names[iv(loop)] = f"v{depth}"
    variables = ", ".join(f"v{d}" for d in range(len(band)))
    body = " and ".join(constraints) or "true"
    if exists:
        body = f"exists ({', '.join(exists)}: {body})"
    domain = isl.Set(f"{{ [{variables}] : {body} }}")
    if domain.is_empty():
        return None
    return [
        (domain.dim_min_val(d).to_python(), domain.dim_max_val(d).to_python())
        for d in range(len(band))
    ]
