"""Upstream MLIR's warp-level tensor-core ops of the nvgpu dialect, in MLIR's syntax, and the
PTX ISA's fragment layouts that give them their meaning.

    %a = nvgpu.ldmatrix %As[%r, %c] {numTiles = 4 : i32, transpose = false}
        : memref<64x24xbf16, 3> -> vector<4x2xbf16>
    %b = nvgpu.ldmatrix %Bs[%r2, %c2] {numTiles = 2 : i32, transpose = true}
        : memref<16x72xbf16, 3> -> vector<2x2xbf16>
    %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]}
        : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %t = nvgpu.mma.sync(%a32, %b32, %c) {mmaShape = [16, 8, 8], tf32Enabled}
        : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>

Both are collective over the 32 lanes of a warp (every lane runs them, converged); a fragment
is the lane's share of a matrix, row r of the vector one 32-bit register. PTX's tables
("Matrix fragments for mma.m16n8k16 / mma.m16n8k8", "ldmatrix") as functions of the lane:
`a_element`, `b_element`, `c_element` (the matrix coordinates of fragment element (r, e)) and
`ldmatrix_source` (which lane's row address, and which column of that row, element (r, e)
of an ldmatrix comes from). The lowering (lowering/mma.py) calls the intrinsics
`llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.b16` and
`llvm.nvvm.mma.m16n8k16.row.col.{bf16,f32.f32}` / `llvm.nvvm.mma.m16n8k8.row.col.tf32`; the
GPU emulator of tests/unit implements the same tables. sm_80+ (every architecture
backend/ptx.py knows).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    BoolAttr,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    MemRefType,
    UnitAttr,
    VectorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, Pure
from xdsl.utils.exceptions import VerifyException

from loopopt.dialects.nvvm import memory_space
from loopopt.target import SHARED_SPACE

WARP = 32
MMA_SHAPES: dict[str, tuple[int, int, int]] = {"f16": (16, 8, 16), "bf16": (16, 8, 16)}
"""m, n, k of the mma.sync each operand element type uses (f32 accumulators)."""
TF32_SHAPE = (16, 8, 8)
"""m16n8k8: f32 operands rounded to tf32 (cvt.rna.tf32.f32), f32 accumulators."""
LDMATRIX_TILES = (1, 2, 4)
"""8x8 matrices of 16-bit elements (8 rows of 16 bytes) one ldmatrix loads."""


def element_name(t: Attribute) -> str | None:
    """f16, bf16 or f32 for the element types the ops take, else None."""
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, BFloat16Type):
        return "bf16"
    if isinstance(t, Float32Type):
        return "f32"
    return None


def per_register(t: Attribute) -> int:
    """Elements of type `t` in one 32-bit register (2 halves, 1 f32)."""
    return 32 // t.bitwidth  # type: ignore[attr-defined]


def fragment_type(shape: tuple[int, int, int], operand: str, element: Attribute) -> VectorType:
    """The vector type of operand `a`, `b` or `c` (the accumulator, f32) of an mma of `shape`."""
    m, n, k = shape
    if operand == "c":
        return VectorType(Float32Type(), [m * n // WARP // 2, 2])
    size = m * k if operand == "a" else k * n
    per = per_register(element)
    return VectorType(element, [size // WARP // per, per])


def a_element(shape: tuple[int, int, int], lane: int, r: int, e: int) -> tuple[int, int]:
    """(row m, column k) of the A element that element (r, e) of `lane`'s A fragment holds."""
    g, t = lane // 4, lane % 4
    if shape[2] == 16:  # a0..a7 of m16n8k16 (.f16/.bf16): two halves per register
        return g + 8 * (r % 2), 2 * t + e + 8 * (r // 2)
    return g + 8 * (r % 2), t + 4 * (r // 2)  # a0..a3 of m16n8k8 .tf32


def b_element(shape: tuple[int, int, int], lane: int, r: int, e: int) -> tuple[int, int]:
    """(row k, column n) of the B element that element (r, e) of `lane`'s B fragment holds."""
    g, t = lane // 4, lane % 4
    if shape[2] == 16:
        return 2 * t + e + 8 * r, g
    return t + 4 * r, g


def c_element(lane: int, r: int, e: int) -> tuple[int, int]:
    """(row m, column n) of the C/D element that element (r, e) of `lane`'s fragment holds."""
    g, t = lane // 4, lane % 4
    return g + 8 * r, 2 * t + e


def ldmatrix_source(lane: int, r: int, e: int, per: int, transpose: bool) -> tuple[int, int]:
    """(source lane, element column within its row) of element (r, e) of `lane`'s ldmatrix
    result: matrix r's rows come from the addresses of lanes 8r..8r+7; `per` elements per
    32-bit word (2 for 16-bit elements, 1 for f32 loaded as pairs of b16)."""
    if transpose:  # lane gets column lane/4 of rows 2*(lane%4)+e: the matrix transposed
        return 8 * r + 2 * (lane % 4) + e, lane // 4
    return 8 * r + lane // 4, per * (lane % 4) + e


@irdl_op_definition
class LdMatrixOp(IRDLOperation):
    """`nvgpu.ldmatrix %src[...] {numTiles = N : i32, transpose = B} : memref -> vector`: each
    lane gives the address of one 16-byte row (lanes 8i..8i+7: matrix i) and gets its share of
    the N 8x8 matrices of 16-bit elements (row r of the result: matrix r)."""

    name = "nvgpu.ldmatrix"
    srcMemref = operand_def(MemRefType)
    indices = var_operand_def(IndexType())
    transpose = prop_def(BoolAttr)
    numTiles = prop_def(IntegerAttr.constr(type=i32))
    res = result_def(VectorType)
    traits = traits_def(MemoryReadEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$srcMemref `[` $indices `]` attr-dict `:` type($srcMemref) `->` type($res)"

    def __init__(
        self, src: SSAValue, indices: Sequence[SSAValue], tiles: int, transpose: bool
    ) -> None:
        t = src.type
        assert isinstance(t, MemRefType)
        element = t.element_type
        result = VectorType(element, [tiles, per_register(element)])
        super().__init__(
            operands=[src, indices],
            properties={
                "transpose": BoolAttr.from_bool(transpose),
                "numTiles": IntegerAttr(tiles, i32),
            },
            result_types=[result],
        )

    @property
    def tiles(self) -> int:
        return self.numTiles.value.data

    @property
    def transposed(self) -> bool:
        return bool(self.transpose.value.data)

    def verify_(self) -> None:
        t = self.srcMemref.type
        assert isinstance(t, MemRefType)
        if memory_space(t) != SHARED_SPACE:
            raise VerifyException(f"{self.name}: loads from a workgroup (shared) memref")
        if len(self.indices) != t.get_num_dims():
            raise VerifyException(f"{self.name}: one index per dimension of the memref")
        element = t.element_type
        if element_name(element) is None:
            raise VerifyException(f"{self.name}: loads f16, bf16 or f32 elements")
        if self.tiles not in LDMATRIX_TILES:
            raise VerifyException(f"{self.name}: numTiles is 1, 2 or 4, not {self.tiles}")
        if self.transposed and per_register(element) != 2:
            raise VerifyException(f"{self.name}: transposes 16-bit elements only")
        expected = VectorType(element, [self.tiles, per_register(element)])
        if self.res.type != expected:
            raise VerifyException(f"{self.name}: the result of {self.tiles} tiles is {expected}")


@irdl_op_definition
class MmaSyncOp(IRDLOperation):
    """`nvgpu.mma.sync(%a, %b, %c) {mmaShape = [m, n, k]} : (A, B, C) -> C`: the warp's
    D = A x B + C on its fragments (A row-major m x k, B column-major k x n, f32 C)."""

    name = "nvgpu.mma.sync"
    matrixA = operand_def(VectorType)
    matrixB = operand_def(VectorType)
    matrixC = operand_def(VectorType)
    mmaShape = prop_def(ArrayAttr[IntegerAttr])
    tf32Enabled = opt_prop_def(UnitAttr)
    res = result_def(VectorType)
    traits = traits_def(Pure())

    def __init__(
        self, a: SSAValue, b: SSAValue, c: SSAValue, shape: tuple[int, int, int], tf32: bool
    ) -> None:
        properties: dict[str, Attribute] = {
            "mmaShape": ArrayAttr([IntegerAttr(v, i64) for v in shape])
        }
        if tf32:
            properties["tf32Enabled"] = UnitAttr()
        super().__init__(operands=[a, b, c], properties=properties, result_types=[c.type])

    @property
    def shape(self) -> tuple[int, int, int]:
        m, n, k = (v.value.data for v in self.mmaShape.data)
        return m, n, k

    @property
    def operand_element(self) -> str:
        t = self.matrixA.type
        assert isinstance(t, VectorType)
        return element_name(t.element_type) or ""

    def verify_(self) -> None:
        if len(self.mmaShape.data) != 3:
            raise VerifyException(f"{self.name}: mmaShape is [m, n, k]")
        element = self.operand_element
        tf32 = self.tf32Enabled is not None
        if element == "f32" and not tf32:
            raise VerifyException(f"{self.name}: f32 operands need tf32Enabled")
        if tf32 and element != "f32":
            raise VerifyException(f"{self.name}: tf32Enabled takes f32 operands")
        wanted = TF32_SHAPE if tf32 else MMA_SHAPES.get(element)
        if wanted is None:
            raise VerifyException(f"{self.name}: operands are f16, bf16 or (tf32) f32")
        if self.shape != wanted:
            raise VerifyException(f"{self.name}: {element} operands take mmaShape {list(wanted)}")
        a_type = self.matrixA.type
        assert isinstance(a_type, VectorType)
        for operand, value in (("a", self.matrixA), ("b", self.matrixB), ("c", self.matrixC)):
            expected = fragment_type(wanted, operand, a_type.element_type)
            if value.type != expected:
                raise VerifyException(f"{self.name}: operand {operand.upper()} is {expected}")
        if self.res.type != self.matrixC.type:
            raise VerifyException(f"{self.name}: the result type is the accumulator's")

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.operands, printer.print_ssa_value)
        shape = ", ".join(str(v) for v in self.shape)
        flags = ", tf32Enabled" if self.tf32Enabled is not None else ""
        printer.print_string(f") {{mmaShape = [{shape}]{flags}}}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        printer.print_list([v.type for v in self.operands], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.res.type)

    @classmethod
    def parse(cls, parser: Parser) -> MmaSyncOp:
        names = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        if len(names) != 3:
            parser.raise_error(f"{cls.name} takes A, B and C")
        attributes = dict(parser.parse_optional_attr_dict())
        shape_attr = attributes.pop("mmaShape", None)
        tf32 = attributes.pop("tf32Enabled", None) is not None
        if not isinstance(shape_attr, ArrayAttr) or len(shape_attr.data) != 3:
            parser.raise_error(f"{cls.name}: expected mmaShape = [m, n, k]")
        values = [v.value.data for v in shape_attr.data]  # pyright: ignore
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        result_pos = parser.pos
        result = parser.parse_type()
        if len(types) != 3:
            parser.raise_error(f"{cls.name}: one type per operand")
        if result != types[2]:
            parser.raise_error(f"{cls.name}: the result type is the accumulator's", result_pos)
        a, b, c = (parser.resolve_operand(n, t) for n, t in zip(names, types, strict=True))
        op = cls(a, b, c, (values[0], values[1], values[2]), tf32)
        op.attributes |= attributes
        return op


MMA_OPS = (LdMatrixOp, MmaSyncOp)
