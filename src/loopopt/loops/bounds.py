"""Loop bounds as data: building `affine.for` bound maps from expressions over SSA values,
replacing a loop's bounds, and recomputing the bounds of a band for a new loop order.

A bound is a list of affine expressions over SSA operands: several lower-bound results mean their
max, several upper-bound results their min (exclusive), as in `affine.for`. `BoundBuilder`
numbers the operands (dims, and symbols where the input used them as symbols), so bounds can
mix a loop's original map with new IVs:

    lb: affine_map<(d0) -> (d0)>(%i_t)
    ub: affine_map<(d0)[s0] -> (d0 + 32, s0)>(%i_t)[%N]          (min: point-loop upper bound)

`band_bounds_in_order` projects the iteration domain of a band (its loops' bound constraints,
values defined outside the band as parameters) onto each prefix of a new loop order with isl
(exact Fourier–Motzkin), giving every loop bounds in terms of the loops outside it only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import islpy as isl
from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, IndexType
from xdsl.ir import Block, Region, SSAValue
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
from loopopt.loops.nest import describe_loop, step_of

Bound = tuple[AffineMap, list[SSAValue]]
"""A bound map and its operands (dims first, then symbols)."""


def lower_bound(loop: affine.ForOp) -> Bound:
    return loop.lowerBoundMap.data, list(loop.lowerBoundOperands)


def upper_bound(loop: affine.ForOp) -> Bound:
    return loop.upperBoundMap.data, list(loop.upperBoundOperands)


def iv(loop: affine.ForOp) -> SSAValue:
    """The induction variable of `loop`."""
    return loop.body.block.args[0]


def bound_values(bound: Bound) -> set[SSAValue]:
    """The operands that the bound's results actually use."""
    amap, operands = bound
    used: set[SSAValue] = set()
    for expr in amap.results:
        for node in expr.dfs():
            if isinstance(node, AffineDimExpr):
                used.add(operands[node.position])
            elif isinstance(node, AffineSymExpr):
                used.add(operands[amap.num_dims + node.position])
    return used


def coefficient(expr: AffineExpr, target: AffineExpr) -> int | None:
    """The constant coefficient of `target` (a dim or symbol) in `expr`; None where `target`
    appears under mod, floordiv, ceildiv or a product with a non-constant."""
    if expr == target:
        return 1
    if not isinstance(expr, AffineBinaryOpExpr):
        return 0
    if expr.kind == AffineBinaryOpKind.Add:
        lhs, rhs = coefficient(expr.lhs, target), coefficient(expr.rhs, target)
        return None if lhs is None or rhs is None else lhs + rhs
    uses = target in set(expr.dfs())
    if expr.kind == AffineBinaryOpKind.Mul:
        for factor, other in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if isinstance(factor, AffineConstantExpr):
                inner = coefficient(other, target)
                return None if inner is None else inner * factor.value
    return None if uses else 0


@dataclass
class BoundBuilder:
    """Collects the operands of one bound map; each distinct SSA value is one dim or symbol."""

    dims: list[SSAValue] = field(default_factory=list[SSAValue])
    syms: list[SSAValue] = field(default_factory=list[SSAValue])

    def dim(self, value: SSAValue) -> AffineExpr:
        if value not in self.dims:
            self.dims.append(value)
        return AffineExpr.dimension(self.dims.index(value))

    def sym(self, value: SSAValue) -> AffineExpr:
        if value not in self.syms:
            self.syms.append(value)
        return AffineExpr.symbol(self.syms.index(value))

    def results_of(
        self, bound: Bound, replace: Mapping[SSAValue, AffineExpr] | None = None
    ) -> list[AffineExpr]:
        """The results of `bound` over this builder's operands; operands in `replace` are
        substituted by the given expressions (which must be over this builder's operands)."""
        amap, operands = bound
        replace = replace or {}
        dims = [replace.get(v) or self.dim(v) for v in operands[: amap.num_dims]]
        syms = [replace.get(v) or self.sym(v) for v in operands[amap.num_dims :]]
        return [expr.replace_dims_and_symbols(dims, syms) for expr in amap.results]

    def build(self, results: Sequence[AffineExpr]) -> Bound:
        """The bound map of `results` (deduplicated, simplified) with only the used operands."""
        nd, ns = len(self.dims), len(self.syms)
        unique: list[AffineExpr] = []
        for expr in results:
            expr = expr.simplify(nd, ns) if expr.is_pure_affine() else expr
            if expr not in unique:
                unique.append(expr)
        used_dims = sorted(
            {e.position for r in unique for e in r.dfs() if isinstance(e, AffineDimExpr)}
        )
        used_syms = sorted(
            {e.position for r in unique for e in r.dfs() if isinstance(e, AffineSymExpr)}
        )
        new_dims = [
            AffineExpr.dimension(used_dims.index(d)) if d in used_dims else AffineExpr.constant(0)
            for d in range(nd)
        ]
        new_syms = [
            AffineExpr.symbol(used_syms.index(s)) if s in used_syms else AffineExpr.constant(0)
            for s in range(ns)
        ]
        amap = AffineMap(nd, ns, tuple(unique)).replace_dims_and_symbols(
            new_dims, new_syms, len(used_dims), len(used_syms)
        )
        return amap, [self.dims[d] for d in used_dims] + [self.syms[s] for s in used_syms]


