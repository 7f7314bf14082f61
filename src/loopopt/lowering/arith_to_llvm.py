"""Lower arith ops to the llvm dialect (index is i64; float ops keep strict IEEE semantics).

Before:  %q = arith.floordivsi %a, %b : index
After:   %z = llvm.icmp "eq" %b, %c0 : i64   ... %s = llvm.select %bad, %c1, %b : i1, i64
         %d = llvm.sdiv %a, %s : i64   %r = llvm.srem %a, %s : i64   ... (round toward -inf)
         %q = llvm.select %z, %c0, %d1 : i1, i64

Integer division and remainder are defined for every operand (LLVM's sdiv/srem are undefined
for a zero divisor and for MIN / -1, and x86 traps there): x / 0 is 0 and x % 0 is x, so that
x = (x / y) * y + x % y still holds; signed MIN / -1 wraps to MIN with remainder 0. A constant
divisor (affine floordiv/mod) folds the checks away.

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


SIGNED_DIVISIONS = (arith.DivSIOp, arith.RemSIOp, arith.FloorDivSIOp, arith.CeilDivSIOp)
DIVISIONS = (*SIGNED_DIVISIONS, arith.DivUIOp, arith.RemUIOp, arith.CeilDivUIOp)


class DivisionLowering(RewritePattern):
    """Integer division and remainder, defined for every operand (see the module docstring):
    the divisor becomes 1 where it is 0 (or where MIN / -1 would overflow), a zero divisor's
    quotient is then 0 and its remainder the dividend. floordivsi / ceildivsi / ceildivui are
    truncating division plus a correction by one."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, DIVISIONS):
            return
        lhs, rhs = op.operands
        t = convert_scalar_type(op.result.type, op)
        signed = isinstance(op, SIGNED_DIVISIONS)
        zero, one = const(0, t), const(1, t)
        by_zero = llvm.ICmpOp(rhs, zero.result, _pred("eq"))
        ops: list[Operation] = [zero, one, by_zero]
        bad: SSAValue = by_zero.res
        if signed:
            width = bit_width(t, op)
            minimum, minus_one = const(-(1 << (width - 1)), t), const(-1, t)
            is_min = llvm.ICmpOp(lhs, minimum.result, _pred("eq"))
            is_minus_one = llvm.ICmpOp(rhs, minus_one.result, _pred("eq"))
            overflow = llvm.AndOp(is_min.res, is_minus_one.res)
            either = llvm.OrOp(by_zero.res, overflow.res)
            ops += [minimum, minus_one, is_min, is_minus_one, overflow, either]
            bad = either.res
        safe = llvm.SelectOp(bad, one.result, rhs)
        ops.append(safe)
        divisor = safe.res
        if isinstance(op, arith.RemSIOp | arith.RemUIOp):
            remainder = llvm.SRemOp(lhs, divisor) if signed else llvm.URemOp(lhs, divisor)
            ops += [remainder, llvm.SelectOp(by_zero.res, lhs, remainder.res)]
            rewriter.replace(op, ops)
            return
        quotient = llvm.SDivOp(lhs, divisor) if signed else llvm.UDivOp(lhs, divisor)
        ops.append(quotient)
        result: SSAValue = quotient.res
        if not isinstance(op, arith.DivSIOp | arith.DivUIOp):
            result = self.round(op, lhs, divisor, quotient.res, (zero.result, one.result), ops)
        ops.append(llvm.SelectOp(by_zero.res, zero.result, result))
        rewriter.replace(op, ops)

    def round(
        self,
        op: Operation,
        lhs: SSAValue,
        rhs: SSAValue,
        quotient: SSAValue,
        zero_one: tuple[SSAValue, SSAValue],
        ops: list[Operation],
    ) -> SSAValue:
        """floordivsi / ceildivsi / ceildivui from the truncated `quotient` (appended to `ops`)."""
        signed = not isinstance(op, arith.CeilDivUIOp)
        remainder = llvm.SRemOp(lhs, rhs) if signed else llvm.URemOp(lhs, rhs)
        zero, one = zero_one
        inexact = llvm.ICmpOp(remainder.res, zero, _pred("ne"))
        ops += [remainder, inexact]
        fix: SSAValue = inexact.res
        if signed:
            # The exact quotient is negative iff remainder and divisor have opposite signs.
            r_neg = llvm.ICmpOp(remainder.res, zero, _pred("slt"))
            d_neg = llvm.ICmpOp(rhs, zero, _pred("slt"))
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
            adjusted = llvm.SubOp(quotient, one)
        else:
            adjusted = llvm.AddOp(quotient, one)
        select = llvm.SelectOp(fix, adjusted.res, quotient)
        ops += [adjusted, select]
        return select.res


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
