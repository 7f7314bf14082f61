"""The benchmark schedules (benchmarks/schedules.py) on the GPU, at small sizes they divide,
against float64 references on fresh random inputs. Skipped without a CUDA device."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import loopopt

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import schedules  # noqa: E402

pytestmark = pytest.mark.gpu


def matmul_accumulate(m: int, n: int, k: int) -> str:
    a, b, c = f"memref<{m}x{k}xf32>", f"memref<{k}x{n}xf32>", f"memref<{m}x{n}xf32>"
    return f"""
func.func @matmul(%A: {a}, %B: {b}, %C: {c}) {{
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = 0 to {k} {{
        %x = affine.load %A[%i, %k] : {a}
        %y = affine.load %B[%k, %j] : {b}
        %z = affine.load %C[%i, %j] : {c}
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %C[%i, %j] : {c}
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""


@pytest.mark.parametrize(
    ("m", "n", "k", "pipeline"),
    [
        (256, 192, 48, schedules.SGEMM),
        (128, 128, 32, schedules.sgemm(128, 128, 8, 8, 8)),
        (128, 64, 24, schedules.sgemm(64, 64, 8, 4, 4, pipelined=False)),
    ],
)
def test_sgemm_schedules(
    m: int, n: int, k: int, pipeline: str, rng: np.random.Generator
) -> None:
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    kern = loopopt.compile(matmul_accumulate(m, n, k), "matmul", pipeline=pipeline, target="gpu")
    kern(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-5
