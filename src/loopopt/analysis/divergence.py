"""Which values and branches of a GPU kernel differ between the threads of one block.

    %tx = gpu.thread_id x                       thread-dependent: %tx, %i, the affine.if
    %bx = gpu.block_id x                        uniform in a block: %bx, %j_t, the k_t loop
    %j_t = affine.apply (d0 * 16)(%bx)
    %i = affine.apply (d0 + d1)(%j_t, %tx)
    affine.for %k_t = 0 to 64 step 8 {          a gpu.barrier here is reached by every thread
      affine.if (%i < 100) { ... }              a gpu.barrier in here would not be
      gpu.barrier }

A value is thread-dependent when it is a thread id (gpu.thread_id, lane_id, global_id), is
computed from a thread-dependent value (a load from a thread-dependent address included), comes
from an atomic or a call, or is the IV (or a result) of a loop with thread-dependent operands.
A load from a block-uniform address reads the same value in every thread: the barriers order
the block's writes before it (every dependence between threads gets one, loops/gpu_barrier),
and no other block writes what it reads (mapped loops carry no dependence). Block ids and
dimensions, kernel arguments and constants are uniform. A branch (affine.if, scf.if) or loop
(affine.for, scf.for, affine.parallel, scf.parallel) is thread-dependent when an operand is;
scf.while always is.
A gpu.barrier is correct only where no enclosing op is thread-dependent: every thread of the
block reaches it the same number of times.
"""

from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.ir import Block, Operation, SSAValue

from loopopt.diagnostics import LoopoptError

THREAD_IDS = frozenset({"gpu.thread_id", "gpu.lane_id", "gpu.global_id", "gpu.subgroup_id"})
OPAQUE = frozenset({"memref.atomic_rmw", "func.call", "llvm.call"})
"""Ops whose results may differ between threads whatever their operands."""
BRANCHES = frozenset(
    {"affine.if", "scf.if", "affine.for", "scf.for", "affine.parallel", "scf.parallel"}
)
ALWAYS_DIVERGENT = frozenset({"scf.while", "cf.cond_br", "cf.switch"})


class Divergence:
    """The thread-dependent values and control ops of one kernel."""

    def __init__(self, kernel: Operation):
        self.kernel = kernel
        self.values: set[SSAValue] = set()
        for region in kernel.regions:
            for block in region.blocks:
                self._visit(block)

    def _visit(self, block: Block) -> None:
        for op in block.ops:
            varying = op.name in THREAD_IDS or op.name in OPAQUE
            varying = varying or any(v in self.values for v in op.operands)
            for region in op.regions:
                for inner in region.blocks:
                    if self.is_divergent_control(op):
                        self.values.update(inner.args)
                    self._visit(inner)
            if varying or (op.results and op.regions and self._yields_divergent(op)):
                self.values.update(op.results)

    def _yields_divergent(self, op: Operation) -> bool:
        return any(v in self.values for inner in op.walk() for v in inner.operands)

    def is_divergent(self, value: SSAValue) -> bool:
        return value in self.values

    def is_divergent_control(self, op: Operation) -> bool:
        """`op` is a branch or loop whose threads may take different paths."""
        if op.name in ALWAYS_DIVERGENT:
            return True
        return op.name in BRANCHES and any(v in self.values for v in op.operands)

    def divergent_parent(self, op: Operation | Block) -> Operation | None:
        """The innermost op enclosing `op` (up to the kernel) whose control is
        thread-dependent, or None when every thread of the block reaches `op` alike."""
        parent = op.parent_op()
        while parent is not None and parent is not self.kernel:
            if self.is_divergent_control(parent):
                return parent
            parent = parent.parent_op()
        return None


def misplaced_barriers(kernel: Operation) -> list[tuple[Operation, Operation]]:
    """(barrier, thread-dependent op around it) for each gpu.barrier of `kernel` that some
    threads of a block might not reach."""
    divergence = Divergence(kernel)
    found: list[tuple[Operation, Operation]] = []
    for op in kernel.walk():
        if isinstance(op, gpu.BarrierOp):
            parent = divergence.divergent_parent(op)
            if parent is not None:
                found.append((op, parent))
    return found


def check_barriers(kernel: Operation, pass_name: str) -> None:
    """A diagnostic at the first gpu.barrier under a thread-dependent branch or loop."""
    for barrier, parent in misplaced_barriers(kernel):
        raise LoopoptError(
            f"{pass_name}: gpu.barrier under a thread-dependent {parent.name}: not every "
            "thread of the block reaches it",
            op=barrier,
        )
