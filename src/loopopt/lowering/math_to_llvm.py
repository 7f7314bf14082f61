"""Lower math ops to LLVM intrinsics, or to libm calls where LLVM has no intrinsic.

Before:  %y = math.tanh %x : f32          %z = math.erf %x : f64
After:   %y = llvm.call_intrinsic "llvm.tanh.f32"(%x) : (f32) -> f32
         %z = llvm.call @erf(%x) : (f64) -> f64

libm functions are called by their C names (`erff` for f32); the JIT resolves them from the
process. math.rsqrt is 1 / sqrt(x).

f16 and bf16 have no libm or libdevice functions: their math goes through f32 and is rounded
once (ties to even), except absf and copysign, which only touch the sign bit.

Before:  %y = math.exp %x : bf16
After:   %w = llvm.fpext %x : bf16 to f32
         %e = llvm.call_intrinsic "llvm.exp.f32"(%w) : (f32) -> f32
         %y = llvm.fptrunc %e : f32 to bf16
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import llvm
from xdsl.dialects.builtin import AnyFloat, Float32Type, FloatAttr, f32, i1
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from loopopt.diagnostics import LoopoptError
from loopopt.element_types import HALF_FLOATS
from loopopt.lowering.llvm_common import LoweringState, call_intrinsic, const

FLOAT_INTRINSICS = {
    "math.sqrt": "sqrt",
    "math.exp": "exp",
    "math.exp2": "exp2",
    "math.log": "log",
    "math.log2": "log2",
    "math.log10": "log10",
    "math.sin": "sin",
    "math.cos": "cos",
    "math.tan": "tan",
    "math.asin": "asin",
    "math.acos": "acos",
    "math.atan": "atan",
    "math.sinh": "sinh",
    "math.cosh": "cosh",
    "math.tanh": "tanh",
    "math.absf": "fabs",
    "math.floor": "floor",
    "math.ceil": "ceil",
    "math.round": "round",
    "math.roundeven": "roundeven",
    "math.trunc": "trunc",
    "math.copysign": "copysign",
    "math.powf": "pow",
    "math.atan2": "atan2",
    "math.fma": "fma",
}

LIBM = {
    "math.erf": "erf",
    "math.log1p": "log1p",
    "math.expm1": "expm1",
    "math.cbrt": "cbrt",
    "math.asinh": "asinh",
    "math.acosh": "acosh",
    "math.atanh": "atanh",
}

SIGN_BIT_ONLY = {"math.absf", "math.copysign"}
"""Math ops exact in any float type (f16/bf16 keep them instead of going through f32)."""

INT_INTRINSICS = {
    "math.absi": ("abs", True),
    "math.ctlz": ("ctlz", True),
    "math.cttz": ("cttz", True),
    "math.ctpop": ("ctpop", False),
}


@dataclass
class MathLowering(RewritePattern):
    state: LoweringState

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not op.name.startswith("math.") or len(op.results) != 1:
            return
        t = op.results[0].type
        args = list(op.operands)
        if not isinstance(t, HALF_FLOATS) or op.name in SIGN_BIT_ONLY:
            rewriter.replace(op, self.lower(op, args, t))
            return
        widen = [llvm.FPExtOp(a, f32) for a in args if isinstance(a.type, AnyFloat)]
        wide = iter(w.results[0] for w in widen)
        wide_args = [next(wide) if isinstance(a.type, AnyFloat) else a for a in args]
        ops = self.lower(op, wide_args, f32)
        narrow = llvm.FPTruncOp(ops[-1].results[0], t)
        rewriter.replace(op, [*widen, *ops, narrow])

    def lower(self, op: Operation, args: list[SSAValue], t: Attribute) -> list[Operation]:
        """The llvm ops computing `op` on `args` in type `t` (the last one gives the result)."""
        if op.name in FLOAT_INTRINSICS:
            return [call_intrinsic(FLOAT_INTRINSICS[op.name], args, t, [t])]
        if op.name in LIBM:
            name = LIBM[op.name] + ("f" if isinstance(t, Float32Type) else "")
            self.state.declare(name, [a.type for a in args], t)
            return [llvm.CallOp(name, *args, return_type=t)]
        if op.name in INT_INTRINSICS:
            name, poison_flag = INT_INTRINSICS[op.name]
            if not poison_flag:
                return [call_intrinsic(name, args, t, [t])]
            flag = const(0, i1)  # is_int_min_poison / is_zero_poison = false
            return [flag, call_intrinsic(name, [*args, flag.result], t, [t])]
        if op.name == "math.rsqrt":
            one = llvm.ConstantOp(FloatAttr(1.0, t), t)  # pyright: ignore[reportArgumentType]
            root = call_intrinsic("sqrt", args, t, [t])
            return [one, root, llvm.FDivOp(one.result, root.results[0])]
        if op.name == "math.fpowi":
            return [call_intrinsic("powi", args, t, [t, args[1].type])]
        raise LoopoptError(f"cannot lower '{op.name}' to LLVM", op=op)
