"""Padded accesses: the guarded loads and stores that `pad-tiles` leaves in over-computed tiles.

A tile padded to its full size runs iterations past the original bounds; each access of an
array there is guarded so that it touches only elements that exist:

    %a = affine.if (%i <= 999, %k <= 999) -> (f32) {        a padded load: the element, or 0.0
      %x = affine.load %A[%i, %k]   affine.yield %x          where it is out of the array's bounds
    } else { %z = arith.constant 0.0 : f32   affine.yield %z } {loopopt.padded}

    affine.if (%i <= 999, %j <= 999) {                      a padded store: only where the
      affine.store %s, %C[%i, %j]                           element exists (and, unless pad-tiles
    } {loopopt.padded}                                      proved it needless, in the tile)

A padded load's conditions are in-bounds conditions of its element (`in_bounds`; those that
always hold may be left out), so where it yields 0.0 the element is outside the array: a
buffer holding the array's box with zeros outside the array (`promote` of such loads) can
replace it. `promote` and `scalar-replace` recognize these forms with `padded_load` and
`padded_store`.
"""

from __future__ import annotations

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
)
from xdsl.ir import Attribute, Operation
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.ir.affine.affine_set import AffineConstraintKind

from loopopt.dialects.affine_ext import IfOp
from loopopt.loops.affine_maps import Bound, MapBuilder, composed

PADDED = "loopopt.padded"
"""Unit attribute of the affine.if ops that guard the accesses of padded tiles."""


def _ops(op: IfOp, region: int) -> list[Operation]:
    regions = (op.then_region, op.else_region)
    if not regions[region].blocks:
        return []
    return list(regions[region].block.ops)


def fill_load(op: Operation) -> affine.LoadOp | None:
    """The load of an affine.if that yields it where its condition holds and the constant 0
    elsewhere (a padded load, or promote's copy of an element of a zero-filled box)."""
    if not isinstance(op, IfOp) or len(op.res) != 1:
        return None
    then, other = _ops(op, 0), _ops(op, 1)
    if len(then) != 2 or len(other) != 2:
        return None
    load, yielded = then
    zero, fallback = other
    if not isinstance(load, affine.LoadOp) or not isinstance(yielded, affine.YieldOp):
        return None
    if tuple(yielded.operands) != (load.result,):
        return None
    if not isinstance(zero, arith.ConstantOp) or not isinstance(fallback, affine.YieldOp):
        return None
    value = zero.value
    if not isinstance(value, FloatAttr | IntegerAttr) or value.value.data != 0:
        return None
    return load if tuple(fallback.operands) == (zero.result,) else None


def padded_load(op: Operation) -> affine.LoadOp | None:
    """The load of a padded load (see the module docstring), else None."""
    if PADDED not in op.attributes:
        return None
    load = fill_load(op)
    if load is None:
        return None
    assert isinstance(op, IfOp)
    return load if bounds_only(op, load) else None


def bounds_only(op: IfOp, access: affine.LoadOp | affine.StoreOp) -> bool:
    """Whether every constraint of `op` is one of `access`'s in-bounds conditions (so where
    it fails, the element is outside the array), affine.apply ops and constants composed on
    both sides (unrolling rewrites an access's indices and the guard's operands differently)."""
    builder = MapBuilder()
    inside = in_bounds(access, builder)
    if inside is None:
        return False
    guard = guard_map(op)
    return set(composed(builder, guard.map, guard.operands)) <= set(inside)


def guard_map(if_op: IfOp) -> Bound:
    """The condition of `if_op` as a map over its operands whose results are each `>= 0`
    (an equality gives two results)."""
    aset = if_op.condition.data
    results: list[AffineExpr] = []
    for constraint in aset.constraints:
        difference = constraint.lhs - constraint.rhs
        if constraint.kind == AffineConstraintKind.le:
            difference = constraint.rhs - constraint.lhs
        results.append(difference)
        if constraint.kind == AffineConstraintKind.eq:
            results.append(constraint.rhs - constraint.lhs)
    amap = AffineMap(aset.num_dims, aset.num_symbols, tuple(results))
    return Bound(amap, tuple(if_op.args))


def padded_store(op: Operation) -> affine.StoreOp | None:
    """The store of a padded store, else None."""
    if not isinstance(op, IfOp) or PADDED not in op.attributes or op.res:
        return None
    if _ops(op, 1)[:-1]:
        return None
    then = _ops(op, 0)
    if len(then) != 2 or not isinstance(then[1], affine.YieldOp) or then[1].operands:
        return None
    return then[0] if isinstance(then[0], affine.StoreOp) else None


def in_bounds(
    access: affine.LoadOp | affine.StoreOp, builder: MapBuilder
) -> list[AffineExpr] | None:
    """The conditions (each `>= 0`) that every index of `access` is within its memref's
    static shape, over `builder`'s placeholders; None for a dynamic shape."""
    memref_type = access.memref.type
    assert isinstance(memref_type, MemRefType)
    shape = memref_type.get_shape()
    if any(size < 0 for size in shape):
        return None
    indices = composed(builder, access.map.data, access.indices)
    conditions: list[AffineExpr] = []
    for index, size in zip(indices, shape, strict=True):
        conditions += [index, AffineExpr.constant(size - 1) - index]
    return conditions


def same_condition(a: IfOp, b: IfOp) -> bool:
    """Whether two affine.if ops test the same integer set on the same operands."""
    return a.condition == b.condition and tuple(a.args) == tuple(b.args)


def zero_of(element_type: Attribute) -> arith.ConstantOp:
    """The constant 0 of a float, integer or index type (what a padded load yields outside)."""
    if isinstance(element_type, AnyFloat):
        return arith.ConstantOp(FloatAttr(0.0, element_type))
    assert isinstance(element_type, IntegerType | IndexType)
    return arith.ConstantOp(IntegerAttr(0, element_type))
