"""Lower the kernels of each gpu.module to llvm.func + nvvm ops (MLIR's convert-gpu-to-nvvm).

Before:  gpu.module @kernels {
           gpu.func @k(%A: memref<256xf32>) kernel {
             %t = gpu.thread_id x            gpu.barrier            gpu.return } }
After:   gpu.module @kernels {
           llvm.func @k(%A: !llvm.ptr) attributes {nvvm.kernel} {
             %0 = nvvm.read.ptx.sreg.tid.x : i32   %t = llvm.sext %0 : i32 to i64
             nvvm.barrier0                          llvm.return } }

Multiply-adds are contracted into FMAs (lowering/contract.py, as nvcc does), then repeated
computations and loads within a block merged (lowering/block_cse.py: what LLVM would merge,
from fewer ops to lower); ids and dims
become special-register reads, gpu.barrier nvvm.barrier0, asynchronous copies byte offsets
(lowering/cp_async.py), tensor-core ops (lowering/mma.py), and then the host's
lowering to the llvm dialect (lowering/to_llvm.py) does the rest, with the same calling
convention: one bare pointer per memref, plus an i64 per dynamic size. Shared buffers
(workgroup attributions, or memref.alloca in space 3) become globals in shared memory
(lowering/gpu_shared.py). Host
functions and gpu.launch_func are left alone (runtime/host.py runs them). Kernels carry
`gpu.kernel` (as upstream's lowering keeps it: gpu.launch_func's verifier asks for it),
`nvvm.kernel` (backend/ptx.py gives them the ptx_kernel calling convention),
`loopopt.shared_bytes`, and `loopopt.dynamic_shared_bytes` if their launches need some.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, gpu, llvm
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, UnitAttr, i64
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from loopopt.diagnostics import LoopoptError
from loopopt.dialects import gpu_ext
from loopopt.dialects.loopopt import (
    CONSTANT_ARGS_ATTR,
    DYNAMIC_SHARED_ATTR,
    MAX_REGISTERS_ATTR,
    MIN_BLOCKS_ATTR,
    POINTER_ALIGN_ATTR,
    SHARED_BYTES_ATTR,
)
from loopopt.dialects.nvvm import Barrier0Op, read_sreg
from loopopt.loops.gpu_workgroup import workgroup_buffers_to_allocas
from loopopt.lowering.block_cse import merge_repeats
from loopopt.lowering.contract import contract_fma
from loopopt.lowering.cp_async import linearize_async_copies, lower_shared_global
from loopopt.lowering.gpu_constant import lower_constant_globals
from loopopt.lowering.gpu_shared import SharedLayout
from loopopt.lowering.mma import linearize_mma, lower_mma
from loopopt.lowering.swizzle import unswizzle
from loopopt.lowering.to_llvm import lower_to_llvm

KERNEL_ATTR = "nvvm.kernel"
MAX_THREADS_ATTR = "nvvm.maxntid"
"""The block size a kernel is launched with (from known_block_size): PTX `.maxntid`."""
KEPT_ATTRS = (MIN_BLOCKS_ATTR, MAX_REGISTERS_ATTR, POINTER_ALIGN_ATTR, CONSTANT_ARGS_ATTR)
"""Attributes of a gpu.func its llvm.func keeps (CONSTANT_ARGS_ATTR: runtime/host.py)."""

_REGISTERS: dict[str, str] = {
    gpu.ThreadIdOp.name: "tid",
    gpu.BlockDimOp.name: "ntid",
    gpu.BlockIdOp.name: "ctaid",
    gpu.GridDimOp.name: "nctaid",
}


def _index(register: str) -> list[Operation]:
    """Read `register` and widen it to index (the registers are small and non-negative)."""
    read = read_sreg(register)
    return [read, arith.IndexCastOp(read.res, IndexType())]


class IdLowering(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, gpu.ThreadIdOp | gpu.BlockDimOp | gpu.BlockIdOp | gpu.GridDimOp):
            ops = _index(f"{_REGISTERS[op.name]}.{op.dimension.data}")
        elif isinstance(op, gpu.GlobalIdOp):
            dim = op.dimension.data
            block, size, thread = (
                _index(f"ctaid.{dim}"),
                _index(f"ntid.{dim}"),
                _index(f"tid.{dim}"),
            )
            scaled = arith.MuliOp(block[-1].results[0], size[-1].results[0])
            ops = [*block, *size, *thread, scaled, arith.AddiOp(scaled, thread[-1].results[0])]
        elif isinstance(op, gpu.LaneIdOp):
            ops = _index("laneid")
        elif isinstance(op, gpu.SubgroupSizeOp):
            ops = _index("warpsize")
        elif isinstance(op, gpu.BarrierOp):
            ops = [Barrier0Op()]
        else:
            return
        rewriter.replace(op, ops, list(ops[-1].results))


class KernelLowering(RewritePattern):
    """gpu.func → func.func (kernels marked), gpu.return → func.return."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: gpu.FuncOp, rewriter: PatternRewriter, /) -> None:
        if op.function_type.outputs.data and op.kernel is not None:
            raise LoopoptError("a kernel returns nothing", op=op)
        workgroup_buffers_to_allocas(op)  # placed by gpu_shared.py, as workgroup allocas
        for inner in op.walk():
            if isinstance(inner, gpu.ReturnOp):
                rewriter.replace(inner, func.ReturnOp(*inner.args))
        body = rewriter.move_region_contents_to_new_regions(op.body)
        new = func.FuncOp(op.sym_name.data, op.function_type, body)
        new.location = op.location
        if op.kernel is not None:
            new.attributes[KERNEL_ATTR] = UnitAttr()
        if op.known_block_size is not None:
            new.attributes[MAX_THREADS_ATTR] = op.known_block_size
        for kept in KEPT_ATTRS:
            if kept in op.attributes:
                new.attributes[kept] = op.attributes[kept]
        rewriter.replace(op, new)


