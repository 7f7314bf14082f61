"""llvm dialect → LLVM IR text, through xDSL's llvmlite backend (xdsl.backend.llvm.convert).

Before:  llvm.func @f(%A: !llvm.ptr) { ... llvm.return }
After:   define void @"f"(ptr %".1") { ... ret void }

`module_to_llvmlite` gives the llvmlite module (the GPU path sets its own triple and data
layout); `module_to_llvm_ir` its text for the host.

xDSL 0.74 translates `llvm.getelementptr` by first casting its pointer to an address-space-0
pointer, which LLVM rejects for `ptr addrspace(3)` (shared memory); `_gep_in_address_space`
replaces that one translation function with one that keeps the operand's address space, and
`_with_atomics` adds `llvm.atomicrmw`, which xDSL's llvm dialect lacks. Neither xDSL's
translation nor llvmlite 0.50 knows LLVM's `bfloat`: `BFloatType` is llvmlite's float type
for it (constants rounded to nearest even, written as LLVM's exact hex form `0xR3F80`).
An `llvm.br` marked `loopopt.unroll_in_llvm` (a loop's back edge) gets loop metadata asking
LLVM to unroll the loop fully: `br label %h, !llvm.loop !1` with `!1 = distinct !{!1, !0}`,
`!0 = !{!"llvm.loop.unroll.full"}`.
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.backend.llvm import convert as convert_module_
from xdsl.backend.llvm import convert_op
from xdsl.backend.llvm import convert_type as convert_type_
from xdsl.backend.llvm.convert import convert_module
from xdsl.backend.llvm.convert_type import convert_type
from xdsl.dialects import llvm
from xdsl.dialects.builtin import BFloat16Type, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import LLVMTranslationException

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.llvm_ext import AtomicRMWOp
from loopopt.dialects.loopopt import UNROLL_IN_LLVM
from loopopt.element_types import bfloat_bits


class BFloatType(ir.types._BaseFloatType):  # pyright: ignore[reportPrivateUsage]
    """LLVM's `bfloat` for llvmlite (which has half, float and double only)."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        return f"0xR{bfloat_bits(value):04X}"


BFloatType._create_instance()  # pyright: ignore[reportPrivateUsage]
convert_type_._TYPE_CONVERTERS[BFloat16Type] = lambda _: BFloatType()  # pyright: ignore[reportPrivateUsage]


def _gep_in_address_space(
    op: llvm.GEPOp, builder: ir.IRBuilder, val_map: dict[SSAValue, ir.Value]
) -> None:
    """xDSL's GEP translation, keeping the address space of the base pointer."""
    base = val_map[op.ptr]
    space = base.type.addrspace if isinstance(base.type, ir.PointerType) else 0
    element = convert_type(op.elem_type)
    typed = builder.bitcast(base, element.as_pointer(space))
    dynamic = iter(op.ssa_indices)
    indices = [
        val_map[next(dynamic)]
        if index == llvm.GEP_USE_SSA_VAL
        else ir.Constant(ir.IntType(32), index)
        for index in op.rawConstantIndices.iter_values()
    ]
    val_map[op.results[0]] = builder.gep(
        typed, indices, inbounds=op.inbounds is not None, source_etype=element
    )


convert_op._convert_getelementptr = _gep_in_address_space  # pyright: ignore[reportPrivateUsage]
_convert_op = convert_module_.convert_op


def _with_atomics(
    op: Operation,
    builder: ir.IRBuilder,
    val_map: dict[SSAValue, ir.Value],
    block_map: dict[Block, ir.Block] | None = None,
) -> None:
    """xDSL's translation of one op, and `llvm.atomicrmw` (dialects/llvm_ext.py)."""
    if not isinstance(op, AtomicRMWOp):
        _convert_op(op, builder, val_map, block_map)
        if isinstance(op, llvm.BrOp) and UNROLL_IN_LLVM in op.attributes:
            branch = builder.block.terminator
            assert branch is not None  # the branch just built
            branch.set_metadata("llvm.loop", _unroll_full(builder.module))
        return
    base, value = val_map[op.ptr], val_map[op.val]
    space = base.type.addrspace if isinstance(base.type, ir.PointerType) else 0
    typed = builder.bitcast(base, value.type.as_pointer(space))
    val_map[op.res] = builder.atomic_rmw(op.bin_op.data, typed, value, "monotonic")


convert_module_.convert_op = _with_atomics


class _LoopID(ir.values.MDValue):
    """A distinct loop ID, `!N = distinct !{!N, properties...}` (its first operand is
    itself, as LLVM requires of `!llvm.loop`); compared and hashed by identity."""

    def __init__(self, module: ir.Module, properties: list[ir.values.MDValue]) -> None:
        super().__init__(module, [], name=str(len(module.metadata)))
        self.operands = (self, *properties)

    def descr(self, buf: list[str]) -> None:
        buf.append("distinct ")
        super().descr(buf)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


def _unroll_full(module: ir.Module) -> _LoopID:
    """A fresh loop ID asking LLVM to unroll the loop fully (`llvm.loop.unroll.full`)."""
    full = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.full")])
    return _LoopID(module, [full])


def module_to_llvmlite(
    module: ModuleOp, triple: str | None = None, data_layout: str = ""
) -> ir.Module:
    """The llvmlite module of `module` (in the llvm dialect); host triple unless given."""
    try:
        return convert_module(module, fallback_target_triple=triple, data_layout=data_layout)
    except (NotImplementedError, LLVMTranslationException, KeyError) as e:
        raise LoopoptError(f"cannot translate to LLVM IR: {e}") from None


def module_to_llvm_ir(module: ModuleOp) -> str:
    """LLVM IR text of `module`, which must already be in the llvm dialect, for the host."""
    return str(module_to_llvmlite(module))
