"""float16 / bfloat16 arrays in `@loopopt.kernel`: elements are read as float32 and rounded on
store (frontend/types.py); results match numpy / ml_dtypes references on the CPU, through the
emulated GPU mapping, and (marked `gpu`) on a device, with numpy arrays and torch tensors."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from fake_gpu import FakeDriver, fake_gpu  # noqa: F401 (a fixture)
from gpu_emulator import emulate
from xdsl.passes import PassPipeline

import loopopt
from loopopt.context import make_context, verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.frontend.kernel import Kernel
from loopopt.runtime.cpu import run_function
from loopopt.runtime.device_arrays import cuda_array_interface
from loopopt.universe import all_passes

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"float16": np.dtype(np.float16), "bfloat16": BF16}
EPS = {"float16": 2.0**-11, "bfloat16": 2.0**-8}


def add(A, B, C):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = A[i, j] + B[i, j]


def axpy(A, B, C):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = A[i, j] * B[i, j] + 0.5 * A[i, j]


def gemm(A, B, C):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def row_sums(A, S):
    for i in range(A.shape[0]):
        S[i] = 0.0
        for j in range(A.shape[1]):
            S[i] += A[i, j]


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return rng.standard_normal(shape).astype(DTYPES[dtype])


def _f32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_one_operation_is_numpys_result_bit_for_bit(dtype: str, rng: np.random.Generator) -> None:
    a, b = _random(rng, (9, 33), dtype), _random(rng, (9, 33), dtype)
    c = np.zeros((9, 33), DTYPES[dtype])
    loopopt.kernel(add)(a, b, c, target="cpu")
    np.testing.assert_array_equal(c.view(np.uint16), (a + b).view(np.uint16))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_chain_of_operations_rounds_once_on_store(dtype: str, rng: np.random.Generator) -> None:
    a, b = _random(rng, (9, 33), dtype), _random(rng, (9, 33), dtype)
    c = np.zeros((9, 33), DTYPES[dtype])
    kern = loopopt.kernel(axpy)
    kern(a, b, c, target="cpu")
    once = (_f32(a) * _f32(b) + np.float32(0.5) * _f32(a)).astype(DTYPES[dtype])
    np.testing.assert_array_equal(c.view(np.uint16), once.view(np.uint16))
    text = kern.mlir(a, b, c)
    name = "bf16" if dtype == "bfloat16" else "f16"
    assert text.count("arith.extf") == 3 and text.count("arith.truncf") == 1
    assert f": {name} to f32" in text and f"f32 to {name}" in text


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("schedule", [None, "loop-tile{tile-sizes=8,8},promote{loop=j_t}"])
def test_gemm_accumulates_in_float32(
    dtype: str, schedule: str | None, rng: np.random.Generator
) -> None:
    """As torch.matmul: float32 accumulation, one rounding of each result element."""
    a, b = _random(rng, (21, 35), dtype), _random(rng, (35, 13), dtype)
    c = np.zeros((21, 13), DTYPES[dtype])
    loopopt.kernel(gemm)(a, b, c, target="cpu", schedule=schedule)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = EPS[dtype] * np.abs(exact) + 35 * 2.0**-24 * (np.abs(a) @ np.abs(b)).astype(float)
    assert np.all(np.abs(c.astype(np.float64) - exact) <= bound)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_row_sums_accumulate_in_the_array(dtype: str, rng: np.random.Generator) -> None:
    """`S[i] += A[i, j]` stores after every add: each partial sum is rounded to the array's
    type, as numpy's float16 loop and torch's in-place adds do."""
    a = np.abs(_random(rng, (5, 40), dtype))
    s = np.zeros(5, DTYPES[dtype])
    loopopt.kernel(row_sums)(a, s, target="cpu")
    expected = np.zeros(5, DTYPES[dtype])
    for j in range(40):
        expected = (_f32(expected) + _f32(a[:, j])).astype(DTYPES[dtype])
    np.testing.assert_array_equal(s.view(np.uint16), expected.view(np.uint16))


def test_annotations_name_half_array_types() -> None:
    def scale(A: "bfloat16[:, :]", B: "float16[:]") -> None:  # noqa: F821, UP037
        for i in range(B.shape[0]):
            B[i] = A[i, 0] * 2.0

    text = loopopt.kernel(scale).mlir()
    assert "memref<?x?xbf16>" in text and "memref<?xf16>" in text


def test_half_scalars_are_refused() -> None:
    def fill(A, x):
        A[0] = x

    with pytest.raises(LoopoptError, match="argument 'x' is a float16 scalar; float16 is an"):
        loopopt.kernel(fill)(np.zeros(4, np.float16), np.float16(1), target="cpu")


@pytest.mark.parametrize("function", [axpy, gemm], ids=["axpy", "gemm"])
def test_the_gpu_mapping_of_bfloat16_kernels_emulated(
    function: Any, rng: np.random.Generator
) -> None:
    """Tiles promoted to shared memory in bfloat16; threads emulated in reverse order."""
    a, b = _random(rng, (19, 19), "bfloat16"), _random(rng, (19, 19), "bfloat16")
    c = np.zeros((19, 19), BF16)
    expected = c.copy()
    loopopt.kernel(function)(a, b, expected, target="cpu")
    module = Kernel(function).module(a, b, c)
    pipeline = "loop-tile{tile-sizes=8,8},promote{loop=j_t memory-space=shared},gpu-map-loops"
    PassPipeline.parse_spec(all_passes(), pipeline).apply(make_context(), module)
    verify_ir(module, pipeline)
    emulate(module, reverse=True)
    run_function(module, function.__name__, [a, b, c])
    np.testing.assert_array_equal(c.view(np.uint16), expected.view(np.uint16))


class _TorchBFloat16Tensor:
    """What a CUDA bfloat16 torch.Tensor shows loopopt: no `__cuda_array_interface__` (torch
    raises KeyError for its typestr), but data_ptr(), shape, stride(), dtype and is_cuda."""

    __module__ = "torch"

    def __init__(self, host: np.ndarray):
        self.host = host
        self.shape = host.shape
        self.dtype = "torch.bfloat16"
        self.is_cuda = True

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        raise KeyError("torch.bfloat16")

    def data_ptr(self) -> int:
        return self.host.ctypes.data

    def stride(self) -> tuple[int, ...]:
        return tuple(s // 2 for s in self.host.strides)


def test_torch_bfloat16_tensors_are_described_from_the_tensor() -> None:
    host = np.zeros((3, 4), BF16)
    interface = cuda_array_interface(_TorchBFloat16Tensor(host))
    assert interface is not None
    assert interface["shape"] == (3, 4) and interface["strides"] == (8, 2)
    assert np.dtype(interface["typestr"]) == BF16
    assert interface["data"] == (host.ctypes.data, False)


def test_torch_bfloat16_tensors_go_to_the_gpu_in_place(fake_gpu: FakeDriver) -> None:  # noqa: F811
    a = _TorchBFloat16Tensor(np.ones((4, 4), BF16))
    b = _TorchBFloat16Tensor(np.ones((4, 4), BF16))
    c = _TorchBFloat16Tensor(np.zeros((4, 4), BF16))
    kern = loopopt.kernel(add)
    kern(a, b, c, target="gpu")
    assert fake_gpu.launches == ["add_k0"] and fake_gpu.uploads == 0
    assert "memref<4x4xbf16>" in kern.mlir(np.ones((4, 4), BF16), np.ones((4, 4), BF16), c.host)
    with pytest.raises(LoopoptError, match="a CUDA array needs target='gpu'"):
        kern(a, b, c, target="cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("function", [add, axpy, gemm], ids=["add", "axpy", "gemm"])
def test_half_kernels_on_the_gpu_match_the_cpu(
    dtype: str, function: Any, rng: np.random.Generator
) -> None:
    """numpy arrays copied in and out; the GPU may contract a*b+c into one fma (one rounding
    less), so results agree within one rounding of the element type."""
    a, b = _random(rng, (67, 67), dtype), _random(rng, (67, 67), dtype)
    cpu, gpu = np.zeros((67, 67), DTYPES[dtype]), np.zeros((67, 67), DTYPES[dtype])
    loopopt.kernel(function)(a, b, cpu, target="cpu")
    loopopt.kernel(function)(a, b, gpu, target="gpu")
    scale = np.abs(cpu.astype(np.float64)).max()
    np.testing.assert_allclose(_f32(gpu), _f32(cpu), rtol=2 * EPS[dtype], atol=1e-3 * scale)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_torch_half_tensors_on_the_gpu(dtype: str) -> None:
    torch = pytest.importorskip("torch")
    kind = getattr(torch, dtype)
    a = torch.randn(130, 70, device="cuda", dtype=kind)
    b = torch.randn(70, 90, device="cuda", dtype=kind)
    c = torch.zeros(130, 90, device="cuda", dtype=kind)
    loopopt.kernel(gemm)(a, b, c, target="gpu")
    expected = (a.double() @ b.double()).to(kind)
    torch.testing.assert_close(c, expected, rtol=2 * EPS[dtype], atol=2 * EPS[dtype])
    torch.testing.assert_close(c, torch.matmul(a, b), rtol=2 * EPS[dtype], atol=2 * EPS[dtype])
