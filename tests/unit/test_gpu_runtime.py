"""The GPU runtime: host programs around launches, arguments, and (marked `gpu`) real runs.

Without a GPU, a fake driver (`fake_cuda`) stands in for runtime/cuda.py: it "launches" the
vector add on the host through the very pointers and sizes the host code passes, so the host
lowering, argument passing and copies back are checked everywhere. Tests marked `gpu` run the
kernels of gpu_kernels.py on the device against numpy/float64 references.
"""

from __future__ import annotations

import ctypes
import types
from collections.abc import Iterator
from typing import Any

import kernels
import numpy as np
import pytest
from gpu_kernels import JACOBI_2D, MATH, MATMUL, REVERSE_CHUNKS, TRANSPOSE, VADD, WARP_SUM

import loopopt
from loopopt import api
from loopopt.diagnostics import LoopoptError
from loopopt.runtime import cuda


class FakeBuffer:
    """Device memory that is host memory: kernels emulated on the host can use the pointer."""

    def __init__(self, array: np.ndarray):
        self.array = np.ascontiguousarray(array).copy()
        self.ptr = self.array.ctypes.data

    def copy_to(self, out: np.ndarray) -> None:
        out[...] = self.array

    def free(self) -> None:
        self.ptr = 0


def _floats(pointer: int, count: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_float * count).from_address(pointer))


class FakeDriver:
    def __init__(self) -> None:
        self.launches: list[tuple[str, tuple[int, ...], tuple[int, ...], list[Any], int]] = []
        self.uploads = 0
        self.fail: LoopoptError | None = None

    def to_device(self, array: np.ndarray) -> FakeBuffer:
        self.uploads += 1
        return FakeBuffer(array)

    def launch(self, kernel: str, grid: Any, block: Any, params: Any, shared: int) -> None:
        if self.fail is not None:
            raise self.fail
        values = [value for value, _ in params]
        self.launches.append((kernel, tuple(grid), tuple(block), values, shared))
        if kernel == "vadd_k0":  # (A, n, B, n, C, n, n): C = A + B
            n = values[6]
            _floats(values[4], n)[:] = _floats(values[0], n) + _floats(values[2], n)


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDriver]:
    driver = FakeDriver()
    device = types.SimpleNamespace(arch="sm_90", name="fake")
    monkeypatch.setattr(cuda, "context", lambda: device)
    monkeypatch.setattr(cuda, "synchronize", lambda: None)
    monkeypatch.setattr(cuda, "available", lambda: True)
    monkeypatch.setattr(cuda, "to_device", driver.to_device)
    monkeypatch.setattr(cuda, "get_kernel", lambda ptx, name: name)
    monkeypatch.setattr(cuda, "launch", driver.launch)
    yield driver


def _gpu(text: str, func: str, pipeline: str = "gpu-map-loops") -> api.Compiled:
    """The naive mapping by default: these tests are about the runtime, not the schedule."""
    return loopopt.compile(text, func=func, pipeline=pipeline, target="gpu", arch="sm_90")


def test_host_code_launches_through_the_driver(fake_cuda: FakeDriver) -> None:
    vadd = _gpu(VADD, "vadd")
    assert vadd.target == "gpu"
    a, b = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    c = np.zeros(1000, np.float32)
    vadd(a, b, c)
    np.testing.assert_array_equal(c, a + 1)
    (name, grid, block, params, shared) = fake_cuda.launches[0]
    assert (name, grid, block, shared) == ("vadd_k0", (4, 1, 1), (256, 1, 1), 0)
    assert params[1::2] == [1000] * 3 and params[6] == 1000  # three sizes and n
    np.testing.assert_array_equal(a, np.arange(1000, dtype=np.float32))  # inputs unchanged


def test_non_contiguous_arrays_are_copied_back(fake_cuda: FakeDriver) -> None:
    vadd = _gpu(VADD, "vadd")
    out = np.zeros(20, np.float32)
    vadd(np.ones(10, np.float32), np.ones(10, np.float32), out[::2])
    np.testing.assert_array_equal(out[::2], 2)
    np.testing.assert_array_equal(out[1::2], 0)


