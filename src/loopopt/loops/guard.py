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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import AffineSetAttr, IndexType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.ir.affine.affine_set import AffineConstraintExpr, AffineConstraintKind, AffineSet
from xdsl.traits import ConstantLike, IsolatedFromAbove, is_side_effect_free, is_speculatable

from loopopt.dialects.affine_ext import IfOp, MaxOp


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


def new_if(guard: Guard, then_block: Block, else_block: Block | None) -> IfOp:
    """An affine.if on `guard`; its result types are those its then-block yields."""
    terminator = then_block.last_op
    types: list[Attribute] = (
        [v.type for v in terminator.operands] if isinstance(terminator, affine.YieldOp) else []
    )
    return IfOp.build(
        operands=[list(guard.operands)],
        result_types=[types],
        properties={"condition": AffineSetAttr(guard.set)},
        regions=[Region(then_block), Region(else_block) if else_block is not None else Region()],
    )


def guarded_copy(
    ops: Sequence[Operation],
    mapper: dict[SSAValue, SSAValue],
    guard: Guard,
    escaping: Sequence[SSAValue],
    fallback: Sequence[SSAValue],
) -> IfOp:
    """Clone `ops` (through `mapper`) into an affine.if on `guard`, not inserted anywhere.

    The if yields the copies of `escaping` (the else-region yields `fallback`, values of the
    same types), and `mapper` then maps each value of `escaping` to the if's result.
    """
    then_block = Block()
    for op in ops:
        then_block.add_op(op.clone(value_mapper=mapper))
    then_block.add_op(affine.YieldOp.get(*(mapper.get(v, v) for v in escaping)))
    else_block = Block([affine.YieldOp.get(*fallback)]) if escaping else None
    if_op = new_if(guard, then_block, else_block)
    for value, result in zip(escaping, if_op.results, strict=True):
        result.name_hint = value.name_hint
        mapper[value] = result
    return if_op
