"""array-snapshot: which reads see no write of their nest (analysis/snapshot.py), the copy
(loops/snapshot.py), execution equivalence on the CPU, and trmm's triangular contraction
through the padded matmul recipe (its k = i + 1 to m lower bound) on the GPU emulator."""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import assert_equivalent, transform
from gpu_emulator import emulate
from xdsl.dialects import affine, func, memref
from xdsl.passes import PassPipeline

from loopopt.analysis.access import memref_name
from loopopt.analysis.nest import functions, outermost_loops
from loopopt.analysis.parallel import is_parallel
from loopopt.analysis.snapshot import freeing, refusal, unflowed
from loopopt.context import make_context, parse_module, verify_ir
from loopopt.runtime.cpu import run_function
from loopopt.schedule import recipes
from loopopt.schedule.summary import summarize_module
from loopopt.universe import all_passes


def trmm_mlir(m: int, n: int) -> str:
    """PolyBench trmm: B = alpha Aᵀ B with A unit lower triangular, in place."""
    return f"""
func.func @trmm(%alpha: f64, %A: memref<{m}x{m}xf64>, %B: memref<{m}x{n}xf64>) {{
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = affine_map<(d0) -> (d0 + 1)>(%i) to {m} {{
        %b = affine.load %B[%i, %j] : memref<{m}x{n}xf64>
        %a = affine.load %A[%k, %i] : memref<{m}x{m}xf64>
        %s = affine.load %B[%k, %j] : memref<{m}x{n}xf64>
        %p = arith.mulf %a, %s : f64
        %t = arith.addf %b, %p : f64
        affine.store %t, %B[%i, %j] : memref<{m}x{n}xf64>
      }} {{loopopt.name = "k"}}
      %v = affine.load %B[%i, %j] : memref<{m}x{n}xf64>
      %w = arith.mulf %alpha, %v : f64
      affine.store %w, %B[%i, %j] : memref<{m}x{n}xf64>
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  func.return
}}
"""


def triangle_mlir(m: int, n: int) -> str:
    """trmm's k nest after the snapshot and distribution: B[i, j] += A[k, i] S[k, j], k > i."""
    return f"""
func.func @tri(%A: memref<{m}x{m}xf32>, %S: memref<{m}x{n}xf32>, %B: memref<{m}x{n}xf32>) {{
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = affine_map<(d0) -> (d0 + 1)>(%i) to {m} {{
        %b = affine.load %B[%i, %j] : memref<{m}x{n}xf32>
        %a = affine.load %A[%k, %i] : memref<{m}x{m}xf32>
        %s = affine.load %S[%k, %j] : memref<{m}x{n}xf32>
        %p = arith.mulf %a, %s : f32
        %t = arith.addf %b, %p : f32
        affine.store %t, %B[%i, %j] : memref<{m}x{n}xf32>
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  func.return
}}
"""


PREFIX = """
func.func @prefix(%A: memref<40xf64>, %B: memref<40xf64>) {
  affine.for %i = 1 to 40 {
    %a = affine.load %A[%i - 1] : memref<40xf64>
    %b = affine.load %B[%i] : memref<40xf64>
    %s = arith.addf %a, %b : f64
    affine.store %s, %A[%i] : memref<40xf64>
  } {loopopt.name = "i"}
  func.return
}
"""
"""A running sum: A[i - 1] reads what the previous iteration wrote (except at i = 1, which
is enough to keep it from reading a snapshot)."""


def _nest(text: str) -> affine.ForOp:
    (fn,) = functions(parse_module(text))
    (nest,) = outermost_loops(fn)
    return nest


def _rendered(reads: dict) -> dict[str, list[str]]:
    return {memref_name(a): [r.render() for r in rs] for a, rs in reads.items()}


def test_only_reads_that_no_flow_dependence_reaches_are_unflowed() -> None:
    """trmm: B[k, j] (k > i) reads rows no iteration has written yet; B[i, j] (the
    accumulator, the epilogue) read what the nest wrote; A is not written at all."""
    nest = _nest(trmm_mlir(6, 8))
    assert _rendered(unflowed(nest)) == {"B": ["B[k, j]"]}
    assert _rendered(freeing(nest)) == {"B": ["B[k, j]"]}
    fn = nest.parent_op()
    assert isinstance(fn, func.FuncOp)
    assert refusal(nest, fn.args[2]) is None


