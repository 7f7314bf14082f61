"""llvm dialect → LLVM IR text, through xDSL's llvmlite backend (xdsl.backend.llvm.convert).

Before:  llvm.func @f(%A: !llvm.ptr) { ... llvm.return }
After:   define void @"f"(ptr %".1") { ... ret void }

`module_to_llvmlite` gives the llvmlite module (the GPU path sets its own triple and data
layout); `module_to_llvm_ir` its text for the host.
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import LLVMTranslationException

from loopopt.diagnostics import LoopoptError


def module_to_llvmlite(
    module: ModuleOp, triple: str | None = None, data_layout: str = ""
) -> ir.Module:
    """The llvmlite module of `module` (in the llvm dialect); host triple unless given."""
    try:
        return convert_module(module, fallback_target_triple=triple, data_layout=data_layout)
    except (NotImplementedError, LLVMTranslationException, KeyError) as e:
        raise LoopoptError(f"cannot translate to LLVM IR: {e}") from None


def module_to_llvm_ir(module: ModuleOp) -> str:
    """LLVM IR text of `module`, which must already be in the llvm dialect, for the host."""
    return str(module_to_llvmlite(module))
