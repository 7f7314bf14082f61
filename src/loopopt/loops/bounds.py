"""Loop bounds as IR: new loops and new bounds for existing ones, bounds reduced to one
expression, splitting a loop in two, and the bounds of a band in a new loop order.

`new_loop` makes an empty `affine.for`; `replace_bounds` rebuilds a loop with new bounds (a new
op; `set_bounds` in affine_maps.py changes them in place). `single_lower`/`single_upper` give a
`max`/`min` bound as one expression by materializing it in an affine.max/min op, hoisted out of
the loops it does not depend on (`hoisting_point`). `split_loop` splits a loop at a bound into
two consecutive loops (iter_args flow from the first into the second):

    affine.for %i = 0 to %n { S }   ==>   affine.for %i = 0 to 8 { S }
                                          affine.for %i = 8 to %n { S }

`band_bounds_in_order` projects the iteration domain of a band (its loops' bound constraints,
values defined outside the band as parameters) onto each prefix of a new loop order with isl
(exact Fourier–Motzkin), giving every loop bounds in terms of the loops outside it only. A loop
with step s and lower bound l is described by its iteration number e (IV = l + s * e), so its
stride is kept; where a projection would need existential variables, its rational shadow is
used together with the band's own constraints (exact iterations, possibly empty outer ones).
"""

from __future__ import annotations

from collections.abc import Sequence

import islpy as isl
from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, IndexType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.affine_ext import MaxOp
from loopopt.loops.affine_maps import (
    Bound,
    BoundBuilder,
    MapBuilder,
    bound_values,
    insert_before,
    linear_form,
    lower_bound,
    set_bounds,
    upper_bound,
)
from loopopt.loops.nest import defined_inside, describe_loop, iv, loop_name, set_loop_name, step_of


def new_loop(lb: Bound, ub: Bound, step: int, inits: Sequence[SSAValue] = ()) -> affine.ForOp:
    """An `affine.for` with the given bounds whose body is only its terminator (which yields
    the iter_args unchanged)."""
    types = [value.type for value in inits]
    block = Block(arg_types=[IndexType(), *types])
    block.add_op(affine.YieldOp.get(*block.args[1:]))
    region = Region(block)
    return affine.ForOp.from_region(
        lb.operands,
        ub.operands,
        inits,
        types,
        AffineMapAttr(lb.map),
        AffineMapAttr(ub.map),
        region,
        step,
    )


def append_iter_args(loop: affine.ForOp, inits: Sequence[SSAValue]) -> affine.ForOp:
    """`loop` rebuilt with `inits` appended to its iter_args (the body's new arguments follow
    the old ones; extending the yield is left to the caller); `loop` is erased."""
    region = loop.detach_region(loop.body)
    for value in inits:
        region.block.insert_arg(value.type, len(region.block.args))
    new = affine.ForOp.from_region(
        loop.lowerBoundOperands,
        loop.upperBoundOperands,
        [*loop.inits, *inits],
        [*loop.result_types, *(value.type for value in inits)],
        loop.lowerBoundMap,
        loop.upperBoundMap,
        region,
        loop.step,
    )
    new.attributes.update(loop.attributes)
    new.location = loop.location
    block = loop.parent_block()
    assert block is not None
    block.insert_op_before(new, loop)
    for old, result in zip(loop.results, new.results, strict=False):
        old.replace_all_uses_with(result)
    loop.detach()
    loop.erase()
    return new


def replace_bounds(
    loop: affine.ForOp,
    lb: Bound,
    ub: Bound,
    step: int | None = None,
    inits: Sequence[SSAValue] | None = None,
) -> affine.ForOp:
    """Replace `loop` by a loop with the same body, attributes and results and new bounds (and
    step, iter_args inits: with other inits, the body's arguments and the results must already
    match them, old results unused); returns the new op, which sits where `loop` was. `loop`
    is erased."""
    region = loop.detach_region(loop.body)
    new = affine.ForOp.from_region(
        lb.operands,
        ub.operands,
        list(loop.inits) if inits is None else list(inits),
        list(loop.result_types) if inits is None else [value.type for value in inits],
        AffineMapAttr(lb.map),
        AffineMapAttr(ub.map),
        region,
        step if step is not None else step_of(loop),
    )
    new.attributes.update(loop.attributes)
    new.location = loop.location
    block = loop.parent_block()
    if block is None:
        raise LoopoptError("internal: cannot replace the bounds of a detached loop", op=loop)
    block.insert_op_before(new, loop)
    if len(loop.results) == len(new.results):
        for old_result, new_result in zip(loop.results, new.results, strict=True):
            old_result.replace_all_uses_with(new_result)
    loop.detach()
    loop.erase()
    return new


