"""Map parallel loops onto GPU blocks and threads and outline them into kernels.

    gpu-map-loops{block=16,16 grid=... func=NAME}

Before:  func.func @add(%A, %B, %C: memref<1000xf32>) {
           affine.for %i = 0 to 1000 { C[i] = A[i] + B[i] } {loopopt.name = "i"} }
After:   gpu.module @kernels {
           gpu.func @add_k0(%A, %B, %C) kernel {
             %bx = gpu.block_id x   %tx = gpu.thread_id x
             %i_t = affine.apply (d0 * 256)(%bx)   %i = affine.apply (d0 + d1)(%i_t, %tx)
             affine.if (999 - %i >= 0) { C[i] = A[i] + B[i] }    (loopopt.mapping = "thread x")
             gpu.return } }
         func.func @add(...) {
           gpu.launch_func @kernels::@add_k0 blocks in (%c4, %c1, %c1)
               threads in (%c256, %c1, %c1) args(%A, %B, %C) }

For each outermost loop nest of a function: when its outer loop carries no dependence (exact
analysis), the nest becomes one kernel: up to three parallel loops map onto blocks and threads
(tile loops of a tiled band onto blocks, its point loops onto threads; untiled loops are
strip-mined by the block size; the loop contiguous in most accesses gets threadIdx.x: see
loops/gpu_plan), loops that carry dependences stay sequential in the kernel, copy loops of
`promote{memory-space=shared}` are spread over the block's threads, and barriers separate the
threads' conflicting accesses (loops/gpu_kernel). When the outer loop carries a dependence, it
stays on the host around the launches of the nests in its body (jacobi's time loop); a nest
where no loop is parallel is refused, naming the dependence. Options: `block=` threads per
block along x, y, z (default: the tile sizes, else 256, 16x16 or 16x4x4); `grid=` the most
blocks along x, y, z (default: the device limits; beyond, each block loops over tiles);
`min-blocks-per-sm=N` asks the backend to fit N blocks on an SM (`.minnctapersm`: fewer
registers per thread); `max-registers=N` caps a thread's registers (`.maxnreg`; `cap` is the
most that the block size and min-blocks-per-sm allow). Kernels get `.maxntid` from their block
size; with it alone ptxas 13 aims at occupancy: good for streaming kernels (conv2d 8x8 on the
H200: 32 registers, 0.088 ms; with `.maxnreg 255` 245 registers, 0.140 ms) and ruinous for
large register tiles (AᵀB 128x128 tiles of 8x8: 40 registers and 10 KB of spills, 12 ms;
capped at 255: 0.6 ms), which set `max-registers=cap`.
Host loops are marked `loopopt.mapping = "host"`, kernels with their mapping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin, func
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i32
from xdsl.ir import Block

from loopopt.analysis.parallel import carrying_dependence
from loopopt.diagnostics import LoopoptError
from loopopt.dialects import gpu_ext as gpu
from loopopt.loops.gpu_kernel import map_kernel
from loopopt.loops.gpu_map import MAPPING, launch_sizes, realize
from loopopt.loops.gpu_plan import plan_kernel, register_cap
from loopopt.loops.nest import describe_loop, functions
from loopopt.loops.outline import kernel_module, kernel_name, outline
from loopopt.lowering.gpu_to_nvvm import MAX_REGISTERS_ATTR, MIN_BLOCKS_ATTR, POINTER_ALIGN_ATTR
from loopopt.passes import LoopoptPass

HOST_MEMORY_OPS = frozenset(
    {
        "affine.load",
        "affine.store",
        "affine.vector_load",
        "affine.vector_store",
        "memref.load",
        "memref.store",
        "memref.atomic_rmw",
        "memref.copy",
    }
)
"""Ops that would touch (device) memory from the host: refused outside kernels."""

VECTOR_BYTES = 16
"""The widest vector access (ld.global.v4.f32): what `copy-vector` asks the arrays to align to."""


@dataclass(frozen=True)
class GpuMapLoopsPass(LoopoptPass):
    """Map parallel loops onto GPU blocks/threads; outline them into kernels (gpu.launch_func)."""

    name = "gpu-map-loops"

    grid: tuple[int, ...] = ()
    """Most blocks along x, y, z (default: the device limits)."""
    block: tuple[int, ...] = ()
    """Threads per block along x, y, z (default: tile sizes, else 256 / 16,16 / 16,4,4)."""
    min_blocks_per_sm: int = 0
    """Blocks that must fit on one SM together (CUDA's __launch_bounds__ second argument):
    caps the registers per thread; 0 leaves it to the compiler."""
    max_registers: int | str = 0
    """Most registers per thread (`.maxnreg`): a number, `cap` (what the block size and
    min-blocks-per-sm allow) or 0 (the compiler's choice from the block size)."""
    copy_vector: int = 1
    """Elements each thread copies at a time into shared memory (4: 128-bit copies of f32
    where LLVM proves them aligned; array arguments must then be 16-byte aligned, which the
    launch checks)."""
    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for fn in functions(op, self.func):
            _Host(self, op, fn).block(fn.body.block, None)


class _Host:
    """Walks the host code of one function and turns its nests into launches."""

    def __init__(self, options: GpuMapLoopsPass, module: builtin.ModuleOp, fn: func.FuncOp):
        self.options, self.module, self.fn = options, module, fn

    def block(self, block: Block, around: str | None) -> int:
        """Map the nests of a host block; the number of nests launched. `around`: why the
        enclosing loop stays on the host (for messages)."""
        launched = 0
        for op in list(block.ops):
            if isinstance(op, affine.ForOp):
                launched += self.nest(op)
            elif isinstance(op, gpu.LaunchFuncOp):
                launched += 1
            elif op.name in HOST_MEMORY_OPS:
                where = f" around it ({around})" if around else ""
                raise LoopoptError(
                    f"{self.options.name}: {op.name} outside every parallel loop would run on "
                    f"the host{where}",
                    op=op,
                )
            else:
                for region in op.regions:
                    for inner in region.blocks:
                        launched += self.block(inner, around)
        return launched

    def nest(self, root: affine.ForOp) -> int:
        name = self.options.name
        if any(isinstance(op, gpu.LaunchFuncOp) for op in root.walk()):
            return 1  # mapped by an earlier run
        plan = plan_kernel(root, self.options.block, self.options.grid, name)
        if plan is None:
            return self.host_loop(root)
        nest_root, dims = realize(plan, name)
        if any(dim.trip == 0 for dim in dims):
            nest_root.detach()
            nest_root.erase()
            return 1
        sizes = launch_sizes(dims, nest_root)
        gmod = kernel_module(self.module)
        kernel, _ = outline(
            nest_root,
            gmod,
            kernel_name(gmod, self.fn.sym_name.data),
            sizes.grid,
            sizes.block,
            sizes.nonempty,
        )
        map_kernel(kernel, nest_root, dims, name, self.options.copy_vector)
        if self.options.copy_vector > 1:
            kernel.attributes[POINTER_ALIGN_ATTR] = IntegerAttr(VECTOR_BYTES, i32)
        if self.options.min_blocks_per_sm > 0:
            kernel.attributes[MIN_BLOCKS_ATTR] = IntegerAttr(self.options.min_blocks_per_sm, i32)
        cap = max_registers(self.options, math.prod(dim.block for dim in dims), self.fn)
        if cap:
            kernel.attributes[MAX_REGISTERS_ATTR] = IntegerAttr(cap, i32)
        return 1

    def host_loop(self, loop: affine.ForOp) -> int:
        """`loop` carries a dependence: it stays on the host, its nests are launched."""
        dep = carrying_dependence(loop)
        why = (
            f"it carries {dep.describe()}" if dep is not None else "it has iter_args (a reduction)"
        )
        loop.attributes[MAPPING] = StringAttr("host")
        inner = [op for op in loop.walk() if op is not loop and isinstance(op, affine.ForOp)]
        launched = (
            self.block(loop.body.block, f"loop '{describe_loop(loop)}': {why}") if inner else 0
        )
        if not launched:
            raise LoopoptError(
                f"{self.options.name}: no parallel loop to map onto the GPU in the nest of "
                f"'{describe_loop(loop)}': {why}",
                op=loop,
            )
        return launched


def max_registers(options: GpuMapLoopsPass, threads: int, fn: func.FuncOp) -> int:
    """The `.maxnreg` of a kernel of `threads` threads (0: none), or a LoopoptError."""
    value = options.max_registers
    cap = register_cap(threads, options.min_blocks_per_sm)
    if value == "cap":
        return cap
    if not isinstance(value, int):
        raise LoopoptError(
            f"gpu-map-loops: max-registers must be a number or cap, not '{value}'", op=fn
        )
    if value and not 16 <= value <= cap:
        raise LoopoptError(
            f"gpu-map-loops: max-registers={value} is outside 16..{cap} (the most that blocks of "
            f"{threads} threads allow; use cap)",
            op=fn,
        )
    return value