def test_reads_that_see_in_nest_writes_are_refused_with_the_dependence() -> None:
    nest = _nest(PREFIX)
    fn = nest.parent_op()
    assert isinstance(fn, func.FuncOp)
    A, B = fn.args
    assert unflowed(nest) == {}
    assert refusal(nest, A) == (
        "every read of 'A' may see a value written in the nest: A[i] → A[i - 1] (RAW)"
    )
    assert refusal(nest, B) == "'B' is not written there"


def test_a_snapshot_that_frees_no_loop_is_not_made() -> None:
    """A[i] = B[i] + A[i + 1]: i carries only the anti dependence from the unflowed A[i + 1],
    so it is freed. A[i] = A[i - 1] + A[i + 1]: A[i + 1] is still unflowed, but i also
    carries the flow dependence into A[i - 1]: no snapshot."""
    freed = PREFIX.replace("%B[%i] : memref<40xf64>", "%A[%i + 1] : memref<40xf64>").replace(
        "%A[%i - 1] : memref<40xf64>", "%B[%i] : memref<40xf64>"
    )
    assert _rendered(freeing(_nest(freed))) == {"A": ["A[i + 1]"]}
    kept = PREFIX.replace("%B[%i] : memref<40xf64>", "%A[%i + 1] : memref<40xf64>")
    nest = _nest(kept)
    assert _rendered(unflowed(nest)) == {"A": ["A[i + 1]"]}
    assert freeing(nest) == {}


def test_the_snapshot_makes_trmms_outer_loops_parallel() -> None:
    module = parse_module(trmm_mlir(6, 8))
    PassPipeline.parse_spec(all_passes(), "array-snapshot").apply(make_context(), module)
    verify_ir(module, "snapshot")
    (fn,) = functions(module)
    allocs = [op for op in fn.walk() if isinstance(op, memref.AllocOp)]
    assert [str(op.memref.type) for op in allocs] == ["memref<6x8xf64>"]
    i = [op for op in outermost_loops(fn) if op.attributes["loopopt.name"].data == "i"]  # type: ignore[union-attr]
    assert len(i) == 1 and is_parallel(i[0])
    j = i[0].body.block.first_op
    assert isinstance(j, affine.ForOp) and is_parallel(j)


@pytest.mark.parametrize(
    "pipeline",
    [
        "array-snapshot",
        "array-snapshot{array=B}",
        "array-snapshot,loop-distribute{loop=j},loop-distribute{loop=i}",
    ],
)
@pytest.mark.parametrize("sizes", [(7, 5), (45, 37)])
def test_snapshotted_trmm_computes_the_same_on_the_cpu(
    pipeline: str, sizes: tuple[int, int], rng: np.random.Generator
) -> None:
    m, n = sizes
    arrays = [1.5, rng.standard_normal((m, m)), rng.standard_normal((m, n))]
    assert_equivalent(trmm_mlir(m, n), "trmm", arrays, pipeline, rtol=1e-12)  # type: ignore[arg-type]


def test_the_padded_recipe_runs_the_triangle_on_the_cpu(rng: np.random.Generator) -> None:
    """The loop-level part of the padded matmul recipe (tiles, pads of k = i + 1 to m and of
    its tile loop, shared tiles) at sizes no tile divides."""
    m, n = 45, 37
    text = triangle_mlir(m, n)
    summary = summarize_module(parse_module(text, "tri"))
    pipeline = recipes.matmul(summary, 32, 32, 8, 4, 2, pipelined=False, padded=True).pipeline
    loop_level = pipeline.split(",gpu-map-loops")[0]
    assert "pad-tiles{loops=i_t,j_t,k_t," in loop_level
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((m, m), (m, n), (m, n))]
    assert_equivalent(text, "tri", arrays, loop_level, rtol=1e-4)


@pytest.mark.parametrize("sizes", [(45, 37), (7, 5)])
def test_emulated_padded_triangle(sizes: tuple[int, int]) -> None:
    """Mapped onto thread blocks (scalar-replace left out, as in test_pad)."""
    m, n = sizes
    text = triangle_mlir(m, n)
    summary = summarize_module(parse_module(text, "tri"))
    schedule = recipes.matmul(summary, 32, 32, 8, 4, 4, pipelined=False, padded=True)
    module = parse_module(
        transform(text, schedule.pipeline.replace(",scalar-replace{loop=k_t}", ""))
    )
    rng = np.random.default_rng(4)
    a, s, b = (rng.standard_normal(x).astype(np.float32) for x in ((m, m), (m, n), (m, n)))
    want = b.astype(np.float64) + np.tril(a.astype(np.float64), -1).T @ s.astype(np.float64)
    emulate(module, reverse=True)
    run_function(module, "tri", [a, s, b])
    assert np.abs(b - want).max() < 1e-4
