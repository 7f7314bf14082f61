"""Running the inner loops of a parallel band over their bounding box (gpu-map-loops' plan).

Before (lu's update after loop-reschedule: j's bounds use i):
    affine.for %i = %c0 + 1 to 2000 {
      affine.for %j = %i to 2000 { A[i, j] -= A[i, c0] * A[c0, j] } }
After:
    affine.for %i = %c0 + 1 to 2000 {
      affine.for %j = %c0 + 1 to 2000 {
        affine.if (%j - %i >= 0) { A[i, j] -= A[i, c0] * A[c0, j] } } }

A loop whose bounds use the IV of an outer loop of the band cannot be spread over a grid: the
host computes the grid before any thread runs. Its bounding box can: its bounds with the outer
loops projected out (loops/bounds.band_bounds_in_order, exact with isl), which use only values
from outside the band. The body then runs under an `affine.if` of the original bounds, so the
same iterations run, each once; the dependence analysis reads the guard, so the band stays as
parallel as it was. Only loops of step 1 inside the band's parallel prefix are boxed.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.ir import SSAValue

from loopopt.diagnostics import LoopoptError
from loopopt.loops.affine_maps import BoundBuilder, lower_bound, upper_bound
from loopopt.loops.bounds import band_bounds_in_order, replace_bounds
from loopopt.loops.gpu_map import affine_if
from loopopt.loops.nest import body_ops, iv, step_of


def _uses(loop: affine.ForOp, values: set[SSAValue]) -> bool:
    return any(v in values for v in (*loop.lowerBoundOperands, *loop.upperBoundOperands))


def box_band(band: Sequence[affine.ForOp], pass_name: str) -> list[affine.ForOp]:
    """Box every loop of `band` (a perfect band, outermost first) whose bounds use an outer
    band IV (see the module docstring); the band afterwards (loops replaced). Unchanged when no
    loop needs it, or the bounds are not affine in the band's IVs."""
    ivs = {iv(loop) for loop in band}
    inner = [p for p, loop in enumerate(band) if _uses(loop, ivs)]
    if not inner or any(step_of(band[p]) != 1 for p in inner):
        return list(band)
    try:
        boxes = {
            p: band_bounds_in_order(
                band, [band[p], *(x for x in band if x is not band[p])], pass_name
            )[0]
            for p in inner
        }
    except LoopoptError:
        return list(band)
    guard = BoundBuilder()
    conditions = []
    for p in inner:
        here = guard.dim(iv(band[p]))
        conditions += [here - e for e in guard.results_of(lower_bound(band[p]))]
        conditions += [e - here - 1 for e in guard.results_of(upper_bound(band[p]))]
    new = list(band)
    for p in inner:
        new[p] = replace_bounds(new[p], *boxes[p], 1)
    innermost = new[-1]
    condition = affine_if(guard, conditions)
    body = body_ops(innermost)
    terminator = innermost.body.block.last_op
    assert terminator is not None
    innermost.body.block.insert_op_before(condition, terminator)
    then = condition.then_region.block
    assert then.last_op is not None
    for op in body:
        op.detach()
        then.insert_op_before(op, then.last_op)
    return new
