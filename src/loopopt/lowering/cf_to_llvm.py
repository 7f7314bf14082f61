"""Lower cf.br / cf.cond_br to llvm.br / llvm.cond_br (block arguments become PHIs later).

Before:  cf.cond_br %c, ^body, ^exit
After:   llvm.cond_br %c, ^body, ^exit

A loop's back edge marked for LLVM to unroll (`loopopt.unroll_in_llvm`) keeps the mark.
"""

from __future__ import annotations

from xdsl.dialects import cf, llvm
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from loopopt.dialects.loopopt import UNROLL_IN_LLVM


class BranchLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter, /) -> None:
        new = llvm.BrOp(op.successor, *op.arguments)
        if UNROLL_IN_LLVM in op.attributes:
            new.attributes[UNROLL_IN_LLVM] = op.attributes[UNROLL_IN_LLVM]
        rewriter.replace(op, new)


class CondBranchLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter, /) -> None:
        new = llvm.CondBrOp(
            op.cond, op.then_block, op.then_arguments, op.else_block, op.else_arguments
        )
        rewriter.replace(op, new)


def cf_patterns() -> list[RewritePattern]:
    return [BranchLowering(), CondBranchLowering()]
