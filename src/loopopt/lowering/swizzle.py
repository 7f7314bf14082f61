"""Swizzled buffers to plain ones: the physical indices of every access, before any address.

Before (a buffer of `promote{swizzle}`, logical indices):
    %b = memref.alloca() : memref<8x128xf32, #loopopt.swizzle<4, 8>, 3 : i64>
    %v = affine.load %b[%k, %j + 66] : memref<8x128xf32, #loopopt.swizzle<4, 8>, 3 : i64>
After:
    %b = memref.alloca() : memref<8x128xf32, 3 : i64>
    %r = affine.apply (d0, d1) -> (d0)(%k, %j)
    %m = affine.apply (d0, d1) -> ((d0 mod 8) * 4)(%k, %j)       loops/promote.swizzle_mask
    %c = affine.apply (d0, d1) -> (d1 + 64)(%k, %j)                 the column less its offset
    %x = arith.xori %c, %m : index                                  in its chunk (2, when %j is
    %p = arith.addi %x, %c2 : index                                 a multiple of 4)
    %v = memref.load %b[%r, %p] : memref<8x128xf32, 3 : i64>

Each access of a value whose memref type has the `#loopopt.swizzle` layout (an alloca, a
workgroup attribution, a cp.async ring) gets the column loops/promote.swizzled_column gives
it, and the value loses the layout: the lowering then addresses the buffer row-major. Where
the column is a known offset e (below the chunk) plus a multiple of the chunk (analysis/
alignment.residue: a thread's fragment, unrolled), the XOR applies to the multiple and e is
added after it, so that LLVM still sees consecutive elements of a fragment at consecutive
addresses (one ld.shared.v4). cp.async copies (nvgpu.device_async_copy) into a swizzled
buffer get their destination column swizzled the same way. Another user of a swizzled value
is an error. Idempotent: a value without the layout is left alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, arith, memref
from xdsl.dialects.builtin import AffineMapAttr, IntegerAttr, MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.rewriter import Rewriter

from loopopt.analysis.alignment import residue, value_multiple
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.layout import SwizzleLayoutAttr
from loopopt.dialects.nvgpu import DeviceAsyncCopyOp
from loopopt.loops.promote import swizzle_mask


def unswizzle(root: Operation) -> None:
    """Rewrite the accesses of every swizzled buffer under `root` (see the module docstring)."""
    values: list[SSAValue] = []
    for op in root.walk():
        values += [r for r in op.results if _swizzle_of(r) is not None]
        for region in op.regions:
            for block in region.blocks:
                values += [a for a in block.args if _swizzle_of(a) is not None]
    for value in values:
        layout = _swizzle_of(value)
        assert layout is not None
        chunk, period = layout.params
        for use in list(value.uses):
            user = use.operation
            if isinstance(user, affine.LoadOp | affine.StoreOp):
                _rewrite_access(user, chunk, period)
            elif isinstance(user, DeviceAsyncCopyOp) and user.dst is value:
                _rewrite_copy(user, chunk, period)
            else:
                raise LoopoptError(f"cannot lower '{user.name}' of a swizzled buffer", op=user)
        t = value.type
        assert isinstance(t, MemRefType)
        plain = MemRefType(t.element_type, t.get_shape(), memory_space=t.memory_space)
        Rewriter.replace_value_with_new_type(value, plain)


def _swizzle_of(value: SSAValue) -> SwizzleLayoutAttr | None:
    t = value.type
    if isinstance(t, MemRefType) and isinstance(t.layout, SwizzleLayoutAttr):
        return t.layout
    return None


def _apply(expr: AffineExpr, amap: AffineMap, operands: Sequence[SSAValue]) -> affine.ApplyOp:
    one = AffineMap(amap.num_dims, amap.num_symbols, (expr,))
    return affine.ApplyOp(list(operands), AffineMapAttr(one))


def _index(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr.from_index_int_value(value))


def _rewrite_access(op: affine.LoadOp | affine.StoreOp, chunk: int, period: int) -> None:
    """The access at its physical indices, as memref.load/store (the column is no longer
    affine); the column's offset within its chunk added after the XOR where it is known."""
    amap = op.map.data if op.map is not None else None
    assert amap is not None
    operands = list(op.indices)
    exprs = list(amap.results)
    ops: list[Operation] = []
    indices: list[SSAValue] = []
    for expr in exprs[:-1]:
        apply = _apply(expr, amap, operands)
        ops.append(apply)
        indices.append(apply.result)
    mask = _apply(swizzle_mask(exprs[-2], chunk, period), amap, operands)
    multiples = [value_multiple(v) for v in operands]
    m, r = residue(exprs[-1], multiples, amap.num_dims)
    offset = r % chunk if m % chunk == 0 else 0
    base = _apply(exprs[-1] - offset, amap, operands)
    xor = arith.XOrIOp(base.result, mask.result)
    ops += [mask, base, xor]
    column: SSAValue = xor.result
    if offset:
        constant = _index(offset)
        added = arith.AddiOp(xor.result, constant.result)
        ops += [constant, added]
        column = added.result
    indices.append(column)
    new: Operation
    if isinstance(op, affine.LoadOp):
        new = memref.LoadOp.get(op.memref, indices)
    else:
        new = memref.StoreOp.get(op.value, op.memref, indices)
    block = op.parent_block()
    assert block is not None
    block.insert_ops_before([*ops, new], op)
    if isinstance(op, affine.LoadOp):
        op.result.replace_all_uses_with(new.results[0])
    op.detach()
    op.erase()


def _rewrite_copy(op: DeviceAsyncCopyOp, chunk: int, period: int) -> None:
    """The copy's destination column swizzled (a whole chunk: its 16 bytes stay together)."""
    row, column = op.dstIndices[-2], op.dstIndices[-1]
    mask = affine.ApplyOp(
        [row],
        AffineMapAttr(AffineMap(1, 0, (swizzle_mask(AffineExpr.dimension(0), chunk, period),))),
    )
    xor = arith.XOrIOp(column, mask.result)
    block = op.parent_block()
    assert block is not None
    block.insert_ops_before([mask, xor], op)
    operands = list(op.operands)
    operands[len(op.dstIndices)] = xor.result  # dst, dstIndices..., src, ...
    op.operands = operands
