"""Compute partly invariant expressions once, before their nest (`hoist-invariants`).

    hoist-invariants{min-reuse=2 func=gemm}

Before:  affine.for %i = 0 to 4 {
           affine.for %k = 0 to 5 {
             affine.for %j = 0 to 6 {
               %p = arith.mulf %alpha, A[i, k]          (the same value for every j)
               C[i, j] += %p * B[k, j] } } }
After:   %p_inv = memref.alloc() : memref<4x5xf32>
         affine.for %i_inv = 0 to 4 { affine.for %k_inv = 0 to 5 {
           p_inv[i_inv, k_inv] = arith.mulf %alpha, A[i_inv, k_inv] } }
         affine.for %i … %k … %j { C[i, j] += p_inv[i, k] * B[k, j] }
         memref.dealloc %p_inv

In each top-level nest, every maximal partly invariant expression (analysis/invariants.py:
arithmetic over loads of arrays the nest does not write, its value a function of some of the
loops around it) that the nest computes at least `min-reuse` times per distinct value on
average is computed once per value by a nest of its own loops before the nest, into a buffer
the nest then reads (loops/hoist.py). Exact: the same ops on the same values. PolyBench's gemm,
2mm and syrk multiply `alpha * A[i, k]` inside the j loop: hoisted, their k loop is a plain
multiply-add (one instruction per iteration instead of two: the GPU kernels are issue-bound).

auto-schedule does this on the GPU where it saves at least `launch_ops(device)` arithmetic
ops (more than the launch of the new nest costs) and each value is computed AUTO_MIN_REUSE
times. A nest with nothing to hoist is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin
from xdsl.ir import Operation

from loopopt.analysis.invariants import Invariant, invariants
from loopopt.analysis.nest import describe_loop, enclosing_loops, functions, outermost_loops
from loopopt.diagnostics import LoopoptError
from loopopt.loops.hoist import hoist
from loopopt.passes import LoopoptPass
from loopopt.schedule.types import Device


def launch_ops(device: Device) -> int:
    """Arithmetic ops a hoist must save for auto-schedule to make it: what `device` runs in the
    time a launch of the new nest costs (an H200: 132 SMs x 128 lanes x 1.98 GHz x 3 us, 1e8)."""
    return int(device.sms * device.fp32_lanes_per_sm * device.clock_ghz * 1e3 * device.launch_us)


AUTO_MIN_REUSE = 64
"""Computations per value for auto-schedule to hoist: each hoisted value costs a write and a
read of 4-8 bytes (about 2-4 ps of an H200's 4.8 TB/s) where it saves `reuse` x its ops
(about 0.03 ps each at 33 T simple ops/s): below some 64, the traffic costs more."""


def hoist_function(fn: Operation, min_reuse: int = 2, min_saved: int = 0) -> list[str]:
    """Hoist the Invariants of `fn`'s top-level nests that are computed at least `min_reuse`
    times per value and save at least `min_saved` ops; one line on each that was hoisted."""
    made: list[str] = []
    for nest in outermost_loops(fn):
        if enclosing_loops(nest):
            continue
        while (chosen := _next(nest, min_reuse, min_saved)) is not None:
            loops = ", ".join(describe_loop(loop) for loop in chosen.loops)
            what = f"'{chosen.op.name}' of loops {loops} in nest '{describe_loop(nest)}'"
            buffer = hoist(chosen, nest)
            reuse = chosen.executions // max(1, chosen.values)
            made.append(f"{what} (computed {reuse}x per value) into %{buffer.name_hint}")
    return made


def _next(nest: affine.ForOp, min_reuse: int, min_saved: int) -> Invariant | None:
    for invariant in invariants(nest):
        if invariant.executions >= min_reuse * invariant.values and invariant.saved() >= min_saved:
            return invariant
    return None


@dataclass(frozen=True)
class HoistInvariantsPass(LoopoptPass):
    """Compute each partly invariant expression once per value, before its nest."""

    name = "hoist-invariants"
    option_order = ("min_reuse",)

    min_reuse: int = 2
    """Hoist an expression computed at least this many times per distinct value."""

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.min_reuse < 2:
            raise LoopoptError(f"{self.name}: min-reuse must be at least 2, got {self.min_reuse}")
        for fn in functions(op, self.func):
            hoist_function(fn, self.min_reuse)
