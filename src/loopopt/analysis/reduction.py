"""Scalar reductions: loops whose iter_args each combine one value per iteration.

    %s = affine.for %i = 0 to %n iter_args(%acc = %zero) -> (f32) {
      %x = affine.load %X[%i]                      reductions(loop) ==
      %a = arith.addf %acc, %x : f32    →            [Reduction(kind="add", combine=addf op,
      affine.yield %a : f32                                     position=0)]
    }

An iter_arg is a reduction when its only use is one combining op (`+ * min max` of floats or
integers) whose other operand does not depend on it, and that op's result is only yielded, at
the iter_arg's own position. Such a loop computes `init ⊕ x_0 ⊕ x_1 ⊕ …` and may evaluate it
in another order (partial results per thread, combined in a tree) once its iterations carry no
other dependence (the caller checks that, with the dependence analysis). For floats that order
changes the rounding: loopopt reassociates only what this recognizes.

Python's `m = max(m, x)` on floats is a compare and a select (frontend/operators.py keeps
Python's NaN rules): `select(x > m, x, m)`, and `select(x < m, x, m)` for min, with the
iter_arg `m` on the right of the compare and kept when it fails. That is a max (min)
reduction too: a NaN `x` never wins, so partial results from the neutral element are never
NaN, and they merge with `arith.maximumf` (`minimumf`), which keeps a NaN initial value as the
select chain does. Only the order of equal values with different signs (-0.0, +0.0) may
differ. `select(m > x, m, x)` (Python's `max(x, m)`: a NaN `x` wins, and the next element
replaces it) is not one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue, Use

COMBINERS: dict[str, str] = {
    "arith.addf": "add",
    "arith.addi": "add",
    "arith.subf": "sub",
    "arith.subi": "sub",
    "arith.mulf": "mul",
    "arith.muli": "mul",
    "arith.maximumf": "max",
    "arith.maxnumf": "max",
    "arith.maxsi": "max",
    "arith.maxui": "maxu",
    "arith.minimumf": "min",
    "arith.minnumf": "min",
    "arith.minsi": "min",
    "arith.minui": "minu",
}
"""Combining ops and the reduction each computes. `acc - x` (the iter_arg on the left) sums
the subtrahends: `init - x_0 - x_1 - … = init + ((0 - x_0 - …) + (0 - x_k - …))`."""


@dataclass(frozen=True)
class Reduction:
    """The iter_arg at `position` of a loop reduces with `combine` (of kind `kind`)."""

    kind: str
    combine: Operation
    position: int


def _depends_on(value: SSAValue, source: SSAValue, scope: Operation) -> bool:
    """`value` is computed from `source` by ops inside `scope`."""
    seen: set[SSAValue] = set()
    work = [value]
    while work:
        v = work.pop()
        if v is source:
            return True
        if v in seen:
            continue
        seen.add(v)
        owner = v.owner
        if isinstance(owner, Operation) and scope.is_ancestor(owner):
            work.extend(owner.operands)
            for inner in owner.walk():
                work.extend(inner.operands)
    return False


SELECTS: dict[str, str] = {"ogt": "max", "olt": "min"}
"""The compare predicates of `select(x ? m, x, m)` that reduce, and the reduction each is."""


def _select_combine(uses: list[Use]) -> tuple[str, Operation, SSAValue] | None:
    """(kind, the select, x) where the iter_arg's `uses` are exactly those of Python's float
    `max(m, x)` / `min(m, x)`: `select(cmpf pred x, m; x, m)` (see the module docstring)."""
    if len(uses) != 2:
        return None
    by_op = {type(u.operation): u for u in uses}
    compare, select = by_op.get(arith.CmpfOp), by_op.get(arith.SelectOp)
    if compare is None or select is None or compare.index != 1 or select.index != 2:
        return None
    cmp, sel = compare.operation, select.operation
    assert isinstance(cmp, arith.CmpfOp) and isinstance(sel, arith.SelectOp)
    predicate = arith.CMPF_COMPARISON_OPERATIONS[cmp.predicate.value.data]
    kind = SELECTS.get(predicate)
    if kind is None or sel.cond is not cmp.result or sel.lhs is not cmp.lhs:
        return None
    if len(list(cmp.result.uses)) != 1 or cmp.parent_block() is not sel.parent_block():
        return None
    return kind, sel, cmp.lhs


def reduction_of(loop: affine.ForOp, position: int) -> Reduction | None:
    """The reduction of the iter_arg at `position`, or None (see the module docstring)."""
    arg = loop.body.block.args[1 + position]
    uses = list(arg.uses)
    selected = _select_combine(uses)
    if selected is not None:
        kind, combine, other = selected
    elif len(uses) == 1:
        combine = uses[0].operation
        found = COMBINERS.get(combine.name)
        if found is None or (found == "sub" and uses[0].index != 0):
            return None
        kind, other = found, combine.operands[1 - uses[0].index]
    else:
        return None
    if combine.parent_block() is not loop.body.block or _depends_on(other, arg, loop):
        return None
    result = combine.results[0]
    terminator = loop.body.block.last_op
    if not isinstance(terminator, affine.YieldOp):
        return None
    result_uses = list(result.uses)
    if len(result_uses) != 1 or result_uses[0].operation is not terminator:
        return None
    if result_uses[0].index != position:
        return None
    return Reduction(kind, combine, position)


def reductions(loop: affine.ForOp) -> list[Reduction] | None:
    """One reduction per iter_arg of `loop`, or None when some iter_arg is not one (or the
    loop has none)."""
    if not loop.inits:
        return None
    found = [reduction_of(loop, k) for k in range(len(loop.inits))]
    if any(r is None for r in found):
        return None
    return [r for r in found if r is not None]


def identity(kind: str, element: Attribute) -> FloatAttr | IntegerAttr | None:
    """The neutral element of a reduction over `element` values, or None."""
    if isinstance(element, AnyFloat):
        values = {"add": 0.0, "sub": 0.0, "mul": 1.0, "max": -math.inf, "min": math.inf}
        return FloatAttr(values[kind], element) if kind in values else None
    if isinstance(element, IntegerType):
        width = element.width.data
        values = {
            "add": 0,
            "sub": 0,
            "mul": 1,
            "max": -(2 ** (width - 1)),
            "min": 2 ** (width - 1) - 1,
            "maxu": 0,
            "minu": -1,
        }
        return IntegerAttr(values[kind], element) if kind in values else None
    return None


def constant(kind: str, element: Attribute) -> arith.ConstantOp | None:
    """An `arith.constant` of the reduction's neutral element, or None."""
    value = identity(kind, element)
    return None if value is None else arith.ConstantOp(value)


def merge(reduction: Reduction, a: SSAValue, b: SSAValue) -> Operation:
    """An op combining two partial results of `reduction` (partial sums of subtrahends add;
    the partial results of a select reduce with `maximumf`/`minimumf`)."""
    if isinstance(reduction.combine, arith.SelectOp):
        pick = arith.MaximumfOp if reduction.kind == "max" else arith.MinimumfOp
        return pick(a, b, flags=None)
    if reduction.kind != "sub":
        op = reduction.combine.clone()
        op.operands = [a, b]
        return op
    if reduction.combine.name == "arith.subf":
        return arith.AddfOp(a, b, flags=reduction.combine.properties.get("fastmath"))  # type: ignore[arg-type]
    return arith.AddiOp(a, b)