def test_time_loop_on_the_host_alternates_buffers(fake_cuda: FakeDriver) -> None:
    jacobi = _gpu(JACOBI_2D, "jacobi")
    a, b = np.zeros((100, 100), np.float32), np.zeros((100, 100), np.float32)
    jacobi(a, b, 3)
    assert len(fake_cuda.launches) == 6
    pointers = [launch[3][0] for launch in fake_cuda.launches]
    assert pointers[0::2] == [pointers[0]] * 3 and pointers[1::2] == [pointers[1]] * 3
    assert pointers[0] != pointers[1]
    assert {launch[1] for launch in fake_cuda.launches} == {(4, 13, 1)}


def test_dynamic_shared_memory_is_requested(fake_cuda: FakeDriver) -> None:
    _gpu(REVERSE_CHUNKS, "reverse")(np.zeros(32768, np.float32), np.zeros(32768, np.float32))
    assert fake_cuda.launches[0][4] == 64 * 1024


def test_empty_grid_launches_nothing(fake_cuda: FakeDriver) -> None:
    empty = np.zeros(0, np.float32)
    _gpu(VADD, "vadd")(empty, empty, empty)
    assert fake_cuda.launches == []


def test_launch_errors_surface_after_the_call(fake_cuda: FakeDriver) -> None:
    fake_cuda.fail = LoopoptError("CUDA error in cuLaunchKernel: CUDA_ERROR_INVALID_VALUE")
    jacobi = _gpu(JACOBI_2D, "jacobi")
    with pytest.raises(
        LoopoptError, match=r"launch of @sweep_k0 \(grid 1x1x1, block 32x8x1\): CUDA"
    ):
        jacobi(np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32), 2)


def test_launch_sites_of_arguments_and_host_buffers_launch_natively(fake_cuda: FakeDriver) -> None:
    jacobi = _gpu(JACOBI_2D, "jacobi").function
    assert [kernel for _, kernel in jacobi.program.sites] == ["sweep_k0", "sweep_k0"]
    assert set(jacobi.program.slots) == {site for site, _ in jacobi.program.sites} | {
        jacobi.program.prefix
    }
    # A fake kernel is no CUfunction: every launch stays in Python (the fake driver sees all 6).
    jacobi(np.zeros((100, 100), np.float32), np.zeros((100, 100), np.float32), 3)
    assert len(fake_cuda.launches) == 6
    slots = [ctypes.c_void_p.from_address(a).value for a in jacobi.program.slots.values()]
    assert slots == [None] * 3


def test_native_launches_ask_for_the_kernels_dynamic_shared_memory(fake_cuda: FakeDriver) -> None:
    program = _gpu(REVERSE_CHUNKS, "reverse").function.program
    (launcher,) = program.launchers
    assert f"add i32 %shared, {64 * 1024}" in launcher  # its 64 KB buffer (opted in by Python)


def test_native_launcher_is_valid_llvm_and_falls_back_to_python() -> None:
    llvm = pytest.importorskip("llvmlite.binding")
    from xdsl.dialects import llvm as llvm_dialect
    from xdsl.dialects.builtin import f32, i32, i64

    from loopopt.runtime import native_launch

    params = [llvm_dialect.LLVMPointerType(), i64, f32, i32]
    text = native_launch.program_ir("p", [native_launch.launcher_ir("p", "p_0", 0, params, 16)])
    module = llvm.parse_assembly(text)
    module.verify()
    assert "add i32 %shared, 16" in text and "alloca [4 x ptr]" in text
    calls: list[tuple[int, ...]] = []
    slow = ctypes.CFUNCTYPE(
        None,
        *[ctypes.c_int64] * 6,
        ctypes.c_int32,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_float,
        ctypes.c_int32,
    )(lambda *args: calls.append(args[:7] + args[8:9]))
    llvm.add_symbol("p_0.slow", ctypes.cast(slow, ctypes.c_void_p).value)
    llvm.add_symbol("p.error", ctypes.cast(slow, ctypes.c_void_p).value)  # never called here
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    launcher = ctypes.CFUNCTYPE(
        None,
        *[ctypes.c_int64] * 6,
        ctypes.c_int32,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_float,
        ctypes.c_int32,
    )(engine.get_function_address("p_0"))
    launcher(2, 1, 1, 32, 1, 1, 0, None, 7, 1.5, 3)  # null CUfunction: through Python
    assert calls == [(2, 1, 1, 32, 1, 1, 0, 7)]


