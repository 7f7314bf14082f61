"""LLVM instructions that xDSL's llvm dialect lacks: `atomicrmw` (MLIR's `llvm.atomicrmw`).

    %old = llvm.atomicrmw "fadd" %p, %v : !llvm.ptr, f32 -> f32        (monotonic)

lowering/memref_to_llvm.py makes it from `memref.atomic_rmw`; backend/llvm_ir.py translates it
into LLVM IR's `atomicrmw` (NVPTX: `atom.global.add.f32` and the like, or `red` where the old
value is unused). The op is only made by the lowering, never parsed: no dialect registers it
(its name is in xDSL's `llvm` namespace).
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import AnyAttr, IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

ATOMIC_OPS = frozenset({"add", "fadd", "max", "min", "umax", "umin", "xchg"})
"""The `atomicrmw` operations loopopt makes."""


@irdl_op_definition
class AtomicRMWOp(IRDLOperation):
    """`*ptr = *ptr <bin_op> val` atomically (monotonic ordering); the result is the old value."""

    name = "llvm.atomicrmw"
    ptr = operand_def(AnyAttr())
    val = operand_def(AnyAttr())
    res = result_def(AnyAttr())
    bin_op = prop_def(StringAttr)
    assembly_format = (
        "$bin_op $ptr `,` $val attr-dict `:` type($ptr) `,` type($val) `->` type($res)"
    )

    def __init__(self, bin_op: str, ptr: SSAValue, val: SSAValue) -> None:
        t: Attribute = val.type
        super().__init__(
            operands=[ptr, val], result_types=[t], properties={"bin_op": StringAttr(bin_op)}
        )

    def verify_(self) -> None:
        if self.bin_op.data not in ATOMIC_OPS:
            raise VerifyException(f"llvm.atomicrmw: unknown operation '{self.bin_op.data}'")
        if self.res.type != self.val.type:
            raise VerifyException("llvm.atomicrmw: the result is of the value's type")
