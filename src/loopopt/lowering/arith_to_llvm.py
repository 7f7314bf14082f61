"""Lower arith ops to the llvm dialect (index is i64; float ops keep strict IEEE semantics).

Before:  %q = arith.floordivsi %a, %b : index
After:   %d = llvm.sdiv %a, %b : i64   %r = llvm.srem %a, %b : i64   ... (round toward -inf)
         %q = llvm.select %fix, %d1, %d : i1, i64

Integer min/max become icmp + select, maximumf/minimumf the NaN-propagating llvm.maximum/
minimum intrinsics, fptosi/fptoui the saturating llvm.fpto{s,u}i.sat intrinsics (xDSL's LLVM
translation has no fptosi instruction; they differ only where fptosi is poison).
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, i1, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from loopopt.diagnostics import LoopoptError
from loopopt.lowering.llvm_common import bit_width, call_intrinsic, const, convert_scalar_type

INT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShLIOp: llvm.ShlOp,
    arith.ShRSIOp: llvm.AShrOp,
    arith.ShRUIOp: llvm.LShrOp,
}

FLOAT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
    arith.MaxnumfOp: llvm.VectorFMaxOp,
    arith.MinnumfOp: llvm.VectorFMinOp,
}

INT_MIN_MAX = {
    arith.MinSIOp: "slt",
    arith.MaxSIOp: "sgt",
    arith.MinUIOp: "ult",
    arith.MaxUIOp: "ugt",
}


def _pred(name: str) -> IntegerAttr:
    return IntegerAttr(llvm.ICmpPredicateFlag(name).to_int(), i64)


class BinaryLowering(RewritePattern):
    """Integer and float binary ops with a one-to-one llvm counterpart, and int min/max."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        kind = type(op)
        if kind in INT_BINARY or kind in FLOAT_BINARY:
            new_type = INT_BINARY.get(kind) or FLOAT_BINARY[kind]
            new = new_type(op.operands[0], op.operands[1])  # pyright: ignore[reportCallIssue]
            rewriter.replace(op, new)
        elif kind in INT_MIN_MAX:
            lhs, rhs = op.operands
            cmp = llvm.ICmpOp(lhs, rhs, _pred(INT_MIN_MAX[kind]))
            rewriter.replace(op, [cmp, llvm.SelectOp(cmp, lhs, rhs)])
        elif isinstance(op, arith.MaximumfOp | arith.MinimumfOp):
            name = "maximum" if isinstance(op, arith.MaximumfOp) else "minimum"
            t = op.result.type
            rewriter.replace(op, call_intrinsic(name, [op.lhs, op.rhs], t, [t]))
        elif isinstance(op, arith.NegfOp):
            rewriter.replace(op, llvm.FNegOp(op.operand))


class ConstantLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter, /) -> None:
        value = op.value
        t = convert_scalar_type(op.result.type, op)
        if isinstance(value, IntegerAttr):
            rewriter.replace(op, llvm.ConstantOp(IntegerAttr(value.value.data, t), t))
        elif isinstance(value, FloatAttr):
            rewriter.replace(op, llvm.ConstantOp(value, t))
        else:
            raise LoopoptError(f"cannot lower constant {value} to LLVM", op=op)


class CompareLowering(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, arith.CmpiOp):
            predicate = IntegerAttr(op.predicate.value.data, i64)
            rewriter.replace(op, llvm.ICmpOp(op.lhs, op.rhs, predicate))
        elif isinstance(op, arith.CmpfOp):
            predicate = op.predicate.value.data
            if predicate in (0, 15):  # false, true
                rewriter.replace(op, const(1 if predicate == 15 else 0, i1))
            else:
                new = llvm.FCmpOp(op.lhs, op.rhs, IntegerAttr(predicate, i64))
                rewriter.replace(op, new)
        elif isinstance(op, arith.SelectOp):
            rewriter.replace(op, llvm.SelectOp(op.cond, op.lhs, op.rhs))


