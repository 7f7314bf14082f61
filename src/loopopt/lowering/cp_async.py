"""Lower asynchronous copies to shared memory: memref indices → byte offsets → the intrinsic.

Before (in a kernel, before the lowering to the llvm dialect):
    %t = nvgpu.device_async_copy %B[%k, %j], %ring[%s, %r, %c], 4 {bypassL1}
        : memref<256x256xf32> to memref<3x16x68xf32, 3>
    %g = nvgpu.device_async_create_group %t          nvgpu.device_async_wait %g {numGroups = 1}
After `linearize_async_copies` (index arithmetic, lowered to LLVM with the rest):
    %sb = ... ((%k * 256 + %j) * 4 : i64)      %db = ... (((%s * 16 + %r) * 68 + %c) * 4 : i64)
    lowering.cp_async_bytes %ring[%db], %B[%sb] {size = 16 : i32, cache = "cg"}   (internal)
    nvvm.cp.async.commit.group                       nvvm.cp.async.wait.group 1
After `lower_shared_global` (at the end of the GPU lowering, once the memrefs are pointers):
    %d = llvm.getelementptr %ring_ptr[%db] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
    %p = llvm.getelementptr %B_ptr[%sb] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %g = llvm.inttoptr (llvm.ptrtoint %p) : !llvm.ptr<1>
    nvvm.cp.async.shared.global %d, %g, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
and lowering/nvvm_to_llvm.py calls `llvm.nvvm.cp.async.cg.shared.global.16(%d, %g)`.

A copy with a source size (`nvgpu.device_async_copy ..., 4, %n`: %n elements, i32 bytes from
here on) keeps it to the end:
`nvvm.cp.async.shared.global %d, %g, 16, cache = cg, %bytes` calls the intrinsic's `.s` form,
`llvm.nvvm.cp.async.cg.shared.global.16.s(%d, %g, %bytes)` (PTX `cp.async.cg.shared.global
[%rd1], [%rd2], 16, %r1;`: the bytes after %bytes are zero-filled).

The offsets are row-major (dynamic sizes from memref.dim), as lowering/memref_to_llvm.py
computes them. The source pointer goes to the global address space through an integer: xDSL's
llvm dialect has no addrspacecast, and a generic address of global memory is its global
address on NVIDIA GPUs (what CUTLASS relies on when it hands cp.async a generic pointer).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, llvm, memref
from xdsl.dialects.builtin import IntAttr, IntegerAttr, MemRefType, i8, i32, i64
from xdsl.ir import Operation, SSAValue

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.nvgpu import (
    DeviceAsyncCopyOp,
    DeviceAsyncCreateGroupOp,
    DeviceAsyncWaitOp,
    element_width,
)
from loopopt.dialects.nvvm import (
    CpAsyncBytesOp,
    CpAsyncCommitGroupOp,
    CpAsyncSharedGlobalOp,
    CpAsyncWaitGroupOp,
)
from loopopt.lowering.llvm_common import element_bytes
from loopopt.target import GLOBAL_SPACE


def byte_offset(array: SSAValue, indices: Sequence[SSAValue], ops: list[Operation]) -> SSAValue:
    """The i64 byte offset of element `indices` of the row-major memref `array`."""
    t = array.type
    assert isinstance(t, MemRefType)

    def constant(value: int) -> SSAValue:
        op = arith.ConstantOp(IntegerAttr.from_index_int_value(value))
        ops.append(op)
        return op.result

    offset = indices[0] if indices else constant(0)
    for dim in range(1, len(indices)):
        size = t.get_shape()[dim]
        if size < 0:
            dim_op = memref.DimOp.from_source_and_index(array, constant(dim))
            ops.append(dim_op)
            extent = dim_op.result
        else:
            extent = constant(size)
        scaled = arith.MuliOp(offset, extent)
        added = arith.AddiOp(scaled.result, indices[dim])
        ops += [scaled, added]
        offset = added.result
    in_bytes = arith.MuliOp(offset, constant(element_bytes(t.element_type)))
    cast = arith.IndexCastOp(in_bytes.result, i64)
    ops += [in_bytes, cast]
    return cast.result


def linearize_async_copies(root: Operation) -> None:
    """Replace each nvgpu.device_async_copy under `root` by its byte offsets and a
    lowering.cp_async_bytes on the memrefs (which the lowering to LLVM makes pointers), and
    each group and wait by nvvm.cp.async.commit.group / wait.group (tokens dropped)."""
    for op in [op for op in root.walk() if isinstance(op, DeviceAsyncWaitOp)]:
        _replace(op, [CpAsyncWaitGroupOp(op.pending)])
    for op in [op for op in root.walk() if isinstance(op, DeviceAsyncCreateGroupOp)]:
        if op.asyncToken.uses:
            raise LoopoptError("an async group's token is used by more than waits", op=op)
        _replace(op, [CpAsyncCommitGroupOp()])
    for op in [op for op in root.walk() if isinstance(op, DeviceAsyncCopyOp)]:
        if op.asyncToken.uses:
            raise LoopoptError("an async copy's token is used by more than its group", op=op)
        ops: list[Operation] = []
        src = byte_offset(op.src, op.srcIndices, ops)
        dst = byte_offset(op.dst, op.dstIndices, ops)
        cache = "cg" if op.bypassL1 is not None else "ca"
        src_size: SSAValue | None = None
        if op.srcElements is not None:  # elements → i32 bytes
            width = arith.ConstantOp(IntegerAttr.from_index_int_value(element_width(op.src)))
            nbytes = arith.MuliOp(op.srcElements, width.result)
            as_i32 = arith.IndexCastOp(nbytes.result, i32)
            ops += [width, nbytes, as_i32]
            src_size = as_i32.result
        ops.append(CpAsyncBytesOp(op.dst, dst, op.src, src, op.nbytes, cache, src_size))
        _replace(op, ops)


def _replace(op: Operation, ops: list[Operation]) -> None:
    block = op.parent_block()
    assert block is not None
    block.insert_ops_before(ops, op)
    block.erase_op(op, safe_erase=False)


def lower_shared_global(root: Operation) -> None:
    """Replace each lowering.cp_async_bytes under `root` (whose operands are pointers and i64
    byte offsets by now) by the GEPs, the cast of the source to a global pointer, and upstream's
    nvvm.cp.async.shared.global on them."""
    for op in [op for op in root.walk() if isinstance(op, CpAsyncBytesOp)]:
        dst_type = op.dst.type
        assert isinstance(dst_type, llvm.LLVMPointerType)
        dst = llvm.GEPOp(
            op.dst, [llvm.GEP_USE_SSA_VAL], i8, ssa_indices=[op.dst_offset], result_type=dst_type
        )
        src = llvm.GEPOp(
            op.src,
            [llvm.GEP_USE_SSA_VAL],
            i8,
            ssa_indices=[op.src_offset],
            result_type=llvm.LLVMPointerType(),
        )
        as_int = llvm.PtrToIntOp(src.result, i64)
        as_global = llvm.IntToPtrOp.create(
            operands=[as_int.output], result_types=[llvm.LLVMPointerType(IntAttr(GLOBAL_SPACE))]
        )
        copy = CpAsyncSharedGlobalOp(
            dst.result, as_global.results[0], op.size.value.data, op.cache.data, op.src_size
        )
        block = op.parent_block()
        assert block is not None
        block.insert_ops_before([dst, src, as_int, as_global, copy], op)
        block.erase_op(op)