def new_loop(lb: Bound, ub: Bound, step: int, inits: Sequence[SSAValue] = ()) -> affine.ForOp:
    """An `affine.for` with the given bounds whose body is only its terminator (which yields
    the iter_args unchanged)."""
    types = [value.type for value in inits]
    block = Block(arg_types=[IndexType(), *types])
    block.add_op(affine.YieldOp.get(*block.args[1:]))
    region = Region(block)
    return affine.ForOp.from_region(
        lb[1], ub[1], inits, types, AffineMapAttr(lb[0]), AffineMapAttr(ub[0]), region, step
    )


def replace_bounds(
    loop: affine.ForOp,
    lb: Bound,
    ub: Bound,
    step: int | None = None,
    inits: Sequence[SSAValue] | None = None,
) -> affine.ForOp:
    """Replace `loop` by a loop with the same body, attributes and results and new bounds (and
    step, iter_args inits); returns the new op, which sits where `loop` was. `loop` is erased."""
    region = loop.detach_region(loop.body)
    new = affine.ForOp.from_region(
        lb[1],
        ub[1],
        list(loop.inits) if inits is None else list(inits),
        list(loop.result_types),
        AffineMapAttr(lb[0]),
        AffineMapAttr(ub[0]),
        region,
        step if step is not None else step_of(loop),
    )
    new.attributes.update(loop.attributes)
    new.location = loop.location
    block = loop.parent_block()
    if block is None:
        raise LoopoptError("internal: cannot replace the bounds of a detached loop", op=loop)
    block.insert_op_before(new, loop)
    for old_result, new_result in zip(loop.results, new.results, strict=True):
        old_result.replace_all_uses_with(new_result)
    loop.detach()
    loop.erase()
    return new


def linear_form(bound: Bound, index: int) -> dict[SSAValue | None, int] | None:
    """Result `index` of `bound` as {operand: coefficient, None: constant}; None if not linear."""
    amap, operands = bound

    def walk(expr: AffineExpr) -> dict[SSAValue | None, int] | None:
        if isinstance(expr, AffineConstantExpr):
            return {None: expr.value}
        if isinstance(expr, AffineDimExpr):
            return {operands[expr.position]: 1}
        if isinstance(expr, AffineSymExpr):
            return {operands[amap.num_dims + expr.position]: 1}
        assert isinstance(expr, AffineBinaryOpExpr)
        if expr.kind == AffineBinaryOpKind.Add:
            lhs, rhs = walk(expr.lhs), walk(expr.rhs)
            if lhs is None or rhs is None:
                return None
            return {k: lhs.get(k, 0) + rhs.get(k, 0) for k in lhs.keys() | rhs.keys()}
        if expr.kind == AffineBinaryOpKind.Mul:
            for factor, other in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
                if isinstance(factor, AffineConstantExpr):
                    inner = walk(other)
                    return (
                        None if inner is None else {k: c * factor.value for k, c in inner.items()}
                    )
        return None

    return walk(amap.results[index])