class DeviceArray:
    """A stand-in for a torch/CuPy array: only `__cuda_array_interface__`."""

    def __init__(self, array: np.ndarray, strides: tuple[int, ...] | None = None):
        self.array = array
        self.__cuda_array_interface__ = {
            "shape": array.shape,
            "typestr": array.dtype.str,
            "data": (array.ctypes.data, False),
            "strides": strides,
            "version": 3,
        }


def test_cuda_arrays_are_passed_without_copies(fake_cuda: FakeDriver) -> None:
    a, b, c = (np.full(300, v, np.float32) for v in (1.0, 2.0, 0.0))
    _gpu(VADD, "vadd")(DeviceArray(a), DeviceArray(b), DeviceArray(c))
    assert fake_cuda.uploads == 0
    np.testing.assert_array_equal(c, 3.0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((np.zeros(4, np.float64),) * 3, "expected dtype float32"),
        ((np.zeros((2, 2), np.float32),) * 3, "expected rank 1"),
        ((np.zeros(4, np.float32),) * 2, "takes 3 arguments, 2 given"),
        ((np.zeros(4, np.float32), np.zeros(4, np.float32), 3.0), "expected a numpy or CUDA"),
        (
            (DeviceArray(np.zeros(4, np.float32), (8,)),) * 3,
            "the device array is not C-contiguous",
        ),
    ],
    ids=["dtype", "rank", "count", "scalar-for-array", "strided"],
)
def test_bad_arguments_are_diagnostics(fake_cuda: FakeDriver, args: Any, message: str) -> None:
    with pytest.raises(LoopoptError, match=message):
        _gpu(VADD, "vadd")(*args)


def test_bad_scalar_is_a_diagnostic(fake_cuda: FakeDriver) -> None:
    a = np.zeros((4, 4), np.float32)
    with pytest.raises(LoopoptError, match="argument 2: expected an integer for index"):
        _gpu(JACOBI_2D, "jacobi")(a, a.copy(), 2.5)


def test_host_code_cannot_touch_device_arrays() -> None:
    text = VADD.replace(
        "    %n = memref.dim %A, %c0 : memref<?xf32>\n",
        "    %n = memref.dim %A, %c0 : memref<?xf32>\n"
        "    %x = memref.load %A[%c0] : memref<?xf32>\n",
    )
    with pytest.raises(LoopoptError, match="cannot run 'memref.load': its arrays live on the GPU"):
        _gpu(text, "vadd", pipeline="")  # already mapped: nothing maps the load


def test_launch_arguments_must_match_the_kernel() -> None:
    text = (
        VADD.replace("%C, %n) <{kernel", "%C) <{kernel")
        .replace("0, 0, 0, 0, 4, 0>", "0, 0, 0, 0, 3, 0>")
        .replace("memref<?xf32>, index) -> ()\n", "memref<?xf32>) -> ()\n")
    )
    with pytest.raises(LoopoptError, match="passes .* to @vadd_k0, which takes"):
        _gpu(text, "vadd")


def test_timer_queues_an_l2_flush_ahead_of_each_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """time_kernel, as triton.testing.do_bench: per run, a 256 MB memset (cold L2; the GPU is
    busy with it while the host launches), then start event, run, end event; one wait at the
    end; the median of the events' intervals."""
    log: list[str] = []
    elapsed = iter([5.0, 1.0, 3.0])

    def call(name: str, *args: Any) -> Any:
        if name == "cuEventElapsedTime":
            return next(elapsed)
        log.append(name)
        if name == "cuMemsetD32Async":
            assert args[1:3] == (0, cuda.L2_FLUSH_BYTES // 4)
        return object() if name == "cuEventCreate" else None

    device = types.SimpleNamespace(arch="sm_90", name="fake")
    monkeypatch.setattr(cuda, "context", lambda: device)
    monkeypatch.setattr(cuda, "synchronize", lambda: log.append("sync"))
    monkeypatch.setattr(cuda, "_driver", lambda: type("D", (), {"CUstream": int}))
    monkeypatch.setattr(cuda, "_FLUSH", type("B", (), {"ptr": 0x1000})())
    monkeypatch.setattr(cuda, "call", call)
    ms = cuda.time_kernel(lambda: log.append("run"), warmup=1, repeat=3)
    assert ms == 3.0
    per_run = ["cuMemsetD32Async", "cuEventRecord", "run", "cuEventRecord"]
    start = log.index("cuMemsetD32Async")
    assert log[:start] == ["run", "sync", *["cuEventCreate"] * 6]
    assert log[start : start + 12] == per_run * 3
    assert log[start + 12 :] == ["cuEventSynchronize", *["cuEventDestroy"] * 6]


def test_cpu_target_runs_the_pipeline_up_to_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda, "available", lambda: False)
    text, func, arrays = kernels.matmul(6, 5, 4, np.random.default_rng(0))
    kern = loopopt.compile(text, func=func, pipeline="loop-tile{tile-sizes=2,2}")
    assert kern.target == "cpu"
    a, b, c = (x.copy() for x in arrays)
    expected = c + a @ b
    kern(a, b, c)
    np.testing.assert_allclose(c, expected, rtol=1e-5)
    with pytest.raises(LoopoptError, match="holds GPU kernels; it cannot run on the CPU"):
        loopopt.compile(VADD, func="vadd", target="cpu")
    with pytest.raises(LoopoptError, match="unknown target 'tpu'"):
        loopopt.compile(VADD, func="vadd", target="tpu")  # type: ignore[arg-type]


