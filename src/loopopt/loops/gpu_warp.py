"""Warp shuffles that finish a block's reduction tree (loops/gpu_region.reduce_over_block).

The shared-memory tree of a block's T partial results stops at W of them (`warp_width`: 32, or
the largest power of two dividing T when T is no multiple of 32, so that every segment of W
lanes is whole). Every thread then loads partial `t mod W`, and log2(W) butterfly shuffles
(`nvvm.shfl.sync bfly`, width W) combine the W values within each segment, with no barrier
among the steps. Every lane ends with the same total: at each step a lane computes a ⊕ b and
its partner b ⊕ a, which are equal (⊕ commutes), so the block's threads agree, run to run.

Before (the last 5 levels of the tree):     After:
    affine.if (tx < 16) {                       %p = affine.load %partials[%tx mod 32]
      partials[tx] ⊕= partials[tx + 16] }       %s = nvvm.shfl.sync bfly %all, %p, %c16, %c31
    gpu.barrier … (4 more levels)               %p1 = arith.addf %p, %s     (offsets 8, 4, 2, 1)
    %total = affine.load %partials[0]

A shuffle moves 32 bits (PTX has only `shfl.sync.*.b32`): f32 and i32 values move as they are,
f64 and i64 values as two halves; other element types (f16, i8, index) are not shuffled
(`warp_width` is 1: the tree runs to its end). The member mask names the lanes of the
thread's segment (all 32 when W = 32), and the clamp operand `(32 - W) << 8 | 31` confines each
exchange to it, so no lane reads an absent or inactive one.
"""

from __future__ import annotations

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import (
    AffineMapAttr,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.analysis.reduction import Reduction, merge
from loopopt.dialects.nvvm import ShflKind, ShflSyncOp

WARP = 32
"""Threads of a warp: the most lanes one shuffle exchanges among."""


def shuffled_bits(element: Attribute) -> int:
    """The bits a value of `element` type moves through shuffles: 32 or 64, else 0 (none)."""
    if isinstance(element, Float32Type) or element == i32:
        return 32
    if isinstance(element, Float64Type) or element == i64:
        return 64
    return 0


def warp_width(count: int, elements: list[Attribute]) -> int:
    """Partial results a segment of lanes combines by shuffles when `count` threads reduce
    values of `elements` types: the largest power of two ≤ 32 dividing `count`, or 1."""
    if any(shuffled_bits(e) == 0 for e in elements):
        return 1
    width = 1
    while width < WARP and count % (2 * width) == 0:
        width *= 2
    return width


def clamp_operand(width: int) -> int:
    """PTX's c operand of a shuffle within segments of `width` lanes."""
    return ((WARP - width) << 8) | (WARP - 1)


def butterfly(
    r: Reduction, value: SSAValue, width: int, count: int, thread: SSAValue
) -> tuple[list[Operation], SSAValue]:
    """Ops combining `value` over the `width` lanes of each segment (`count` threads, thread
    id `thread`), and their result: the same total in every lane of the segment."""
    ops: list[Operation] = []
    mask = _member_mask(width, count, thread, ops)
    clamp = _i32(ops, clamp_operand(width))
    offset = width // 2
    while offset >= 1:
        other = _shuffle(value, mask, _i32(ops, offset), clamp, ops)
        both = merge(r, value, other)
        ops.append(both)
        value = both.results[0]
        offset //= 2
    return ops, value


def _op(ops: list[Operation], op: Operation) -> SSAValue:
    ops.append(op)
    return op.results[0]


def _i32(ops: list[Operation], value: int) -> SSAValue:
    """An i32 constant of the 32 bits of `value` (0 ≤ value < 2^32)."""
    signed = value - (1 << 32) if value >= 1 << 31 else value
    return _op(ops, arith.ConstantOp(IntegerAttr(signed, i32)))


def _member_mask(width: int, count: int, thread: SSAValue, ops: list[Operation]) -> SSAValue:
    """The lanes of the thread's segment of `width` lanes."""
    if width == WARP:
        return _i32(ops, (1 << WARP) - 1)
    if width == count:
        return _i32(ops, (1 << width) - 1)
    first_lane = ((AffineExpr.dimension(0) % WARP) // width) * width
    start = _op(ops, affine.ApplyOp([thread], AffineMapAttr(AffineMap(1, 0, (first_lane,)))))
    shift = _op(ops, arith.IndexCastOp(start, i32))
    return _op(ops, arith.ShLIOp(_i32(ops, (1 << width) - 1), shift))


def _shuffle(
    value: SSAValue, mask: SSAValue, offset: SSAValue, clamp: SSAValue, ops: list[Operation]
) -> SSAValue:
    """`value` of the lane `lane ^ offset`, 32 bits at a time."""
    element = value.type
    if shuffled_bits(element) == 32:
        return _op(ops, ShflSyncOp(ShflKind.BFLY, mask, value, offset, clamp))
    bits = value if isinstance(element, IntegerType) else _op(ops, arith.BitcastOp(value, i64))
    c32 = _op(ops, arith.ConstantOp(IntegerAttr(32, i64)))
    low = _op(ops, arith.TruncIOp(bits, i32))
    high = _op(ops, arith.TruncIOp(_op(ops, arith.ShRUIOp(bits, c32)), i32))
    low = _op(ops, ShflSyncOp(ShflKind.BFLY, mask, low, offset, clamp))
    high = _op(ops, ShflSyncOp(ShflKind.BFLY, mask, high, offset, clamp))
    wide_high = _op(ops, arith.ShLIOp(_op(ops, arith.ExtUIOp(high, i64)), c32))
    joined = _op(ops, arith.OrIOp(wide_high, _op(ops, arith.ExtUIOp(low, i64))))
    if isinstance(element, IntegerType):
        return joined
    return _op(ops, arith.BitcastOp(joined, element))
