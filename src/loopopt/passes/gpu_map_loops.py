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
`promote{memory-space=shared}` are spread over the block's threads (their buffers become
workgroup attributions of the kernel: loops/gpu_workgroup), and barriers separate the
threads' conflicting accesses (loops/gpu_kernel). When the outer loop carries a dependence, it
stays on the host around the launches of the nests in its body (jacobi's time loop). Code that
no parallel band covers (scalar statements, recurrences, nests without a parallel loop) runs on
the device as single-block region kernels (loops/gpu_region; what runs where: loops/gpu_host),
with their parallel and reduction loops spread over `region-threads=` threads (default 256).
Only a function returning a value computed on the device is refused. Options: `block=` threads per
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
from xdsl.dialects import affine, arith, builtin, func, gpu
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i32
from xdsl.ir import Operation, SSAValue

from loopopt.analysis.access import collect_accesses
from loopopt.analysis.nest import body_block
from loopopt.analysis.reduction import Reduction
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import (
    MAPPING,
    MAX_REGISTERS_ATTR,
    MIN_BLOCKS_ATTR,
    POINTER_ALIGN_ATTR,
)
from loopopt.loops.gpu_barrier import dependence_requirements
from loopopt.loops.gpu_grid import (
    GRID_BLOCKS,
    atomic_reducible,
    grid_start,
    hoist_grid,
    map_grid,
    reset_ops,
    scratch,
    split_off,
    split_off_atomic,
)
from loopopt.loops.gpu_host import HostLoop, Item, Kernel, Planner, Region
from loopopt.loops.gpu_kernel import map_kernel
from loopopt.loops.gpu_map import (
    MappedDim,
    constant_trip,
    launch_sizes,
    realize,
    warp_lanes_fit,
)
from loopopt.loops.gpu_plan import AXES
from loopopt.loops.gpu_region import (
    LANE_WIDTH,
    inner_work_spreads,
    lanes_pay,
    map_lanes,
    map_per_block,
    map_region,
    registers_first,
    wrap,
)
from loopopt.loops.gpu_workgroup import attribute_workgroup_buffers
from loopopt.loops.nest import functions
from loopopt.loops.outline import kernel_module, kernel_name, outline
from loopopt.passes import LoopoptPass
from loopopt.target import THREADS_PER_BLOCK, register_cap

REDUCTIONS = ("auto", "thread", "block", "lanes", "grid-atomic")
"""The strategies of `reductions=` (see GpuMapLoopsPass.reductions)."""

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
    region_threads: int = 256
    """Threads of a block that runs region code: code outside every parallel band (scalar code,
    recurrences; one block), or one iteration of a parallel band (`reductions=block`). Its
    parallel and reduction loops are spread over them (1: a single thread)."""
    reductions: str = "auto"
    """A nest whose parallel loops enclose a reduction (or other loops): `thread` gives each
    iteration of the parallel loops a thread, the reduction sequential in it; `block` gives each
    a block whose threads share out its loops (a reduction combined in a tree); `lanes` gives a
    block 32 iterations of a lone parallel loop side by side (threadIdx.x), each shared out over
    its own threads along y. `auto` (unless `block=` is given) takes `block` where an inner loop
    reads memory more contiguously than the parallel loop would (row sums, A·x), else `lanes`
    where a thread per iteration would leave the GPU idle (column sums, Aᵀ·x), else `thread`.
    A large reduction that starts a region (or follows reads it does not depend on but for
    its initial values: loops/gpu_grid.grid_start) is shared out over a grid: its blocks write
    partial results that the region combines in order (deterministic), or, with `grid-atomic`
    (else as `auto`), add them into an accumulator atomically (the order of the additions
    varies: loops/gpu_grid)."""
    block_group: int = 1
    """Grouped block order (rasterization): consecutive blocks cover up to this many block rows
    (y) of one block column (x) before moving along x, so that the blocks resident together
    share their operand tiles in L2 (loops/gpu_map.group_blocks; the largest divisor of the
    rows at most this; kernels with one tile per block along x and y). 1: x fastest. On the
    H200 the SGEMM schedules gain at most 1.5% from it (benchmarks/README.md): they are bound
    by their SMs, not by L2."""
    warp_lanes: tuple[int, ...] = ()
    """Warp tiles (warp-level tiling): `LX,LY` lanes of a warp along x and y (LX * LY = 32,
    dividing the block's x and y sizes), so that a warp runs an LX x LY sub-grid of the
    block's thread grid instead of 32 consecutive threads of a row (loops/gpu_map.
    arrange_warps): a warp's register tiles then read LY row blocks of A and LX column blocks
    of B from shared memory. Copies keep consecutive lanes on consecutive elements. Empty:
    plain order (x fastest)."""
    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if not 1 <= self.region_threads <= THREADS_PER_BLOCK:
            raise LoopoptError(
                f"{self.name}: region-threads={self.region_threads} is outside "
                f"1..{THREADS_PER_BLOCK}",
                op=op,
            )
        if self.block_group < 1:
            raise LoopoptError(
                f"{self.name}: block-group={self.block_group} must be at least 1", op=op
            )
        if self.warp_lanes:
            # without block=: the lanes' own grid, so that only their product is checked
            problem = warp_lanes_fit(self.warp_lanes, self.block or self.warp_lanes)
            if problem is None and not self.block:
                problem = f"warp-lanes={','.join(map(str, self.warp_lanes))} needs block="
            if problem is not None:
                raise LoopoptError(f"{self.name}: {problem}", op=op)
        if self.reductions not in REDUCTIONS:
            raise LoopoptError(
                f"{self.name}: reductions must be {', '.join(REDUCTIONS)}, not '{self.reductions}'",
                op=op,
            )
        for fn in functions(op, self.func):
            _Host(self, op, fn).function()
        for kernel in [k for k in op.walk() if isinstance(k, gpu.FuncOp)]:
            attribute_workgroup_buffers(kernel)  # shared memory as upstream MLIR means it


class _Host:
    """Turns the host code of one function into launches (see loops/gpu_host)."""

    def __init__(self, options: GpuMapLoopsPass, module: builtin.ModuleOp, fn: func.FuncOp):
        self.options, self.module, self.fn = options, module, fn
        self.planner = Planner(options.block, options.grid, options.name)

    def function(self) -> None:
        items = self.planner.plan(body_block(self.fn, self.options.name))
        if items is None:
            raise LoopoptError(
                f"{self.options.name}: the function returns a value computed on the device; "
                "return results through arrays",
                op=self.fn.body.block.last_op or self.fn,
            )
        self.items(items)

    def items(self, items: list[Item]) -> None:
        for item in items:
            if isinstance(item, Kernel):
                self.kernel(item)
            elif isinstance(item, HostLoop):
                item.op.attributes[MAPPING] = StringAttr("host")
                self.items(item.items)
            elif isinstance(item, Region):
                self.region(item)

    def kernel(self, item: Kernel) -> None:
        choice = self.options.reductions
        if choice != "thread" and not self.options.block:
            if choice in ("auto", "block", "grid-atomic") and inner_work_spreads(
                item.plan, collect_accesses(item.op), self.options.region_threads
            ):
                self.block_kernel(item)
                return
            per_lane = lanes_pay(item.plan) if choice in ("auto", "lanes", "grid-atomic") else 0
            if per_lane:
                self.lanes_kernel(item, per_lane)
                return
        nest_root, dims = realize(item.plan, self.options.name)
        if any(dim.trip == 0 for dim in dims):
            nest_root.detach()
            nest_root.erase()
            return
        sizes = launch_sizes(dims, nest_root)
        # Dependences are taken here, where the host loops around the nest bound its
        # parameters (in the kernel they would be free symbols).
        requirements = dependence_requirements(nest_root, [dim.point for dim in dims])
        kernel, _ = self.outline(nest_root, sizes.grid, sizes.block, sizes.nonempty)
        map_kernel(
            kernel,
            nest_root,
            dims,
            self.options.name,
            self.options.copy_vector,
            requirements,
            self.options.block_group,
            self.options.warp_lanes,
        )
        if self.options.copy_vector > 1:
            kernel.attributes[POINTER_ALIGN_ATTR] = IntegerAttr(VECTOR_BYTES, i32)
        self.launch_bounds(kernel, math.prod(dim.block for dim in dims))

    def block_kernel(self, item: Kernel) -> None:
        plan = item.plan
        dims = [
            MappedDim(AXES[d], c.point, c.point, 1, plan.caps[d], constant_trip(c.point))
            for d, c in enumerate(plan.chosen)
        ]
        if any(dim.trip == 0 for dim in dims):
            item.op.detach()
            item.op.erase()
            return
        sizes = launch_sizes(dims, item.op)
        threads = self.options.region_threads
        block = self.constant(threads, item.op)
        one = sizes.block[1]
        kernel, launch = self.outline(item.op, sizes.grid, [block, one, one], sizes.nonempty)
        mapped = map_per_block(kernel, dims, threads, self.options.name)
        self.set_threads(launch, block, mapped, one)
        self.launch_bounds(kernel, mapped)

    def lanes_kernel(self, item: Kernel, per_lane: int) -> None:
        loop = item.plan.chosen[0].point
        trip = constant_trip(loop)
        assert trip is not None
        if trip == 0:
            loop.detach()
            loop.erase()
            return
        blocks = self.constant(-(-trip // LANE_WIDTH), loop)
        width = self.constant(LANE_WIDTH, loop)
        threads = self.constant(per_lane, loop)
        one = self.constant(1, loop)
        kernel, launch = self.outline(loop, [blocks, one, one], [width, threads, one], None)
        mapped = map_lanes(kernel, loop, per_lane, self.options.name)
        if mapped != per_lane:
            launch.operands[list(launch.operands).index(launch.blockSizeY)] = one
            threads.owner.detach()
            threads.owner.erase()
        self.launch_bounds(kernel, LANE_WIDTH * mapped)

    def region(self, item: Region) -> None:
        start = None
        if self.options.region_threads > 1:
            item.ops = registers_first(item.ops)
            start = grid_start(item.ops)
        if start is not None:
            k, found = start
            loop: affine.ForOp = item.ops[k]  # type: ignore[assignment]
            atomic = self.options.reductions == "grid-atomic" and atomic_reducible(loop, found)
            if atomic and k == 0:
                item.ops[0:1] = self.atomic_grid_reduction(loop, found)
            else:
                item.ops[k] = self.grid_reduction(loop, found, item.ops[0])
        loop = wrap(item.ops)
        one = self.constant(1, loop)
        threads = self.constant(self.options.region_threads, loop)
        kernel, launch = self.outline(loop, [one, one, one], [threads, one, one], None)
        mapped = map_region(kernel, loop, self.options.region_threads, self.options.name)
        self.set_threads(launch, threads, mapped, one)
        self.launch_bounds(kernel, mapped)

    def grid_reduction(
        self, loop: affine.ForOp, found: list[Reduction], start: Operation
    ) -> affine.ForOp:
        """Launch a grid that reduces `loop` into partial results, ahead of the region's first
        op `start`; the loop that combines them takes `loop`'s place in the region
        (loops/gpu_grid)."""
        names = scratch(kernel_module(self.module), loop, found)
        grid, combine = split_off(loop, found, names)
        if start is not loop:
            hoist_grid(grid, start)
        threads = self.options.region_threads
        blocks = self.constant(GRID_BLOCKS, grid)
        width = self.constant(threads, grid)
        one = self.constant(1, grid)
        kernel, _ = self.outline(grid, [blocks, one, one], [width, one, one], None)
        map_grid(kernel, grid, found, names, threads)
        self.launch_bounds(kernel, threads)
        return combine

    def atomic_grid_reduction(self, loop: affine.ForOp, found: list[Reduction]) -> list[Operation]:
        """Launch a one-thread kernel that resets the accumulators, then a grid that adds into
        them atomically; the ops reading them take `loop`'s place in the region."""
        names = scratch(kernel_module(self.module), loop, found, count=1)
        grid, reads = split_off_atomic(loop, found, names)
        block = grid.parent_block()
        assert block is not None
        ops = reset_ops(grid, found, names)
        block.insert_ops_before(ops, grid)
        reset = wrap(ops)
        one = self.constant(1, reset)
        kernel, _ = self.outline(reset, [one, one, one], [one, one, one], None)
        map_region(kernel, reset, 1, self.options.name)
        threads = self.options.region_threads
        blocks = self.constant(GRID_BLOCKS, grid)
        width = self.constant(threads, grid)
        one = self.constant(1, grid)
        kernel, _ = self.outline(grid, [blocks, one, one], [width, one, one], None)
        map_grid(kernel, grid, found, names, threads, atomic=True)
        self.launch_bounds(kernel, threads)
        return reads

    def set_threads(
        self, launch: gpu.LaunchFuncOp, threads: SSAValue, mapped: int, one: SSAValue
    ) -> None:
        """A region that runs on one thread is launched with one thread per block."""
        if mapped == self.options.region_threads:
            return
        launch.operands[list(launch.operands).index(launch.blockSizeX)] = one
        if not threads.uses:
            threads.owner.detach()
            threads.owner.erase()

    def outline(
        self,
        root: Operation,
        grid: list[SSAValue],
        block: list[SSAValue],
        nonempty: SSAValue | None,
    ) -> tuple[gpu.FuncOp, gpu.LaunchFuncOp]:
        gmod = kernel_module(self.module)
        name = kernel_name(gmod, self.fn.sym_name.data)
        return outline(root, gmod, name, grid, block, nonempty)

    def constant(self, value: int, before: Operation) -> SSAValue:
        op = arith.ConstantOp(IntegerAttr.from_index_int_value(value))
        op.result.name_hint = f"c{value}"
        block = before.parent_block()
        assert block is not None
        block.insert_op_before(op, before)
        return op.result

    def launch_bounds(self, kernel: gpu.FuncOp, threads: int) -> None:
        if self.options.min_blocks_per_sm > 0:
            kernel.attributes[MIN_BLOCKS_ATTR] = IntegerAttr(self.options.min_blocks_per_sm, i32)
        cap = max_registers(self.options, threads, self.fn)
        if cap:
            kernel.attributes[MAX_REGISTERS_ATTR] = IntegerAttr(cap, i32)


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