def test_gpu_target_needs_mapped_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    text, func, _ = kernels.matmul(6, 5, 4, np.random.default_rng(0))
    monkeypatch.setattr(api, "all_passes", lambda: {})
    with pytest.raises(LoopoptError, match="nothing in @matmul is mapped onto the GPU"):
        loopopt.compile(text, func=func, target="gpu", arch="sm_90")


# ---- on the device -------------------------------------------------------------------------


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _relative_error(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_vector_add(rng: np.random.Generator, n: int) -> None:
    a, b = _rand(rng, n), _rand(rng, n)
    c = np.full(n, np.nan, np.float32)
    _gpu(VADD, "vadd")(a, b, c)
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.gpu
def test_transpose_through_shared_memory(rng: np.random.Generator) -> None:
    a = _rand(rng, 1000, 777)
    b = np.full((777, 1000), np.nan, np.float32)
    _gpu(TRANSPOSE, "transpose")(a, b)
    np.testing.assert_array_equal(b, a.T)


@pytest.mark.gpu
def test_naive_matmul_1000(rng: np.random.Generator) -> None:
    a, b = _rand(rng, 1000, 1000), _rand(rng, 1000, 1000)
    c = np.full((1000, 1000), np.nan, np.float32)
    _gpu(MATMUL, "matmul")(a, b, c)
    assert _relative_error(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-5


@pytest.mark.gpu
def test_dynamic_shared_memory_above_48kb(rng: np.random.Generator) -> None:
    a = _rand(rng, 3 * 16384)
    b = np.full_like(a, np.nan)
    _gpu(REVERSE_CHUNKS, "reverse")(a, b)
    np.testing.assert_array_equal(b, a.reshape(3, 16384)[:, ::-1].reshape(-1))


@pytest.mark.gpu
def test_warp_shuffle_sum(rng: np.random.Generator) -> None:
    a = _rand(rng, 128 * 20)
    out = np.full(4 * 20, np.nan, np.float32)
    _gpu(WARP_SUM, "warp_sum")(a, out)
    np.testing.assert_allclose(out, a.astype(np.float64).reshape(-1, 32).sum(1), atol=1e-4)


@pytest.mark.gpu
def test_math_from_libdevice(rng: np.random.Generator) -> None:
    from loopopt.backend.libdevice import find_libdevice

    if find_libdevice() is None:
        pytest.skip("libdevice not found")
    a = _rand(rng, 1000)
    out = np.full_like(a, np.nan)
    _gpu(MATH, "math")(a, out)
    x = a.astype(np.float64)
    ref = np.exp(x) + np.tanh(x) * np.sin(x) + np.abs(x) ** 1.5
    np.testing.assert_allclose(out, ref, rtol=2e-6, atol=1e-6)


def _jacobi_reference(a: np.ndarray, b: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = a.astype(np.float64), b.astype(np.float64)

    def sweep(src: np.ndarray, dst: np.ndarray) -> None:
        dst[1:-1, 1:-1] = 0.2 * (
            src[1:-1, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:] + src[2:, 1:-1] + src[:-2, 1:-1]
        )

    for _ in range(steps):
        sweep(a, b)
        sweep(b, a)
    return a, b


@pytest.mark.gpu
def test_jacobi_2d_time_loop_on_the_host(rng: np.random.Generator) -> None:
    a, b = _rand(rng, 203, 203), _rand(rng, 203, 203)
    ref_a, ref_b = _jacobi_reference(a, b, 10)
    _gpu(JACOBI_2D, "jacobi")(a, b, 10)
    np.testing.assert_allclose(a, ref_a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b, ref_b, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
def test_time_loop_launches_natively_after_the_first_checked_launch(
    rng: np.random.Generator,
) -> None:
    jacobi = _gpu(JACOBI_2D, "jacobi").function
    a, b = _rand(rng, 203, 203), _rand(rng, 203, 203)
    ref_a, ref_b = _jacobi_reference(a, b, 25)
    jacobi(a, b, 25)
    np.testing.assert_allclose(a, ref_a, rtol=1e-4, atol=1e-5)
    slots = [ctypes.c_void_p.from_address(a).value for a in jacobi.program.slots.values()]
    assert all(slots)  # both sites and cuLaunchKernel: later launches went native
    jacobi.program.begin_call()
    assert [
        ctypes.c_void_p.from_address(jacobi.program.slots[s]).value for s, _ in jacobi.program.sites
    ] == [None, None]


@pytest.mark.gpu
def test_native_launch_failure_is_a_diagnostic() -> None:
    jacobi = _gpu(JACOBI_2D, "jacobi").function
    failed = ctypes.cast(
        jacobi.program.failure(), ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32)
    )
    failed(1, 1)  # CUDA_ERROR_INVALID_VALUE at the second site
    with pytest.raises(LoopoptError, match="launch of @sweep_k0: CUDA_ERROR_INVALID_VALUE"):
        jacobi.program.raise_pending()


@pytest.mark.gpu
def test_torch_tensors_are_used_in_place(rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    a, b = _rand(rng, 5000), _rand(rng, 5000)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    tc = torch.full((5000,), float("nan"), device="cuda")
    pointer = tc.data_ptr()
    _gpu(VADD, "vadd")(ta, tb, tc)
    assert tc.data_ptr() == pointer
    np.testing.assert_array_equal(tc.cpu().numpy(), a + b)
    with pytest.raises(LoopoptError, match="not C-contiguous"):
        m = torch.zeros((64, 64), device="cuda")
        _gpu(TRANSPOSE, "transpose")(m.t(), m)


@pytest.mark.gpu
def test_event_timing(rng: np.random.Generator) -> None:
    a, b = _rand(rng, 1000, 1000), _rand(rng, 1000, 1000)
    c = np.zeros((1000, 1000), np.float32)
    matmul_ms = _gpu(MATMUL, "matmul").time(a, b, c, repeat=5)
    v = _rand(rng, 1000)
    vadd_ms = _gpu(VADD, "vadd").time(v, v, v.copy(), repeat=5)
    assert 0 < vadd_ms < matmul_ms < 1000
    assert _relative_error(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-5


@pytest.mark.gpu
def test_launch_failure_is_a_diagnostic(rng: np.random.Generator) -> None:
    text = VADD.replace("%c256 = arith.constant 256", "%c256 = arith.constant 2048")
    v = _rand(rng, 4096)
    with pytest.raises(LoopoptError, match="@vadd_k0 .*block 2048x1x1.*CUDA_ERROR_INVALID_VALUE"):
        _gpu(text, "vadd")(v, v, v.copy())


@pytest.mark.gpu
def test_auto_target_picks_the_gpu() -> None:
    assert cuda.available()
    assert loopopt.compile(VADD, func="vadd").target == "gpu"


@pytest.mark.gpu
@pytest.mark.parametrize(
    "case",
    [
        lambda rng: kernels.matmul(37, 45, 29, rng),
        lambda rng: kernels.conv2d(40, 33, 3, 5, rng),
        lambda rng: kernels.syrk(30, 17, rng),
        lambda rng: kernels.jacobi_1d(5, 100, rng),
        lambda rng: kernels.wavefront(20, 30, rng),
    ],
    ids=["matmul", "conv2d", "syrk", "jacobi_1d", "wavefront"],
)
def test_foundation_kernels_on_the_gpu_match_the_cpu(rng: np.random.Generator, case: Any) -> None:
    text, func, arrays = case(rng)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
    loopopt.compile(text, func=func, target="cpu")(*expected)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
    loopopt.compile(text, func=func, pipeline="gpu-map-loops", target="gpu")(*got)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
