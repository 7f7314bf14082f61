"""Recognizing padded accesses: the guarded loads and stores that `pad-tiles` leaves in
over-computed tiles (loops/padded_access.py describes the forms).

    padded_load(if_op)       # the affine.load of a padded load, else None
    guarded_load(if_op)      # the same, on any condition (not only in-bounds ones)
    padded_store(if_op)      # the affine.store of a padded store, else None
    fill_load(if_op)         # the load of any 'element where the condition holds, else 0' form

Nothing here changes the IR.
"""

from __future__ import annotations

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    MemRefType,
)
from xdsl.ir import Operation
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.ir.affine.affine_set import AffineConstraintKind

from loopopt.analysis.affine_maps import Bound, MapBuilder, composed
from loopopt.dialects.loopopt import PADDED


def _ops(op: affine.IfOp, region: int) -> list[Operation]:
    regions = (op.then_region, op.else_region)
    if not regions[region].blocks:
        return []
    return list(regions[region].block.ops)


def fill_load(op: Operation) -> affine.LoadOp | None:
    """The load of an affine.if that yields it where its condition holds and the constant 0
    elsewhere (a padded load, or promote's copy of an element of a zero-filled box)."""
    if not isinstance(op, affine.IfOp) or len(op.res) != 1:
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


def guarded_load(op: Operation) -> affine.LoadOp | None:
    """The load of a `pad-tiles` load, whatever its condition: the element where it holds, 0
    elsewhere. Besides in-bounds conditions, the condition may hold the original bounds of the
    iteration (a triangle's `j <= i`), so where it fails the element may exist: right for
    `scalar-replace`, which keeps the guard, not for a zero-filled box (`padded_load`)."""
    if PADDED not in op.attributes:
        return None
    return fill_load(op)


def padded_load(op: Operation) -> affine.LoadOp | None:
    """The load of a padded load (see the module docstring), else None."""
    load = guarded_load(op)
    if load is None:
        return None
    assert isinstance(op, affine.IfOp)
    return load if bounds_only(op, load) else None


def bounds_only(op: affine.IfOp, access: affine.LoadOp | affine.StoreOp) -> bool:
    """Whether every constraint of `op` is one of `access`'s in-bounds conditions (so where
    it fails, the element is outside the array), affine.apply ops and constants composed on
    both sides (unrolling rewrites an access's indices and the guard's operands differently)."""
    builder = MapBuilder()
    inside = in_bounds(access, builder)
    if inside is None:
        return False
    guard = guard_map(op)
    return set(composed(builder, guard.map, guard.operands)) <= set(inside)


def guard_map(if_op: affine.IfOp) -> Bound:
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
    if not isinstance(op, affine.IfOp) or PADDED not in op.attributes or op.res:
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


def same_condition(a: affine.IfOp, b: affine.IfOp) -> bool:
    """Whether two affine.if ops test the same integer set on the same operands."""
    return a.condition == b.condition and tuple(a.args) == tuple(b.args)
