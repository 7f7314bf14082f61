"""Contract a multiply feeding an add into one fused multiply-add (nvcc's default --fmad=true).

    %p = arith.mulf %a, %b : f32                 %s = math.fma %a, %b, %c : f32
    %s = arith.addf %c, %p : f32        →

Applied to GPU kernels before they are lowered: the NVPTX backend would otherwise emit
`mul.rn` + `add.rn`, which ptxas must not fuse, at half the FMA peak. The product must have no
other use (else it is computed anyway). The result differs from the two-op form only by the
product's rounding (one rounding fewer), as in CUDA C, cuBLAS and Triton. The CPU path keeps
the two operations.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


class ContractMulAdd(RewritePattern):
    """addf(mulf(a, b), c) or addf(c, mulf(a, b)) with a single-use product → math.fma."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddfOp, rewriter: PatternRewriter, /) -> None:
        for product, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            mul = product.owner
            if not isinstance(mul, arith.MulfOp) or not product.has_one_use():
                continue
            fma = math.FmaOp(mul.lhs, mul.rhs, other)
            rewriter.replace(op, fma)
            rewriter.erase(mul)
            return


def contract_fma(root: Operation) -> None:
    """Fuse every single-use multiply-add under `root` into math.fma, in place."""
    walker = PatternRewriteWalker(ContractMulAdd(), apply_recursively=False)
    for region in root.regions:
        walker.rewrite_region(region)
