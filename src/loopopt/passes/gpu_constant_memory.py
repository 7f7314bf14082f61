"""Put small read-only kernel arrays in CUDA constant memory (`gpu-constant-memory`).

    gpu-map-loops{block=128,1},loop-unroll{unroll-full loop=q},...,gpu-constant-memory{arrays=F}

Before:  gpu.func @conv2d_k0(%I: memref<71x263xf32>, %F: memref<8x8xf32>, ...) kernel {
           %f = affine.load %F[0, 1] : memref<8x8xf32>                  (ld.global.nc)
After:   memref.global "public" @__const_conv2d_k0_F : memref<8x8xf32, 4> = uninitialized
         gpu.func @conv2d_k0(...) kernel attributes {loopopt.constant_args = {"1" = ...}} {
           %F_const = memref.get_global @__const_conv2d_k0_F : memref<8x8xf32, 4>
           %f = affine.load %F_const[0, 1] : memref<8x8xf32, 4>         (ld.const)

Runs after `gpu-map-loops` (and after the unrolls that make the indices constants: a load at a
constant index of constant memory is free, an operand `c[0x3][...]` of the FMA). Every kernel
that takes an argument named in `arrays=` and uses it gets a global per array; the runtime
copies the argument into it before each launch, on the launch's stream (runtime/host.py). A
kernel that writes the array, uses it otherwise than in loads, or gives it a dynamic shape is
refused, as is an array no kernel takes, and a gpu.module whose constant globals would exceed
the 64 KB of constant memory. Mechanics: `loopopt.loops.constant_memory`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, gpu
from xdsl.ir import BlockArgument

from loopopt.diagnostics import LoopoptError
from loopopt.loops.constant_memory import (
    check_constant_candidate,
    constant_args,
    constant_bytes,
    kernel_argument,
    move_to_constant_memory,
)
from loopopt.passes import LoopoptPass
from loopopt.target import CONSTANT_BANK_BYTES


@dataclass(frozen=True)
class GpuConstantMemoryPass(LoopoptPass):
    """Load small read-only kernel array arguments from constant memory (after gpu-map-loops)."""

    name = "gpu-constant-memory"
    affine_loops = False

    arrays: tuple[str, ...] = ()
    """The arrays, by SSA name of the kernel arguments (`%F` -> F)."""
    func: str | None = None
    """Only this kernel (gpu.func name)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if not self.arrays:
            raise LoopoptError(f"{self.name}: name the arrays (arrays=F,...)", op=op)
        gmods = [m for m in op.walk() if isinstance(m, gpu.ModuleOp)]
        kernels = [
            k
            for m in gmods
            for k in m.body.block.ops
            if isinstance(k, gpu.FuncOp) and k.kernel is not None
        ]
        if self.func is not None:
            kernels = [k for k in kernels if k.sym_name.data == self.func]
            if not kernels:
                raise LoopoptError(f"{self.name}: no kernel named '{self.func}'", op=op)
        chosen = self._chosen(op, kernels)
        for gmod in gmods:
            added = sum(size for kernel, _, size in chosen if kernel.parent_op() is gmod)
            total = constant_bytes(gmod) + added
            if total > CONSTANT_BANK_BYTES:
                raise LoopoptError(
                    f"{self.name}: the constant arrays of gpu.module @{gmod.sym_name.data} need "
                    f"{total} bytes; constant memory has {CONSTANT_BANK_BYTES}",
                    op=gmod,
                )
        for kernel, arg, _ in chosen:
            move_to_constant_memory(kernel, arg)

    def _chosen(
        self, op: builtin.ModuleOp, kernels: list[gpu.FuncOp]
    ) -> list[tuple[gpu.FuncOp, BlockArgument, int]]:
        """(kernel, argument, bytes) of each array to move; a diagnostic for one that cannot."""
        chosen: list[tuple[gpu.FuncOp, BlockArgument, int]] = []
        for name in self.arrays:
            taken = False
            for kernel in kernels:
                arg = kernel_argument(kernel, name)
                if arg is None:
                    continue
                taken = True
                if arg.index in constant_args(kernel) or not arg.uses:
                    continue  # moved already, or never read
                try:
                    size = check_constant_candidate(kernel, arg)
                except LoopoptError as e:
                    raise LoopoptError(f"{self.name}: {e.message}", location=e.location) from None
                chosen.append((kernel, arg, size))
            if not taken:
                raise LoopoptError(
                    f"{self.name}: no kernel takes an array named '{name}' "
                    "(run it after gpu-map-loops)",
                    op=op,
                )
        return chosen
