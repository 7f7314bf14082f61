"""hoist-invariants: partly invariant expressions computed once, before their nest."""

from __future__ import annotations

import numpy as np
import polybench_py as pb
import pytest
from equivalence import assert_equivalent, run, transform
from gpu_emulator import emulate
from hypothesis import HealthCheck, given, note, settings
from nestgen import invariant_nests, nests
from upstream import MLIR_OPT, assert_upstream_valid

from loopopt.analysis.invariants import invariants
from loopopt.analysis.nest import functions, loop_name, outermost_loops
from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.frontend.kernel import Kernel
from loopopt.passes.hoist_invariants import hoist_function
from loopopt.runtime.cpu import run_function

GEMM = """
func.func @gemm(%alpha: f32, %C: memref<5x6xf32>, %A: memref<5x7xf32>, %B: memref<7x6xf32>) {
  affine.for %i = 0 to 5 {
    affine.for %k = 0 to 7 {
      affine.for %j = 0 to 6 {
        %c = affine.load %C[%i, %j] : memref<5x6xf32>
        %a = affine.load %A[%i, %k] : memref<5x7xf32>
        %p = arith.mulf %alpha, %a : f32
        %b = affine.load %B[%k, %j] : memref<7x6xf32>
        %q = arith.mulf %p, %b : f32
        %s = arith.addf %c, %q : f32
        affine.store %s, %C[%i, %j] : memref<5x6xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  func.return
}
"""


def _nest(text: str) -> object:
    return outermost_loops(functions(parse_module(text))[0])[0]


def test_gemm_scales_a_once_per_element() -> None:
    (found,) = invariants(_nest(GEMM))  # type: ignore[arg-type]
    assert [loop_name(loop) for loop in found.loops] == ["i", "k"]
    assert found.box == ((0, 4), (0, 6))
    assert (found.values, found.executions, found.arithmetic) == (35, 210, 1)
    assert found.saved() == 210 - 35
    assert found.op.name == "arith.mulf"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # A is written in the nest
        ("affine.store %s, %C[%i, %j]", "affine.store %s, %A[%i, %j]"),
        # A[i, k + 1] leaves A at k = 6: a read the nest never makes
        ("%a = affine.load %A[%i, %k]", "%a = affine.load %A[%i, %k + 1]"),
        # alpha * C[i, j]: C is written
        ("%p = arith.mulf %alpha, %a : f32", "%p = arith.mulf %c, %a : f32"),
    ],
)
def test_what_is_not_an_invariant(old: str, new: str) -> None:
    text = GEMM.replace(old, new)
    if "%A[%i, %j]" in text:
        text = text.replace("%A[%i, %j] : memref<5x6xf32>", "%A[%i, %j] : memref<5x7xf32>")
    assert text != GEMM
    assert invariants(_nest(text)) == []  # type: ignore[arg-type]


def test_integer_division_and_guards_stay() -> None:
    divided = """
func.func @f(%A: memref<8xi32>, %B: memref<8x8xi32>, %d: i32) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i] : memref<8xi32>
      %q = arith.divsi %a, %d : i32
      affine.store %q, %B[%i, %j] : memref<8x8xi32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  func.return
}
"""
    assert invariants(_nest(divided)) == []  # type: ignore[arg-type]
    guarded = GEMM.replace(
        "%p = arith.mulf %alpha, %a : f32\n",
        "%p = affine.if affine_set<(d0) : (d0 - 2 >= 0)>(%j) -> f32 {\n"
        "  %g = arith.mulf %alpha, %a : f32\n  affine.yield %g : f32\n"
        "} else {\n  affine.yield %a : f32\n}\n",
    )
    nest = _nest(guarded)
    assert all(inv.op.name != "arith.mulf" for inv in invariants(nest))  # type: ignore[arg-type]


def test_the_gemm_nest_reads_the_hoisted_buffer(rng: np.random.Generator) -> None:
    arrays = [
        np.float32(1.5),
        rng.standard_normal((5, 6)).astype(np.float32),
        rng.standard_normal((5, 7)).astype(np.float32),
        rng.standard_normal((7, 6)).astype(np.float32),
    ]
    after = assert_equivalent(GEMM, "gemm", arrays, "hoist-invariants", rtol=0)
    assert "memref.alloc() : memref<5x7xf32>" in after
    assert after.count("arith.mulf") == 2  # one in the new nest, one left in the k loop
    assert 'loopopt.name = "i_inv"' in after and 'loopopt.name = "k_inv"' in after
    # each value is computed 6 times (once per j)
    assert "memref.alloc" in transform(GEMM, "hoist-invariants{min-reuse=6}")
    assert "memref.alloc" not in transform(GEMM, "hoist-invariants{min-reuse=7}")


def test_stepped_loops_index_by_iteration(rng: np.random.Generator) -> None:
    """A constant lower bound with step 2 packs the buffer; a varying one keeps every IV."""
    text = """
func.func @f(%A: memref<12x12xf32>, %B: memref<12x12xf32>) {
  affine.for %i = 1 to 12 step 2 {
    affine.for %k = affine_map<(d0) -> (d0)>(%i) to 12 step 3 {
      affine.for %j = 0 to 12 {
        %a = affine.load %A[%i, %k] : memref<12x12xf32>
        %c = arith.constant 0.5 : f32
        %p = arith.mulf %a, %c : f32
        %q = math.sqrt %p : f32
        %b = affine.load %B[%i, %j] : memref<12x12xf32>
        %s = arith.addf %b, %q : f32
        affine.store %s, %B[%i, %j] : memref<12x12xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  func.return
}
"""
    arrays = [np.abs(rng.standard_normal((12, 12))).astype(np.float32) for _ in range(2)]
    after = assert_equivalent(text, "f", arrays, "hoist-invariants", rtol=0)
    assert "memref<6x11xf32>" in after  # i: 1, 3 … 11 (6 values); k: 1 … 11 (kept whole)


