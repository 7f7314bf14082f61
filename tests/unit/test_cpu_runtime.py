"""The CPU runtime: the shared kernels and argument checking, against numpy references."""

from __future__ import annotations

import time

import kernels
import numpy as np
import pytest

from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.runtime.cpu import compile_cpu, run_function

THIRD = np.float32(0.333333343)


def test_matmul(rng: np.random.Generator) -> None:
    text, func, (a, b, c) = kernels.matmul(13, 17, 19, rng)
    expected = c + a @ b
    run_function(text, func, [a, b, c])
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


def test_conv2d(rng: np.random.Generator) -> None:
    text, func, (image, filt, out) = kernels.conv2d(10, 12, 3, 4, rng)
    expected = out.copy()
    for p in range(3):
        for q in range(4):
            expected += image[p : p + 10, q : q + 12] * filt[p, q]
    run_function(text, func, [image, filt, out])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_syrk_triangular(rng: np.random.Generator) -> None:
    text, func, (a, c) = kernels.syrk(9, 7, rng)
    expected = c + np.tril(a @ a.T)
    run_function(text, func, [a, c])
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


def test_jacobi_1d(rng: np.random.Generator) -> None:
    text, func, (a, b) = kernels.jacobi_1d(5, 20, rng)
    ea, eb = a.copy(), b.copy()
    for _ in range(5):
        eb[1:-1] = (ea[:-2] + ea[1:-1] + ea[2:]) * THIRD
        ea[1:-1] = eb[1:-1]
    run_function(text, func, [a, b])
    np.testing.assert_allclose(a, ea, rtol=1e-6)
    np.testing.assert_allclose(b, eb, rtol=1e-6)


def test_wavefront_runs_sequentially(rng: np.random.Generator) -> None:
    text, func, (a,) = kernels.wavefront(8, 9, rng)
    expected = a.copy()
    for i in range(1, 8):
        for j in range(8):
            expected[i, j] = expected[i - 1, j + 1] + expected[i, j]
    run_function(text, func, [a])
    np.testing.assert_array_equal(a, expected)


def test_module_input_is_not_modified(rng: np.random.Generator) -> None:
    text, func, arrays = kernels.matmul(4, 4, 4, rng)
    module = parse_module(text)
    before = str(module)
    run_function(module, func, arrays)
    assert str(module) == before


def test_engine_is_cached(rng: np.random.Generator) -> None:
    text, func, _ = kernels.matmul(5, 6, 7, rng)
    assert compile_cpu(text, func) is compile_cpu(text, func)


def test_large_elementwise_is_fast(rng: np.random.Generator) -> None:
    n = 2000
    text = f"""
func.func @axpy(%X: memref<{n}x{n}xf32>, %Y: memref<{n}x{n}xf32>, %a: f32) {{
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {n} {{
      %x = affine.load %X[%i, %j] : memref<{n}x{n}xf32>
      %y = affine.load %Y[%i, %j] : memref<{n}x{n}xf32>
      %p = arith.mulf %a, %x : f32
      %s = arith.addf %p, %y : f32
      affine.store %s, %Y[%i, %j] : memref<{n}x{n}xf32>
    }}
  }}
  return
}}
"""
    x = rng.standard_normal((n, n)).astype(np.float32)
    y = rng.standard_normal((n, n)).astype(np.float32)
    expected = np.float32(2.5) * x + y
    start = time.perf_counter()
    run_function(text, "axpy", [x, y, 2.5])
    assert time.perf_counter() - start < 2.0
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_non_contiguous_array_is_copied_back(rng: np.random.Generator) -> None:
    text, func, (a, b, c) = kernels.matmul(4, 4, 4, rng)
    big = np.zeros((4, 8), dtype=np.float32)
    view = big[:, ::2]
    view[...] = c
    run_function(text, func, [a, b, view])
    np.testing.assert_allclose(big[:, ::2], c + a @ b, rtol=1e-5, atol=1e-5)
    assert not big[:, 1::2].any()


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        (0, "expected dtype float32"),
        (1, "expected size 4 in dimension 0"),
        (2, "expected rank 2"),
        (3, "expected a numpy array"),
    ],
)
def test_argument_mismatch_is_a_diagnostic(
    rng: np.random.Generator, replace: int, message: str
) -> None:
    text, func, (a, b, c) = kernels.matmul(4, 4, 4, rng)
    bad: object = [
        a.astype(np.float64),
        np.zeros((5, 4), dtype=np.float32),
        np.zeros(16, dtype=np.float32),
        [[0.0] * 4] * 4,
    ][replace]
    with pytest.raises(LoopoptError, match=message):
        run_function(text, func, [bad, b, c])  # type: ignore[list-item]


def test_wrong_argument_count_and_missing_function(rng: np.random.Generator) -> None:
    text, func, (a, b, _) = kernels.matmul(4, 4, 4, rng)
    with pytest.raises(LoopoptError, match="takes 3 arguments, 2 given"):
        run_function(text, func, [a, b])
    with pytest.raises(LoopoptError, match="no function named 'nope'"):
        run_function(text, "nope", [a, b])


def test_engines_can_be_freed_and_more_compiled() -> None:
    """Each engine owns its target machine: freeing one must not break the others."""
    import gc

    from loopopt.runtime import cpu

    texts = [
        f"func.func @f(%A: memref<4xf32>) {{\n  %c = arith.constant {v}.0 : f32\n"
        "  affine.for %i = 0 to 4 {\n    affine.store %c, %A[%i] : memref<4xf32>\n  }\n"
        "  return\n}\n"
        for v in range(4)
    ]
    for text in texts[:3]:
        cpu.run_function(text, "f", [np.zeros(4, np.float32)])
    cpu._ENGINES.clear()
    gc.collect()
    out = np.zeros(4, np.float32)
    cpu.run_function(texts[3], "f", [out])
    np.testing.assert_array_equal(out, np.full(4, 3.0, np.float32))
