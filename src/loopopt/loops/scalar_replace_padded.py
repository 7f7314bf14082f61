"""Scalar replacement of padded accesses: the guarded loads and stores of over-computed tiles.

In a tile that `pad-tiles` rounded up, each access of C[%i, %j] sits under the same guard
`c` = "the element exists" (see `loopopt.loops.padded_access`), or "and the iteration is one of
the original ones" (a triangle's `j <= i`: then the element may exist where `c` fails, and the
argument below holds all the same, since both versions touch it only where `c` holds). Across
a loop L in which `c` is invariant, the element is loaded once under `c` before L, carried as
an iter_arg, and stored once under `c` after L:

Before:
    affine.for %k = 0 to 8 {
      %o = affine.if c(%i, %j) -> f32 { C[%i, %j] } else { 0.0 } {loopopt.padded}
      %s = arith.addf %o, %p
      affine.if c(%i, %j) { affine.store %s, %C[%i, %j] } {loopopt.padded}
    }
After:
    %C_reg = affine.if c(%i, %j) -> f32 { C[%i, %j] } else { 0.0 } {loopopt.padded}
    %C_out = affine.for %k = 0 to 8 iter_args(%C_acc = %C_reg) -> (f32) {
      %s = arith.addf %C_acc, %p   affine.yield %s
    }
    affine.if c(%i, %j) { affine.store %C_out, %C[%i, %j] } {loopopt.padded}

Where `c` is false the original loads give 0.0 at every iteration and its stores do nothing,
while the replaced loop carries the sums: the two differ only in values that nobody sees, as
long as every value read from the element reaches nothing but pure ops inside L, the iter_args
of loops inside L (so that an element carried across an inner loop may be carried across L
too), and the padded stores of the same element (`escape` finds an op that breaks this). An
element that L only reads needs no such rule: where `c` is false both versions read 0.0.

This module holds the mechanics that `loopopt.loops.scalar_replace` uses for these forms.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.ir import Operation, SSAValue, Use
from xdsl.ir.affine import AffineExpr
from xdsl.traits import IsTerminator, is_side_effect_free, is_speculatable

from loopopt.loops.affine_maps import constant_difference
from loopopt.loops.padded_access import guarded_load, padded_store, same_condition


def padded_access(op: Operation) -> affine.LoadOp | affine.StoreOp | None:
    """The load or store that `op` guards when it is a padded load (on any condition: see
    `guarded_load`) or store, else None."""
    load = guarded_load(op)
    return load if load is not None else padded_store(op)


def wrapper(access: affine.LoadOp | affine.StoreOp) -> affine.IfOp | None:
    """The padded load or store whose guarded access `access` is, else None."""
    parent = access.parent_op()
    if isinstance(parent, affine.IfOp) and padded_access(parent) is access:
        return parent
    return None


def same_guard(a: affine.IfOp | None, b: affine.IfOp | None) -> bool:
    """Both plain (None), or both padded on the same set and operands."""
    if a is None or b is None:
        return a is b
    return same_condition(a, b)


def same_conditions(a: Sequence[AffineExpr], b: Sequence[AffineExpr], count: int) -> bool:
    """Whether two conditions (`condition` results composed over `count` placeholders) are the
    same expressions, in the same order."""
    if len(a) != len(b):
        return False
    return all(constant_difference(x, y, count) == 0 for x, y in zip(a, b, strict=True))


def _pure(op: Operation, loop: affine.ForOp) -> bool:
    """An op inside `loop` that only computes values and cannot trap."""
    if op.regions or op.has_trait(IsTerminator) or not loop.is_ancestor(op):
        return False
    return is_side_effect_free(op) and is_speculatable(op)


def _carried(use: Use, loop: affine.ForOp) -> list[SSAValue] | None:
    """Where a value flows through an affine.for inside `loop` (not `loop` itself) when `use`
    is one of its inits or an operand of its yield: the iter_arg and the result; else None."""
    op = use.operation
    if isinstance(op, affine.YieldOp):
        inner, position = op.parent_op(), use.index
    elif isinstance(op, affine.ForOp):
        inner, position = op, use.index - (len(op.operands) - len(op.inits))
    else:
        return None
    if not isinstance(inner, affine.ForOp) or inner is loop or not loop.is_ancestor(inner):
        return None
    if position < 0:  # a bound operand
        return None
    return [inner.body.block.args[position + 1], inner.results[position]]


def escape(
    accesses: Sequence[affine.LoadOp | affine.StoreOp],
    wrappers: Sequence[affine.IfOp | None],
    loop: affine.ForOp,
) -> Operation | None:
    """The first op found that a value read by the padded loads among `accesses` (their
    `wrapper`s given, None for a plain one) or computed from one reaches, other than a pure op
    inside `loop`, an affine.for inside `loop` that carries it (as an init, and its yield) and
    the stored value of a padded store among `accesses`; None when there is none, so the
    values read never leave those ops."""
    stores = {a for a in accesses if isinstance(a, affine.StoreOp)}
    loads = [w for a, w in zip(accesses, wrappers, strict=True) if isinstance(a, affine.LoadOp)]
    pending: list[SSAValue] = [load.results[0] for load in loads if load is not None]
    seen: set[SSAValue] = set(pending)
    while pending:
        value = pending.pop()
        for use in value.uses:
            op = use.operation
            if op in stores and isinstance(op, affine.StoreOp) and op.value is value:
                continue
            reached = _carried(use, loop)
            if reached is None and not _pure(op, loop):
                return op
            for result in reached if reached is not None else op.results:
                if result not in seen:
                    seen.add(result)
                    pending.append(result)
    return None
