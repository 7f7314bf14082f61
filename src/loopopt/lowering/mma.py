"""Lower the tensor-core ops (dialects/nvgpu_mma.py) to the NVVM intrinsics, in two steps around
the lowering to the llvm dialect (as lowering/cp_async.py does for asynchronous copies).

Before (in a kernel):
    %a = nvgpu.ldmatrix %As[%r, %c] {numTiles = 4 : i32, transpose = false}
        : memref<64x24xbf16, 3> -> vector<4x2xbf16>
    %z = arith.constant dense<0.0> : vector<2x2xf32>
    %d = nvgpu.mma.sync(%a, %b, %z) {mmaShape = [16, 8, 16]} : (...) -> vector<2x2xf32>
    %x = vector.extract %d[1, 0] : f32 from vector<2x2xf32>
After `linearize_mma` (before the lowering to LLVM, which keeps these ops):
    %off = ... ((%r * 24 + %c) * 2 : i64)
    %a = lowering.ldmatrix_bytes %As[%off] {tiles = 4, transpose = false} : vector<4x2xbf16>
    %z = lowering.zero_fragment : vector<2x2xf32>
After `lower_mma` (once memrefs are pointers): fragments are LLVM arrays of their 32-bit
registers (`!llvm.array<4 x i32>` for a vector<4x2xbf16>, `!llvm.array<4 x f32>` for a
vector<2x2xf32>), in block arguments too, and
    %p = llvm.getelementptr %As_ptr[%off] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
    %s = llvm.call_intrinsic "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16"(%p)
    %d = llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.bf16"(a0..a3, b0, b1, c0..c3)
    %x = llvm.extractvalue %d_array[2]
with the registers taken apart and put together by extractvalue/insertvalue (f16 registers
bitcast to <2 x half>; tf32 operands rounded by `llvm.nvvm.f2tf32.rna`, PTX
cvt.rna.tf32.f32).
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm, vector
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    IntegerAttr,
    VectorType,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
)
from xdsl.rewriter import Rewriter

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.nvgpu_mma import LdMatrixOp, MmaSyncOp, per_register
from loopopt.lowering.cp_async import byte_offset

F32 = Float32Type()


@irdl_op_definition
class LdMatrixBytesOp(IRDLOperation):
    """`ldmatrix` at `src + offset` bytes (internal to the GPU lowering, never printed)."""

    name = "lowering.ldmatrix_bytes"
    src = operand_def(Attribute)
    offset = operand_def(i64)
    tiles = prop_def(IntegerAttr)
    transpose = prop_def(IntegerAttr)
    res = result_def(Attribute)

    def __init__(
        self, src: SSAValue, offset: SSAValue, tiles: int, transpose: bool, t: Attribute
    ) -> None:
        super().__init__(
            operands=[src, offset],
            properties={
                "tiles": IntegerAttr(tiles, i32),
                "transpose": IntegerAttr(int(transpose), i32),
            },
            result_types=[t],
        )


@irdl_op_definition
class ZeroFragmentOp(IRDLOperation):
    """A fragment of zeros (internal to the GPU lowering, never printed)."""

    name = "lowering.zero_fragment"
    res = result_def(Attribute)

    def __init__(self, t: Attribute) -> None:
        super().__init__(result_types=[t])


def linearize_mma(root: Operation) -> None:
    """Before the lowering to LLVM: each nvgpu.ldmatrix under `root` becomes its byte offset
    and a lowering.ldmatrix_bytes, each vector constant (zero fragments) a
    lowering.zero_fragment."""
    for op in [op for op in root.walk() if isinstance(op, LdMatrixOp)]:
        ops: list[Operation] = []
        offset = byte_offset(op.srcMemref, op.indices, ops)
        load = LdMatrixBytesOp(op.srcMemref, offset, op.tiles, op.transposed, op.res.type)
        Rewriter.replace_op(op, [*ops, load])
    for op in [op for op in root.walk() if isinstance(op, arith.ConstantOp)]:
        if not isinstance(op.result.type, VectorType):
            continue
        value = op.value
        if not isinstance(value, DenseIntOrFPElementsAttr) or any(
            v != 0 for v in value.get_values()
        ):
            raise LoopoptError("a vector constant in a kernel is a zero fragment", op=op)
        Rewriter.replace_op(op, ZeroFragmentOp(op.result.type))


def register_type(t: VectorType) -> Attribute:
    """What a fragment of type `t` is in LLVM: its 32-bit registers, i32 for pairs of 16-bit
    elements, f32 for single f32s."""
    rows, per = t.get_shape()
    if per_register(t.element_type) == 2:
        return llvm.LLVMArrayType(rows, i32)
    return llvm.LLVMArrayType(rows * per, F32)


def lower_mma(root: Operation) -> None:
    """After the lowering to LLVM: fragments become register arrays, and the ldmatrix, mma.sync
    and vector.extract ops under `root` the intrinsic calls and aggregate ops."""
    elements = {op: op.operand_element for op in root.walk() if isinstance(op, MmaSyncOp)}
    positions = {
        op: _flat_position(op)
        for op in root.walk()
        if isinstance(op, vector.ExtractOp | vector.InsertOp)
    }
    for op in list(root.walk()):
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        for value in values:
            if isinstance(value.type, VectorType) and value.type.get_num_dims() == 2:
                Rewriter.replace_value_with_new_type(value, register_type(value.type))
    for op in list(root.walk()):
        if isinstance(op, LdMatrixBytesOp):
            Rewriter.replace_op(op, _ldmatrix(op))
        elif isinstance(op, MmaSyncOp):
            Rewriter.replace_op(op, _mma(op, elements[op]))
        elif isinstance(op, ZeroFragmentOp):
            Rewriter.replace_op(op, llvm.ZeroOp.build(result_types=[op.res.type]))
        elif isinstance(op, vector.ExtractOp):
            Rewriter.replace_op(op, _extract(op, positions[op]))
        elif isinstance(op, vector.InsertOp):
            where = DenseArrayBase.from_list(i64, [positions[op]])
            Rewriter.replace_op(op, llvm.InsertValueOp(where, op.dest, op.source))


def _ldmatrix(op: LdMatrixBytesOp) -> list[Operation]:
    tiles = op.tiles.value.data
    trans = ".trans" if op.transpose.value.data else ""
    shared = op.src.type
    assert isinstance(shared, llvm.LLVMPointerType)
    address = llvm.GEPOp(
        op.src, [llvm.GEP_USE_SSA_VAL], i8, ssa_indices=[op.offset], result_type=shared
    )
    words = llvm.LLVMStructType.from_type_list([i32] * tiles)
    name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{tiles}{trans}.b16"
    call = llvm.CallIntrinsicOp(name, [address.result], [words])
    ops: list[Operation] = [address, call]
    array = op.res.type
    assert isinstance(array, llvm.LLVMArrayType)
    as_f32 = array.type == F32
    registers = []
    for r in range(tiles):
        word = llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [r]), call.results[0], i32)
        ops.append(word)
        registers.append(word.res)
        if as_f32:
            ops.append(llvm.BitcastOp(word.res, F32))
            registers[-1] = ops[-1].results[0]
    return [*ops, *_pack(registers, array)]


def _pack(values: list[SSAValue], array: Attribute) -> list[Operation]:
    """insertvalue ops that put `values` into an undef `array`, the last one's result the
    array."""
    ops: list[Operation] = [llvm.UndefOp(array)]
    for k, value in enumerate(values):
        position = DenseArrayBase.from_list(i64, [k])
        ops.append(llvm.InsertValueOp(position, ops[-1].results[0], value))
    return ops


def _unpack(value: SSAValue, ops: list[Operation]) -> list[SSAValue]:
    array = value.type
    assert isinstance(array, llvm.LLVMArrayType)
    parts = []
    for k in range(array.size.data):
        position = DenseArrayBase.from_list(i64, [k])
        ops.append(llvm.ExtractValueOp(position, value, array.type))
        parts.append(ops[-1].results[0])
    return parts


def mma_intrinsic(shape: tuple[int, int, int], element: str) -> str:
    """The LLVM intrinsic of an mma.sync of `element` (f16, bf16, f32 as tf32) operands and
    f32 accumulators (names as in LLVM's IntrinsicsNVVM.td)."""
    m, n, k = shape
    if element == "f32":
        return f"llvm.nvvm.mma.m{m}n{n}k{k}.row.col.tf32"
    if element == "bf16":
        return f"llvm.nvvm.mma.m{m}n{n}k{k}.row.col.bf16"
    return f"llvm.nvvm.mma.m{m}n{n}k{k}.row.col.f32.f32"  # f16 operands, f32 C and D


def _mma(op: MmaSyncOp, element: str) -> list[Operation]:
    ops: list[Operation] = []
    operands: list[SSAValue] = []
    for fragment in (op.matrixA, op.matrixB):
        for register in _unpack(fragment, ops):
            if element == "f16":
                ops.append(llvm.BitcastOp(register, VectorType(Float16Type(), [2])))
                register = ops[-1].results[0]
            elif element == "f32":
                ops.append(llvm.CallIntrinsicOp("llvm.nvvm.f2tf32.rna", [register], [i32]))
                register = ops[-1].results[0]
            operands.append(register)
    accumulators = _unpack(op.matrixC, ops)
    result = llvm.LLVMStructType.from_type_list([F32] * len(accumulators))
    call = llvm.CallIntrinsicOp(
        mma_intrinsic(op.shape, element), [*operands, *accumulators], [result]
    )
    ops.append(call)
    outputs = []
    for k in range(len(accumulators)):
        position = DenseArrayBase.from_list(i64, [k])
        ops.append(llvm.ExtractValueOp(position, call.results[0], F32))
        outputs.append(ops[-1].results[0])
    return [*ops, *_pack(outputs, op.res.type)]


def _flat_position(op: vector.ExtractOp | vector.InsertOp) -> int:
    """The register array index of the element an extract or insert of an f32 fragment
    names (before the fragments are retyped)."""
    t = op.vector.type if isinstance(op, vector.ExtractOp) else op.dest.type
    if (
        op.dynamic_position
        or not isinstance(t, VectorType)
        or t.element_type != F32
        or len(op.static_position) != 2
    ):
        raise LoopoptError(f"{op.name} in a kernel names an element of an f32 fragment", op=op)
    row, column = op.static_position.get_values()
    return row * t.get_shape()[1] + column


def _extract(op: vector.ExtractOp, position: int) -> list[Operation]:
    where = DenseArrayBase.from_list(i64, [position])
    return [llvm.ExtractValueOp(where, op.vector, F32)]
