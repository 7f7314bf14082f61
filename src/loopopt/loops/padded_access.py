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
replace it. `promote` recognizes these forms with `padded_load` and `padded_store`;
`scalar-replace`, which keeps the guard, with `guarded_load` (any condition: a triangle's
`j <= i` too) and `padded_store`.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import Attribute

from loopopt.analysis.padded import (
    bounds_only,
    fill_load,
    guard_map,
    guarded_load,
    in_bounds,
    padded_load,
    padded_store,
    same_condition,
)

__all__ = [
    "bounds_only",
    "fill_load",
    "guard_map",
    "guarded_load",
    "in_bounds",
    "padded_load",
    "padded_store",
    "same_condition",
    "zero_of",
]
"""Its own names, and the read-only queries it re-exports from analysis/ (where they live)."""


def zero_of(element_type: Attribute) -> arith.ConstantOp:
    """The constant 0 of a float, integer or index type (what a padded load yields outside)."""
    if isinstance(element_type, AnyFloat):
        return arith.ConstantOp(FloatAttr(0.0, element_type))
    assert isinstance(element_type, IntegerType | IndexType)
    return arith.ConstantOp(IntegerAttr(0, element_type))
