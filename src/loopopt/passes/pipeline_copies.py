"""Software-pipeline the copy-in loads of a loop: issue iteration t + 1's loads during iteration t.

    pipeline-copies{loop=k_t func=NAME}
    pipeline-copies{loop=k_t stages=3 async}          (sm_80+: cp.async into a ring of tiles)

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

With `async` (GPU kernels, sm_80+), the copies into shared memory become cp.async copies into
a ring of `stages` (>= 2) tiles per shared buffer, issued stages - 1 tiles ahead; consecutive
aligned elements (copy-vector=4) become 16-byte copies (loops/pipeline_async.py). Without
`async`, `stages` is 2 (one tile in registers). cp.async needs sm_80: every architecture
backend/ptx.py compiles for has it (arch_info refuses the others). A ring larger than the
shared memory any GPU gives a block is refused before anything is changed (a huge `stages`
would otherwise replicate the copies for as long).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from xdsl.context import Context
from xdsl.dialects import affine, builtin
from xdsl.utils.arg_spec import ArgSpec

from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import describe_loop, function_ops, named_loops, trip_count
from loopopt.loops.pipeline import pipeline_loads, prefetchable
from loopopt.loops.pipeline_async import (
    async_copies,
    first_barrier,
    kernel_of,
    pipeline_async,
    ring_bytes,
)
from loopopt.passes import LoopoptPass
from loopopt.schedule.device import DEVICES


@dataclass(frozen=True)
class PipelineCopiesPass(LoopoptPass):
    """Issue the next iteration's copy-in loads one iteration early (register double buffer)."""

    name = "pipeline-copies"
    option_names = {"cp_async": "async"}

    loop: str | None = None
    """The loop to pipeline (by name): the reduction loop around the copies (k_t)."""

    func: str | None = None
    """Only this function (a func.func or a gpu.func kernel)."""

    stages: int = 2
    """Tiles in flight or in use: 2 is double buffering; with `async`, the ring's size."""

    cp_async: bool = False
    """`async`: cp.async copies straight into a ring of shared tiles (sm_80+)."""

    def spelled_out(self) -> tuple[str, ...]:
        """A ring's size is printed even at the default (`stages=2 async`)."""
        return ("stages",) if self.cp_async else ()

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        params = dict(spec.parameters)
        if "async" in params:  # a Python keyword: the field is cp_async
            params["cp_async"] = params.pop(cls.option_names["cp_async"])
        return super().from_spec(ArgSpec(spec.name, params))

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.loop is None:
            raise LoopoptError(f"{self.name}: missing option loop=NAME (the loop to pipeline)")
        if self.stages < 2:
            raise LoopoptError(f"{self.name}: stages={self.stages}: at least 2 are needed")
        if self.stages != 2 and not self.cp_async:
            raise LoopoptError(
                f"{self.name}: stages={self.stages} needs async (registers hold one tile)"
            )
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
                if self.cp_async:
                    self._pipeline_async(loop)
                    continue
                loads = prefetchable(loop)
                if not loads:
                    raise LoopoptError(
                        f"{self.name}: no load of a read-only array directly in loop "
                        f"'{describe_loop(loop)}' (unroll the copy loops first: "
                        "loop-unroll{unroll-full loop=A_copy_in})",
                        op=loop,
                    )
                pipeline_loads(loop, loads)

    def _pipeline_async(self, loop: affine.ForOp) -> None:
        copies = async_copies(loop)
        if not copies:
            if kernel_of(loop) is None:
                why = "it is not in a GPU kernel (map it with gpu-map-loops first)"
            elif first_barrier(loop) is None:
                why = "it has no gpu.barrier between its copies and its compute"
            else:
                why = (
                    "no load of a read-only global array stored into a shared buffer before "
                    "its first barrier (promote{memory-space=shared}, unroll the copy loops)"
                )
            raise LoopoptError(
                f"{self.name}{{async}}: loop '{describe_loop(loop)}': {why}", op=loop
            )
        largest = max(device.smem_per_block_optin for device in DEVICES.values())
        needed = ring_bytes(copies, self.stages)
        if needed > largest:
            raise LoopoptError(
                f"{self.name}{{async}}: rings of {self.stages} stages under loop "
                f"'{describe_loop(loop)}' need {needed} bytes of shared memory; no GPU gives a "
                f"block more than {largest}",
                op=loop,
            )
        pipeline_async(loop, copies, self.stages)
