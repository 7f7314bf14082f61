"""pad-tiles (loops/pad.py) and what consumes its padded accesses (promote, pipelining, the
padded matmul recipe): execution equivalence on the CPU at sizes the tiles do not divide, the
guards it keeps or proves needless, refusals, and padded SGEMM on the GPU emulator."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from equivalence import assert_equivalent, transform
from gpu_emulator import emulate
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import affine

from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import loop_name
from loopopt.loops.padded_access import fill_load, padded_load, padded_store
from loopopt.runtime.cpu import run_function
from loopopt.schedule import recipes
from loopopt.schedule.summary import summarize_module

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import workloads  # noqa: E402

TILE = "loop-tile{tile-sizes=16,16,8},loop-tile{loops=i,j tile-sizes=4,2}"
PAD = "pad-tiles{loops=i_t2,j_t2,i,j,k}"


def _sgemm_inputs(m: int, n: int, k: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return [a, b, rng.standard_normal((m, n)).astype(np.float32)]


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 20), st.integers(0, 99))
def test_padded_sgemm_is_equivalent(m: int, n: int, k: int, seed: int) -> None:
    """Padding (then promoting the zero-filled tiles) keeps C += A B at any size, C nonzero."""
    text = workloads.sgemm_mlir((m, n, k))
    arrays = _sgemm_inputs(m, n, k, seed)
    assert_equivalent(text, "sgemm", arrays, f"{TILE},{PAD}")
    promoted = f"{TILE},{PAD},promote{{arrays=A,B loop=k_t}}"
    assert_equivalent(text, "sgemm", arrays, promoted)


def _guards(text: str) -> dict[str, list[str]]:
    """Array name -> the integer sets guarding its padded loads/stores."""
    found: dict[str, list[str]] = {}
    for op in parse_module(text).walk():
        access = padded_load(op) or padded_store(op)
        if access is not None:
            assert isinstance(op, affine.IfOp)
            name = access.memref.name_hint or "?"
            found.setdefault(name, []).append(str(op.condition.data))
    return found


def test_accumulation_past_k_needs_no_k_guard() -> None:
    """C's load and store keep C's bounds only (0 * 0 is added past k); A and B get their
    bounds; with k dividing its tile, B is only guarded past j's bound."""
    guards = _guards(transform(workloads.sgemm_mlir((50, 37, 21)), f"{TILE},{PAD}"))
    assert set(guards) == {"A", "B", "C"}
    assert len(set(guards["C"])) == 1 and str(guards["C"][0]).count(">=") == 2
    guards = _guards(transform(workloads.sgemm_mlir((50, 37, 16)), f"{TILE},{PAD}"))
    assert set(guards) == {"A", "B", "C"}
    assert all(g.count(">=") == 1 for g in guards["B"])  # j <= 36 only


OVERWRITE = """
func.func @f(%A: memref<NxKxf32>, %B: memref<KxNxf32>, %C: memref<NxNxf32>) {
  affine.for %i = 0 to N {
    affine.for %j = 0 to N {
      affine.for %k = 0 to K {
        %a = affine.load %A[%i, %k] : memref<NxKxf32>
        %b = affine.load %B[%k, %j] : memref<KxNxf32>
        %m = arith.mulf %a, %b : f32
        affine.store %m, %C[%i, %j] : memref<NxNxf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


def test_an_overwrite_keeps_the_bound_of_k() -> None:
    """C[i, j] = A[i, k] * B[k, j] (the last k wins): past K the store would write 0, so its
    guard keeps k's bound and the result stays exact."""
    text = OVERWRITE.replace("N", "13").replace("K", "11")
    tiled = "loop-tile{tile-sizes=8,8,4}"
    after = assert_equivalent(
        text, "f", _sgemm_inputs(13, 13, 11, 3), f"{tiled},{PAD[:10]}loops=i,j,k}}"
    )
    [store_guard] = _guards(after)["C"][-1:]
    assert store_guard.count(">=") == 3


def test_refusals() -> None:
    text = workloads.sgemm_mlir((21, 21, 21))
    with pytest.raises(LoopoptError, match="pad-tiles: no loop named 'x'"):
        transform(text, f"{TILE},pad-tiles{{loops=i,x}}")
    with pytest.raises(LoopoptError, match="pad-tiles: missing option loops="):
        transform(text, "pad-tiles")
    with pytest.raises(LoopoptError, match="holds padded accesses already"):
        transform(text, f"{TILE},pad-tiles{{loops=i}},pad-tiles{{loops=k}}")
    dynamic = text.replace("memref<21x21xf32>", "memref<?x21xf32>")
    with pytest.raises(LoopoptError, match="dynamic shape cannot be guarded"):
        transform(dynamic, f"{TILE},{PAD}")


