"""Lower memref ops to the llvm dialect: bare pointers, row-major offsets.

Before:  %v = memref.load %A[%i, %j] : memref<?x8xf32>
After:   %r = llvm.mul %i, %c8 overflow<nsw> : i64
         %o = llvm.add %r, %j overflow<nsw> : i64
         %p = llvm.getelementptr inbounds %A[%o] : (!llvm.ptr, i64) -> !llvm.ptr, f32
         %v = llvm.load %p : !llvm.ptr -> f32

`memref.alloca` of static shape is hoisted to the function's entry block (a local buffer made
inside a loop must not grow the stack each iteration); `memref.alloc`/`dealloc` call
malloc/free. Memory spaces are ignored (host), except that the GPU lowering may take over
shared-memory allocas (`LoweringState.workgroup_alloca`). `PRODUCER_PATTERNS` run before the
others so that every memref pointer is in the state's table when its users are lowered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, llvm, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, StringAttr, i8, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import ALLOCATOR
from loopopt.lowering.atomic import AtomicRMWLowering
from loopopt.lowering.gpu_constant import GetGlobalLowering
from loopopt.lowering.llvm_common import (
    PTR,
    LoweringState,
    MemrefInfo,
    check_memref_type,
    const,
    convert_scalar_type,
    element_bytes,
)

NSW = IntegerAttr(1, 32)


def _memref_type(value: SSAValue, op: Operation) -> MemRefType:
    t = value.type
    if not isinstance(t, MemRefType):
        raise LoopoptError(f"cannot lower '{op.name}' of a non-ranked memref", op=op)
    check_memref_type(t, op)
    return t


def size_value(info: MemrefInfo, dim: int, ops: list[Operation]) -> SSAValue:
    """The i64 size of dimension `dim` (a constant for static sizes, appended to `ops`)."""
    if dim in info.dynamic_sizes:
        return info.dynamic_sizes[dim]
    c = const(info.type.get_shape()[dim])
    ops.append(c)
    return c.result


def element_pointer(
    info: MemrefInfo, ptr: SSAValue, indices: Sequence[SSAValue], ops: list[Operation]
) -> SSAValue:
    """Address of element `indices` of the row-major memref at `ptr` (ops appended to `ops`)."""
    if not indices:
        return ptr
    offset = indices[0]
    for dim in range(1, len(indices)):
        scaled = llvm.MulOp(offset, size_value(info, dim, ops), overflow=NSW)
        added = llvm.AddOp(scaled.res, indices[dim], overflow=NSW)
        ops += [scaled, added]
        offset = added.res
    element = convert_scalar_type(info.type.element_type)
    pointer = ptr.type if isinstance(ptr.type, llvm.LLVMPointerType) else llvm.LLVMPointerType()
    gep = llvm.GEPOp(
        ptr,
        [llvm.GEP_USE_SSA_VAL],
        element,
        ssa_indices=[offset],
        result_type=pointer,  # keeps a shared buffer's address space 3
        inbounds=True,
    )
    ops.append(gep)
    return gep.result


def _element_count(t: MemRefType, sizes: Sequence[SSAValue], ops: list[Operation]) -> SSAValue:
    static = 1
    for size in t.get_shape():
        static *= size if size >= 0 else 1
    count = const(static)
    ops.append(count)
    total: SSAValue = count.result
    for size in sizes:
        mul = llvm.MulOp(total, size, overflow=NSW)
        ops.append(mul)
        total = mul.res
    return total


@dataclass
class AllocaLowering(RewritePattern):
    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter, /) -> None:
        t = _memref_type(op.memref, op)
        hooked = self.state.workgroup_alloca(op) if self.state.workgroup_alloca else None
        if hooked is not None:
            rewriter.replace(op, hooked[0], [hooked[1]])
            self.state.memrefs[hooked[1]] = _info(t, op.dynamic_sizes)
            return
        ops: list[Operation] = []
        count = _element_count(t, op.dynamic_sizes, ops)
        alloca = llvm.AllocaOp(count, convert_scalar_type(t.element_type), alignment=64)
        entry = _entry_block(op)
        if op.dynamic_sizes or entry is None:
            rewriter.replace(op, [*ops, alloca], [alloca.res])
        else:
            first = entry.first_op
            point = InsertPoint.before(first) if first is not None else InsertPoint.at_end(entry)
            rewriter.insert([*ops, alloca], point)
            rewriter.replace(op, [], [alloca.res])
        self.state.memrefs[alloca.res] = _info(t, op.dynamic_sizes)


def _entry_block(op: Operation) -> Block | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, llvm.FuncOp):
        parent = parent.parent_op()
    return None if parent is None else parent.body.blocks.first


def _info(t: MemRefType, dynamic_sizes: Sequence[SSAValue]) -> MemrefInfo:
    dims = [d for d, size in enumerate(t.get_shape()) if size < 0]
    return MemrefInfo(t, dict(zip(dims, dynamic_sizes, strict=True)))


@dataclass
class AllocLowering(RewritePattern):
    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocOp, rewriter: PatternRewriter, /) -> None:
        t = _memref_type(op.memref, op)
        ops: list[Operation] = []
        count = _element_count(t, op.dynamic_sizes, ops)
        width = const(element_bytes(t.element_type, op))
        nbytes = llvm.MulOp(count, width.result, overflow=NSW)
        allocator = _allocator(op, "malloc")
        self.state.declare(allocator, [i64], PTR)
        call = llvm.CallOp(allocator, nbytes.res, return_type=PTR)
        rewriter.replace(op, [*ops, width, nbytes, call], [call.returned])
        assert call.returned is not None
        self.state.memrefs[call.returned] = _info(t, op.dynamic_sizes)


@dataclass
class DeallocLowering(RewritePattern):
    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.DeallocOp, rewriter: PatternRewriter, /) -> None:
        free = _allocator(op, "free")
        self.state.declare(free, [PTR], llvm.LLVMVoidType())
        rewriter.replace(op, llvm.CallOp(free, op.memref))


def _allocator(op: Operation, default: str) -> str:
    """The function an alloc / dealloc calls: its `loopopt.allocator`, else malloc / free."""
    name = op.attributes.get(ALLOCATOR)
    return name.data if isinstance(name, StringAttr) else default


@dataclass
class CastLowering(RewritePattern):
    """memref.cast / memref.memory_space_cast: the same pointer, sizes known statically or not."""

    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: memref.CastOp | memref.MemorySpaceCastOp, rewriter: PatternRewriter, /
    ) -> None:
        source = self.state.memrefs.get(op.source)
        if source is None:
            return  # the source is lowered first; this pattern is applied again after
        t = _memref_type(op.dest, op)
        ops: list[Operation] = []
        sizes = [size_value(source, d, ops) for d, s in enumerate(t.get_shape()) if s < 0]
        alias = llvm.GEPOp(op.source, [0], i8)
        rewriter.replace(op, [*ops, alias], [alias.result])
        self.state.memrefs[alias.result] = _info(t, sizes)


@dataclass
class LoadLowering(RewritePattern):
    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter, /) -> None:
        info = self.state.info(op.memref, op)
        ops: list[Operation] = []
        ptr = element_pointer(info, op.memref, op.indices, ops)
        load = llvm.LoadOp(ptr, convert_scalar_type(op.res.type, op))
        rewriter.replace(op, [*ops, load], [load.dereferenced_value])


@dataclass
class StoreLowering(RewritePattern):
    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter, /) -> None:
        info = self.state.info(op.memref, op)
        ops: list[Operation] = []
        ptr = element_pointer(info, op.memref, op.indices, ops)
        rewriter.replace(op, [*ops, llvm.StoreOp(op.value, ptr)], [])


@dataclass
class DimLowering(RewritePattern):
    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.DimOp, rewriter: PatternRewriter, /) -> None:
        info = self.state.info(op.source, op)
        dim = _constant_int(op.index)
        if dim is None or not 0 <= dim < info.type.get_num_dims():
            raise LoopoptError("memref.dim needs a constant, in-range dimension", op=op)
        ops: list[Operation] = []
        size = size_value(info, dim, ops)
        rewriter.replace(op, ops, [size])


def _constant_int(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp | llvm.ConstantOp):
        attr = owner.value
        if isinstance(attr, IntegerAttr):
            return attr.value.data
    return None


def producer_patterns(state: LoweringState) -> list[RewritePattern]:
    """Patterns that create memref pointers; run them before `user_patterns`."""
    return [
        AllocaLowering(state),
        AllocLowering(state),
        CastLowering(state),
        GetGlobalLowering(state),
    ]


def user_patterns(state: LoweringState) -> list[RewritePattern]:
    return [
        LoadLowering(state),
        StoreLowering(state),
        DimLowering(state),
        DeallocLowering(state),
        AtomicRMWLowering(state),
    ]
