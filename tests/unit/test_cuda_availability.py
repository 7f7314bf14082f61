"""Without a usable GPU, every message says what is missing (cuda-python, the driver or a
device), and target="auto" says once why it runs on the CPU. The driver is faked (no GPU here)."""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from collections.abc import Callable

import conftest
import numpy as np
import pytest

import loopopt
from loopopt import api
from loopopt.runtime import cuda

frontend_kernel = importlib.import_module("loopopt.frontend.kernel")  # (shadowed by kernel())

SUCCESS, NO_DEVICE = 0, 100
VADD = """func.func @vadd(%A: memref<8xf32>, %B: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %B[%i] : memref<8xf32>
  }
  return
}
"""


def _driver(init: Callable[[int], object], devices: int = 1) -> types.SimpleNamespace:
    """cuda-python's driver module as far as `cuda.context()` gets without a device."""
    return types.SimpleNamespace(
        CUresult=types.SimpleNamespace(CUDA_SUCCESS=SUCCESS),
        cuInit=init,
        cuDeviceGetCount=lambda: (SUCCESS, devices),
        cuGetErrorName=lambda error: (SUCCESS, b"CUDA_ERROR_NO_DEVICE"),
        cuGetErrorString=lambda error: (SUCCESS, b"no CUDA-capable device is detected"),
    )


def _no_libcuda(flags: int) -> object:
    raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search')


def _hide_cuda_python(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("cuda", "cuda.bindings", "cuda.bindings.driver"):
        monkeypatch.setitem(sys.modules, name, None)  # importing them fails


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """No device opened, no answer or warning of an earlier test remembered."""
    monkeypatch.setattr(cuda, "_DEVICE", None)
    monkeypatch.setattr(api, "_WARNED", set())
    monkeypatch.setattr(frontend_kernel, "_AUTO_TARGET", [])


def test_cuda_python_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide_cuda_python(monkeypatch)
    monkeypatch.setattr(cuda, "_installed_cuda_python", lambda: None)
    assert cuda.unavailable_reason() == "cuda-python is not installed (pip install 'loopopt[gpu]')"


def test_cuda_python_installed_but_not_loadable(monkeypatch: pytest.MonkeyPatch) -> None:
    """An import error of an installed cuda-python is not 'cuda-python is not installed'."""
    _hide_cuda_python(monkeypatch)
    monkeypatch.setattr(cuda, "_installed_cuda_python", lambda: "cuda-bindings 13.0.0")
    reason = cuda.unavailable_reason()
    assert reason is not None
    assert reason.startswith("cuda-bindings 13.0.0 is installed but cannot be loaded: ")


@pytest.mark.parametrize(
    ("driver", "says"),
    [
        (_driver(_no_libcuda), 'no CUDA driver: "cuda" is an NVIDIA driver library'),
        (
            _driver(lambda flags: (NO_DEVICE,)),
            "CUDA error in cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
        ),
        (_driver(lambda flags: (SUCCESS,), devices=0), "no CUDA device"),
    ],
    ids=["no-driver", "no-device-at-init", "no-device"],
)
def test_cuda_python_without_a_gpu(
    monkeypatch: pytest.MonkeyPatch, driver: types.SimpleNamespace, says: str
) -> None:
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    reason = cuda.unavailable_reason()
    assert reason is not None and reason.startswith(says), reason
    assert not cuda.available()


def test_auto_target_says_once_why_it_runs_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda, "_driver", lambda: _driver(lambda flags: (SUCCESS,), devices=0))
    with pytest.warns(api.CpuFallbackWarning) as caught:
        kern = loopopt.compile(VADD, func="vadd")
    assert kern.target == "cpu"
    [warning] = caught
    assert str(warning.message) == "target='auto' runs on the CPU: no usable GPU: no CUDA device"
    assert warning.filename == __file__  # the user's line, not loopopt's
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        assert loopopt.compile(VADD, func="vadd").target == "cpu"
        assert loopopt.compile(VADD, func="vadd", target="cpu").target == "cpu"


@loopopt.kernel
def copy(A, B):
    for i in range(A.shape[0]):
        B[i] = A[i]


def test_a_kernel_on_auto_says_why_too(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide_cuda_python(monkeypatch)
    monkeypatch.setattr(cuda, "_installed_cuda_python", lambda: None)
    a, b = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    with pytest.warns(
        api.CpuFallbackWarning, match="no usable GPU: cuda-python is not installed"
    ) as w:
        copy(a, b)
    assert [warning.filename for warning in w] == [__file__]
    np.testing.assert_array_equal(a, b)


class _Item:
    def __init__(self, gpu: bool) -> None:
        self.gpu, self.markers = gpu, []

    def get_closest_marker(self, name: str) -> object:
        return object() if self.gpu and name == "gpu" else None

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.markers.append(marker)


def test_gpu_tests_skip_with_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda-python there, no GPU: the skip reason says so (it used to blame cuda-python)."""
    monkeypatch.setattr(cuda, "_driver", lambda: _driver(_no_libcuda))
    gpu_test, cpu_test = _Item(gpu=True), _Item(gpu=False)
    conftest.pytest_collection_modifyitems(None, [gpu_test, cpu_test])  # type: ignore[arg-type]
    [skip] = gpu_test.markers
    assert skip.kwargs["reason"].startswith("no usable GPU: no CUDA driver: ")
    assert cpu_test.markers == []
