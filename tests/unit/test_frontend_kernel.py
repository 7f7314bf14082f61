"""`@loopopt.kernel` calls: caching, schedules, targets, write-back and what calls refuse.

GPU calls run against a fake driver (fake_gpu.py): PTX is generated for real, launches are
recorded instead of run, device memory is host memory. Tests of results on a device are in
test_frontend_gpu.py (marked `gpu`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from fake_gpu import FakeDriver, fake_gpu  # noqa: F401 (a fixture)

import loopopt
from loopopt import api
from loopopt.diagnostics import LoopoptError
from loopopt.frontend.kernel import pipeline_for
from loopopt.passes import gpu_map_loops


def scale(A, alpha):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] *= alpha


def copy(src, dst, n=4):
    for i in range(n):
        dst[i] = src[i]


def shift(src, dst, n):
    for i in range(n):
        dst[i] = src[i + 1]


def _compiles(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    calls: list[tuple[str, str]] = []
    real = api.compile

    def counting(
        module: Any, func: str, pipeline: str = "", target: str = "auto", **options: Any
    ) -> Any:
        calls.append((pipeline, target))
        return real(module, func, pipeline, target, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "compile", counting)
    monkeypatch.setattr(loopopt, "compile", counting, raising=False)
    return calls


def test_compiles_once_per_signature_schedule_and_target(monkeypatch: pytest.MonkeyPatch) -> None:
    compiles = _compiles(monkeypatch)
    kern = loopopt.kernel(scale)
    a = np.ones((3, 4), np.float32)
    kern(a, 2.0, target="cpu")
    kern(a, 3.0, target="cpu")
    np.testing.assert_array_equal(a, 6.0)
    kern(np.ones((5, 4), np.float32), 2.0, target="cpu")  # new shape
    kern(np.ones((3, 4)), 2.0, target="cpu")  # new dtype
    kern(a, 2, target="cpu")  # an int scalar
    kern(a, 2.0, target="cpu", schedule="loop-tile{tile-sizes=2,2}")
    assert len(compiles) == 5
    assert compiles[-1] == ("loop-tile{tile-sizes=2,2}", "cpu")
    np.testing.assert_array_equal(a, 24.0)


def test_dynamic_shapes_compile_once_for_all_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    compiles = _compiles(monkeypatch)
    kern = loopopt.kernel(scale, static_shapes=False)
    for rows in (2, 5, 7):
        a = np.ones((rows, 3), np.float32)
        kern(a, 0.5, target="cpu")
        np.testing.assert_array_equal(a, 0.5)
    assert len(compiles) == 1


def test_schedules_transform_and_keep_results(rng: np.random.Generator) -> None:
    kern = loopopt.kernel(scale)
    a = rng.standard_normal((37, 21)).astype(np.float32)
    expected = a * np.float32(1.5)
    for schedule in (None, "auto", "loop-tile{tile-sizes=8,8}", "loop-unroll{unroll-factor=4}"):
        got = a.copy()
        kern(got, 1.5, target="cpu", schedule=schedule)
        np.testing.assert_array_equal(got, expected)
    assert pipeline_for("auto") in ("", "auto-schedule")
    with pytest.raises(LoopoptError, match=r"invalid pass pipeline 'no-such-pass'"):
        kern(a, 1.5, target="cpu", schedule="no-such-pass")
    with pytest.raises(LoopoptError, match=r"unknown target 'tpu'"):
        kern(a, 1.5, target="tpu")


def test_results_are_written_back_like_a_python_call() -> None:
    kern = loopopt.kernel(scale)
    base = np.ones((4, 6), np.float32)
    view = base[:, ::2]  # not contiguous
    kern(view, 2.0, target="cpu")
    np.testing.assert_array_equal(base[:, ::2], 2.0)
    np.testing.assert_array_equal(base[:, 1::2], 1.0)
    assert kern(base, 1.0, target="cpu") is None


def test_default_parameter_values() -> None:
    kern = loopopt.kernel(copy)
    src, dst = np.arange(6.0), np.zeros(6)
    kern(src, dst, target="cpu")
    np.testing.assert_array_equal(dst, [0, 1, 2, 3, 0, 0])
    kern(src, dst, 6, target="cpu")
    np.testing.assert_array_equal(dst, src)


def test_calls_that_would_leave_an_array_are_refused() -> None:
    kern = loopopt.kernel(shift)
    src, dst = np.arange(10.0), np.zeros(10)
    kern(src, dst, 9, target="cpu")
    with pytest.raises(LoopoptError, match=r"'src\[i \+ 1\]' may index src\[10\] outside its"):
        kern(src, dst, 10, target="cpu")
    with pytest.raises(LoopoptError, match=r"at i = 9, n = 10"):
        kern(src, dst, 10, target="cpu")
    dynamic = loopopt.kernel(shift, static_shapes=False)
    dynamic(src, dst, 9, target="cpu")
    with pytest.raises(LoopoptError, match=r"outside its shape \(dynamic\)"):
        dynamic(src[:5], dst, 5, target="cpu")


def boundaries(A, B):
    n = A.shape[0]
    for i in range(n):
        if i == 0:
            B[i] = A[i]
        else:
            B[i] = A[i - 1] + A[i]
        B[i] += A[0] if i == 0 else A[i - 1]
        if i == 0 or i == n - 1 or A[i] < 0.0:
            B[i] += 1.0
        elif i != 1:
            B[i] += A[i - 1] + A[i + 1] + A[i - 2]


def unguarded(A, B):
    for i in range(A.shape[0]):
        if i > 0 and A[i] > 0.0:
            B[i] = A[i]
        else:
            B[i] = A[i - 1]


def test_conditions_guarding_reads_are_taken_into_account() -> None:
    a, b = np.arange(6.0), np.zeros(6)
    expected = b.copy()
    boundaries(a, expected)
    loopopt.kernel(boundaries)(a, b, target="cpu")  # every read is inside A where it runs
    np.testing.assert_array_equal(b, expected)
    with pytest.raises(LoopoptError, match=r"'A\[i - 1\]' may index A\[-1\] .* \(at i = 0\)"):
        loopopt.kernel(unguarded)(a, b, target="cpu")


def test_read_only_and_overlapping_arrays_are_refused() -> None:
    kern = loopopt.kernel(copy)
    src, dst = np.arange(6.0), np.zeros(6)
    dst.flags.writeable = False
    with pytest.raises(LoopoptError, match=r"argument 'dst' is read-only but the kernel writes"):
        kern(src, dst, target="cpu")
    src.flags.writeable = False
    kern(src, np.zeros(6), target="cpu")  # reading a read-only array is fine
    data = np.arange(8.0)
    with pytest.raises(LoopoptError, match=r"arguments 'src' and 'dst' share memory"):
        kern(data[1:], data[:6], target="cpu")
    kern(data[:4], np.zeros(4), target="cpu")


def test_gpu_calls_copy_numpy_arrays_in_and_out(fake_gpu: FakeDriver) -> None:  # noqa: F811
    kern = loopopt.kernel(scale)
    a = np.ones((64, 64), np.float32)
    kern(a, 2.0)  # target auto: the (fake) GPU
    assert fake_gpu.launches == ["scale_k0"]
    assert fake_gpu.uploads == 1 and kern.compile(a, 2.0).target == "gpu"


def test_cuda_arrays_need_the_gpu_target(fake_gpu: FakeDriver) -> None:  # noqa: F811
    class DeviceArray:
        def __init__(self, array: np.ndarray):
            self.array = array
            self.__cuda_array_interface__ = {
                "shape": array.shape,
                "typestr": array.dtype.str,
                "data": (array.ctypes.data, False),
                "strides": None,
                "version": 3,
            }

    kern = loopopt.kernel(scale)
    device = DeviceArray(np.ones((8, 8), np.float32))
    kern(device, 2.0, target="gpu")
    assert fake_gpu.uploads == 0 and fake_gpu.launches == ["scale_k0"]
    with pytest.raises(LoopoptError, match=r"a CUDA array needs target='gpu'"):
        kern(device, 2.0, target="cpu")


def test_kernel_wraps_the_function() -> None:
    kern = loopopt.kernel(scale)
    assert kern.__name__ == "scale" and kern.__wrapped__ is scale
    assert "loopopt.kernel scale" in repr(kern)
    decorated = loopopt.kernel(static_shapes=False)(scale)
    assert decorated.static_shapes is False


def running_sum(A, out):
    total = 0.0
    for i in range(A.shape[0]):
        total += A[i]
    out[0] = total


def test_a_reduction_runs_on_the_gpu(fake_gpu: FakeDriver) -> None:  # noqa: F811
    a, out = np.arange(10.0, dtype=np.float32), np.zeros(1, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loopopt.kernel(running_sum)(a, out)
    assert fake_gpu.launches == ["running_sum_k0"]


def test_auto_target_runs_what_the_gpu_refuses_on_the_cpu(
    fake_gpu: FakeDriver,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(self: object) -> None:
        raise LoopoptError("gpu-map-loops: refused for the test")

    monkeypatch.setattr(gpu_map_loops._Host, "function", refuse)
    kern = loopopt.kernel(running_sum)
    a, out = np.arange(10.0, dtype=np.float32), np.zeros(1, np.float32)
    with pytest.warns(UserWarning, match=r"running_sum: runs on the CPU: .*gpu-map-loops: refused"):
        kern(a, out)
    assert out[0] == 45.0 and fake_gpu.launches == []
    kern(a, out)  # remembered: no second attempt, no second warning
    with pytest.raises(LoopoptError, match="gpu-map-loops"):
        kern(a, out, target="gpu")
