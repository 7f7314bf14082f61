"""A fake CUDA driver for front-end tests: device memory is host memory, copies are counted,
launches are recorded (not run); PTX is still generated for real (sm_90)."""

from __future__ import annotations

import importlib
import types
from collections.abc import Iterator

import numpy as np
import pytest

from loopopt.runtime import cuda

frontend_kernel = importlib.import_module("loopopt.frontend.kernel")  # (shadowed by kernel())


class FakeBuffer:
    def __init__(self, array: np.ndarray, driver: FakeDriver):
        self.array = np.ascontiguousarray(array).copy()
        self.ptr = self.array.ctypes.data
        self.driver = driver

    def copy_from(self, array: np.ndarray) -> None:
        self.driver.uploads += 1
        self.array[...] = array

    def copy_to(self, out: np.ndarray) -> None:
        self.driver.downloads += 1
        out[...] = self.array

    def free(self) -> None:
        self.ptr = 0


class FakeDriver:
    def __init__(self) -> None:
        self.launches: list[str] = []
        self.uploads = 0
        self.downloads = 0

    def to_device(self, array: np.ndarray) -> FakeBuffer:
        self.uploads += 1
        return FakeBuffer(array, self)


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDriver]:
    driver = FakeDriver()
    device = types.SimpleNamespace(arch="sm_90", name="fake")
    monkeypatch.setattr(frontend_kernel, "_AUTO_TARGET", [])  # target="auto" asks again
    monkeypatch.setattr(cuda, "context", lambda: device)
    monkeypatch.setattr(cuda, "available", lambda: True)
    monkeypatch.setattr(cuda, "synchronize", lambda: None)
    monkeypatch.setattr(cuda, "to_device", driver.to_device)
    monkeypatch.setattr(cuda, "get_kernel", lambda ptx, name: name)
    monkeypatch.setattr(cuda, "launch", lambda k, g, b, p, s=0: driver.launches.append(k))
    yield driver
