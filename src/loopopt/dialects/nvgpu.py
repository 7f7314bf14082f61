"""Upstream MLIR's nvgpu asynchronous copies (xDSL 0.74 has no nvgpu dialect), in MLIR's syntax.

    %t0 = nvgpu.device_async_copy %B[%k, %j], %ring[%s, %r, %c], 4 {bypassL1}
        : memref<256x256xf32> to memref<3x16x68xf32, 3>
    %t1 = nvgpu.device_async_copy %A[%i, %k], %ring2[%s, %r, %c], 4, %n
        : memref<256x256xf32> to memref<3x64x36xf32, 3>
    %g = nvgpu.device_async_create_group %t0, %t1
    nvgpu.device_async_wait %g {numGroups = 1 : i32}

A copy moves `dstElements` consecutive elements (along the last dimension) of a global memref
into a workgroup one, asynchronously (cp.async: 4, 8 or 16 bytes; `bypassL1` only for 16);
with `srcElements`, only that many come from the source and the rest are zeros. A group closes
the thread's copies issued since the last one (cp.async.commit_group); a wait blocks until at
most `numGroups` (default 0) of its groups are pending (cp.async.wait_group), whatever its
token. pipeline-copies writes these; loopopt's lowering (lowering/cp_async.py) and upstream's
`convert-nvgpu-to-nvvm` both lower them to nvvm.cp.async.shared.global and its group ops.
The tensor-core ops (`nvgpu.ldmatrix`, `nvgpu.mma.sync`) are in dialects/nvgpu_mma.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, UnitAttr, i32
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from loopopt.dialects.nvgpu_mma import MMA_OPS
from loopopt.dialects.nvvm import CP_ASYNC_SIZES, memory_space
from loopopt.target import SHARED_SPACE


@irdl_attr_definition
class DeviceAsyncTokenType(ParametrizedAttribute, TypeAttribute):
    """`!nvgpu.device.async.token`: a copy or a group of copies in flight."""

    name = "nvgpu.device.async.token"


@irdl_op_definition
class DeviceAsyncCopyOp(IRDLOperation):
    """`nvgpu.device_async_copy %src[...], %dst[...], dstElements (, %srcElements)?
    {bypassL1}? : src type to dst type`."""

    name = "nvgpu.device_async_copy"
    dst = operand_def(MemRefType)
    dstIndices = var_operand_def(IndexType())
    src = operand_def(MemRefType)
    srcIndices = var_operand_def(IndexType())
    srcElements = opt_operand_def(IndexType())
    dstElements = prop_def(IntegerAttr[IndexType])
    bypassL1 = opt_prop_def(UnitAttr)
    asyncToken = result_def(DeviceAsyncTokenType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        src: SSAValue,
        src_indices: Sequence[SSAValue],
        dst: SSAValue,
        dst_indices: Sequence[SSAValue],
        elements: int,
        bypass_l1: bool = False,
        src_elements: SSAValue | None = None,
    ) -> None:
        properties: dict[str, Attribute] = {
            "dstElements": IntegerAttr.from_index_int_value(elements)
        }
        if bypass_l1:
            properties["bypassL1"] = UnitAttr()
        sized = [src_elements] if src_elements is not None else []
        super().__init__(
            operands=[dst, dst_indices, src, src_indices, sized],
            properties=properties,
            result_types=[DeviceAsyncTokenType()],
        )

    @property
    def elements(self) -> int:
        """How many elements the copy moves."""
        return self.dstElements.value.data

    @property
    def nbytes(self) -> int:
        """How many bytes the copy moves."""
        return self.elements * element_width(self.src)

    def verify_(self) -> None:
        src, dst = self.src.type, self.dst.type
        assert isinstance(src, MemRefType) and isinstance(dst, MemRefType)
        if len(self.srcIndices) != src.get_num_dims() or len(self.dstIndices) != dst.get_num_dims():
            raise VerifyException(f"{self.name}: one index per dimension of each memref")
        if src.element_type != dst.element_type:
            raise VerifyException(f"{self.name}: source and destination elements differ")
        if memory_space(dst) != SHARED_SPACE or memory_space(src) == SHARED_SPACE:
            raise VerifyException(f"{self.name}: copies from global to workgroup memory")
        width = getattr(src.element_type, "bitwidth", 0) // 8
        if width not in (4, 8):
            raise VerifyException(f"{self.name}: copies 4- or 8-byte elements")
        nbytes = self.elements * width
        if nbytes not in CP_ASYNC_SIZES:
            raise VerifyException(f"{self.name}: copies 4, 8 or 16 bytes, not {nbytes}")
        if self.bypassL1 is not None and nbytes != 16:
            raise VerifyException(f"{self.name}: bypassL1 copies 16 bytes")

    def print(self, printer: Printer) -> None:
        for k, (memref, indices) in enumerate(
            [(self.src, self.srcIndices), (self.dst, self.dstIndices)]
        ):
            printer.print_string(", " if k else " ")
            printer.print_ssa_value(memref)
            with printer.in_square_brackets():
                printer.print_list(indices, printer.print_ssa_value)
        printer.print_string(f", {self.elements}")
        if self.srcElements is not None:
            printer.print_string(", ")
            printer.print_ssa_value(self.srcElements)
        if self.bypassL1 is not None:
            printer.print_string(" {bypassL1}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" to ")
        printer.print_attribute(self.dst.type)

    @classmethod
    def parse(cls, parser: Parser) -> DeviceAsyncCopyOp:
        accesses: list[tuple[UnresolvedOperand, list[UnresolvedOperand]]] = []
        for k in range(2):
            if k:
                parser.parse_punctuation(",")
            memref = parser.parse_unresolved_operand()
            indices = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_unresolved_operand
            )
            accesses.append((memref, indices))
        parser.parse_punctuation(",")
        elements = parser.parse_integer(allow_boolean=False, allow_negative=False)
        index = IndexType()
        src_elements = None
        if parser.parse_optional_punctuation(",") is not None:
            src_elements = parser.resolve_operand(parser.parse_unresolved_operand(), index)
        attributes = parser.parse_optional_attr_dict()
        bypass = attributes.pop("bypassL1", None) is not None
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_keyword("to")
        dst_type = parser.parse_type()
        (src, src_idx), (dst, dst_idx) = accesses
        op = cls(
            parser.resolve_operand(src, src_type),
            [parser.resolve_operand(i, index) for i in src_idx],
            parser.resolve_operand(dst, dst_type),
            [parser.resolve_operand(i, index) for i in dst_idx],
            elements,
            bypass,
            src_elements,
        )
        op.attributes |= attributes
        return op


def element_width(memref: SSAValue) -> int:
    """Bytes of an element of `memref`."""
    t = memref.type
    assert isinstance(t, MemRefType)
    return t.element_type.bitwidth // 8  # type: ignore[attr-defined]


@irdl_op_definition
class DeviceAsyncCreateGroupOp(IRDLOperation):
    """`nvgpu.device_async_create_group %t0, ...`: close the group of the thread's copies."""

    name = "nvgpu.device_async_create_group"
    inputTokens = var_operand_def(DeviceAsyncTokenType)
    asyncToken = result_def(DeviceAsyncTokenType)
    assembly_format = "$inputTokens attr-dict"

    def __init__(self, tokens: Sequence[SSAValue]) -> None:
        super().__init__(operands=[tokens], result_types=[DeviceAsyncTokenType()])


@irdl_op_definition
class DeviceAsyncWaitOp(IRDLOperation):
    """`nvgpu.device_async_wait %g {numGroups = N : i32}`: wait until at most N groups of the
    thread are pending."""

    name = "nvgpu.device_async_wait"
    asyncDependencies = operand_def(DeviceAsyncTokenType)
    numGroups = opt_prop_def(IntegerAttr.constr(type=i32))
    assembly_format = "$asyncDependencies attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, token: SSAValue, pending: int) -> None:
        super().__init__(operands=[token], properties={"numGroups": IntegerAttr(pending, i32)})

    @property
    def pending(self) -> int:
        return self.numGroups.value.data if self.numGroups is not None else 0

    def verify_(self) -> None:
        if self.pending < 0:
            raise VerifyException(f"{self.name}: the number of pending groups is >= 0")


NVGPU = Dialect(
    "nvgpu",
    [DeviceAsyncCopyOp, DeviceAsyncCreateGroupOp, DeviceAsyncWaitOp, *MMA_OPS],
    [DeviceAsyncTokenType],
)
