"""Shared (workgroup, address space 3) buffers of GPU kernels: where each one lives.

Before:  %t = memref.alloca() : memref<32x33xf32, 3>            (in kernel @k)
After:   llvm.mlir.global internal @__shm_k_0() {addr_space = 3 : i32, alignment = 16 : i64}
             : !llvm.array<1056 x f32>
         %t = llvm.mlir.addressof @__shm_k_0 : !llvm.ptr<3>

A kernel whose buffers fit in 48 KB gets one static global per buffer. Above that (PTX allows
no more static shared memory) the buffers are laid out in the module's dynamic shared memory
(`extern __shared__`), and the kernel records the bytes its launches must request
(`loopopt.dynamic_shared_bytes`). The pointer stays in address space 3 through the GEPs of
loads and stores (memref_to_llvm keeps the operand's pointer type): ld/st.shared directly, and
LLVM's load-store vectorizer sees the buffer's alignment (ld.shared.v4).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func, llvm, memref
from xdsl.dialects.builtin import IntAttr, IntegerAttr, MemRefType, i8
from xdsl.ir import Attribute, Operation, SSAValue

from loopopt.diagnostics import LoopoptError
from loopopt.lowering.llvm_common import convert_scalar_type, element_bytes
from loopopt.target import MAX_SHARED_BYTES, SHARED_SPACE, STATIC_SHARED_BYTES
from loopopt.target import SHARED_ALIGN as ALIGN

DYNAMIC_SHARED_NAME = "__loopopt_dynamic_shmem"


def is_shared(t: Attribute) -> bool:
    """Is `t` a memref in workgroup memory (space 3 or `#gpu.address_space<workgroup>`)?"""
    if not isinstance(t, MemRefType):
        return False
    space = t.memory_space
    if isinstance(space, IntegerAttr):
        return space.value.data == SHARED_SPACE
    return "workgroup" in str(space)


@dataclass
class _Slot:
    name: str
    offset: int  # in the dynamic shared memory; unused for a static global
    type: MemRefType


@dataclass
class SharedLayout:
    """Where the shared buffers of the kernels of one gpu.module live."""

    slots: dict[Operation, _Slot] = field(default_factory=dict[Operation, _Slot])
    kernel_bytes: dict[str, int] = field(default_factory=dict[str, int])
    dynamic_bytes: dict[str, int] = field(default_factory=dict[str, int])

    def plan(self, fn: func.FuncOp) -> None:
        """Give each shared alloca of `fn` a place; error if they do not fit in a block."""
        name = fn.sym_name.data
        allocas = [op for op in fn.walk() if isinstance(op, memref.AllocaOp)]
        allocas = [op for op in allocas if is_shared(op.memref.type)]
        offsets: list[int] = []
        total = 0
        for op in allocas:
            offsets.append(total)
            total += slot_bytes(_buffer_bytes(op))
            if total > MAX_SHARED_BYTES:
                raise LoopoptError(
                    f"kernel @{name} needs {total} bytes of shared memory or more; "
                    f"a block has at most {MAX_SHARED_BYTES}",
                    op=op,
                )
        dynamic = total > STATIC_SHARED_BYTES
        for index, (op, offset) in enumerate(zip(allocas, offsets, strict=True)):
            slot_name = DYNAMIC_SHARED_NAME if dynamic else f"__shm_{name}_{index}"
            assert isinstance(op.memref.type, MemRefType)
            self.slots[op] = _Slot(slot_name, offset, op.memref.type)
        self.kernel_bytes[name] = total
        if dynamic:
            self.dynamic_bytes[name] = total

    def globals(self) -> list[llvm.GlobalOp]:
        """The llvm.mlir.global ops of every slot (one for the dynamic shared memory)."""
        result: dict[str, llvm.GlobalOp] = {}
        for slot in self.slots.values():
            if slot.name in result:
                continue
            if slot.name == DYNAMIC_SHARED_NAME:
                t: Attribute = llvm.LLVMArrayType(0, i8)
                linkage = "external"
            else:
                count = 1
                for size in slot.type.get_shape():
                    count *= size
                element = convert_scalar_type(slot.type.element_type)
                t = llvm.LLVMArrayType(count, element)
                linkage = "internal"
            result[slot.name] = llvm.GlobalOp(
                t, slot.name, linkage, addr_space=SHARED_SPACE, alignment=ALIGN
            )
        return list(result.values())

    def lower_alloca(self, op: Operation) -> tuple[list[Operation], SSAValue] | None:
        """The `LoweringState.workgroup_alloca` hook: a `ptr addrspace(3)` to the buffer's slot."""
        slot = self.slots.get(op)
        if slot is None:
            return None
        shared_ptr = llvm.LLVMPointerType(IntAttr(SHARED_SPACE))
        address = llvm.AddressOfOp(slot.name, shared_ptr)
        # A no-op cast to the opaque `ptr addrspace(3)`: llvmlite types the global's address by
        # its array type.
        opaque = llvm.BitcastOp(address.result, shared_ptr)
        ops: list[Operation] = [address, opaque]
        pointer = opaque.result
        if slot.name == DYNAMIC_SHARED_NAME and slot.offset:
            offset = llvm.GEPOp(pointer, [slot.offset], i8, result_type=shared_ptr)
            ops.append(offset)
            pointer = offset.result
        return ops, pointer


def slot_bytes(nbytes: int) -> int:
    """The bytes a buffer of `nbytes` takes in a kernel's shared memory: each buffer starts
    ALIGN-aligned (the schedule model sums buffers with this too)."""
    return -(-nbytes // ALIGN) * ALIGN


def _buffer_bytes(op: memref.AllocaOp) -> int:
    t = op.memref.type
    assert isinstance(t, MemRefType)
    if op.dynamic_sizes or any(size < 0 for size in t.get_shape()):
        raise LoopoptError("a shared-memory buffer needs a static shape", op=op)
    count = 1
    for size in t.get_shape():
        count *= size
    return count * element_bytes(t.element_type, op)