def lower_gpu_to_nvvm(module: ModuleOp) -> None:
    """Lower the gpu.funcs of every gpu.module of `module` in place (host code untouched)."""
    for op in list(module.ops):
        if isinstance(op, gpu.ModuleOp):
            lower_gpu_module(op)


def lower_gpu_module(gmod: gpu.ModuleOp) -> None:
    """Lower the gpu.funcs of `gmod` to llvm.funcs with nvvm ops; other ops stay as they are."""
    funcs = [op for op in gmod.body.block.ops if isinstance(op, gpu.FuncOp)]
    if not funcs:
        return
    for fn in funcs:
        contract_fma(fn)
        merge_repeats(fn)
        unswizzle(fn)  # before cp.async copies and shared buffers get their addresses
    PatternRewriteWalker(
        GreedyRewritePatternApplier([IdLowering(), KernelLowering()], dce_enabled=False),
        apply_recursively=False,
    ).rewrite_region(gmod.body)
    converted = [op for op in gmod.body.block.ops if isinstance(op, func.FuncOp)]
    _reject_gpu_ops(converted)
    kernels = {
        fn.sym_name.data: {
            k: v for k, v in fn.attributes.items() if k in (*KEPT_ATTRS, MAX_THREADS_ATTR)
        }
        for fn in converted
        if KERNEL_ATTR in fn.attributes
    }
    layout = SharedLayout()
    for fn in converted:
        layout.plan(fn)
        linearize_async_copies(fn)
        linearize_mma(fn)

    staging = ModuleOp([])
    for fn in converted:
        fn.detach()
        staging.body.block.add_op(fn)
    # lowering.cp_async_bytes until lower_shared_global; tensor-core ops until lower_mma
    internal = ("nvvm", "lowering", "nvgpu", "vector")
    lower_to_llvm(staging, keep_dialects=internal, workgroup_alloca=layout.lower_alloca)
    lower_shared_global(staging)
    lower_mma(staging)
    for global_op in layout.globals():
        staging.body.block.insert_op_before(global_op, staging.body.block.first_op)
    lower_constant_globals(gmod)
    for op in list(staging.body.block.ops):
        op.detach()
        if isinstance(op, llvm.FuncOp) and op.sym_name.data in kernels:
            _mark_kernel(op, layout)
            op.attributes.update(kernels[op.sym_name.data])
        gmod.body.block.add_op(op)


def _mark_kernel(fn: llvm.FuncOp, layout: SharedLayout) -> None:
    name = fn.sym_name.data
    fn.attributes[KERNEL_ATTR] = UnitAttr()
    fn.attributes[gpu_ext.KERNEL_ATTR] = UnitAttr()  # what gpu.launch_func's verifier asks for
    fn.attributes[SHARED_BYTES_ATTR] = IntegerAttr(layout.kernel_bytes.get(name, 0), i64)
    if name in layout.dynamic_bytes:
        fn.attributes[DYNAMIC_SHARED_ATTR] = IntegerAttr(layout.dynamic_bytes[name], i64)


def _reject_gpu_ops(funcs: list[func.FuncOp]) -> None:
    for fn in funcs:
        for op in fn.walk():
            if op.name.startswith("gpu."):
                raise LoopoptError(f"cannot lower '{op.name}' in a kernel to NVVM", op=op)
