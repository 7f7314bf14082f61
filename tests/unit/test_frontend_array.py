"""`loopopt.array`: data stays on the device across kernel calls; copies only when needed.

A fake driver stands in for runtime/cuda.py and counts the copies (uploads, downloads);
kernels are compiled for the GPU for real and their launches recorded, not run.
"""

from __future__ import annotations

import numpy as np
import pytest
from fake_gpu import FakeDriver, fake_gpu  # noqa: F401 (a fixture)

import loopopt
from loopopt.diagnostics import LoopoptError
from loopopt.runtime import cuda


def step(src, dst):
    for i in range(1, src.shape[0] - 1):
        dst[i] = 0.5 * (src[i - 1] + src[i + 1])


def reads(src, out):
    for i in range(src.shape[0]):
        out[i] = src[i]


def test_data_stays_on_the_device_between_calls(fake_gpu: FakeDriver) -> None:  # noqa: F811
    kern = loopopt.kernel(step)
    a, b = loopopt.array(np.arange(16, dtype=np.float32)), loopopt.array(np.zeros(16, np.float32))
    for _ in range(3):
        kern(a, b, target="gpu")
        kern(b, a, target="gpu")
    assert len(fake_gpu.launches) == 6
    assert (fake_gpu.uploads, fake_gpu.downloads) == (2, 0)  # one upload each, no copy back
    assert a.device_current and not a.host_current
    a.numpy()
    a.numpy()
    assert fake_gpu.downloads == 1 and a.host_current and a.device_current


def test_arrays_a_kernel_only_reads_stay_current_on_the_host(fake_gpu: FakeDriver) -> None:  # noqa: F811
    kern = loopopt.kernel(reads)
    src, out = loopopt.array(np.ones(8)), loopopt.array(np.zeros(8))
    kern(src, out, target="gpu")
    assert src.host_current and src.device_current
    assert not out.host_current
    src.numpy()
    assert fake_gpu.downloads == 0


def test_host_writes_make_the_device_copy_stale(fake_gpu: FakeDriver) -> None:  # noqa: F811
    kern = loopopt.kernel(reads)
    src, out = loopopt.array(np.ones(8)), loopopt.array(np.zeros(8))
    kern(src, out, target="gpu")
    src[3] = 5.0
    assert not src.device_current
    kern(src, out, target="gpu")
    assert fake_gpu.uploads == 3  # src, out, then src again
    src.numpy(writeable=True)[0] = 2.0
    kern(src, out, target="gpu")
    assert fake_gpu.uploads == 4


def test_cpu_kernels_use_the_host_copy(fake_gpu: FakeDriver) -> None:  # noqa: F811
    kern = loopopt.kernel(step)
    a = loopopt.array(np.arange(8, dtype=np.float32))
    b = loopopt.array(np.zeros(8, np.float32))
    kern(a, b, target="gpu")  # b now current on the device only
    kern(b, a, target="cpu")  # needs b on the host: one download; a changes on the host
    assert fake_gpu.downloads == 1
    assert not a.device_current and a.host_current
    kern(a, b, target="gpu")
    assert fake_gpu.uploads == 3  # a, b, then a again


def test_results_on_the_host_after_cpu_calls() -> None:
    kern = loopopt.kernel(step)
    data = np.arange(8, dtype=np.float64)
    a, b = loopopt.array(data), loopopt.array(np.zeros(8))
    kern(a, b, target="cpu")
    expected = np.zeros(8)
    step(data, expected)
    np.testing.assert_array_equal(np.asarray(b), expected)
    np.testing.assert_array_equal(data, np.arange(8))  # the wrapper holds its own copy
    assert b[2] == expected[2] and b.shape == (8,) and len(b) == 8 and b.dtype == np.float64


def test_views_for_reading_are_read_only() -> None:
    a = loopopt.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    view = a.numpy()
    with pytest.raises(ValueError, match="read-only"):
        view[0, 0] = 0.0
    row = a[1]
    row[0] = 9.0  # a copy: the array is unchanged
    assert a[1, 0] == 3.0 and "current on host" in repr(a)


def test_free_device_copies_back_first(fake_gpu: FakeDriver) -> None:  # noqa: F811
    kern = loopopt.kernel(step)
    a, b = loopopt.array(np.arange(8.0)), loopopt.array(np.zeros(8))
    kern(a, b, target="gpu")
    b.free_device()
    assert fake_gpu.downloads == 1 and b.host_current and not b.device_current
    with pytest.raises(LoopoptError, match=r"never copied"):
        loopopt.array(np.zeros(2)).written_on_device()


def test_a_failed_run_leaves_the_host_copy_current(
    fake_gpu: FakeDriver,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kern = loopopt.kernel(step)
    a, b = loopopt.array(np.arange(8.0)), loopopt.array(np.zeros(8))
    kern(a, b, target="gpu")
    a.numpy()

    def fail(*args: object) -> None:
        raise LoopoptError("CUDA error in cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED")

    monkeypatch.setattr(cuda, "launch", fail)
    with pytest.raises(LoopoptError, match="LAUNCH_FAILED"):
        kern(b, a, target="gpu")  # writes a: its host copy (current before) stays the truth
    assert a.host_current and not a.device_current
    assert not b.host_current and b.device_current  # b was current on the device only
