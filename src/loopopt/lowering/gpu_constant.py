"""Module-scope arrays of GPU kernels: constant memory (address space 4) that the host fills before
launch, and global memory (address space 1) that kernels of one module share (the partial results
of a grid-wide reduction, loops/gpu_grid.py).

Before:  memref.global "public" @__const_k_F : memref<8x8xf32, 4> = uninitialized  (in gpu.module)
         %F_const = memref.get_global @__const_k_F : memref<8x8xf32, 4>            (in kernel @k)
After:   llvm.mlir.global external @__const_k_F(dense<0.0> : tensor<64xf32>) {addr_space = 4 : i32}
             : !llvm.array<64 x f32>
         %0 = llvm.mlir.addressof @__const_k_F : !llvm.ptr<4>

The global is a zero-initialized definition with external linkage and not `constant` in LLVM's
sense: LLVM may not fold its loads (the runtime writes it: `cuModuleGetGlobal` +
`cuMemcpyDtoDAsync` before each launch, runtime/host.py), and NVPTX emits a `.visible .const`
array. The pointer stays in address space 4 through the GEPs (memref_to_llvm keeps the operand's
pointer type), so loads become `ld.const`, which ptxas folds into instructions as `c[0x3][...]`
operands when the offset is constant. `loopopt.constant_args` on the kernel records which
argument fills which global (gpu-constant-memory, loops/constant_memory.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import gpu, llvm, memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from loopopt.diagnostics import LoopoptError
from loopopt.lowering.llvm_common import LoweringState, MemrefInfo, convert_scalar_type
from loopopt.target import CONSTANT_SPACE, GLOBAL_SPACE

DEVICE_SPACES = (GLOBAL_SPACE, CONSTANT_SPACE)
"""Address spaces of the module-scope arrays lowered here."""


def is_constant_space(t: Attribute) -> bool:
    """Is `t` a memref in constant memory (memory space 4)?"""
    return space_of(t) == CONSTANT_SPACE


def space_of(t: Attribute) -> int | None:
    """The integer memory space of a memref type (None: none, or not a memref)."""
    if not isinstance(t, MemRefType):
        return None
    space = t.memory_space
    return space.value.data if isinstance(space, IntegerAttr) else None


def lower_constant_globals(gmod: gpu.ModuleOp) -> None:
    """Replace each memref.global in constant or global memory of `gmod` by its
    llvm.mlir.global (zero-initialized)."""
    for op in list(gmod.body.block.ops):
        if not isinstance(op, memref.GlobalOp) or space_of(op.type) not in DEVICE_SPACES:
            continue
        space = space_of(op.type)
        assert space is not None
        if not isinstance(op.initial_value, UnitAttr):
            raise LoopoptError("a device global takes no initial value", op=op)
        t = op.type
        count = 1
        for size in t.get_shape():
            count *= size
        element = convert_scalar_type(t.element_type, op)
        zero = [0] * count if isinstance(element, IntegerType) else [0.0] * count
        value = DenseIntOrFPElementsAttr.from_list(TensorType(element, [count]), zero)
        new = llvm.GlobalOp(
            llvm.LLVMArrayType(count, element),
            op.sym_name.data,
            "weak",
            addr_space=space,
            value=value,
        )
        new.location = op.location
        gmod.body.block.insert_op_before(new, op)
        op.detach()
        op.erase()


@dataclass
class GetGlobalLowering(RewritePattern):
    """memref.get_global of a constant- or global-memory global → its `ptr addrspace(4)` or
    `ptr addrspace(1)` (others are left alone: the host lowering has no globals)."""

    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GetGlobalOp, rewriter: PatternRewriter, /) -> None:
        t = op.memref.type
        space = space_of(t)
        if space not in DEVICE_SPACES:
            return
        assert isinstance(t, MemRefType) and space is not None
        pointer = llvm.LLVMPointerType(IntAttr(space))
        address = llvm.AddressOfOp(op.name_.root_reference, pointer)
        # A no-op cast to the opaque `ptr addrspace(4)`: llvmlite types the global's address by
        # its array type.
        opaque = llvm.BitcastOp(address.result, pointer)
        rewriter.replace(op, [address, opaque], [opaque.result])
        self.state.memrefs[opaque.result] = MemrefInfo(t, {})