def test_polybench_kernels_compute_the_same(rng: np.random.Generator) -> None:
    """Every PolyBench kernel, hoisted, on the CPU: the same results as plain Python (the
    hoisted nest does the same ops on the same values)."""
    hoisted = []
    for name, (function, inputs) in pb.CASES.items():
        args = inputs(rng)
        module = Kernel(function).module(*args)
        if hoist_function(functions(module)[0]):
            hoisted.append(name)
        got = run(str(module), function.__name__, args)
        expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        function(*expected)
        for e, g in zip(expected, got, strict=True):
            if isinstance(e, np.ndarray):
                np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, err_msg=name)
    assert {"gemm", "2mm", "syrk", "syr2k", "symm"} <= set(hoisted), hoisted


def _check_random(nest, hoisted: list[bool]) -> None:  # noqa: ANN001
    text = nest.mlir()
    note(text)
    after = transform(text, "hoist-invariants")
    note(after)
    hoisted.append("memref.alloc" in after)
    arrays = nest.arrays(seed=len(text))
    for e, g in zip(run(text, "nest", arrays), run(after, "nest", arrays), strict=True):
        np.testing.assert_array_equal(g, e)
    if MLIR_OPT is not None and hoisted[-1] and sum(hoisted) % 5 == 1:
        assert_upstream_valid(after)


def test_random_nests_are_hoisted_or_left_and_equivalent() -> None:
    """Nests with a read at only some loops are hoisted (most of them: a scale read again
    too rarely, or a read that may leave A, stays) and compute the same, bit for bit; random
    nests of the other property tests are left or hoisted, and compute the same."""
    hoisted: list[bool] = []
    others: list[bool] = []

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(invariant_nests())
    def check(nest) -> None:  # noqa: ANN001
        _check_random(nest, hoisted)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(nests())
    def check_others(nest) -> None:  # noqa: ANN001
        _check_random(nest, others)

    check()
    check_others()
    assert sum(hoisted) >= len(hoisted) // 2, f"hoisted {sum(hoisted)} of {len(hoisted)}"


def test_options() -> None:
    with pytest.raises(LoopoptError, match="min-reuse must be at least 2, got 1"):
        transform(GEMM, "hoist-invariants{min-reuse=1}")
    with pytest.raises(LoopoptError, match="no function named 'f'"):
        transform(GEMM, "hoist-invariants{func=f}")
    assert "memref.alloc" in transform(GEMM, "hoist-invariants{func=gemm}")


def test_auto_schedule_hoists_where_it_saves_more_than_a_launch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On the GPU, auto-schedule hoists gemm's alpha * A[i, k] at 640³ (262 M multiplies
    saved, more than launch_ops(H100)): a kernel of its own, and the contraction's kernel multiplies
    once per add; at 64³ it does not."""
    for n, hoisted in ((640, True), (64, False)):
        module = Kernel(pb.gemm).module(1.5, 1.2, *[np.zeros((n, n), np.float32)] * 3)
        after = transform(str(module), "auto-schedule{device=sm_90 explain top=0}")
        kernels = after.split("gpu.func @")[1:]
        assert ("_inv" in after) is hoisted
        said = "auto-schedule @gemm: hoisted 'arith.mulf' of loops i, k in nest 'i' (computed"
        assert (said in capsys.readouterr().err) is hoisted
        assert len(kernels) == (3 if hoisted else 2)
        if hoisted:
            biggest = max(kernels, key=len)
            assert biggest.count("arith.mulf") == biggest.count("arith.addf") > 1000


@pytest.mark.parametrize(
    "name",
    [
        "gemm",
        pytest.param("symm", marks=pytest.mark.slow),  # 16 s (its scatter: a triangular AᵀB)
        pytest.param("syrk", marks=pytest.mark.slow),
    ],
)
def test_hoisted_functions_on_the_emulated_gpu(name: str, rng: np.random.Generator) -> None:
    """hoist-invariants, then the default GPU schedule (its matmul recipe, scalar-replace's
    accumulators carried across the barriers of the tile loop), on the GPU emulator in
    reverse thread order: plain Python's results."""
    function, inputs = pb.CASES[name]
    args = [a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in inputs(rng)]
    expected = [a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args]
    function(*expected)
    module = Kernel(function).module(*args)
    after = parse_module(transform(str(module), "hoist-invariants,auto-schedule{device=sm_90}"))
    text = str(after)
    assert "_inv" in text and "gpu.barrier" in text and "iter_args" in text
    emulate(after, reverse=True)
    run_function(after, function.__name__, args)
    for g, e in zip(args, expected, strict=True):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_a_read_of_an_array_written_through_a_view_stays() -> None:
    """A is written through %V, a cast of it made outside the nest: alpha * A[i, k] may see
    the nest's writes, so it is no Invariant."""
    text = GEMM.replace(
        "  affine.for %i = 0 to 5 {\n",
        '  %V = "memref.cast"(%A) : (memref<5x7xf32>) -> memref<5x7xf32>\n'
        "  affine.for %i = 0 to 5 {\n",
        1,
    ).replace(
        "affine.store %s, %C[%i, %j] : memref<5x6xf32>",
        "affine.store %s, %C[%i, %j] : memref<5x6xf32>\n"
        "        affine.store %s, %V[%i, %j] : memref<5x7xf32>",
    )
    assert "memref.cast" in text and "%V[%i, %j]" in text
    assert invariants(_nest(text)) == []  # type: ignore[arg-type]
    assert invariants(_nest(GEMM))  # type: ignore[arg-type]
