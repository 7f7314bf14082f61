"""PolyBench kernels in Python through the front-end: the CPU results equal plain Python's.

Each kernel of polybench_py.py runs twice on the same small random inputs: as Python on numpy
arrays (the reference), and as a `@loopopt.kernel` compiled for the CPU (with static shapes,
and with `memref<?x?x…>` shapes). Both compute the same operations in the same order and the
same precision, so results agree to rounding. Upstream `mlir-opt` must accept every kernel's IR.
"""

from __future__ import annotations

import numpy as np
import polybench_py as pb
import pytest
from upstream import assert_upstream_valid

import loopopt

CASES = pb.CASES


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
