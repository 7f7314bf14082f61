"""Lower a loopopt module (func, affine, scf, arith, math, memref, cf) to the llvm dialect.

Before:  func.func @f(%A: memref<8xf32>) { affine.for %i = 0 to 8 { ... } return }
After:   llvm.func @f(%A: !llvm.ptr) { llvm.br ^bb1(%c0 : i64) ^bb1(%i: i64): ... llvm.return }

Steps: affine → scf (our own lowering: max/min bounds, symbols, affine.if), scf → cf (xDSL's
patterns; a loop marked `loopopt.unroll_in_llvm` marks its back edge), then func signatures (so
memref arguments are known pointers), memref producers, and every remaining op. An op that has
no lowering is reported with its location.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import cf, llvm, scf
from xdsl.dialects.builtin import IndexType, ModuleOp, UnregisteredOp, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import Rewriter
from xdsl.transforms.convert_scf_to_cf import ForLowering, IfLowering, SwitchLowering

from loopopt.context import verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import UNROLL_IN_LLVM
from loopopt.lowering.affine_to_scf import lower_affine
from loopopt.lowering.arith_to_llvm import arith_patterns
from loopopt.lowering.block_cse import merge_repeats
from loopopt.lowering.cf_to_llvm import cf_patterns
from loopopt.lowering.func_to_llvm import CallLowering, FuncLowering, ReturnLowering
from loopopt.lowering.llvm_common import LoweringState, WorkgroupAlloca
from loopopt.lowering.math_to_llvm import MathLowering
from loopopt.lowering.memref_to_llvm import producer_patterns, user_patterns
from loopopt.lowering.swizzle import unswizzle


class _Lowering(GreedyRewritePatternApplier):
    """The patterns in order, skipping what is lowered already: the walker visits every op it
    makes again, and an unrolled kernel has tens of thousands of them."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.dialect_name() not in _LOWERED:
            super().match_and_rewrite(op, rewriter)


_LOWERED = frozenset({"llvm", "nvvm"})
"""Dialects of what the patterns produce: none of them matches an op of these."""


def _apply(module: ModuleOp, patterns: Sequence[RewritePattern]) -> None:
    # No dead-code elimination: size constants recorded in the memref table have no uses yet.
    PatternRewriteWalker(
        _Lowering(list(patterns), dce_enabled=False), apply_recursively=True
    ).rewrite_module(module)


class _MarkedForLowering(ForLowering):
    """xDSL's scf.for lowering; the back edge of a loop marked for LLVM to unroll
    (`loopopt.unroll_in_llvm`) carries the mark."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, scf.ForOp) or UNROLL_IN_LLVM not in op.attributes:
            super().match_and_rewrite(op, rewriter)
            return
        mark, entry = op.attributes[UNROLL_IN_LLVM], op.parent_block()
        header = op.body.first_block  # becomes the condition block, the back edge's target
        super().match_and_rewrite(op, rewriter)
        for use in list(header.uses) if header is not None else []:
            branch = use.operation
            if isinstance(branch, cf.BranchOp) and branch.parent_block() is not entry:
                branch.attributes[UNROLL_IN_LLVM] = mark


def lower_scf_to_cf(module: ModuleOp) -> None:
    """scf.for / scf.if / scf.index_switch → unstructured control flow (xDSL's patterns)."""
    _apply(module, [SwitchLowering(), IfLowering(), _MarkedForLowering()])


def lower_to_llvm(
    module: ModuleOp,
    *,
    keep_dialects: Sequence[str] = (),
    workgroup_alloca: WorkgroupAlloca | None = None,
) -> None:
    """Lower `module` to the llvm dialect in place; LoopoptError for what cannot be lowered.

    GPU kernels keep the ops of `keep_dialects` (nvvm) and lower shared-memory allocas with
    `workgroup_alloca`."""
    _check_lowerable(module, keep_dialects)
    unswizzle(module)  # physical indices of swizzled buffers (done already in GPU kernels)
    lower_affine(module)
    merge_repeats(module)
    lower_scf_to_cf(module)
    state = LoweringState(module, workgroup_alloca=workgroup_alloca)
    _apply(module, [FuncLowering(state)])
    _apply(module, producer_patterns(state))
    _apply(
        module,
        [
            *arith_patterns(),
            MathLowering(state),
            *user_patterns(state),
            CallLowering(state),
            ReturnLowering(),
            *cf_patterns(),
        ],
    )
    _finish(module, keep_dialects)
    merge_repeats(module)
    verify_ir(module, "lowering to LLVM produced invalid IR")


LOWERED_DIALECTS = ("builtin", "func", "affine", "scf", "arith", "math", "memref", "cf", "llvm")


def _check_lowerable(module: ModuleOp, keep_dialects: Sequence[str]) -> None:
    """Reject ops of foreign dialects before changing anything (a clean, located error)."""
    known = (*LOWERED_DIALECTS, *keep_dialects)
    for op in module.walk():
        # an op of a dialect loopopt does not know is named `builtin.unregistered` by xDSL
        name = op.op_name.data if isinstance(op, UnregisteredOp) else op.name
        if op is not module and (name.split(".")[0] not in known or name != op.name):
            raise LoopoptError(f"cannot lower '{name}' to LLVM", op=op)


def _finish(module: ModuleOp, keep_dialects: Sequence[str]) -> None:
    """Give left-over index values their i64 type; every op must now be in the llvm dialect."""
    done = ("llvm", *keep_dialects)
    for op in module.walk():
        if op is module:
            continue
        if op.name.split(".")[0] not in done:
            raise LoopoptError(f"cannot lower '{op.name}' to LLVM", op=op)
        _retype(op.results)
        for region in op.regions:
            for block in region.blocks:
                _retype(block.args)
    for op in module.ops:
        if not isinstance(op, llvm.FuncOp):
            raise LoopoptError(f"cannot lower '{op.name}' at module level to LLVM", op=op)


def _retype(values: Sequence[SSAValue]) -> None:
    for value in list(values):
        if isinstance(value.type, IndexType):
            Rewriter.replace_value_with_new_type(value, i64)