def test_register_double_buffering_issues_zero_filled_copies_ahead() -> None:
    """After gpu-map-loops, the fill copies (an affine.if yielding the load or 0.0) are
    prefetchable: pipeline-copies issues them a k step ahead, condition and all."""
    text = workloads.sgemm_mlir((100, 70, 45))
    summary = summarize_module(parse_module(text, "sgemm"))
    pipeline = recipes.matmul(summary, 64, 64, 16, 8, 4, pipelined=True, padded=True).pipeline
    assert "pipeline-copies{loop=k_t}" in pipeline
    module = parse_module(transform(text, pipeline))
    [k_t] = [op for op in module.walk() if isinstance(op, affine.ForOp) and loop_name(op) == "k_t"]
    yielded = set(k_t.body.block.last_op.operands)  # type: ignore[union-attr]
    ahead = [op for op in k_t.body.block.ops if fill_load(op) and op.results[0] in yielded]
    assert len(ahead) == (64 * 16 + 16 * 64) // 128  # every element a thread copies
    # scalar-replace keeps the 8 x 4 padded accumulators of C in iter_args across k_t
    assert len(k_t.inits) == len(ahead) + 8 * 4
    stores = [op for op in module.walk() if padded_store(op) is not None]
    assert len(stores) == 8 * 4 and all(not k_t.is_ancestor(op) for op in stores)


@pytest.mark.parametrize(
    ("sizes", "tiles"),
    [
        ((50, 37, 21), (32, 32, 8, 4, 4)),
        ((7, 5, 3), (32, 32, 8, 4, 4)),
        ((100, 130, 70), (64, 64, 16, 8, 4)),
    ],
)
def test_emulated_padded_sgemm(sizes: tuple[int, int, int], tiles: tuple[int, ...]) -> None:
    """The padded matmul recipe (unrolled 8x4 / 4x4 register tiles, zero-filled shared
    tiles, double-buffered through registers, scalar-replace's accumulators) mapped onto
    thread blocks computes A @ B on the emulator at sizes no tile divides."""
    text = workloads.sgemm_mlir(sizes)
    summary = summarize_module(parse_module(text, "sgemm"))
    pipeline = recipes.matmul(summary, *tiles, pipelined=True, padded=True).pipeline
    module = parse_module(transform(text, pipeline))
    a, b, _ = _sgemm_inputs(*sizes, seed=5)
    c = np.zeros((sizes[0], sizes[1]), np.float32)
    emulate(module, reverse=True)
    run_function(module, "sgemm", [a, b, c])
    assert np.abs(c - a.astype(np.float64) @ b.astype(np.float64)).max() < 1e-4


def test_emulated_padded_atb() -> None:
    """C += Aᵀ B: A[k, i] is padded in its first dimension (k) and its second (i)."""
    m, n, k = 50, 37, 21
    text = workloads.sgemm_atb_mlir((m, n, k))
    summary = summarize_module(parse_module(text, workloads.SGEMM_ATB.func))
    schedule = recipes.matmul(summary, 32, 32, 8, 4, 4, pipelined=False, padded=True)
    module = parse_module(transform(text, schedule.pipeline))
    rng = np.random.default_rng(2)
    a = rng.standard_normal((k, m)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    emulate(module)
    run_function(module, workloads.SGEMM_ATB.func, [a, b, c])
    assert np.abs(c - a.T.astype(np.float64) @ b.astype(np.float64)).max() < 1e-4


SCALED = """
func.func @scaled(%alpha: f32, %A: memref<13x11xf32>, %B: memref<11x9xf32>, %C: memref<13x9xf32>) {
  affine.for %i = 0 to 13 {
    affine.for %j = 0 to 9 {
      affine.for %k = 0 to 11 {
        %a = affine.load %A[%i, %k] : memref<13x11xf32>
        %s = arith.mulf %alpha, %a : f32
        %b = affine.load %B[%k, %j] : memref<11x9xf32>
        %m = arith.mulf %s, %b : f32
        %o = affine.load %C[%i, %j] : memref<13x9xf32>
        %n = arith.addf %o, %m : f32
        affine.store %n, %C[%i, %j] : memref<13x9xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  func.return
}
"""


@pytest.mark.parametrize("alpha", [1.5, np.inf, np.nan])
def test_a_scalar_factor_is_zeroed_past_the_bound(alpha: float) -> None:
    """C += alpha A B padded past k: C's store needs no k guard (so C stays in registers), and
    the result is the unpadded one even where alpha * 0 would be NaN (alpha infinite)."""
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((13, 11), (11, 9)))
    c = rng.standard_normal((13, 9)).astype(np.float32)
    pipeline = f"{TILE},{PAD}"
    guards = _guards(transform(SCALED, pipeline))
    assert all("d2" not in g and "10" not in g for g in guards["C"]), guards["C"]
    expected = [np.float32(alpha), a, b, c.copy()]
    run_function(parse_module(SCALED), "scaled", expected)
    got = [np.float32(alpha), a, b, c.copy()]
    run_function(parse_module(transform(SCALED, pipeline)), "scaled", got)
    np.testing.assert_array_equal(got[3], expected[3])
