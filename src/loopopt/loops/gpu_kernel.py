"""Turning an outlined loop nest into the body of a GPU kernel.

    gpu.func @matmul_k0(...) kernel {              gpu.func @matmul_k0(...) kernel {
      affine.for %i_t … { affine.for %j_t … {        %bx = gpu.block_id x  … %tx = gpu.thread_id x
        affine.for %k_t … {                          %A_shared = memref.alloca() : <…, 3>
          %A_shared = memref.alloca() …      →       %i_t = …(%by)   %j_t = …(%bx)
          <copy loops>                               affine.for %k_t … {
          affine.for %i … { affine.for %j … {          <copies spread over threads>
            … } } } } }                                 gpu.barrier
      gpu.return                                        affine.if (i, j in range) { … }
    }                                                   gpu.barrier } gpu.return }

Code of the nest outside the thread-mapped loops ("block level") runs on every thread of a
block. It may hold loops (they stay sequential, the same for every thread), index arithmetic,
loads, workgroup buffers (hoisted to the kernel entry), copy loops of workgroup buffers (spread
over the threads: loops/gpu_copy) and stores (guarded to run on thread 0 only). Refused with a
diagnostic: buffers outside workgroup memory at block level (each thread would have its own),
and other ops writing memory there. Then barriers are placed (loops/gpu_barrier) and checked
(analysis/divergence).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import affine, gpu, memref
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, StringAttr, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from loopopt.analysis.divergence import check_barriers
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import COPY, MAPPING
from loopopt.loops.affine_maps import BoundBuilder
from loopopt.loops.gpu_barrier import (
    Requirement,
    dependence_requirements,
    place_barriers,
    shared_requirements,
)
from loopopt.loops.gpu_copy import spread_copy
from loopopt.loops.gpu_map import (
    KernelIds,
    MappedDim,
    affine_if,
    arrange_warps,
    group_blocks,
    insert_ids,
    is_shared,
    map_point_loop,
    map_tile_loop,
    warp_lanes_fit,
)
from loopopt.loops.gpu_plan import AXES
from loopopt.loops.nest import describe_loop, enclosing_loops
from loopopt.loops.unroll import unroll_full

BLOCK_LEVEL_WRITES = frozenset(
    {
        "func.call",
        "memref.copy",
        "memref.atomic_rmw",
        "memref.dealloc",
        "affine.vector_store",
        "llvm.store",
        "llvm.call",
    }
)
"""Ops that write memory and cannot run at block level (stores are guarded instead)."""


@dataclass
class BlockLevel:
    """What the block-level code of a nest holds that needs rewriting."""

    copies: list[affine.ForOp] = field(default_factory=list[affine.ForOp])
    stores: list[Operation] = field(default_factory=list[Operation])
    shared: list[memref.AllocaOp] = field(default_factory=list[memref.AllocaOp])


def _buffer_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a buffer"


def copy_buffer(nest: affine.ForOp) -> SSAValue | None:
    """The local buffer a copy nest fills or drains (a memref.alloca's result)."""
    for op in nest.walk():
        if isinstance(op, affine.LoadOp | affine.StoreOp):
            owner = op.memref.owner
            if isinstance(owner, memref.AllocaOp | memref.AllocOp):
                return op.memref
    return None


def scan_block_level(root: Operation, thread_root: Operation, pass_name: str) -> BlockLevel:
    """Sort the block-level ops of `root` (all but `thread_root`'s subtree); diagnostics for
    what cannot run there, and for workgroup buffers inside `thread_root`."""
    level = BlockLevel()
    _scan(root, thread_root, level, pass_name)
    for op in thread_root.walk():
        if isinstance(op, memref.AllocaOp | memref.AllocOp) and is_shared(op.results[0].type):
            raise LoopoptError(
                f"{pass_name}: workgroup buffer {_buffer_name(op.results[0])} is allocated "
                f"inside the thread-mapped loop '{describe_loop(thread_root)}', where every "
                "thread would fill it; promote it under a loop outside the thread-mapped loops",
                op=op,
            )
    return level


def _scan(op: Operation, thread_root: Operation, level: BlockLevel, pass_name: str) -> None:
    if op is thread_root:
        return
    if isinstance(op, affine.ForOp) and COPY in op.attributes:
        buffer = copy_buffer(op)
        if buffer is None or not is_shared(buffer.type):
            raise LoopoptError(
                f"{pass_name}: copy loop '{describe_loop(op)}' runs on all threads of a block "
                "but its buffer is not in workgroup memory; promote with memory-space=shared",
                op=op,
            )
        level.copies.append(op)
        return
    if isinstance(op, memref.AllocaOp | memref.AllocOp):
        if isinstance(op, memref.AllocaOp) and is_shared(op.memref.type) and not op.operands:
            level.shared.append(op)
            return
        raise LoopoptError(
            f"{pass_name}: buffer {_buffer_name(op.results[0])} is allocated outside the "
            "thread-mapped loops, where each thread would get its own copy; promote it with "
            "memory-space=shared (a static workgroup buffer) or under a thread-mapped loop",
            op=op,
        )
    if isinstance(op, affine.StoreOp | memref.StoreOp):
        level.stores.append(op)
        return
    if op.name in BLOCK_LEVEL_WRITES:
        raise LoopoptError(
            f"{pass_name}: {op.name} outside the thread-mapped loops would run on every "
            "thread of the block",
            op=op,
        )
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                _scan(inner, thread_root, level, pass_name)


def one_thread(store: Operation, ids: KernelIds) -> None:
    """Run `store` on thread (0, 0, 0) of the block only."""
    if not ids.threads:
        return
    builder = BoundBuilder()
    guard_op(store, builder, [], [builder.dim(t) for t in ids.threads.values()])


def guard_op(
    op: Operation, builder: BoundBuilder, nonnegative: list[AffineExpr], zero: list[AffineExpr]
) -> None:
    """Put `op` under an `affine.if` (each of `nonnegative` >= 0, each of `zero` == 0, over
    `builder`'s values), marked `one thread`."""
    guard = affine_if(builder, nonnegative, zero)
    guard.attributes[MAPPING] = StringAttr("one thread")
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(guard, op)
    op.detach()
    then = guard.then_region.block
    assert then.last_op is not None
    then.insert_op_before(op, then.last_op)


def hoist_to_entry(kernel: gpu.FuncOp, ops: list[memref.AllocaOp]) -> None:
    """Move the workgroup buffers to the kernel entry, after the block and thread ids."""
    entry = kernel.body.block
    anchor = next(op for op in entry.ops if not isinstance(op, gpu.BlockIdOp | gpu.ThreadIdOp))
    for op in ops:
        op.detach()
        entry.insert_op_before(op, anchor)


def mark_sequential(kernel: gpu.FuncOp) -> None:
    """Mark the loops that stayed loops (not mapped, not copies) `sequential`."""
    for op in kernel.walk():
        unmarked = MAPPING not in op.attributes and COPY not in op.attributes
        if isinstance(op, affine.ForOp) and unmarked:
            op.attributes[MAPPING] = StringAttr("sequential")


def map_kernel(
    kernel: gpu.FuncOp,
    root: affine.ForOp,
    dims: list[MappedDim],
    pass_name: str,
    copy_vector: int = 1,
    requirements: list[Requirement] | None = None,
    block_group: int = 1,
    warp_lanes: Sequence[int] = (),
) -> None:
    """Map the outlined nest `root` of `kernel` onto blocks and threads (see the docstring).
    `requirements`: the nest's `dependence_requirements`, taken before it was outlined, where
    the loops around it bound its parameters (default: taken here, without them).
    `block_group`: grouped block order (gpu_map.group_blocks). `warp_lanes`: warp tiles
    (gpu_map.arrange_warps) for the point loops, where the kernel's block has x and y threads
    that they fit (`warp_lanes_fit`; other kernels keep the plain order)."""
    depth = {op: len(enclosing_loops(op)) for d in dims for op in (d.tile, d.point)}
    points = [d.point for d in dims]
    thread_root = min(points, key=lambda p: depth[p])
    level = scan_block_level(root, thread_root, pass_name)
    if requirements is None:
        requirements = dependence_requirements(root, points)
    summary: dict[str, Attribute] = {}
    for dim in sorted(dims, key=lambda d: d.axis):
        summary[f"block_{dim.axis}"] = StringAttr(describe_loop(dim.tile))
        summary[f"thread_{dim.axis}"] = StringAttr(describe_loop(dim.point))
    ids = insert_ids(kernel.body.block, dims)
    group = group_blocks(kernel.body.block, dims, ids, block_group)
    if group > 1:
        summary["block_group"] = StringAttr(f"{group} rows")
    for dim in sorted(dims, key=lambda d: depth[d.tile]):
        map_tile_loop(dim, ids)
    point_ids = ids
    block = [ids.sizes.get(axis, 1) for axis in AXES]
    if warp_lanes and len(ids.threads) == 2 and warp_lanes_fit(warp_lanes, block) is None:
        point_ids = arrange_warps(kernel.body.block, ids, warp_lanes)
        summary["warp_lanes"] = StringAttr(f"{warp_lanes[0]}x{warp_lanes[1]}")
    for dim in sorted(dims, key=lambda d: depth[d.point]):
        map_point_loop(dim, point_ids)
    lanes = [spread_copy(nest, ids, pass_name, copy_vector) for nest in level.copies]
    for store in level.stores:
        one_thread(store, ids)
    requirements += shared_requirements(kernel)
    hoist_to_entry(kernel, level.shared)
    mark_sequential(kernel)
    place_barriers(kernel, requirements, pass_name)
    check_barriers(kernel, pass_name)
    for loop in lanes:
        if loop is not None:
            unroll_full(loop, pass_name)
    kernel.attributes[MAPPING] = DictionaryAttr(summary)
    sizes = [ids.sizes.get(axis, 1) for axis in AXES]
    kernel.known_block_size = DenseArrayBase.from_list(i32, sizes)
