"""Python kernels on the GPU path: mapped by gpu-map-loops, checked on the CPU by emulation.

The front-end's IR for PolyBench kernels goes through the GPU schedules (the default mapping,
and tiling + shared memory for a matmul); gpu_emulator.py runs the kernels' blocks and threads
on the CPU, and the results must equal plain Python's. Kernels whose loops all carry
dependences are refused with the dependence named. Every math function compiles to PTX (a
fake driver launches). Tests marked `gpu` run on a device.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polybench_py as pb
import pytest
from fake_gpu import FakeDriver, fake_gpu  # noqa: F401 (a fixture)
from gpu_emulator import emulate
from xdsl.dialects import gpu
from xdsl.passes import PassPipeline

import loopopt
from loopopt.backend.libdevice import find_libdevice
from loopopt.backend.ptx import assemble, find_ptxas, module_to_ptx
from loopopt.context import make_context, verify_ir
from loopopt.frontend.kernel import Kernel
from loopopt.runtime.cpu import run_function
from loopopt.universe import all_passes


def matmul(A, B, C):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def total(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    out[0] = s


PTXAS = find_ptxas()


def _r(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


TILED_SHARED = "loop-tile{tile-sizes=8,8,4},promote{loop=k_t arrays=A,B memory-space=shared}"
CASES: list[tuple[Callable[..., None], Callable[[np.random.Generator], list[Any]], str]] = [
    (matmul, lambda g: [_r(g, 20, 12), _r(g, 12, 18), _r(g, 20, 18)], ""),
    (matmul, lambda g: [_r(g, 20, 12), _r(g, 12, 18), _r(g, 20, 18)], TILED_SHARED),
    (pb.gemm, lambda g: [1.5, 1.2, _r(g, 9, 11), _r(g, 9, 6), _r(g, 6, 11)], ""),
    (
        pb.two_mm,
        lambda g: [1.5, 1.2, *(_r(g, *s) for s in ((5, 7), (5, 4), (4, 7), (7, 6), (5, 6)))],
        "",
    ),
    (pb.syrk, lambda g: [1.5, 1.2, _r(g, 9, 9), _r(g, 9, 5)], ""),
    (pb.jacobi_2d, lambda g: [3, _r(g, 12, 12), _r(g, 12, 12)], ""),
    (pb.fdtd_2d, lambda g: [_r(g, 8, 9), _r(g, 8, 9), _r(g, 8, 9), _r(g, 3)], ""),
    (pb.heat_3d, lambda g: [2, _r(g, 7, 7, 7), _r(g, 7, 7, 7)], ""),
    (pb.mvt, lambda g: [_r(g, 9), _r(g, 9), _r(g, 9), _r(g, 9), _r(g, 9, 9)], ""),
    (pb.gesummv, lambda g: [1.5, 1.2, _r(g, 9, 9), _r(g, 9, 9), _r(g, 9), _r(g, 9), _r(g, 9)], ""),
    (pb.doitgen, lambda g: [_r(g, 3, 4, 6), _r(g, 6, 6), _r(g, 6)], ""),
]


@pytest.mark.parametrize(
    ("function", "inputs", "pre"),
    CASES,
    ids=[f"{c[0].__name__}{'-tiled' if c[2] else ''}" for c in CASES],
)
def test_mapped_kernels_compute_what_python_does(
    function: Callable[..., None],
    inputs: Callable[[np.random.Generator], list[Any]],
    pre: str,
    rng: np.random.Generator,
) -> None:
    args = inputs(rng)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    function(*expected)
    module = Kernel(function).module(*args)
    ctx = make_context()
    pipeline = f"{pre},gpu-map-loops" if pre else "gpu-map-loops"
    PassPipeline.parse_spec(all_passes(), pipeline).apply(ctx, module)
    verify_ir(module, pipeline)
    assert any(isinstance(op, gpu.LaunchFuncOp) for op in module.walk())
    emulate(module, reverse=True)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_function(module, function.__name__, got)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5, err_msg=f"argument {k}")


def _run_python(function: Callable[..., None], args: list[Any]) -> list[Any]:
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        function(*expected)
    return expected


def _assert_close(got: list[Any], expected: list[Any]) -> None:
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        if isinstance(e, np.ndarray):
            tol = 2e-5 if e.dtype == np.float32 else 1e-10
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=f"argument {k}")


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("name", sorted(pb.CASES))
def test_every_polybench_kernel_runs_on_the_gpu(
    name: str, reverse: bool, rng: np.random.Generator
) -> None:
    """The whole function maps (kernels, host loops, region kernels), assembles with ptxas
    where one is found, and the emulated kernels compute what Python does, with the threads
    of each phase in either order."""
    function, inputs = pb.CASES[name]
    args = inputs(rng)
    expected = _run_python(function, args)
    module = Kernel(function).module(*args)
    PassPipeline.parse_spec(all_passes(), "gpu-map-loops").apply(make_context(), module)
    verify_ir(module, "gpu-map-loops")
    if PTXAS is not None and not reverse:
        assemble(module_to_ptx(module.clone()), "sm_90", PTXAS)
    emulate(module, reverse=reverse)
    assert not any(isinstance(op, gpu.LaunchFuncOp) for op in module.walk())
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_function(module, function.__name__, got)
    _assert_close(got, expected)


def maths(A, B):
    for i in range(A.shape[0]):
        x = A[i]
        B[i, 0] = math.sqrt(abs(x)) + math.exp(x) + math.log(abs(x) + 1.0) + math.fmod(x, 0.75)
        B[i, 1] = math.pow(abs(x), 1.5) + math.sin(x) + math.cos(x) + math.tan(x) + math.tanh(x)
        B[i, 2] = math.floor(x) + math.ceil(x) * 2 + round(x) + x % 0.3 + x // 0.7
        B[i, 3] = np.sqrt(abs(x)) + np.exp(x) + max(x, 0.5) + min(x, 0.2) + np.fmod(x, 0.5)
        B[i, 4] = A[i] if A[i] > 0 else -A[i]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_compiles_for_the_gpu(dtype: type, fake_gpu: FakeDriver) -> None:  # noqa: F811
    if find_libdevice() is None:
        pytest.skip("needs CUDA's libdevice")
    a, b = np.linspace(-2, 2, 300).astype(dtype), np.zeros((300, 5), dtype)
    loopopt.kernel(maths)(a, b, target="gpu")  # PTX with libdevice, launched by the fake
    assert fake_gpu.launches == ["maths_k0"]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_on_the_device(dtype: type) -> None:
    a = np.linspace(-2, 2, 300).astype(dtype)
    expected, got = np.zeros((300, 5), dtype), np.zeros((300, 5), dtype)
    maths(a, expected)
    loopopt.kernel(maths)(a, got, target="gpu")
    # libdevice's float32 functions are within 1-2 ulp, not correctly rounded: terms of size ~1
    # that cancel leave an absolute error of a few 1e-7 (seen on the H200: 1.2e-7 at one point).
    single = dtype == np.float32
    np.testing.assert_allclose(
        got, expected, rtol=1e-5 if single else 1e-12, atol=1e-6 if single else 1e-14
    )


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("function", "inputs", "pre"),
    CASES,
    ids=[f"{c[0].__name__}{'-tiled' if c[2] else ''}" for c in CASES],
)
def test_kernels_on_the_device_compute_what_python_does(
    function: Callable[..., None],
    inputs: Callable[[np.random.Generator], list[Any]],
    pre: str,
    rng: np.random.Generator,
) -> None:
    args = inputs(rng)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    function(*expected)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    loopopt.kernel(function)(*got, target="gpu", schedule=pre or None)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5, err_msg=f"argument {k}")


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(pb.CASES))
def test_every_polybench_kernel_on_the_device(name: str, rng: np.random.Generator) -> None:
    function, inputs = pb.CASES[name]
    args = inputs(rng)
    expected = _run_python(function, args)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    loopopt.kernel(function)(*got, target="gpu")
    _assert_close(got, expected)


@pytest.mark.gpu
@pytest.mark.parametrize("size", [64, 1000])
def test_matmul_on_the_device(size: int, rng: np.random.Generator) -> None:
    a, b = _r(rng, size, size), _r(rng, size, size)
    c = np.zeros((size, size), np.float32)
    kern = loopopt.kernel(matmul)
    kern(a, b, c, target="gpu")
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-3)
    c[...] = 0
    kern(a, b, c, target="gpu", schedule=f"{TILED_SHARED.replace('8,8,4', '32,32,8')}")
    np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
def test_jacobi_stays_on_the_device_between_calls(rng: np.random.Generator) -> None:
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = a.copy()
    expected_a, expected_b = a.copy(), b.copy()
    pb.jacobi_2d(3, expected_a, expected_b)
    kern = loopopt.kernel(pb.jacobi_2d)
    device_a, device_b = loopopt.array(a), loopopt.array(b)
    kern(3, device_a, device_b, target="gpu")
    np.testing.assert_allclose(device_a.numpy(), expected_a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(device_b.numpy(), expected_b, rtol=1e-5, atol=1e-5)
