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
(exact Fourier–Motzkin), giving every loop bounds in terms of the loops outside it only. A loop
with step s and lower bound l is described by its iteration number e (IV = l + s * e), so its
stride is kept; where a projection would need existential variables, its rational shadow is
used together with the band's own constraints (exact iterations, possibly empty outer ones).
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
    loops outside it. Needs bounds linear in the band's IVs, and a loop with a step other than
    1 needs a single lower bound made of loops that stay outside it (else a diagnostic)."""
    return _Reorder(band, order, pass_name).bounds()


Form = dict[str | None, int]
"""A linear form over isl names (`v3`: variable of new depth 3, `p1`: parameter 1) and a
constant (key None)."""


class _Reorder:
    """The iteration domain of a band over variables v_k, k the new depth: v_k is the IV of
    order[k], or for a loop with step s > 1 and lower bound l, its iteration number e
    (IV = l + s * e, e >= 0), so that strides survive the projection."""

    def __init__(self, band: Sequence[affine.ForOp], order: Sequence[affine.ForOp], pass_name: str):
        self.order, self.pass_name = order, pass_name
        self.position = {iv(loop): k for k, loop in enumerate(order)}
        self.params: list[SSAValue] = []
        self.symbolic: set[SSAValue] = set()
        self.forms: dict[SSAValue, Form] = {}
        self.constraints: list[Form] = []
        for loop in band:  # original order: the forms of outer IVs exist when needed
            self._add(loop)

    def _add(self, loop: affine.ForOp) -> None:
        k, step = self.position[iv(loop)], step_of(loop)
        lower = self._forms(loop, lower_bound(loop))
        upper = self._forms(loop, upper_bound(loop))
        if step == 1:
            x: Form = {f"v{k}": 1}
            self.constraints += [_combine(x, 1, lb, -1) for lb in lower]
        else:
            inner = {v for v in bound_values(lower_bound(loop)) if self.position.get(v, -1) > k}
            if len(lower) != 1 or inner:
                raise LoopoptError(
                    f"{self.pass_name}: cannot reorder the non-rectangular band: loop "
                    f"'{describe_loop(loop)}' has step {step} and a lower bound that is a max "
                    "or uses a loop that would be inside it",
                    op=loop,
                )
            x = _combine(lower[0], 1, {f"v{k}": step}, 1)
            self.constraints.append({f"v{k}": 1})
        self.forms[iv(loop)] = x
        for ub in upper:  # x <= ub - 1
            self.constraints.append(_combine(_combine(ub, 1, x, -1), 1, {None: -1}, 1))

    def _forms(self, loop: affine.ForOp, bound: Bound) -> list[Form]:
        """The results of `bound` as linear forms (band IVs replaced by their forms)."""
        amap, operands = bound
        self.symbolic.update(operands[amap.num_dims :])
        forms: list[Form] = []
        for index in range(len(amap.results)):
            form = linear_form(bound, index)
            if form is None:
                raise LoopoptError(
                    f"{self.pass_name}: cannot reorder the non-rectangular band: a bound of loop "
                    f"'{describe_loop(loop)}' is not linear ({amap.results[index]})",
                    op=loop,
                )
            result: Form = {None: form.pop(None, 0)}
            for value, c in form.items():
                assert value is not None
                if value in self.forms:
                    result = _combine(result, 1, self.forms[value], c)
                else:
                    if value not in self.params:
                        self.params.append(value)
                    result = _combine(result, 1, {f"p{self.params.index(value)}": 1}, c)
            forms.append(result)
        return forms

    def bounds(self) -> list[tuple[Bound, Bound]]:
        names = ", ".join(f"v{k}" for k in range(len(self.order)))
        pnames = ", ".join(f"p{k}" for k in range(len(self.params)))
        text = " and ".join(_render(c) for c in self.constraints) or "true"
        domain = isl.BasicSet(f"[{pnames}] -> {{ [{names}] : {text} }}")
        if domain.is_empty():  # the band never runs its body, in any order
            empty: Bound = (AffineMap.constant_map(0), [])
            return [(empty, empty) for _ in self.order]
        result: list[tuple[Bound, Bound]] = []
        for k in reversed(range(len(self.order))):
            n = domain.dim(isl.dim_type.set)
            domain = domain.project_out(isl.dim_type.set, k + 1, n - k - 1).remove_redundancies()
            result.append(self._bounds_of(domain, k))
        return result[::-1]

    def _rows(self, domain: isl.BasicSet, k: int) -> list[tuple[Form, bool]]:
        """The constraints on v_k (form >= 0, or == 0 when flagged) to bound loop k with.

        Where the exact projection needs existential variables (strides), it is relaxed to its
        rational shadow, and the band's own constraints whose innermost variable is v_k are
        added: every original constraint is then still enforced at its innermost loop, and the
        relaxed ones only ever admit more (empty) iterations of outer loops."""
        exact = domain.dim(isl.dim_type.div) == 0
        rows: list[tuple[Form, bool]] = []
        for constraint in (domain if exact else domain.remove_divs()).get_constraints():
            form: Form = {None: constraint.get_constant_val().to_python()}
            for j in range(k + 1):
                form[f"v{j}"] = constraint.get_coefficient_val(isl.dim_type.set, j).to_python()
            for i in range(domain.dim(isl.dim_type.param)):
                name = domain.get_dim_name(isl.dim_type.param, i)
                form[name] = constraint.get_coefficient_val(isl.dim_type.param, i).to_python()
            rows.append((form, constraint.is_equality()))
        if not exact:
            for form in self.constraints:
                deepest = max(
                    (int(key[1:]) for key, c in form.items() if key and key[0] == "v" and c),
                    default=-1,
                )
                if deepest == k:
                    rows.append((form, False))
        return [(form, eq) for form, eq in rows if form.get(f"v{k}", 0) != 0]

    def _var(self, j: int, builder: BoundBuilder, c: int) -> AffineExpr:
        """c * v_j over SSA values: v_j is the IV, or (IV - lower bound) / step (exact)."""
        loop = self.order[j]
        step = step_of(loop)
        if step == 1:
            return builder.dim(iv(loop)) * c
        offset = builder.dim(iv(loop)) - builder.results_of(lower_bound(loop))[0]
        return offset * (c // step) if c % step == 0 else (offset // step) * c

    def _bounds_of(self, domain: isl.BasicSet, k: int) -> tuple[Bound, Bound]:
        loop = self.order[k]
        builder = BoundBuilder()
        lower: list[AffineExpr] = []
        upper: list[AffineExpr] = []
        for form, equality in self._rows(domain, k):
            a = form[f"v{k}"]
            rest = AffineExpr.constant(form.get(None, 0))
            for key, c in form.items():
                if key is None or key == f"v{k}" or c == 0:
                    continue
                if key[0] == "v":
                    rest = rest + self._var(int(key[1:]), builder, c)
                else:
                    value = self.params[int(key[1:])]
                    operand = builder.sym(value) if value in self.symbolic else builder.dim(value)
                    rest = rest + operand * c
            if equality and a < 0:
                a, rest = -a, rest * -1
            if a > 0:  # a*v + rest >= 0 (or == 0): v >= ceil(-rest / a)
                lower.append((rest * -1).ceil_div(a) if a != 1 else rest * -1)
            if a < 0 or equality:  # v <= floor(rest / -a), or v == -rest / a
                top = rest if a < 0 else rest * -1
                div = -a if a < 0 else a
                upper.append((top // div if div != 1 else top) + 1)
        if not lower or not upper:
            raise LoopoptError(
                f"{self.pass_name}: cannot reorder the band: loop '{describe_loop(loop)}' has "
                "no bound in the new order",
                op=loop,
            )
        step = step_of(loop)
        if step != 1:  # bounds on the iteration number e: IV = start + step * e
            start = builder.results_of(lower_bound(loop))[0]
            lower = [start + e * step for e in lower]
            upper = [start + (e - 1) * step + 1 for e in upper]
        return builder.build(lower), builder.build(upper)


def _combine(a: Form, ca: int, b: Form, cb: int) -> Form:
    """ca * a + cb * b."""
    result = {key: ca * c for key, c in a.items()}
    for key, c in b.items():
        result[key] = result.get(key, 0) + cb * c
    return result


def _render(form: Form) -> str:
    """`form >= 0` in isl syntax."""
    terms = [f"{c}*{key}" for key, c in form.items() if key is not None and c != 0]
    return f"{' + '.join(terms) or '0'} + {form.get(None, 0)} >= 0"
