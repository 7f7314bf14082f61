"""Lower math ops to LLVM intrinsics, or to libm calls where LLVM has no intrinsic.

Before:  %y = math.tanh %x : f32          %z = math.erf %x : f64
After:   %y = llvm.call_intrinsic "llvm.tanh.f32"(%x) : (f32) -> f32
         %z = llvm.call @erf(%x) : (f64) -> f64

libm functions are called by their C names (`erff` for f32); the JIT resolves them from the
process. math.rsqrt is 1 / sqrt(x).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import llvm
from xdsl.dialects.builtin import Float32Type, FloatAttr, i1
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from loopopt.diagnostics import LoopoptError
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
        if op.name in FLOAT_INTRINSICS:
            rewriter.replace(op, call_intrinsic(FLOAT_INTRINSICS[op.name], args, t, [t]))
        elif op.name in LIBM:
            name = LIBM[op.name] + ("f" if isinstance(t, Float32Type) else "")
            self.state.declare(name, [t], t)
            rewriter.replace(op, llvm.CallOp(name, *args, return_type=t))
        elif op.name in INT_INTRINSICS:
            name, poison_flag = INT_INTRINSICS[op.name]
            ops: list[Operation] = []
            if poison_flag:  # is_int_min_poison / is_zero_poison = false
                flag = const(0, i1)
                ops.append(flag)
                args.append(flag.result)
            rewriter.replace(op, [*ops, call_intrinsic(name, args, t, [t])])
        elif op.name == "math.rsqrt":
            one = llvm.ConstantOp(FloatAttr(1.0, t), t)  # pyright: ignore[reportArgumentType]
            root = call_intrinsic("sqrt", args, t, [t])
            rewriter.replace(op, [one, root, llvm.FDivOp(one.result, root.results[0])])
        elif op.name == "math.fpowi":
            power = call_intrinsic("powi", args, t, [t, args[1].type])
            rewriter.replace(op, power)
        else:
            raise LoopoptError(f"cannot lower '{op.name}' to LLVM", op=op)
