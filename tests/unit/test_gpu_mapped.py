"""Loop nests mapped by the compiler (gpu-map-loops), run on the GPU, against float64 references.

Skipped without a usable CUDA device (marker `gpu`).
"""

from __future__ import annotations

import kernels
import numpy as np
import pytest

import loopopt

pytestmark = pytest.mark.gpu

TILED_SHARED = (
    "loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},gpu-map-loops"
)


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


def vadd(n: int) -> str:
    t = f"memref<{n}xf32>"
    return f"""
func.func @vadd(%A: {t}, %B: {t}, %C: {t}) {{
  affine.for %i = 0 to {n} {{
    %a = affine.load %A[%i] : {t}
    %b = affine.load %B[%i] : {t}
    %s = arith.addf %a, %b : f32
    affine.store %s, %C[%i] : {t}
  }} {{loopopt.name = "i"}}
  return
}}
"""


def transpose(m: int, n: int) -> str:
    return f"""
func.func @transpose(%A: memref<{m}x{n}xf32>, %B: memref<{n}x{m}xf32>) {{
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      %a = affine.load %A[%i, %j] : memref<{m}x{n}xf32>
      affine.store %a, %B[%j, %i] : memref<{n}x{m}xf32>
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""


def jacobi_2d(steps: int, n: int) -> str:
    t = f"memref<{n}x{n}xf32>"
    return f"""
func.func @jacobi2d(%A: {t}, %B: {t}) {{
  %fifth = arith.constant 0.2 : f32
  affine.for %t = 0 to {steps} {{
    affine.for %i = 1 to {n - 1} {{
      affine.for %j = 1 to {n - 1} {{
        %c = affine.load %A[%i, %j] : {t}
        %n0 = affine.load %A[%i - 1, %j] : {t}
        %s0 = affine.load %A[%i + 1, %j] : {t}
        %w0 = affine.load %A[%i, %j - 1] : {t}
        %e0 = affine.load %A[%i, %j + 1] : {t}
        %x0 = arith.addf %c, %n0 : f32
        %x1 = arith.addf %x0, %s0 : f32
        %x2 = arith.addf %x1, %w0 : f32
        %x3 = arith.addf %x2, %e0 : f32
        %v = arith.mulf %x3, %fifth : f32
        affine.store %v, %B[%i, %j] : {t}
      }} {{loopopt.name = "j"}}
    }} {{loopopt.name = "i"}}
    affine.for %i2 = 1 to {n - 1} {{
      affine.for %j2 = 1 to {n - 1} {{
        %v = affine.load %B[%i2, %j2] : {t}
        affine.store %v, %A[%i2, %j2] : {t}
      }} {{loopopt.name = "j2"}}
    }} {{loopopt.name = "i2"}}
  }} {{loopopt.name = "t"}}
  return
}}
"""


@pytest.mark.parametrize("n", [1000, 1 << 20])
def test_vector_add(n: int, rng: np.random.Generator) -> None:
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    c = np.full(n, np.nan, np.float32)
    loopopt.compile(vadd(n), "vadd", pipeline="gpu-map-loops", target="gpu")(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_transpose(rng: np.random.Generator) -> None:
    a = rng.standard_normal((1000, 777)).astype(np.float32)
    b = np.full((777, 1000), np.nan, np.float32)
    loopopt.compile(transpose(1000, 777), "transpose", pipeline="gpu-map-loops", target="gpu")(a, b)
    np.testing.assert_array_equal(b, a.T)


@pytest.mark.parametrize("n", [1000, 4096])
@pytest.mark.parametrize("pipeline", ["gpu-map-loops{block=32,8}", TILED_SHARED])
def test_matmul(n: int, pipeline: str, rng: np.random.Generator) -> None:
    text, func, (a, b, c) = kernels.matmul(n, n, n, rng)
    ref = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    loopopt.compile(text, func, pipeline=pipeline, target="gpu")(a, b, c)
    assert _rel_err(c, ref) < 1e-4


def test_jacobi_2d_time_loop_on_the_host(rng: np.random.Generator) -> None:
    n, steps = 513, 4
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = a.copy()
    ref_a, ref_b = a.astype(np.float64), b.astype(np.float64)
    for _ in range(steps):
        inner = ref_a[1:-1, 1:-1] + ref_a[:-2, 1:-1] + ref_a[2:, 1:-1]
        ref_b[1:-1, 1:-1] = (inner + ref_a[1:-1, :-2] + ref_a[1:-1, 2:]) * np.float32(0.2)
        ref_a[1:-1, 1:-1] = ref_b[1:-1, 1:-1]
    loopopt.compile(jacobi_2d(steps, n), "jacobi2d", pipeline="gpu-map-loops", target="gpu")(a, b)
    assert _rel_err(a, ref_a) < 1e-5
    assert _rel_err(b, ref_b) < 1e-5