def single_lower(loop: affine.ForOp, builder: MapBuilder) -> AffineExpr:
    """`loop`'s lower bound as one expression; a `max` bound becomes an affine.max op."""
    bound = builder.build(builder.exprs(lower_bound(loop)), "max")
    if len(bound.map.results) == 1:
        return builder.exprs(bound)[0]
    maximum = MaxOp(list(bound.operands), AffineMapAttr(bound.map))
    insert_before(maximum, hoisting_point(bound.operands, loop))
    return builder.value(maximum.result)


def single_upper(loop: affine.ForOp, builder: MapBuilder) -> AffineExpr:
    """`loop`'s upper bound as one expression; a `min` bound becomes an affine.min op."""
    bound = builder.build(builder.exprs(upper_bound(loop)), "min")
    if len(bound.map.results) == 1:
        return builder.exprs(bound)[0]
    return builder.value(materialize_min(bound, loop))


def materialize_min(bound: Bound, before: Operation) -> SSAValue:
    """An SSA value for `bound` (the min of its results), computed before `before`, hoisted out
    of the loops around `before` that it does not depend on."""
    if len(bound.map.results) == 1:
        op: Operation = affine.ApplyOp(list(bound.operands), AffineMapAttr(bound.map))
    else:
        op = affine.MinOp(list(bound.operands), AffineMapAttr(bound.map))
    insert_before(op, hoisting_point(bound.operands, before))
    return op.results[0]


def hoisting_point(operands: Sequence[SSAValue], before: Operation) -> Operation:
    """The outermost op among `before` and its enclosing affine.for ops that no value of
    `operands` is defined in: a pure computation of `operands` may go just before it."""
    anchor = before
    parent = anchor.parent_op()
    while isinstance(parent, affine.ForOp) and not any(defined_inside(v, parent) for v in operands):
        anchor = parent
        parent = anchor.parent_op()
    return anchor


def split_loop(
    loop: affine.ForOp,
    first_upper: Bound,
    second_lower: Bound,
    suffix: str,
    *,
    before: bool = False,
) -> affine.ForOp:
    """Split `loop` into two consecutive loops: the first ends at `first_upper`, the second starts
    at `second_lower`; iter_args flow from the first into the second.

    `loop` itself becomes the second part when `before` is set (else the first); the other part
    is a copy named `<name><suffix>`, returned. Not checked: that the two ranges tile the original.
    """
    copy = loop.clone()
    block = loop.parent_block()
    if block is None:
        raise LoopoptError("cannot split a loop outside any block", op=loop)
    if before:
        block.insert_op_before(copy, loop)
        first, second = copy, loop
    else:
        block.insert_op_after(copy, loop)
        first, second = loop, copy
        for old, new in zip(loop.results, copy.results, strict=True):
            old.replace_all_uses_with(new)
    set_bounds(first, upper=first_upper)
    set_bounds(second, lower=second_lower, inits=tuple(first.results) if loop.inits else None)
    name = loop_name(loop)
    if name is not None:
        set_loop_name(copy, name + suffix)
    return copy


def iteration_value(loop: affine.ForOp, iteration: int) -> Bound:
    """The IV value of iteration `iteration` of `loop` (one-result lower bound): lb + n * step."""
    builder = MapBuilder()
    [lower] = builder.exprs(lower_bound(loop))
    return builder.build([lower + iteration * step_of(loop)])


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
        amap, operands = bound.map, bound.operands
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
            empty = Bound.constant(0)
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
