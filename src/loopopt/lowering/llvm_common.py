"""What the lowerings to the llvm dialect share: type conversion and the memref table.

A memref becomes ONE bare pointer to its first element (row-major, no layout), and each of its
dynamic sizes an i64 value. `LoweringState.memrefs` maps every pointer that stands for a memref
to its `MemrefInfo` (the memref type and its size values), so loads, stores and `memref.dim`
can compute offsets. `index` becomes i64 everywhere.

    func.func @f(%A: memref<?x8xf32>, %n: index)
    llvm.func @f(%A: !llvm.ptr, %A_d0: i64, %n: i64)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import builtin, llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from loopopt.diagnostics import LoopoptError
from loopopt.element_types import LOWERED_FLOATS

PTR = llvm.LLVMPointerType()


def convert_scalar_type(t: Attribute, op: Operation | None = None) -> Attribute:
    """The llvm-dialect type of a scalar type: index → i64, ints and the floats loopopt lowers
    (f16, bf16, f32, f64: element_types.LOWERED_FLOATS) unchanged."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, IntegerType | LOWERED_FLOATS | llvm.LLVMPointerType):
        return t
    raise LoopoptError(f"cannot lower values of type {t} to LLVM", op=op)


def convert_type(t: Attribute, op: Operation | None = None) -> Attribute:
    """index → i64, memref → !llvm.ptr, scalars unchanged."""
    if isinstance(t, MemRefType):
        return PTR
    return convert_scalar_type(t, op)


def check_memref_type(t: MemRefType, op: Operation | None) -> None:
    """Only row-major memrefs without layout are lowered (one pointer + dynamic sizes)."""
    if not isinstance(t.layout, NoneAttr):
        raise LoopoptError(f"cannot lower memref with a layout ({t}) to LLVM", op=op)
    convert_scalar_type(t.element_type, op)


def element_bytes(t: Attribute, op: Operation | None = None) -> int:
    """Size in bytes of a memref element (index counts as i64)."""
    t = convert_scalar_type(t, op)
    if isinstance(t, IntegerType):
        return max(1, (t.width.data + 7) // 8)
    if isinstance(t, AnyFloat):
        return t.bitwidth // 8
    raise LoopoptError(f"cannot lower memref elements of type {t}", op=op)


def dynamic_dims(t: MemRefType) -> list[int]:
    """The positions of the dynamic dimensions of `t`."""
    return [d for d, size in enumerate(t.get_shape()) if size == builtin.DYNAMIC_INDEX]


@dataclass
class MemrefInfo:
    """A lowered memref: its type and, per dimension, the i64 value of a dynamic size."""

    type: MemRefType
    dynamic_sizes: dict[int, SSAValue]


WorkgroupAlloca = Callable[[Operation], tuple[list[Operation], SSAValue] | None]
"""GPU hook: the ops (and pointer) that replace a `memref.alloca` of shared memory, or None
for an alloca it leaves to the host lowering."""


@dataclass
class LoweringState:
    """Shared by the patterns of one lowering run."""

    module: builtin.ModuleOp
    memrefs: dict[SSAValue, MemrefInfo] = field(default_factory=dict[SSAValue, MemrefInfo])
    workgroup_alloca: WorkgroupAlloca | None = None

    def info(self, value: SSAValue, op: Operation) -> MemrefInfo:
        """The memref a pointer stands for; error if it does not come from a lowered memref."""
        info = self.memrefs.get(value)
        if info is None:
            raise LoopoptError(f"cannot lower '{op.name}': memref operand of unknown origin", op=op)
        return info

    def declare(self, name: str, inputs: list[Attribute], output: Attribute) -> None:
        """Declare an external function (malloc, libm) in the module once."""
        for existing in self.module.ops:
            if isinstance(existing, llvm.FuncOp) and existing.sym_name.data == name:
                return
        fn_type = llvm.LLVMFunctionType(inputs, output)
        decl = llvm.FuncOp(name, fn_type, linkage=llvm.LinkageAttr("external"))
        self.module.body.block.add_op(decl)


def const(value: int, t: Attribute = i64) -> llvm.ConstantOp:
    """An llvm.mlir.constant of an integer type."""
    return llvm.ConstantOp(IntegerAttr(value, t), t)


def bit_width(t: Attribute, op: Operation | None = None) -> int:
    """Bits of an integer or float type (index counts as 64)."""
    t = convert_scalar_type(t, op)
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, AnyFloat):
        return t.bitwidth
    raise LoopoptError(f"type {t} has no bit width", op=op)


def intrinsic_suffix(t: Attribute, op: Operation | None = None) -> str:
    """The type suffix of an overloaded intrinsic name: f32, f64, i32, i64, f16, bf16 ..."""
    t = convert_scalar_type(t, op)
    if isinstance(t, BFloat16Type):
        return "bf16"
    prefix = "i" if isinstance(t, IntegerType) else "f"
    return f"{prefix}{bit_width(t, op)}"


def call_intrinsic(
    name: str, args: list[SSAValue], result: Attribute, overloads: list[Attribute]
) -> llvm.CallIntrinsicOp:
    """A call of `llvm.<name>.<suffixes>` (one suffix per overloaded type)."""
    suffixes = "".join(f".{intrinsic_suffix(t)}" for t in overloads)
    return llvm.CallIntrinsicOp(f"llvm.{name}{suffixes}", args, [result])