def band_bounds_in_order(
    band: Sequence[affine.ForOp], order: Sequence[affine.ForOp], pass_name: str
) -> list[tuple[Bound, Bound]]:
    """(lower, upper) bounds for each loop of `order` (the loops of `band`, outermost first)
    such that the nest in that order runs exactly the band's iterations, each bound using only
    loops outside it. Needs steps of 1 and bounds linear in the band's IVs (else a diagnostic)."""
    position = {iv(loop): k for k, loop in enumerate(order)}
    params: list[SSAValue] = []
    symbolic: set[SSAValue] = set()
    constraints: list[str] = []

    def term(value: SSAValue | None, coeff: int) -> str:
        if value is None:
            return str(coeff)
        if value in position:
            return f"{coeff}*x{position[value]}"
        if value not in params:
            params.append(value)
        return f"{coeff}*p{params.index(value)}"

    for loop in band:
        if step_of(loop) != 1:
            raise LoopoptError(
                f"{pass_name}: cannot reorder the non-rectangular band: loop "
                f"'{describe_loop(loop)}' has step {step_of(loop)}",
                op=loop,
            )
        x = f"x{position[iv(loop)]}"
        for bound, sign in ((lower_bound(loop), 1), (upper_bound(loop), -1)):
            amap, operands = bound
            symbolic.update(operands[amap.num_dims :])
            for index in range(len(amap.results)):
                form = linear_form(bound, index)
                if form is None:
                    raise LoopoptError(
                        f"{pass_name}: cannot reorder the non-rectangular band: a bound of loop "
                        f"'{describe_loop(loop)}' is not linear ({amap.results[index]})",
                        op=loop,
                    )
                rest = " + ".join(term(v, -sign * c) for v, c in form.items() if c != 0)
                offset = " - 1" if sign < 0 else ""
                constraints.append(f"{sign}*{x} + {rest or '0'}{offset} >= 0")
    names = ", ".join(f"x{k}" for k in range(len(order)))
    pnames = ", ".join(f"p{k}" for k in range(len(params)))
    domain = isl.BasicSet(f"[{pnames}] -> {{ [{names}] : {' and '.join(constraints)} }}")
    if domain.is_empty():  # the band never runs its body, in any order
        empty: Bound = (AffineMap.constant_map(0), [])
        return [(empty, empty) for _ in order]

    result: list[tuple[Bound, Bound]] = []
    for k in reversed(range(len(order))):
        domain = domain.project_out(isl.dim_type.set, k + 1, domain.dim(isl.dim_type.set) - k - 1)
        domain = domain.remove_redundancies()
        result.append(_bounds_of(domain, k, order, params, symbolic, pass_name))
    return result[::-1]


def _bounds_of(
    domain: isl.BasicSet,
    k: int,
    order: Sequence[affine.ForOp],
    params: list[SSAValue],
    symbolic: set[SSAValue],
    pass_name: str,
) -> tuple[Bound, Bound]:
    if domain.dim(isl.dim_type.div) > 0:
        raise LoopoptError(
            f"{pass_name}: cannot reorder the non-rectangular band: the bounds of loop "
            f"'{describe_loop(order[k])}' in the new order are not affine",
            op=order[k],
        )
    param_of = {
        domain.get_dim_name(isl.dim_type.param, i): i for i in range(domain.dim(isl.dim_type.param))
    }
    builder = BoundBuilder()
    lower: list[AffineExpr] = []
    upper: list[AffineExpr] = []
    for constraint in domain.get_constraints():
        a = constraint.get_coefficient_val(isl.dim_type.set, k).to_python()
        if a == 0:
            continue
        rest = AffineExpr.constant(constraint.get_constant_val().to_python())
        for j in range(k):
            c = constraint.get_coefficient_val(isl.dim_type.set, j).to_python()
            if c:
                rest = rest + builder.dim(iv(order[j])) * c
        for name, i in param_of.items():
            c = constraint.get_coefficient_val(isl.dim_type.param, i).to_python()
            if c:
                value = params[int(name[1:])]
                operand = builder.sym(value) if value in symbolic else builder.dim(value)
                rest = rest + operand * c
        if constraint.is_equality() and a < 0:
            a, rest = -a, rest * -1
        if a > 0:  # a*x + rest >= 0 (or == 0): x >= ceil(-rest / a)
            lower.append((rest * -1).ceil_div(a) if a != 1 else rest * -1)
        if a < 0 or constraint.is_equality():  # x <= floor(rest / -a), or x == -rest / a
            top = rest if a < 0 else rest * -1
            div = -a if a < 0 else a
            upper.append((top // div if div != 1 else top) + 1)
    if not lower or not upper:
        raise LoopoptError(
            f"{pass_name}: cannot reorder the band: loop '{describe_loop(order[k])}' has no "
            "bound in the new order (empty iteration domain?)",
            op=order[k],
        )
    return builder.build(lower), builder.build(upper)
