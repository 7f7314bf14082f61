"""The `nvvm` dialect: NVIDIA's special registers, barriers, warp shuffles and asynchronous
copies to shared memory (xDSL has none).

    %t = nvvm.read.ptx.sreg.tid.x : i32
    nvvm.barrier0
    %v = nvvm.shfl.sync bfly %mask, %x, %offset, %clamp : f32 -> f32
    nvvm.cp.async.shared.global %d, %g, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
    nvvm.cp.async.commit.group
    nvvm.cp.async.wait.group 1

Spelled as in MLIR's NVVM dialect. Every op but the copies is one LLVM intrinsic call
(`intrinsic()` names it: `llvm.nvvm.read.ptx.sreg.tid.x`, `llvm.nvvm.barrier0`,
`llvm.nvvm.shfl.sync.bfly.f32`, `llvm.nvvm.cp.async.wait.group`); lowering/nvvm_to_llvm.py
rewrites them into `llvm.call_intrinsic` before LLVM translation.

The asynchronous copies (sm_80+: PTX `cp.async`) that pipeline-copies{async} makes are
upstream's `nvgpu.device_async_copy` and its groups (dialects/nvgpu.py). The GPU lowering
(lowering/cp_async.py) turns each copy into byte offsets (the internal
`lowering.cp_async_bytes`) and then, once memrefs are pointers, into upstream's
`nvvm.cp.async.shared.global %dst, %src, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>`, the
intrinsic `llvm.nvvm.cp.async.{ca,cg}.shared.global.{4,8,16}`. The optional i32 `src_size`
(`cpSize` upstream; PTX's src-size operand; the intrinsics' `.s` forms) copies only that many
bytes from the source and fills the rest of the `size` bytes with zeros: 0 writes zeros (the
zero-filled copies of padded tiles). PTX does not say that a copy of src-size 0 leaves its
source address unread, so the copies that make it (pipeline-copies) point such copies at the
array's first element. A copy belongs to the group the next `commit.group` of its thread
closes; `wait.group N` waits until at most N of the thread's groups are pending: only then
(and after a barrier, for other threads) are the bytes there. Every architecture
backend/ptx.py knows (sm_80, sm_89, sm_90) has `cp.async`.
"""

from __future__ import annotations

from enum import StrEnum

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    Float32Type,
    IntAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
    i32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    AnyOf,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from loopopt.target import GLOBAL_SPACE as GLOBAL_SPACE  # re-exported for the lowering
from loopopt.target import SHARED_SPACE


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


CP_ASYNC_SIZES = (4, 8, 16)
"""Bytes one cp.async copies; `cg` (bypass L1, cache in L2 only) copies 16."""


def memory_space(t: Attribute) -> int | None:
    """The address space of a memref or llvm pointer type (0 for none), None for other types."""
    if isinstance(t, MemRefType):
        space = t.memory_space
        if isinstance(space, IntegerAttr):
            return space.value.data
        return SHARED_SPACE if "workgroup" in str(space) else 0
    if isinstance(t, llvm.LLVMPointerType):
        return t.addr_space.data if isinstance(t.addr_space, IntAttr) else 0
    return None


def _check_size(op: Operation, size: int, cache: str) -> None:
    if size not in CP_ASYNC_SIZES:
        raise VerifyException(f"{op.name}: copies 4, 8 or 16 bytes, not {size}")
    if cache not in ("ca", "cg"):
        raise VerifyException(f"{op.name}: cache is ca or cg, not '{cache}'")
    if cache == "cg" and size != 16:
        raise VerifyException(f"{op.name}: cache = cg copies 16 bytes")


@irdl_op_definition
class CpAsyncBytesOp(IRDLOperation):
    """`cp.async.{ca,cg}.shared.global [dst + dst_offset], [src + src_offset], size{, src_size}`
    (offsets in bytes; the pointers are memrefs until the lowering to LLVM retypes them). Made
    and consumed inside the GPU lowering (lowering/cp_async.py), never printed or parsed: the
    lowering's output has upstream's `nvvm.cp.async.shared.global` on pointers."""

    name = "lowering.cp_async_bytes"
    dst = operand_def(AnyAttr())
    dst_offset = operand_def(i64)
    src = operand_def(AnyAttr())
    src_offset = operand_def(i64)
    src_size = opt_operand_def(i32)
    size = prop_def(IntegerAttr)
    cache = prop_def(StringAttr)

    def __init__(
        self,
        dst: SSAValue,
        dst_offset: SSAValue,
        src: SSAValue,
        src_offset: SSAValue,
        size: int,
        cache: str,
        src_size: SSAValue | None = None,
    ) -> None:
        super().__init__(
            operands=[dst, dst_offset, src, src_offset, [] if src_size is None else [src_size]],
            properties={"size": IntegerAttr(size, i32), "cache": StringAttr(cache)},
        )

    def verify_(self) -> None:
        _check_size(self, self.size.value.data, self.cache.data)
        if memory_space(self.dst.type) != SHARED_SPACE:
            raise VerifyException(f"{self.name}: the destination is a shared pointer or memref")
        if memory_space(self.src.type) not in (0, 1):
            raise VerifyException(f"{self.name}: the source is a global pointer or memref")