class DivisionLowering(RewritePattern):
    """floordivsi / ceildivsi / ceildivui: truncating division plus a correction by one."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, arith.FloorDivSIOp | arith.CeilDivSIOp | arith.CeilDivUIOp):
            return
        lhs, rhs = op.operands
        t = convert_scalar_type(op.result.type, op)
        signed = not isinstance(op, arith.CeilDivUIOp)
        quotient = llvm.SDivOp(lhs, rhs) if signed else llvm.UDivOp(lhs, rhs)
        remainder = llvm.SRemOp(lhs, rhs) if signed else llvm.URemOp(lhs, rhs)
        zero, one = const(0, t), const(1, t)
        inexact = llvm.ICmpOp(remainder.res, zero.result, _pred("ne"))
        ops: list[Operation] = [quotient, remainder, zero, one, inexact]
        fix: SSAValue = inexact.res
        if signed:
            # The exact quotient is negative iff remainder and divisor have opposite signs.
            r_neg = llvm.ICmpOp(remainder.res, zero.result, _pred("slt"))
            d_neg = llvm.ICmpOp(rhs, zero.result, _pred("slt"))
            negative = llvm.XOrOp(r_neg.res, d_neg.res)
            sign = negative.res
            ops += [r_neg, d_neg, negative]
            if isinstance(op, arith.CeilDivSIOp):
                positive = llvm.XOrOp(negative.res, const_true := const(1, i1))
                ops += [const_true, positive]
                sign = positive.res
            both = llvm.AndOp(inexact.res, sign)
            ops.append(both)
            fix = both.res
        if isinstance(op, arith.FloorDivSIOp):
            adjusted = llvm.SubOp(quotient.res, one.result)
        else:
            adjusted = llvm.AddOp(quotient.res, one.result)
        rewriter.replace(op, [*ops, adjusted, llvm.SelectOp(fix, adjusted.res, quotient.res)])


class CastLowering(RewritePattern):
    """Integer width changes, int ↔ float conversions, float width changes, bitcasts."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp):
            self.integer(op, rewriter)
        elif isinstance(op, arith.SIToFPOp):
            rewriter.replace(op, llvm.SIToFPOp(op.input, op.result.type))
        elif isinstance(op, arith.UIToFPOp):
            self.unsigned_to_float(op, rewriter)
        elif isinstance(op, arith.FPToSIOp | arith.FPToUIOp):
            name = "fptosi.sat" if isinstance(op, arith.FPToSIOp) else "fptoui.sat"
            t = convert_scalar_type(op.result.type, op)
            rewriter.replace(op, call_intrinsic(name, [op.input], t, [t, op.input.type]))
        elif isinstance(op, arith.ExtFOp):
            rewriter.replace(op, llvm.FPExtOp(op.input, op.result.type))
        elif isinstance(op, arith.TruncFOp):
            rewriter.replace(op, llvm.FPTruncOp(op.input, op.result.type))
        elif isinstance(op, arith.BitcastOp):
            t = convert_scalar_type(op.result.type, op)
            rewriter.replace(op, llvm.BitcastOp(op.input, t))

    def integer(self, op: Operation, rewriter: PatternRewriter) -> None:
        source, result = op.operands[0], op.results[0]
        t = convert_scalar_type(result.type, op)
        before, after = bit_width(source.type, op), bit_width(t, op)
        if before == after:
            rewriter.replace(op, [], [source])
        elif before > after:
            rewriter.replace(op, llvm.TruncOp(source, t))
        elif isinstance(op, arith.ExtUIOp):
            rewriter.replace(op, llvm.ZExtOp(source, t))
        else:
            rewriter.replace(op, llvm.SExtOp(source, t))

    def unsigned_to_float(self, op: arith.UIToFPOp, rewriter: PatternRewriter) -> None:
        width = bit_width(op.input.type, op)
        if width >= 64:
            raise LoopoptError("cannot lower uitofp from a 64-bit integer", op=op)
        wide = llvm.ZExtOp(op.input, i64)
        rewriter.replace(op, [wide, llvm.SIToFPOp(wide.res, op.result.type)])


def arith_patterns() -> list[RewritePattern]:
    return [
        ConstantLowering(),
        BinaryLowering(),
        CompareLowering(),
        DivisionLowering(),
        CastLowering(),
    ]
