"""Lower func/affine/scf/arith/math/memref/cf to the llvm dialect (host calling convention).

Before:  func.func @f(%A: memref<?xf32>) { affine.for %i = 0 to 4 { ... } return }
After:   llvm.func @f(%A: !llvm.ptr, %A_d0: i64) { ... llvm.br ^bb1(...) ... llvm.return }

Each memref argument becomes one bare pointer followed by an i64 per dynamic dimension;
index becomes i64. An op without a lowering is an error at its location.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin

from loopopt.lowering.to_llvm import lower_to_llvm
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class LoopoptLowerToLLVMPass(LoopoptPass):
    """Lower the whole module to the llvm dialect (memrefs become bare pointers)."""

    name = "loopopt-lower-to-llvm"
    affine_loops = False

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        lower_to_llvm(op)
