"""Lower the kernels of each gpu.module to the llvm dialect with nvvm ops (host code unchanged).

Before:  gpu.func @k(%A: memref<256xf32>) kernel { %t = gpu.thread_id x ... gpu.barrier ... }
After:   llvm.func @k(%A: !llvm.ptr) attributes {nvvm.kernel} {
           %0 = nvvm.read.ptx.sreg.tid.x : i32 ... nvvm.barrier0 ... llvm.return }

Memrefs become bare pointers (plus an i64 per dynamic size), as on the CPU; shared-memory
buffers (memref.alloca in space 3) become globals in shared memory. `loopopt-opt --emit ptx`
then writes the PTX of the kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin

from loopopt.lowering.gpu_to_nvvm import lower_gpu_to_nvvm
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class LoopoptLowerGpuToNvvmPass(LoopoptPass):
    """Lower gpu.module kernels to llvm.func with nvvm ops (ids, barriers, shared memory)."""

    name = "loopopt-lower-gpu-to-nvvm"
    affine_loops = False

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        lower_gpu_to_nvvm(op)
