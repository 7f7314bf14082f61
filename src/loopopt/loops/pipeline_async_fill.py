"""Zero-filled cp.async copies: the copies of padded tiles, each with a source size.

A zero-filled element copy (promote's copy of a padded box, `fill_load`):
    %v = affine.if (%k_t + %c <= 999) -> f32 { %x = affine.load %A[%r, %k_t + %c]  yield %x }
         else { %z = arith.constant 0.0 : f32  yield %z }
    affine.store %v, %A_shared[%r, %c]
becomes one cp.async whose source size is its elements where the condition holds and 0 where
it fails (PTX then writes zeros); the source address where it fails is the array's first element:
    %src:3 = affine.if (%k_t + %c <= 999) -> (index, index, index) {
      %n = arith.constant 4 : index   affine.yield %r, %col, %n
    } else { %0 = arith.constant 0 : index   yield %0, %0, %0 }
    %t = nvgpu.device_async_copy %A[%src#0, %src#1], %A_ring[%s, %r, %c], 4, %src#2 {bypassL1}

PTX's cp.async says that src-size bytes are read and the rest of cp-size zero-filled, not that
a copy of src-size 0 leaves its address alone, so an address outside the array (the padding of
the last tiles) is never handed to it: the first element is in the array and aligned as the
array is.

The lanes of a thread (copy-vector) become one 8- or 16-byte copy under lane 0's condition only
where every lane's condition holds exactly where lane 0's does (`conditions_agree`): pairwise,
lane v's constraint `e + d >= 0` (d a constant) against lane 0's `e >= 0`, where e takes only
values r + m * t (analysis/alignment.residue) and none of them lies between 0 and -d. The
column condition `999 - %k_t - %c - v >= 0` with %k_t a multiple of 16 and %c of 4 is 3 plus a
multiple of 4 minus v: it agrees for v = 0..3 (K = 1000); with K = 999 (2 plus a multiple of 4)
lane 3's fails where lane 0's holds, and the lanes stay 4-byte copies.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineExpr, AffineMap
from xdsl.ir.affine.affine_set import AffineConstraintKind

from loopopt.analysis.alignment import residue, value_multiple
from loopopt.dialects import affine_ext
from loopopt.loops.affine_maps import MapBuilder, composed


def _constraints(guard: affine.IfOp, builder: MapBuilder) -> list[tuple[AffineExpr, bool]]:
    """Each constraint of `guard`'s condition over `builder`'s values: (lhs - rhs, is `== 0`)."""
    aset = guard.condition.data
    exprs = tuple(c.lhs - c.rhs for c in aset.constraints)
    amap = AffineMap(aset.num_dims, aset.num_symbols, exprs)
    kinds = [c.kind == AffineConstraintKind.eq for c in aset.constraints]
    return list(zip(composed(builder, amap, guard.args), kinds, strict=True))


def _same_truth(expr: AffineExpr, shift: int, builder: MapBuilder) -> bool:
    """Whether `expr >= 0` and `expr + shift >= 0` hold for the same values of `builder`'s
    values (every value of `expr` is r plus a multiple of m: none may lie in between)."""
    multiples = [value_multiple(v) for v in builder.values]
    m, r = residue(expr, multiples, len(builder.values))
    between = range(0, -shift) if shift < 0 else range(-shift, 0)
    return not any((t - r) % m == 0 if m else t == r for t in between)


def conditions_agree(head: affine.IfOp | None, lane: affine.IfOp | None) -> bool:
    """Whether `lane`'s condition holds exactly where `head`'s does (both None: unguarded)."""
    if head is None or lane is None:
        return head is lane
    builder = MapBuilder()
    mine, theirs = _constraints(head, builder), _constraints(lane, builder)
    if len(mine) != len(theirs):
        return False
    for (expr, equality), (other, other_equality) in zip(mine, theirs, strict=True):
        shift = builder.simplified(other - expr)
        if equality != other_equality or not isinstance(shift, AffineConstantExpr):
            return False
        if shift.value and (equality or not _same_truth(expr, shift.value, builder)):
            return False
    return True


def holds_copy(array: SSAValue, elements: int) -> bool:
    """The array holds `elements` elements from its first on (where a copy of src-size 0
    points): a static shape at least that large."""
    t = array.type
    assert isinstance(t, MemRefType)
    total = 1
    for size in t.get_shape():
        if size < 0:
            return False
        total *= size
    return total >= elements


def sized_source(
    guard: affine.IfOp, args: Sequence[SSAValue], src: Sequence[SSAValue], elements: int
) -> affine.IfOp:
    """An affine.if of `guard`'s condition on `args` yielding the source indices `src` and
    `elements` (index) where it holds, the first element's indices and 0 where it fails."""
    full = arith.ConstantOp(IntegerAttr.from_index_int_value(elements))
    then = Block([full, affine.YieldOp.get(*src, full.result)])
    origin = arith.ConstantOp(IntegerAttr.from_index_int_value(0))
    other = Block([origin, affine.YieldOp.get(*[origin.result] * (len(src) + 1))])
    types: list[Attribute] = [IndexType()] * (len(src) + 1)
    return affine_ext.IfOp.build(
        operands=[list(args)],
        result_types=[types],
        properties={"condition": guard.condition},
        regions=[Region(then), Region(other)],
    )
