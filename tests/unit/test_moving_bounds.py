"""Nests whose bounds a host loop around them moves (nussinov's diagonals after isl's
reschedule): memory reductions inside parallel loops kept in registers before gpu-map-loops
(`registers_in_parallel_loops`), and a block per iteration where a thread each would leave the
GPU idle (`_few_iterations`); constant-trip nests keep their mapping (mvt's column sums: lanes).
Emulated against plain Python."""

from __future__ import annotations

import numpy as np
import polybench_py as pb
from gpu_emulator import emulate
from xdsl.passes import PassPipeline

from loopopt.context import make_context, parse_module, verify_ir
from loopopt.frontend.kernel import Kernel
from loopopt.loops.nest import loop_name, loops_in
from loopopt.passes.auto_schedule import registers_in_parallel_loops
from loopopt.runtime.cpu import run_function
from loopopt.universe import all_passes


def _scheduled(f, args):  # type: ignore[no-untyped-def]
    module = Kernel(f).module(*args)
    PassPipeline.parse_spec(all_passes(), "auto-schedule{device=sm_90}").apply(
        make_context(), module
    )
    verify_ir(module, "scheduled")
    return module


def _mappings(module) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    return [
        {k: v.data for k, v in op.attributes["loopopt.mapping"].data.items()}
        for op in module.walk()
        if op.name == "gpu.func"
    ]


def test_nussinov_gives_each_cell_of_a_diagonal_a_block() -> None:
    n = 45
    rng = np.random.default_rng(4)
    seq = rng.integers(0, 4, n).astype(np.float32)
    table = np.zeros((n, n), np.float32)
    module = _scheduled(pb.nussinov, [seq, table])
    assert {"region": "one block", "threads_x": "k", "block_x": "i"} in _mappings(module)
    expected = table.astype(np.float64)
    pb.nussinov(seq.astype(np.float64), expected)
    emulate(module, reverse=True)
    run_function(module, "nussinov", [seq, table])
    np.testing.assert_array_equal(table, expected)


def test_column_sums_keep_their_lanes() -> None:
    """mvt's x2[i] += A[j, i] * y2[j]: 32 columns side by side per block (coalesced), not a
    block per column: its trip count is constant, so lanes_pay decides."""
    n = 2000
    args = [np.zeros(n, np.float32)] * 4 + [np.zeros((n, n), np.float32)]
    mappings = _mappings(_scheduled(pb.mvt, args))
    assert {"region": "one block", "threads_y": "j", "block_x": "i", "thread_x": "i"} in mappings


HOST = """
func.func @f(%T: memref<16x16xf32>) {
  affine.for %t = 1 to 16 {
    affine.for %i = 0 to affine_map<(d0) -> (d0)>(%t) {
      affine.for %k = 0 to affine_map<(d0) -> (d0)>(%i) {
        %a = affine.load %T[%t, %i] : memref<16x16xf32>
        %b = affine.load %T[%t - 1, %k] : memref<16x16xf32>
        %s = arith.addf %a, %b : f32
        affine.store %s, %T[%t, %i] : memref<16x16xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}
"""


def test_registers_in_parallel_loops_only() -> None:
    """k (inside the parallel i) carries T[t, i] as an iter_arg; the host loop t, around no
    parallel loop, keeps its memory."""
    module = parse_module(HOST)
    fn = next(op for op in module.walk() if op.name == "func.func")
    registers_in_parallel_loops(fn)  # type: ignore[arg-type]
    carried = {loop_name(loop): len(loop.inits) for loop in loops_in(fn)}
    assert carried == {"t": 0, "i": 0, "k": 1}
    rng = np.random.default_rng(5)
    t = rng.standard_normal((16, 16)).astype(np.float32)
    want, got = t.copy(), t.copy()
    run_function(parse_module(HOST), "f", [want])
    run_function(module, "f", [got])
    np.testing.assert_array_equal(got, want)