class LoadCacheModifier(StrEnum):
    CA = "ca"
    CG = "cg"
    CS = "cs"


@irdl_attr_definition
class LoadCacheModifierAttr(EnumAttribute[LoadCacheModifier], SpacedOpaqueSyntaxAttribute):
    """MLIR's `#nvvm<load_cache_modifier cg>`: .ca caches in L1 and L2, .cg in L2 only."""

    name = "nvvm.load_cache_modifier"


@irdl_op_definition
class CpAsyncSharedGlobalOp(NvvmIntrinsicOp):
    """Upstream MLIR's `nvvm.cp.async.shared.global %dst, %src, 16, cache = cg(, %cpSize)? :
    !llvm.ptr<3>, !llvm.ptr<1>(, i32)?`: copy `size` bytes from global to shared memory
    asynchronously; with `cpSize`, only that many from the source and zeros after."""

    name = "nvvm.cp.async.shared.global"
    dst = operand_def(llvm.LLVMPointerType)
    src = operand_def(llvm.LLVMPointerType)
    cpSize = opt_operand_def(i32)
    size = prop_def(IntegerAttr)
    modifier = prop_def(LoadCacheModifierAttr)

    def __init__(
        self, dst: SSAValue, src: SSAValue, size: int, cache: str, cp_size: SSAValue | None = None
    ) -> None:
        super().__init__(
            operands=[dst, src, [] if cp_size is None else [cp_size]],
            properties={
                "size": IntegerAttr(size, i32),
                "modifier": LoadCacheModifierAttr(LoadCacheModifier(cache)),
            },
        )

    def intrinsic(self) -> str:
        """`llvm.nvvm.cp.async.{ca,cg}.shared.global.{4,8,16}`, `.s` with a source size."""
        sized = ".s" if self.cpSize is not None else ""
        cache = self.modifier.data.value
        return f"llvm.nvvm.cp.async.{cache}.shared.global.{self.size.value.data}{sized}"

    def verify_(self) -> None:
        _check_size(self, self.size.value.data, self.modifier.data.value)
        if memory_space(self.dst.type) != SHARED_SPACE:
            raise VerifyException(f"{self.name}: the destination is an !llvm.ptr<3>")
        if memory_space(self.src.type) != GLOBAL_SPACE:
            raise VerifyException(f"{self.name}: the source is an !llvm.ptr<1>")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.dst, self.src], printer.print_operand)
        printer.print_string(f", {self.size.value.data}, cache = {self.modifier.data.value}")
        if self.cpSize is not None:
            printer.print_string(", ")
            printer.print_operand(self.cpSize)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list([v.type for v in self.operands], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> CpAsyncSharedGlobalOp:
        dst = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        src = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        size = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation(",")
        parser.parse_keyword("cache")
        parser.parse_punctuation("=")
        cache = parser.parse_str_enum(LoadCacheModifier)
        cp_size = None
        if parser.parse_optional_punctuation(",") is not None:
            cp_size = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != (3 if cp_size is not None else 2):
            parser.raise_error(f"{cls.name}: one type per operand")
        op = cls(
            parser.resolve_operand(dst, types[0]),
            parser.resolve_operand(src, types[1]),
            size,
            cache.value,
            None if cp_size is None else parser.resolve_operand(cp_size, types[2]),
        )
        op.attributes |= attributes
        return op


@irdl_op_definition
class CpAsyncCommitGroupOp(NvvmIntrinsicOp):
    """Close the group of the thread's cp.async copies issued since the last commit."""

    name = "nvvm.cp.async.commit.group"
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


@irdl_op_definition
class CpAsyncWaitGroupOp(NvvmIntrinsicOp):
    """Wait until at most `n` of the thread's committed cp.async groups are still pending."""

    name = "nvvm.cp.async.wait.group"
    n = prop_def(IntegerAttr)

    def __init__(self, n: int) -> None:
        super().__init__(properties={"n": IntegerAttr(n, i32)})

    def verify_(self) -> None:
        if self.n.value.data < 0:
            raise VerifyException(f"{self.name}: the number of pending groups is >= 0")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.n.value.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> CpAsyncWaitGroupOp:
        op = cls(parser.parse_integer(allow_boolean=False))
        op.attributes |= parser.parse_optional_attr_dict()
        return op


NVVM = Dialect(
    "nvvm",
    [
        *SREG_OPS.values(),
        Barrier0Op,
        ShflSyncOp,
        CpAsyncSharedGlobalOp,
        CpAsyncCommitGroupOp,
        CpAsyncWaitGroupOp,
    ],
    [LoadCacheModifierAttr],
)
