"""What xDSL's llvm dialect lacks to read the llvm dialect as upstream MLIR 22 prints it.

- `llvm.mlir.poison`, the poison constant (`%0 = llvm.mlir.poison : f32`).
- `llvm.getelementptr` with MLIR 22's no-wrap flags (`inbounds`, `nusw`, `nuw`, or several
  joined by `|`): `GEPOp` is xDSL's op with that syntax; the flags go to xDSL's `noWrapFlags`
  property (MLIR's bits), and `inbounds` also to xDSL's `inbounds` unit property, which xDSL's
  LLVM IR backend reads.

      %q = llvm.getelementptr inbounds|nuw %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32

`LLVM` is xDSL's own dialect object, to which `extend` added these; loopopt's context loads it.

It also defines `atomicrmw` (MLIR's `llvm.atomicrmw`), which xDSL lacks:

    %old = llvm.atomicrmw "fadd" %p, %v : !llvm.ptr, f32 -> f32        (monotonic)

lowering/memref_to_llvm.py makes it from `memref.atomic_rmw`; backend/llvm_ir.py translates it
into LLVM IR's `atomicrmw` (NVPTX: `atom.global.add.f32` and the like, or `red` where the old
value is unused). The op is only made by the lowering, never parsed (no dialect registers it).
"""

from __future__ import annotations

from typing import cast

from xdsl.dialects import llvm
from xdsl.dialects.builtin import I32, IntegerAttr, StringAttr, UnitAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from loopopt.dialects.extend import extend

NO_WRAP_FLAGS = {"inbounds": 3, "nusw": 2, "nuw": 4}
"""MLIR's GEPNoWrapFlags bits by keyword (`inbounds` implies `nusw`), in its print order."""
_INBOUNDS_FLAG = 1


@irdl_op_definition
class PoisonOp(IRDLOperation):
    """See MLIR's `llvm.mlir.poison`: a poison value of any LLVM-compatible type."""

    name = "llvm.mlir.poison"

    assembly_format = "attr-dict `:` type($res)"

    res = result_def(Attribute)

    traits = traits_def(NoMemoryEffect())

    def __init__(self, result_type: Attribute):
        super().__init__(result_types=[result_type])


def flag_keywords(flags: int) -> list[str]:
    """The keywords MLIR prints for no-wrap `flags` (empty: none)."""
    words: list[str] = []
    if flags & _INBOUNDS_FLAG:
        words.append("inbounds")
        flags &= ~NO_WRAP_FLAGS["inbounds"]
    for word in ("nusw", "nuw"):
        if flags & NO_WRAP_FLAGS[word]:
            words.append(word)
    return words


class GEPOp(llvm.GEPOp):
    """xDSL's `llvm.getelementptr`, read and printed with MLIR 22's no-wrap flags."""

    def print(self, printer: Printer) -> None:
        flags = cast(IntegerAttr[I32], self.noWrapFlags).value.data
        if self.inbounds is not None:
            flags |= NO_WRAP_FLAGS["inbounds"]
        words = flag_keywords(flags)
        if words:
            printer.print_string(" " + "|".join(words))
        inbounds = self.properties.pop("inbounds", None)
        try:
            super().print(printer)
        finally:
            if inbounds is not None:
                self.properties["inbounds"] = inbounds

    @classmethod
    def parse(cls, parser: Parser) -> GEPOp:
        flags = 0
        word = parser.parse_optional_keyword_in(list(NO_WRAP_FLAGS))
        while word is not None:
            flags |= NO_WRAP_FLAGS[word]
            if parser.parse_optional_punctuation("|") is None:
                break
            word = parser.parse_keyword_in(list(NO_WRAP_FLAGS))
        op = cast(GEPOp, super().parse(parser))
        op.properties["noWrapFlags"] = IntegerAttr(flags, 32)
        if flags & _INBOUNDS_FLAG:
            op.properties["inbounds"] = UnitAttr()
        return op


extend(llvm.LLVM, [GEPOp, PoisonOp])
LLVM = llvm.LLVM
"""xDSL's llvm dialect, with this module's `GEPOp` in place of xDSL's and `llvm.mlir.poison`."""


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
