"""Divisibility of index values: a number every value an index takes is a multiple of.

    %j_t = affine.apply (d0 * 64)(%bx)                      multiple of 64
    %e   = affine.apply (d0 * 4)(%l)                        multiple of 4
    %c   = affine.apply (d0 - (d0 floordiv 64) * 64)(%e)    multiple of 4 (e mod 64)
    B[%k_t + %r, %j_t + %c] of memref<256x256xf32>          element offset: multiple of 4

Used to prove that an access is aligned (a 16-byte cp.async needs its source and destination
offsets to be multiples of 4 floats). The answer 0 means "always 0" (a multiple of anything);
1 means nothing is known. Through affine.apply/min/max, constants and affine.for induction
variables (gcd of the step and the lower bound); any other value is 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import gcd

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import Block, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)

from loopopt.dialects.affine_ext import MaxOp


def _expr(expr: AffineExpr, operands: Sequence[int], num_dims: int) -> int:
    """A number `expr` is always a multiple of, given those of its operands (`num_dims` dims,
    then symbols)."""
    if isinstance(expr, AffineConstantExpr):
        return abs(expr.value)
    if isinstance(expr, AffineDimExpr):
        return operands[expr.position]
    if isinstance(expr, AffineSymExpr):
        return operands[num_dims + expr.position]
    assert isinstance(expr, AffineBinaryOpExpr)
    lhs = _expr(expr.lhs, operands, num_dims)
    rhs = _expr(expr.rhs, operands, num_dims)
    if expr.kind == AffineBinaryOpKind.Add:
        return gcd(lhs, rhs)
    if expr.kind == AffineBinaryOpKind.Mul:
        return lhs * rhs
    divisor = expr.rhs.value if isinstance(expr.rhs, AffineConstantExpr) else 0
    if expr.kind == AffineBinaryOpKind.Mod:
        return gcd(lhs, abs(divisor)) if divisor else 1
    if divisor and lhs % divisor == 0:  # an exact division
        return abs(lhs // divisor)
    return 1


def map_multiples(amap: AffineMap, operands: Sequence[SSAValue]) -> list[int]:
    """For each result of `amap` applied to `operands`, a number it is a multiple of."""
    known = [value_multiple(v) for v in operands]
    return [_expr(r, known, amap.num_dims) for r in amap.results]


def value_multiple(value: SSAValue) -> int:
    """A number every value of the index `value` is a multiple of (see the module docstring)."""
    owner = value.owner
    if isinstance(owner, affine.ApplyOp | affine.MinOp | MaxOp):
        amap = owner.map.data
        operands = owner.operands
        multiples = map_multiples(amap, operands)
        result = 0
        for m in multiples:
            result = gcd(result, m)
        return result
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return abs(owner.value.value.data)
    if isinstance(owner, Block):
        loop = owner.parent_op()
        if isinstance(loop, affine.ForOp) and owner.args and owner.args[0] is value:
            lower = map_multiples(loop.lowerBoundMap.data, loop.lowerBoundOperands)
            result = loop.step.value.data
            for m in lower:
                result = gcd(result, m)
            return result
    return 1


def offset_multiple(t: MemRefType, index_multiples: Sequence[int]) -> int:
    """A number the row-major element offset of an access to `t` is a multiple of, given those
    of its indices (dynamic sizes count as unknown factors of the strides)."""
    shape = t.get_shape()
    result = 0
    for dim, m in enumerate(index_multiples):
        stride = 1
        for size in shape[dim + 1 :]:
            stride *= size if size > 0 else 1
        result = gcd(result, m * stride)
    return result
