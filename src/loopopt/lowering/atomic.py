"""Lower `memref.atomic_rmw` to `llvm.atomicrmw` (dialects/llvm_ext.py).

Before:  %old = memref.atomic_rmw addf %v, %out[%c0] : (f32, memref<1xf32>) -> f32
After:   %p = llvm.getelementptr %out[%c0] …     %old = llvm.atomicrmw fadd %p, %v

The kinds are MLIR's `arith::AtomicRMWKind` numbers (`ATOMIC_KINDS`). Sums and integer min/max
are one instruction each. Float min/max use the ordered-integer trick, two native integer
atomics on the float's bits: for a non-negative float the bits order as signed integers (an
atomic signed max/min), for a negative one in reverse as unsigned integers (an atomic unsigned
min/max); each value takes part in the one that applies and gives the other its neutral
operand (INT_MIN, UINT_MAX; INT_MAX, 0), which leaves memory unchanged. That is exact for every
non-NaN value (-0 < +0); a positive NaN wins a max, a negative one a min. The old value of
such an op is not one value: the lowering refuses to give it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import AnyFloat, IntegerAttr, IntegerType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.llvm_ext import AtomicRMWOp
from loopopt.lowering.llvm_common import LoweringState

ATOMIC_KINDS = {
    "addf": 0,
    "addi": 1,
    "maximumf": 3,
    "maxs": 4,
    "maxu": 5,
    "minimumf": 6,
    "mins": 7,
    "minu": 8,
}
"""`memref.atomic_rmw` kinds (MLIR's arith::AtomicRMWKind values) that loopopt lowers."""
_INSTRUCTION = {
    "addf": "fadd",
    "addi": "add",
    "maxs": "max",
    "maxu": "umax",
    "mins": "min",
    "minu": "umin",
}


def kind_name(op: memref.AtomicRMWOp) -> str:
    number = op.kind.value.data
    for name, value in ATOMIC_KINDS.items():
        if value == number:
            return name
    raise LoopoptError(f"memref.atomic_rmw: kind {number} is not lowered", op=op)


def atomic_ops(
    kind: str, ptr: SSAValue, value: SSAValue, op: Operation
) -> tuple[list[Operation], SSAValue]:
    """The llvm ops of an atomic `kind` of `value` into `*ptr`, and the old value (for float
    min/max, whose old value is not one, the first atomic's result, which has no use)."""
    if kind in _INSTRUCTION:
        single = AtomicRMWOp(_INSTRUCTION[kind], ptr, value)
        return [single], single.res
    t = value.type
    if not isinstance(t, AnyFloat) or op.results[0].uses:
        raise LoopoptError(f"memref.atomic_rmw {kind}: only of a float, old value unused", op=op)
    width = t.bitwidth
    bits_type = IntegerType(width)
    bits = llvm.BitcastOp(value, bits_type)
    zero = llvm.ConstantOp(IntegerAttr(0, bits_type), bits_type)
    negative = llvm.ICmpOp(bits.results[0], zero.results[0], IntegerAttr(2, 64))  # slt
    low, high = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if kind == "maximumf":  # signed max of the non-negative ones, unsigned min of the others
        signed_neutral, unsigned_neutral, ops_ = low, -1, ("max", "umin")
    else:
        signed_neutral, unsigned_neutral, ops_ = high, 0, ("min", "umax")
    s_neutral = llvm.ConstantOp(IntegerAttr(signed_neutral, bits_type), bits_type)
    u_neutral = llvm.ConstantOp(IntegerAttr(unsigned_neutral, bits_type), bits_type)
    signed = llvm.SelectOp(negative.results[0], s_neutral.results[0], bits.results[0])
    unsigned = llvm.SelectOp(negative.results[0], bits.results[0], u_neutral.results[0])
    first = AtomicRMWOp(ops_[0], ptr, signed.results[0])
    second = AtomicRMWOp(ops_[1], ptr, unsigned.results[0])
    ops = [bits, zero, negative, s_neutral, u_neutral, signed, unsigned, first, second]
    return ops, first.res


@dataclass
class AtomicRMWLowering(RewritePattern):
    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AtomicRMWOp, rewriter: PatternRewriter, /) -> None:
        from loopopt.lowering.memref_to_llvm import element_pointer

        info = self.state.info(op.memref, op)
        ops: list[Operation] = []
        ptr = element_pointer(info, op.memref, op.indices, ops)
        atomics, old = atomic_ops(kind_name(op), ptr, op.value, op)
        rewriter.replace(op, [*ops, *atomics], [old])
