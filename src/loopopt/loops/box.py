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

A bound may hold terms that are not linear but use only values from outside the band (a
wavefront's `(c0 + 1) floordiv 2`, c0 the host loop): `hoist_outer_terms` first computes each
such term once, before the band (`affine.apply`), and the bound reads it as a symbol, so the
projection sees a linear bound.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr
from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)

from loopopt.diagnostics import LoopoptError
from loopopt.loops.affine_maps import Bound, BoundBuilder, lower_bound, set_bounds, upper_bound
from loopopt.loops.bounds import band_bounds_in_order, replace_bounds
from loopopt.loops.gpu_map import affine_if
from loopopt.loops.nest import body_ops, iv, step_of


def _uses(loop: affine.ForOp, values: set[SSAValue]) -> bool:
    return any(v in values for v in (*loop.lowerBoundOperands, *loop.upperBoundOperands))


def _linear_kind(expr: AffineBinaryOpExpr) -> bool:
    if expr.kind == AffineBinaryOpKind.Add:
        return True
    return expr.kind == AffineBinaryOpKind.Mul and (
        isinstance(expr.lhs, AffineConstantExpr) or isinstance(expr.rhs, AffineConstantExpr)
    )


class _Hoister:
    """Rewrites one bound: its non-linear terms over outside values become symbols computed
    by `affine.apply` ops placed before `anchor`."""

    def __init__(
        self,
        bound: Bound,
        inside: set[SSAValue],
        anchor: affine.ForOp,
        made: dict[tuple[AffineMap, tuple[SSAValue, ...]], SSAValue],
    ) -> None:
        self.made = made
        self.builder = BoundBuilder()
        self.exprs = self.builder.results_of(bound)
        self.inside, self.anchor = inside, anchor
        self.changed = False

    def _outside(self, expr: AffineExpr) -> bool:
        for node in expr.dfs():
            if isinstance(node, AffineDimExpr) and self.builder.dims[node.position] in self.inside:
                return False
            if isinstance(node, AffineSymExpr) and self.builder.syms[node.position] in self.inside:
                return False
        return True

    def rewrite(self, expr: AffineExpr) -> AffineExpr:
        if not isinstance(expr, AffineBinaryOpExpr):
            return expr
        if not _linear_kind(expr) and self._outside(expr):
            used = set(expr.dfs())
            own, zero = BoundBuilder(), AffineExpr.constant(0)  # the values the term uses
            dims = [
                own.dim(v) if AffineExpr.dimension(k) in used else zero
                for k, v in enumerate(self.builder.dims)
            ]
            syms = [
                own.sym(v) if AffineExpr.symbol(k) in used else zero
                for k, v in enumerate(self.builder.syms)
            ]
            term = expr.replace_dims_and_symbols(dims, syms)
            amap = AffineMap(len(own.dims), len(own.syms), (term,))
            key = (amap, (*own.dims, *own.syms))
            if key not in self.made:
                apply = affine.ApplyOp(key[1], AffineMapAttr(amap))
                block = self.anchor.parent_block()
                assert block is not None
                block.insert_op_before(apply, self.anchor)
                self.made[key] = apply.result
            self.changed = True
            return self.builder.sym(self.made[key])
        lhs, rhs = self.rewrite(expr.lhs), self.rewrite(expr.rhs)
        return AffineBinaryOpExpr(expr.kind, lhs, rhs)

    def bound(self) -> Bound | None:
        exprs = [self.rewrite(e) for e in self.exprs]
        if not self.changed:
            return None
        dims, syms = self.builder.dims, self.builder.syms
        return Bound(AffineMap(len(dims), len(syms), tuple(exprs)), (*dims, *syms))


def hoist_outer_terms(band: Sequence[affine.ForOp]) -> None:
    """Give the non-linear terms of the band's bounds that use only values from outside the
    band a value of their own, computed before the band (see the module docstring)."""
    inside = {iv(loop) for loop in band}
    made: dict[tuple[AffineMap, tuple[SSAValue, ...]], SSAValue] = {}
    for loop in band:
        lower = _Hoister(lower_bound(loop), inside, band[0], made).bound()
        upper = _Hoister(upper_bound(loop), inside, band[0], made).bound()
        if lower is not None or upper is not None:
            set_bounds(loop, lower, upper)


def box_band(band: Sequence[affine.ForOp], pass_name: str) -> list[affine.ForOp]:
    """Box every loop of `band` (a perfect band, outermost first) whose bounds use an outer
    band IV (see the module docstring); the band afterwards (loops replaced). Unchanged when no
    loop needs it, or the bounds are not affine in the band's IVs."""
    ivs = {iv(loop) for loop in band}
    inner = [p for p, loop in enumerate(band) if _uses(loop, ivs)]
    if not inner or any(step_of(band[p]) != 1 for p in inner):
        return list(band)
    hoist_outer_terms(band)
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
