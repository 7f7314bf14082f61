"""The `nvvm` dialect: NVIDIA's special registers, barriers and warp shuffles (xDSL has none).

    %t = nvvm.read.ptx.sreg.tid.x : i32
    nvvm.barrier0
    %v = nvvm.shfl.sync bfly %mask, %x, %offset, %clamp : f32 -> f32

Spelled as in MLIR's NVVM dialect. Every op is one LLVM intrinsic call (`intrinsic()` names it:
`llvm.nvvm.read.ptx.sreg.tid.x`, `llvm.nvvm.barrier0`, `llvm.nvvm.shfl.sync.bfly.f32`);
lowering/nvvm_to_llvm.py rewrites them into `llvm.call_intrinsic` before LLVM translation.
"""

from __future__ import annotations

from enum import StrEnum

from xdsl.dialects.builtin import Float32Type, StringAttr, i32
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyOf,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException


class NvvmIntrinsicOp(IRDLOperation):
    """An nvvm op that is exactly one call of an LLVM intrinsic with the op's operands."""

    def intrinsic(self) -> str:
        return "llvm." + self.name


class ReadSregOp(NvvmIntrinsicOp):
    """Reads a PTX special register (an i32 that is constant for the thread)."""

    res = result_def(i32)
    assembly_format = "attr-dict `:` type($res)"

    def __init__(self) -> None:
        super().__init__(result_types=[i32])


SREG_REGISTERS = tuple(
    f"{reg}.{dim}" for reg in ("tid", "ntid", "ctaid", "nctaid") for dim in "xyz"
) + ("laneid", "warpsize")
"""The special registers with an op `nvvm.read.ptx.sreg.<register>`."""


def _sreg_op(register: str) -> type[ReadSregOp]:
    class_name = "Sreg" + "".join(part.capitalize() for part in register.split(".")) + "Op"
    cls = type(class_name, (ReadSregOp,), {"name": f"nvvm.read.ptx.sreg.{register}"})
    cls.__module__ = __name__
    return irdl_op_definition(cls)


SREG_OPS: dict[str, type[ReadSregOp]] = {reg: _sreg_op(reg) for reg in SREG_REGISTERS}


def read_sreg(register: str) -> ReadSregOp:
    """`nvvm.read.ptx.sreg.<register>`, e.g. read_sreg("tid.x")."""
    return SREG_OPS[register]()


@irdl_op_definition
class Barrier0Op(NvvmIntrinsicOp):
    """`__syncthreads()`: every thread of the block waits here; shared memory is then visible."""

    name = "nvvm.barrier0"
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


class ShflKind(StrEnum):
    BFLY = "bfly"
    DOWN = "down"
    UP = "up"
    IDX = "idx"


@irdl_op_definition
class ShflSyncOp(NvvmIntrinsicOp):
    """`__shfl_sync`: exchange a 32-bit value between the lanes named by `thread_mask`.

    bfly: lane ^ offset, down: lane + offset, up: lane - offset, idx: lane `offset`;
    `mask_and_clamp` is PTX's c operand (0x1f for a whole warp; 0 for `up`).
    """

    name = "nvvm.shfl.sync"
    kind = prop_def(StringAttr)
    thread_mask = operand_def(i32)
    val = operand_def(AnyOf.get(i32, Float32Type()))
    offset = operand_def(i32)
    mask_and_clamp = operand_def(i32)
    res = result_def(AnyOf.get(i32, Float32Type()))

    def __init__(
        self,
        kind: ShflKind | str,
        thread_mask: SSAValue | Operation,
        val: SSAValue | Operation,
        offset: SSAValue | Operation,
        mask_and_clamp: SSAValue | Operation,
    ) -> None:
        value = SSAValue.get(val)
        super().__init__(
            operands=[thread_mask, value, offset, mask_and_clamp],
            result_types=[value.type],
            properties={"kind": StringAttr(str(ShflKind(kind)))},
        )

    def verify_(self) -> None:
        if self.kind.data not in {k.value for k in ShflKind}:
            raise VerifyException(f"nvvm.shfl.sync: unknown kind '{self.kind.data}'")
        if self.res.type != self.val.type:
            raise VerifyException("nvvm.shfl.sync: result type must be the value's type")

    def intrinsic(self) -> str:
        suffix = "f32" if isinstance(self.val.type, Float32Type) else "i32"
        return f"llvm.nvvm.shfl.sync.{self.kind.data}.{suffix}"

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_list(self.operands, printer.print_ssa_value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.val.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.res.type)

    @classmethod
    def parse(cls, parser: Parser) -> ShflSyncOp:
        kind_pos = parser.pos
        kind = parser.parse_identifier()
        if kind not in {k.value for k in ShflKind}:
            parser.raise_error(f"expected bfly, down, up or idx, got '{kind}'", kind_pos)
        names = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        if len(names) != 4:
            parser.raise_error("nvvm.shfl.sync takes mask, value, offset, clamp")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        val_type: Attribute = parser.parse_type()
        parser.parse_punctuation("->")
        result_pos = parser.pos
        if parser.parse_type() != val_type:
            parser.raise_error("nvvm.shfl.sync: result type must be the value's type", result_pos)
        mask, val, offset, clamp = (
            parser.resolve_operand(name, val_type if k == 1 else i32)
            for k, name in enumerate(names)
        )
        op = cls(kind, mask, val, offset, clamp)
        op.attributes |= attributes
        return op


NVVM = Dialect("nvvm", [*SREG_OPS.values(), Barrier0Op, ShflSyncOp], [])
