"""Software-pipeline the copy-in loads of a loop: issue iteration t + 1's loads during iteration t.

    pipeline-copies{loop=k_t func=NAME}

Before:  affine.for %k_t = 0 to 4096 step 8 {
           %v = affine.load %A[%r, %k_t + %c]   affine.store %v, %A_shared[%c, %r]
           gpu.barrier   <compute>   gpu.barrier }
After:   %v0 = affine.load %A[%r, %c]
         affine.for %k_t = 0 to 4096 step 8 iter_args(%v = %v0) {
           affine.store %v, %A_shared[%c, %r]
           %v1 = affine.load %A[%r, min(%k_t + 8, 4088) + %c]
           gpu.barrier   <compute>   gpu.barrier   affine.yield %v1 }

The SGEMM main loop's register double buffering: the global loads of the next tiles are in
flight while the block computes on the current ones in shared memory. Candidates (see
loops/pipeline): loads directly in the loop body feeding only stores, from arrays nothing in
the function writes. Run it after `gpu-map-loops` and after unrolling the copy loops
(`loop-unroll{unroll-full loop=A_copy_in}`). A named loop without candidates, or without a
constant trip count of at least one, is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin

from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import describe_loop, function_ops, named_loops, trip_count
from loopopt.loops.pipeline import pipeline_loads, prefetchable
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class PipelineCopiesPass(LoopoptPass):
    """Issue the next iteration's copy-in loads one iteration early (register double buffer)."""

    name = "pipeline-copies"

    loop: str | None = None
    """The loop to pipeline (by name): the reduction loop around the copies (k_t)."""

    func: str | None = None
    """Only this function (a func.func or a gpu.func kernel)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.loop is None:
            raise LoopoptError(f"{self.name}: missing option loop=NAME (the loop to pipeline)")
        roots = function_ops(op, self.func) if self.func else [op]
        for root in roots:
            for loop in named_loops(root, self.loop, self.name):
                trips = trip_count(loop)
                if trips is None or trips < 1:
                    raise LoopoptError(
                        f"{self.name}: loop '{describe_loop(loop)}' needs a constant trip count "
                        "of at least 1 (peel the partial tiles: loop-peel{full-tiles})",
                        op=loop,
                    )
                loads = prefetchable(loop)
                if not loads:
                    raise LoopoptError(
                        f"{self.name}: no load of a read-only array directly in loop "
                        f"'{describe_loop(loop)}' (unroll the copy loops first: "
                        "loop-unroll{unroll-full loop=A_copy_in})",
                        op=loop,
                    )
                pipeline_loads(loop, loads)
