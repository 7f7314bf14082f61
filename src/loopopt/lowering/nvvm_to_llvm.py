"""Lower nvvm ops to LLVM intrinsic calls, right before translation to LLVM IR.

Before:  %t = nvvm.read.ptx.sreg.tid.x : i32          nvvm.barrier0
After:   %t = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
         llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()

`nvvm.cp.async.wait.group N` passes N as an i32 constant (the intrinsic's immediate);
`nvvm.cp.async.shared.global %d, %g, 16, cache = cg` calls
`llvm.nvvm.cp.async.cg.shared.global.16` (its address arithmetic is made by lowering/cp_async.py).

xDSL's LLVM translation knows `llvm.call_intrinsic` but no nvvm op, so the kernels keep their
nvvm ops (readable, as MLIR prints them) until backend/ptx.py translates them.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from loopopt.dialects.nvvm import CpAsyncWaitGroupOp, NvvmIntrinsicOp


class NvvmToIntrinsic(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, NvvmIntrinsicOp):
            return
        ops: list[Operation] = []
        args = list(op.operands)
        if isinstance(op, CpAsyncWaitGroupOp):
            ops.append(llvm.ConstantOp(IntegerAttr(op.n.value.data, i32), i32))
            args.append(ops[-1].results[0])
        call = llvm.CallIntrinsicOp(op.intrinsic(), args, list(op.result_types))
        rewriter.replace(op, [*ops, call], list(call.results))


def lower_nvvm_to_llvm(module: ModuleOp) -> None:
    """Replace every nvvm op of `module` by the LLVM intrinsic call it stands for."""
    PatternRewriteWalker(
        GreedyRewritePatternApplier([NvvmToIntrinsic()]), apply_recursively=False
    ).rewrite_module(module)
