"""Guarded copies: statements wrapped in an `affine.if`, for bounds no SSA value can hold.

Upstream MLIR takes as a dimension of an affine map only a loop IV, a valid symbol or an
`affine.apply` of those; the result of an `affine.min`/`affine.max` of loop IVs is neither. So a
bound `min(%it + 8, %n)` of a point loop cannot be materialized to split the loop; unroll, jam
and peel guard the copies that may run past it instead (a conjunction, a valid integer set):

    affine.for %i = %it to min(%it + 8, %n) step 2 {      S(%i)
                                                          affine.if (%i + 1 <= %n - 1) { S(%i + 1) }

`is_valid_symbol` is upstream's rule for the values whose min/max may still be materialized.
`guarded_copy` clones statements into the then-region of a new `affine.if`; values the copy
defines that are used after it come out as the if's results (the else-region yields fallbacks).
`IterationDomain` proves a guard always holds (islpy) so that it can be left out: with
`%it = 0 to 32 step 8`, `%i + 3 <= 31` holds in `%i = %it to min(%it + 8, 32) step 4`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import islpy as isl
from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import AffineSetAttr, IndexType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.ir.affine.affine_set import AffineConstraintExpr, AffineConstraintKind, AffineSet
from xdsl.traits import ConstantLike, IsolatedFromAbove, is_side_effect_free, is_speculatable

from loopopt.analysis.footprint import isl_expr
from loopopt.dialects import affine_ext
from loopopt.dialects.affine_ext import MaxOp
from loopopt.loops.nest import step_of


def _top_level(value: SSAValue) -> bool:
    """Defined directly in the body of a function (an affine scope)."""
    if isinstance(value, BlockArgument):
        block = value.block
    elif isinstance(value, OpResult):
        block = value.op.parent_block()
    else:
        return False
    parent = block.parent_op() if block is not None else None
    return parent is not None and parent.has_trait(IsolatedFromAbove)


def is_valid_symbol(value: SSAValue) -> bool:
    """Upstream's isValidSymbol: an index defined at the top level of the function, a constant,
    a `memref.dim` of a top-level memref, or a pure op (affine.apply/min/max, arith) of those."""
    if not isinstance(value.type, IndexType):
        return False
    if _top_level(value):
        return True
    if not isinstance(value, OpResult):
        return False
    op = value.op
    if op.has_trait(ConstantLike):
        return True
    if isinstance(op, memref.DimOp):
        return _top_level(op.source)
    pure = isinstance(op, affine.ApplyOp | affine.MinOp | MaxOp) or (
        is_side_effect_free(op) and is_speculatable(op)
    )
    return pure and not op.regions and all(is_valid_symbol(v) for v in op.operands)


def materializable(operands: Sequence[SSAValue]) -> bool:
    """Whether an affine.min/max of `operands` is a valid symbol, so that its result may be an
    operand of a loop bound or an access map."""
    return all(is_valid_symbol(v) for v in operands)


@dataclass(frozen=True)
class Guard:
    """The condition of an affine.if: every result of `map` (over `operands`) is >= 0."""

    map: AffineMap
    operands: tuple[SSAValue, ...]

    @property
    def set(self) -> AffineSet:
        zero = AffineExpr.constant(0)
        constraints = tuple(
            AffineConstraintExpr(AffineConstraintKind.ge, r, zero, canonicalize=False)
            for r in self.map.results
        )
        return AffineSet(self.map.num_dims, self.map.num_symbols, constraints)


def new_if(guard: Guard, then_block: Block, else_block: Block | None) -> affine.IfOp:
    """An affine.if on `guard`; its result types are those its then-block yields."""
    terminator = then_block.last_op
    types: list[Attribute] = (
        [v.type for v in terminator.operands] if isinstance(terminator, affine.YieldOp) else []
    )
    return affine_ext.IfOp.build(
        operands=[list(guard.operands)],
        result_types=[types],
        properties={"condition": AffineSetAttr(guard.set)},
        regions=[Region(then_block), Region(else_block) if else_block is not None else Region()],
    )


def _speculatable(op: Operation, guarded: set[SSAValue]) -> bool:
    """Whether `op` may run even where its copy is guarded off: a pure op or a stack
    allocation, with no region and no operand computed under the guard."""
    if op.regions or any(v in guarded for v in op.operands):
        return False
    return isinstance(op, memref.AllocaOp) or (is_side_effect_free(op) and is_speculatable(op))


class Escape(NamedTuple):
    """A value that a guarded copy defines and code after it uses; where the guard is false the
    copy of `value` is `fallback`. Only a `carried` value (an iter_arg update) must be exactly
    that; for the others any value of the type will do (no use of them runs there)."""

    value: SSAValue
    fallback: SSAValue
    carried: bool


def guarded_copy(
    ops: Sequence[Operation],
    mapper: dict[SSAValue, SSAValue],
    guard: Guard,
    escaping: Sequence[Escape],
) -> list[Operation]:
    """Clone `ops` (through `mapper`) under an affine.if on `guard`; returns the new ops, to be
    inserted in order: copies of the speculatable ops (constants, arithmetic and allocas that
    use nothing computed under the guard), then the if with the rest.

    The if yields the copies of the `escaping` values it computes, and those that are carried
    (the else-region yields the fallbacks); `mapper` then maps each escaping value to its copy
    outside the if.
    """
    hoisted: list[Operation] = []
    outside: set[SSAValue] = set()
    then_block = Block()
    guarded: set[SSAValue] = set()
    for op in ops:
        copy = op.clone(value_mapper=mapper)
        if _speculatable(op, guarded):
            hoisted.append(copy)
            outside.update(op.results)
        else:
            then_block.add_op(copy)
            guarded.update(op.results)
    through = [e for e in escaping if e.carried or e.value not in outside]
    if not then_block.ops and not through:
        return hoisted
    then_block.add_op(affine.YieldOp.get(*(mapper.get(e.value, e.value) for e in through)))
    else_block = Block([affine.YieldOp.get(*(e.fallback for e in through))]) if through else None
    if_op = new_if(guard, then_block, else_block)
    for escape, result in zip(through, if_op.results, strict=True):
        result.name_hint = escape.value.name_hint
        mapper[escape.value] = result
    return [*hoisted, if_op]


class IterationDomain:
    """The iterations of `loops` (outermost first, each nested in the previous) as an isl set,
    over-approximated: their bounds, the stride of each loop with a one-result lower bound (the
    innermost one's `step` may be given) and the conditions of the affine.if ops whose
    then-region holds the innermost loop. Other values are unconstrained parameters."""

    def __init__(self, loops: Sequence[affine.ForOp], step: int | None = None) -> None:
        self._names: dict[SSAValue, str] = {}
        self._params: list[str] = []
        self._vars = [f"v{k}" for k in range(len(loops))]
        self._exists: list[str] = []
        self._constraints: list[str] = []
        self._parsed: tuple[int, isl.Set] | None = None
        for k, loop in enumerate(loops):
            self._names[loop.body.block.args[0]] = f"v{k}"
        try:
            for k, loop in enumerate(loops):
                last = k == len(loops) - 1
                self._add_loop(k, loop, step if last and step is not None else step_of(loop))
            if loops:
                self._add_conditions(loops[-1])
            self.valid = True
        except (ValueError, isl.Error):
            self.valid = False

    def _name(self, value: SSAValue) -> str:
        if value not in self._names:
            self._names[value] = f"p{len(self._params)}"
            self._params.append(self._names[value])
        return self._names[value]

    def _isl(self, expr: AffineExpr, amap: AffineMap, operands: Sequence[SSAValue]) -> str:
        names = [self._name(v) for v in operands]
        return isl_expr(expr, names[: amap.num_dims], names[amap.num_dims :])

    def _add_loop(self, k: int, loop: affine.ForOp, step: int) -> None:
        lower, upper = loop.lowerBoundMap.data, loop.upperBoundMap.data
        lowers = [self._isl(r, lower, loop.lowerBoundOperands) for r in lower.results]
        uppers = [self._isl(r, upper, loop.upperBoundOperands) for r in upper.results]
        self._constraints += [f"v{k} >= {r}" for r in lowers]
        self._constraints += [f"v{k} < {r}" for r in uppers]
        if step > 1 and len(lowers) == 1:
            self._exists.append(f"e{k}")
            self._constraints.append(f"v{k} = {lowers[0]} + {step} * e{k}")

    def _add_conditions(self, op: Operation) -> None:
        child, parent = op, op.parent_op()
        while parent is not None:
            if isinstance(parent, affine.IfOp) and child.parent_region() is parent.then_region:
                aset = parent.condition.data
                amap = AffineMap(aset.num_dims, aset.num_symbols, ())
                for c in aset.constraints:
                    lhs, rhs = (
                        self._isl(c.lhs, amap, parent.args),
                        self._isl(c.rhs, amap, parent.args),
                    )
                    self._constraints.append(f"{lhs} {c.kind.value.replace('==', '=')} {rhs}")
            child, parent = parent, parent.parent_op()

    def _domain(self) -> isl.Set:
        """The iterations as an isl set, parsed again only when parameters were added (a deep
        nest's takes long to parse, and it is asked about once per condition)."""
        if self._parsed is None or self._parsed[0] != len(self._params):
            constraints = " and ".join(self._constraints) or "true"
            if self._exists:
                constraints = f"exists ({', '.join(self._exists)} : {constraints})"
            self._parsed = (len(self._params), isl.Set(self._text(constraints)))
        return self._parsed[1]

    def _text(self, constraints: str) -> str:
        return f"[{', '.join(self._params)}] -> {{ [{', '.join(self._vars)}] : {constraints} }}"

    def _nonempty(self, extra: Sequence[str]) -> bool:
        """Whether some iteration satisfies `extra` too (True when that cannot be decided)."""
        try:
            domain = self._domain()
            if extra:
                domain = domain.intersect(isl.Set(self._text(" and ".join(extra))))
            return not domain.is_empty()
        except isl.Error:
            return True

    def _conditions(self, exprs: Sequence[AffineExpr], values: Sequence[SSAValue]) -> list[str]:
        amap = AffineMap(len(values), 0, ())
        return [f"{self._isl(e, amap, values)} >= 0" for e in exprs]

    def holds(self, expr: AffineExpr, values: Sequence[SSAValue]) -> bool:
        """Whether `expr >= 0` (an expression over dims standing for `values`) holds in every
        iteration; False when that cannot be proved."""
        if not self.valid:
            return False
        try:
            [condition] = self._conditions([expr], values)
        except ValueError:
            return False
        return not self._nonempty([f"not ({condition})"])

    def feasible(self, exprs: Sequence[AffineExpr], values: Sequence[SSAValue]) -> bool:
        """Whether some iteration has every `expr >= 0`; True when that cannot be decided."""
        if not self.valid:
            return True
        try:
            return self._nonempty(self._conditions(exprs, values))
        except ValueError:
            return True
