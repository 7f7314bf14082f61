"""Does the mapped IR do what a schedule says it does? The check of the model against the passes.

    expected = promised(summary, schedule)     # Promise(threads=(16, 16, 1), shared_bytes=33280)
    apply schedule.passes to the nest          # loop passes, gpu-map-loops, ...
    check_mapped(module, func, expected)       # LoopoptError when a kernel differs

A schedule describes the mapping its passes produce (block shape, shared buffers) so that the
cost model never reads the passes. Where the model computes a fact with the pass's own function
(the thread mapping's rank, promote's buffer shape, the lowering's placement of buffers, the
tile loops' names), the two agree by construction; this check covers the rest: the block shape
`gpu-map-loops` launches and the shared memory of the kernels, compared on the IR itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import builtin, gpu
from xdsl.dialects.builtin import MemRefType

from loopopt.diagnostics import LoopoptError
from loopopt.loops.gpu_workgroup import workgroup_buffers
from loopopt.lowering.gpu_shared import slot_bytes
from loopopt.lowering.llvm_common import element_bytes
from loopopt.schedule.resources import shared_bytes
from loopopt.schedule.types import NestSummary, Schedule


@dataclass(frozen=True)
class Promise:
    """What a schedule says its kernels are: the block shape and shared bytes per block."""

    threads: tuple[int, int, int]
    shared_bytes: int


@dataclass(frozen=True)
class Mapped:
    """What a kernel of the mapped IR is."""

    kernel: str
    threads: tuple[int, int, int]
    shared_bytes: int


def promised(summary: NestSummary, schedule: Schedule) -> Promise:
    return Promise(schedule.threads, shared_bytes(summary, schedule))


def mapped_kernels(module: builtin.ModuleOp) -> list[Mapped]:
    """Each kernel's block shape (its known_block_size) and shared bytes (its shared buffers,
    placed as the lowering places them)."""
    found: list[Mapped] = []
    for op in module.walk():
        if not isinstance(op, gpu.FuncOp) or op.known_block_size is None:
            continue
        sizes = (*op.known_block_size.get_values(), 1, 1, 1)[:3]
        total = 0
        for buffer in workgroup_buffers(op):
            t = buffer.type
            assert isinstance(t, MemRefType)
            count = 1
            for size in t.get_shape():
                count *= size
            total += slot_bytes(count * element_bytes(t.element_type, op))
        found.append(Mapped(op.sym_name.data, (sizes[0], sizes[1], sizes[2]), total))
    return found


def check_mapped(module: builtin.ModuleOp, schedule: Schedule, promise: Promise) -> None:
    """A LoopoptError unless every kernel of `module` has the promised block shape and shared
    bytes (a schedule's pipeline maps its nest to one kernel)."""
    kernels = mapped_kernels(module)
    if not kernels:
        raise LoopoptError(f"schedule '{schedule.key()}': its pipeline made no kernel")
    for k in kernels:
        if (k.threads, k.shared_bytes) != (promise.threads, promise.shared_bytes):
            raise LoopoptError(
                f"schedule '{schedule.key()}' says blocks of {_shape(promise.threads)} threads "
                f"and {promise.shared_bytes} bytes of shared memory; kernel @{k.kernel} has "
                f"{_shape(k.threads)} and {k.shared_bytes}"
            )


def _shape(threads: tuple[int, ...]) -> str:
    return "x".join(map(str, threads))
