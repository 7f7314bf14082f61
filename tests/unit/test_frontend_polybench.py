"""PolyBench kernels in Python through the front-end: the CPU results equal plain Python's.

Each kernel of polybench_py.py runs twice on the same small random inputs: as Python on numpy
arrays (the reference), and as a `@loopopt.kernel` compiled for the CPU (with static shapes,
and with `memref<?x?x…>` shapes). Both compute the same operations in the same order and the
same precision, so results agree to rounding. Upstream `mlir-opt` must accept every kernel's IR.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polybench_py as pb
import pytest
from upstream import assert_upstream_valid

import loopopt

Inputs = Callable[[np.random.Generator], list[Any]]


def _r(rng: np.random.Generator, *shape: int, dtype: type = np.float64) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _spd(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


CASES: dict[str, tuple[Callable[..., None], Inputs]] = {
    "gemm": (pb.gemm, lambda g: [1.5, 1.2, _r(g, 7, 9), _r(g, 7, 5), _r(g, 5, 9)]),
    "gemm_f32": (
        pb.gemm,
        lambda g: [1.5, 1.2, *(_r(g, *s, dtype=np.float32) for s in ((6, 8), (6, 4), (4, 8)))],
    ),
    "2mm": (
        pb.two_mm,
        lambda g: [1.5, 1.2, _r(g, 6, 7), _r(g, 6, 5), _r(g, 5, 7), _r(g, 7, 8), _r(g, 6, 8)],
    ),
    "syrk": (pb.syrk, lambda g: [1.5, 1.2, _r(g, 7, 7), _r(g, 7, 5)]),
    "trmm": (pb.trmm, lambda g: [1.5, _r(g, 6, 6), _r(g, 6, 8)]),
    "lu": (pb.lu, lambda g: [_spd(g, 8)]),
    "cholesky": (pb.cholesky, lambda g: [_spd(g, 8)]),
    "trisolv": (pb.trisolv, lambda g: [_spd(g, 8), np.zeros(8), _r(g, 8)]),
    "durbin": (pb.durbin, lambda g: [g.uniform(0.05, 0.2, 9), np.zeros(9), np.zeros(9)]),
    "jacobi_1d": (pb.jacobi_1d, lambda g: [3, _r(g, 12), _r(g, 12)]),
    "jacobi_2d": (pb.jacobi_2d, lambda g: [2, _r(g, 9, 9), _r(g, 9, 9)]),
    "seidel_2d": (pb.seidel_2d, lambda g: [2, _r(g, 9, 9)]),
    "fdtd_2d": (pb.fdtd_2d, lambda g: [_r(g, 6, 7), _r(g, 6, 7), _r(g, 6, 7), _r(g, 3)]),
    "heat_3d": (pb.heat_3d, lambda g: [2, _r(g, 6, 6, 6), _r(g, 6, 6, 6)]),
    "floyd_warshall": (
        pb.floyd_warshall,
        lambda g: [g.integers(1, 50, (8, 8)).astype(np.int32)],
    ),
    "nussinov": (
        pb.nussinov,
        lambda g: [g.integers(0, 4, 12).astype(np.int32), np.zeros((12, 12), np.int32)],
    ),
    "atax": (pb.atax, lambda g: [_r(g, 6, 6), _r(g, 6), np.zeros(6), np.zeros(6)]),
    "bicg": (pb.bicg, lambda g: [_r(g, 7, 5), np.zeros(5), np.zeros(7), _r(g, 5), _r(g, 7)]),
    "mvt": (pb.mvt, lambda g: [_r(g, 7), _r(g, 7), _r(g, 7), _r(g, 7), _r(g, 7, 7)]),
    "correlation": (
        pb.correlation,
        lambda g: [9.0, _r(g, 9, 6), np.zeros((6, 6)), np.zeros(6), np.zeros(6)],
    ),
    "correlation_f32": (
        pb.correlation,
        lambda g: [
            9.0,
            _r(g, 9, 6, dtype=np.float32),
            *(np.zeros(s, np.float32) for s in ((6, 6), 6, 6)),
        ],
    ),
    "covariance": (pb.covariance, lambda g: [9.0, _r(g, 9, 6), np.zeros((6, 6)), np.zeros(6)]),
    "doitgen": (pb.doitgen, lambda g: [_r(g, 3, 4, 5), _r(g, 5, 5), np.zeros(5)]),
    "gesummv": (
        pb.gesummv,
        lambda g: [1.5, 1.2, _r(g, 6, 6), _r(g, 6, 6), np.zeros(6), _r(g, 6), np.zeros(6)],
    ),
}


@pytest.mark.parametrize("static", [True, False], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", list(CASES))
def test_cpu_matches_python(name: str, static: bool, rng: np.random.Generator) -> None:
    function, inputs = CASES[name]
    args = inputs(rng)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        function(*expected)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    loopopt.kernel(function, static_shapes=static)(*got, target="cpu")
    for index, (g, e) in enumerate(zip(got, expected, strict=True)):
        if isinstance(e, np.ndarray):
            rtol = 1e-5 if e.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol, err_msg=f"argument {index}")


@pytest.mark.parametrize("static", [True, False], ids=["static", "dynamic"])
def test_upstream_mlir_accepts_the_ir(static: bool, rng: np.random.Generator) -> None:
    for name, (function, inputs) in CASES.items():
        text = loopopt.kernel(function, static_shapes=static).mlir(*inputs(rng))
        try:
            assert_upstream_valid(text)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
