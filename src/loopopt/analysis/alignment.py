"""Divisibility of index values: a number every value an index takes is a multiple of.

    %j_t = affine.apply (d0 * 64)(%bx)                      multiple of 64
    %e   = affine.apply (d0 * 4)(%l)                        multiple of 4
    %c   = affine.apply (d0 - (d0 floordiv 64) * 64)(%e)    multiple of 4 (e mod 64)
    B[%k_t + %r, %j_t + %c] of memref<256x256xf32>          element offset: multiple of 4

Used to prove that an access is aligned (a 16-byte cp.async needs its source and destination
offsets to be multiples of 4 floats). The answer 0 means "always 0" (a multiple of anything);
1 means nothing is known. Through affine.apply/min/max, constants and affine.for induction
variables (gcd of the step and the lower bound); any other value is 1.

`residue` tells more of an expression with constants: `999 - %k_t - %c` with %k_t a multiple
of 16 and %c of 4 is always 3 plus a multiple of 4 (so `>= 0` and `- 3 >= 0` agree).
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


def residue(expr: AffineExpr, multiples: Sequence[int], num_dims: int) -> tuple[int, int]:
    """(m, r): every value of `expr` is r plus a multiple of m (0 <= r < m; m = 0: always r),
    given a number each operand (`num_dims` dims, then symbols) is a multiple of."""
    if isinstance(expr, AffineConstantExpr):
        return 0, expr.value
    if isinstance(expr, AffineDimExpr | AffineSymExpr):
        return _expr(expr, multiples, num_dims), 0
    assert isinstance(expr, AffineBinaryOpExpr)
    m1, r1 = residue(expr.lhs, multiples, num_dims)
    m2, r2 = residue(expr.rhs, multiples, num_dims)
    if expr.kind == AffineBinaryOpKind.Add:
        return _reduced(gcd(m1, m2), r1 + r2)
    if expr.kind == AffineBinaryOpKind.Mul:
        if m2 == 0:
            return _reduced(m1 * abs(r2), r1 * r2)
        if m1 == 0:
            return _reduced(m2 * abs(r1), r1 * r2)
        return _expr(expr, multiples, num_dims), 0
    if m2 != 0 or r2 <= 0:  # a division by a non-constant (not affine) or by nothing
        return 1, 0
    if expr.kind == AffineBinaryOpKind.Mod:  # x - d * q: the multiple of gcd(m1, d) stays
        return _reduced(gcd(m1, r2), r1) if m1 else (0, r1 % r2)
    if m1 % r2 == 0:  # r1 + m1 * t divided exactly in its multiple part
        quotient = r1 // r2 if expr.kind == AffineBinaryOpKind.FloorDiv else -(-r1 // r2)
        return _reduced(m1 // r2, quotient)
    return 1, 0


def _reduced(m: int, r: int) -> tuple[int, int]:
    return (m, r % m) if m else (0, r)
