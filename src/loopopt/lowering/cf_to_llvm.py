"""Lower cf.br / cf.cond_br to llvm.br / llvm.cond_br (block arguments become PHIs later).

Before:  cf.cond_br %c, ^body, ^exit
After:   llvm.cond_br %c, ^body, ^exit
"""

from __future__ import annotations

from xdsl.dialects import cf, llvm
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern


class BranchLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter, /) -> None:
        rewriter.replace(op, llvm.BrOp(op.successor, *op.arguments))


class CondBranchLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter, /) -> None:
        new = llvm.CondBrOp(
            op.cond, op.then_block, op.then_arguments, op.else_block, op.else_arguments
        )
        rewriter.replace(op, new)


def cf_patterns() -> list[RewritePattern]:
    return [BranchLowering(), CondBranchLowering()]
