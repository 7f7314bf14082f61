"""Lower the affine dialect to scf + arith + memref (xDSL's lower-affine lacks max/min bounds);
`lower-affine` in a pipeline runs this (`LowerAffinePass`).

Before:  affine.for %i = max(0, %n - 4) to min(%n, 8) step 2 { %v = affine.load %A[%i floordiv 2] }
After:   %lb = arith.maxsi %c0, %n4 ; %ub = arith.minsi %n, %c8
         scf.for %i = %lb to %ub step %c2 { %q = arith.floordivsi %i, %c2 ; memref.load %A[%q] }

Affine `mod` always yields a value in [0, divisor): it is `remsi` plus a fix-up for negative
remainders. `floordiv`/`ceildiv` become `arith.floordivsi`/`arith.ceildivsi` (rounding toward
-inf/+inf, lowered exactly by arith_to_llvm). `affine.if` becomes `arith.cmpi` + `scf.if`.
A loop marked for LLVM to unroll (`loopopt.unroll_in_llvm`) keeps the mark on its scf.for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, builtin, memref, scf
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.ir.affine.affine_set import AffineConstraintKind
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from loopopt.diagnostics import LoopoptError
from loopopt.dialects import affine_ext
from loopopt.dialects.loopopt import UNROLL_IN_LLVM


class ExprBuilder:
    """Emits arith ops evaluating affine expressions over given dim and symbol values."""

    def __init__(self, dims: Sequence[SSAValue], symbols: Sequence[SSAValue]):
        self.dims = list(dims)
        self.symbols = list(symbols)
        self.ops: list[Operation] = []

    def emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def constant(self, value: int) -> SSAValue:
        return self.emit(arith.ConstantOp(builtin.IntegerAttr.from_index_int_value(value)))

    def expr(self, expr: AffineExpr) -> SSAValue:
        match expr:
            case AffineConstantExpr():
                return self.constant(expr.value)
            case AffineDimExpr():
                return self.dims[expr.position]
            case AffineSymExpr():
                return self.symbols[expr.position]
            case AffineBinaryOpExpr():
                return self.binary(expr)
            case _:
                raise LoopoptError(f"unexpected affine expression {expr}")

    def binary(self, expr: AffineBinaryOpExpr) -> SSAValue:
        lhs = self.expr(expr.lhs)
        rhs = self.expr(expr.rhs)
        match expr.kind:
            case AffineBinaryOpKind.Add:
                return self.emit(arith.AddiOp(lhs, rhs))
            case AffineBinaryOpKind.Mul:
                return self.emit(arith.MuliOp(lhs, rhs))
            case AffineBinaryOpKind.FloorDiv:
                return self.emit(arith.FloorDivSIOp(lhs, rhs))
            case AffineBinaryOpKind.CeilDiv:
                return self.emit(arith.CeilDivSIOp(lhs, rhs))
            case AffineBinaryOpKind.Mod:
                return self.mod(lhs, rhs)

    def mod(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs mod rhs` in [0, rhs) for rhs > 0: remsi, plus rhs where the remainder is < 0."""
        rem = self.emit(arith.RemSIOp(lhs, rhs))
        negative = self.emit(arith.CmpiOp(rem, self.constant(0), "slt"))
        shifted = self.emit(arith.AddiOp(rem, rhs))
        return self.emit(arith.SelectOp(negative, shifted, rem))

    def results(self, amap: AffineMap) -> list[SSAValue]:
        return [self.expr(e) for e in amap.results]

    def combined(self, amap: AffineMap, take_max: bool) -> SSAValue:
        """The max (lower bounds) or min (upper bounds) of all results of `amap`."""
        values = self.results(amap)
        result = values[0]
        for value in values[1:]:
            op = arith.MaxSIOp(result, value) if take_max else arith.MinSIOp(result, value)
            result = self.emit(op)
        return result


def _builder(amap: AffineMap, operands: Sequence[SSAValue]) -> ExprBuilder:
    return ExprBuilder(operands[: amap.num_dims], operands[amap.num_dims :])


class LowerAffineFor(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ForOp, rewriter: PatternRewriter, /) -> None:
        lb_map = op.lowerBoundMap.data
        ub_map = op.upperBoundMap.data
        lower = _builder(lb_map, op.lowerBoundOperands)
        lb = lower.combined(lb_map, take_max=True)
        upper = _builder(ub_map, op.upperBoundOperands)
        ub = upper.combined(ub_map, take_max=False)
        step = arith.ConstantOp(builtin.IntegerAttr.from_index_int_value(op.step.value.data))
        body = rewriter.move_region_contents_to_new_regions(op.body)
        loop = scf.ForOp(lb, ub, step.result, op.inits, body)
        if UNROLL_IN_LLVM in op.attributes:
            loop.attributes[UNROLL_IN_LLVM] = op.attributes[UNROLL_IN_LLVM]
        rewriter.replace(op, [*lower.ops, *upper.ops, step, loop], loop.results)


class LowerAffineParallel(RewritePattern):
    """affine.parallel without reductions: a nest of sequential scf.for loops."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ParallelOp, rewriter: PatternRewriter, /) -> None:
        if op.results:
            raise LoopoptError("cannot lower affine.parallel with reductions", op=op)
        lb_map, ub_map = op.lowerBoundsMap.data, op.upperBoundsMap.data
        n_lb = lb_map.num_dims + lb_map.num_symbols
        lower = _builder(lb_map, op.map_operands[:n_lb])
        upper = _builder(ub_map, op.map_operands[n_lb:])
        lbs = _grouped(lower, lb_map, op.lowerBoundsGroups.get_values(), take_max=True)
        ubs = _grouped(upper, ub_map, op.upperBoundsGroups.get_values(), take_max=False)
        steps = [
            arith.ConstantOp(builtin.IntegerAttr.from_index_int_value(s.value.data))
            for s in op.steps
        ]
        body = op.body.block
        if isinstance(body.last_op, affine.YieldOp):
            rewriter.erase(body.last_op)
        loops: list[scf.ForOp] = []
        for lb, ub, step in zip(lbs, ubs, steps, strict=True):
            block = Block([scf.YieldOp()], arg_types=[builtin.IndexType()])
            loops.append(scf.ForOp(lb, ub, step.result, [], Region(block)))
        for outer, inner in zip(loops, loops[1:], strict=False):
            outer.body.block.insert_op_before(inner, _terminator(outer))
        ivs = [loop.body.block.args[0] for loop in loops]
        rewriter.inline_block(body, InsertPoint.before(_terminator(loops[-1])), ivs)
        rewriter.replace(op, [*lower.ops, *upper.ops, *steps, loops[0]], [])


def _terminator(loop: scf.ForOp) -> Operation:
    last = loop.body.block.last_op
    assert last is not None  # built above with an scf.yield
    return last


def _grouped(
    builder: ExprBuilder, amap: AffineMap, groups: Sequence[int], take_max: bool
) -> list[SSAValue]:
    """One combined bound per group of consecutive results (affine.parallel's bound groups)."""
    values = builder.results(amap)
    result: list[SSAValue] = []
    start = 0
    for size in groups:
        value = values[start]
        for other in values[start + 1 : start + size]:
            op = arith.MaxSIOp(value, other) if take_max else arith.MinSIOp(value, other)
            value = builder.emit(op)
        result.append(value)
        start += size
    return result


class LowerAffineIf(RewritePattern):
    """affine.if (xDSL's generic op or loopopt's custom-syntax one) → cmpi + scf.if."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.IfOp, rewriter: PatternRewriter, /) -> None:
        iset = op.condition.data
        builder = ExprBuilder(op.args[: iset.num_dims], op.args[iset.num_dims :])
        condition: SSAValue | None = None
        for constraint in iset.constraints:
            lhs = builder.expr(constraint.lhs)
            rhs = builder.expr(constraint.rhs)
            predicate = {
                AffineConstraintKind.ge: "sge",
                AffineConstraintKind.le: "sle",
                AffineConstraintKind.eq: "eq",
            }[constraint.kind]
            holds = builder.emit(arith.CmpiOp(lhs, rhs, predicate))
            condition = holds if condition is None else builder.emit(arith.AndIOp(condition, holds))
        if condition is None:
            condition = builder.emit(arith.ConstantOp(builtin.IntegerAttr(1, 1)))
        then_region = rewriter.move_region_contents_to_new_regions(op.then_region)
        else_region = rewriter.move_region_contents_to_new_regions(op.else_region)
        new_if = scf.IfOp(condition, op.result_types, then_region, else_region)
        rewriter.replace(op, [*builder.ops, new_if], new_if.results)


class LowerAffineYield(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.YieldOp, rewriter: PatternRewriter, /) -> None:
        rewriter.replace(op, scf.YieldOp(*op.arguments))


class LowerAffineLoad(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.LoadOp, rewriter: PatternRewriter, /) -> None:
        builder = _builder(op.map.data, op.indices)
        indices = builder.results(op.map.data)
        rewriter.replace(op, [*builder.ops, memref.LoadOp.get(op.memref, indices)])


class LowerAffineStore(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.StoreOp, rewriter: PatternRewriter, /) -> None:
        builder = _builder(op.map.data, op.indices)
        indices = builder.results(op.map.data)
        rewriter.replace(op, [*builder.ops, memref.StoreOp.get(op.value, op.memref, indices)])


class LowerAffineApply(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ApplyOp, rewriter: PatternRewriter, /) -> None:
        amap = op.map.data
        if len(amap.results) != 1:
            raise LoopoptError("affine.apply needs a map with exactly one result", op=op)
        builder = _builder(amap, op.mapOperands)
        value = builder.expr(amap.results[0])
        rewriter.replace(op, builder.ops, [value])


class LowerAffineMin(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.MinOp, rewriter: PatternRewriter, /) -> None:
        builder = _builder(op.map.data, op.arguments)
        value = builder.combined(op.map.data, take_max=False)
        rewriter.replace(op, builder.ops, [value])


class LowerAffineMax(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine_ext.MaxOp, rewriter: PatternRewriter, /) -> None:
        builder = _builder(op.map.data, op.arguments)
        value = builder.combined(op.map.data, take_max=True)
        rewriter.replace(op, builder.ops, [value])


def lower_affine(module: builtin.ModuleOp) -> None:
    """Lower every affine op of `module` to scf, arith and memref, in place."""
    PatternRewriteWalker(
        GreedyRewritePatternApplier(
            [
                LowerAffineFor(),
                LowerAffineParallel(),
                LowerAffineIf(),
                LowerAffineYield(),
                LowerAffineLoad(),
                LowerAffineStore(),
                LowerAffineApply(),
                LowerAffineMin(),
                LowerAffineMax(),
            ]
        ),
        apply_recursively=True,
    ).rewrite_module(module)


@dataclass(frozen=True)
class LowerAffinePass(ModulePass):
    """Lower affine ops to scf, arith and memref (`lower-affine`, as mlir-opt's)."""

    name = "lower-affine"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        lower_affine(op)
