"""`loopopt.array`: host data that stays on the GPU across kernel calls (NUDA-style coherence).

    A = loopopt.array(np.random.rand(1024, 1024).astype(np.float32))
    step(A, B)          # GPU: A and B are copied to the device once ...
    step(B, A)          # ... and stay there: no copies between calls
    A.numpy()           # the host reads: only now is A copied back (read-only view)
    A[0, 0] = 1.0       # the host writes: the device copy is stale, re-sent on the next call

Each array knows which of its copies is current: a kernel that writes it on the device makes
the host copy stale, a host write (`A[...] = v`, `numpy(writeable=True)`) the device copy.
Copies happen only when a stale copy is needed. CPU kernels use the host copy. The wrapper
holds its own (C-contiguous) copy of the data it is made from. Device memory comes from
runtime/cuda.py and is freed with the array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopopt.diagnostics import LoopoptError
from loopopt.runtime import cuda


class DeviceView:
    """The device copy of an array, as a `__cuda_array_interface__` (for GPU kernels)."""

    def __init__(self, pointer: int, shape: tuple[int, ...], dtype: np.dtype[Any]):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": dtype.str,
            "data": (pointer, False),
            "strides": None,
            "version": 3,
        }


class array:  # noqa: N801 (numpy-style name: loopopt.array)
    """A NumPy array that loopopt kernels may keep on the GPU between calls."""

    __loopopt_array__ = True

    def __init__(self, data: Any, dtype: Any = None):
        self._host: np.ndarray = np.array(data, dtype=dtype, order="C", copy=True)
        self._device: Any = None
        self._host_current = True
        self._device_current = False

    @property
    def shape(self) -> tuple[int, ...]:
        return self._host.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._host.dtype

    @property
    def ndim(self) -> int:
        return self._host.ndim

    def __len__(self) -> int:
        return len(self._host)

    @property
    def host_current(self) -> bool:
        """Is the host copy up to date (no copy needed to read it)?"""
        return self._host_current

    @property
    def device_current(self) -> bool:
        """Is there an up-to-date device copy?"""
        return self._device is not None and self._device_current

    def numpy(self, writeable: bool = False) -> np.ndarray:
        """The data on the host (copied back if a kernel changed it on the device). A
        writeable array may be changed by the caller: the device copy becomes stale."""
        self._sync_host()
        if writeable:
            self._device_current = False
            return self._host
        view = self._host.view()
        view.flags.writeable = False
        return view

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        data = self.numpy()
        if copy or (dtype is not None and np.dtype(dtype) != data.dtype):
            return np.array(data, dtype=dtype, copy=True)
        return data

    def __getitem__(self, index: Any) -> Any:
        item = self.numpy()[index]
        return item.copy() if isinstance(item, np.ndarray) else item

    def __setitem__(self, index: Any, value: Any) -> None:
        self.numpy(writeable=True)[index] = value

    def __repr__(self) -> str:
        where = "host" if self._host_current else "device"
        return f"loopopt.array({self.numpy()!r}, current on {where})"

    def _sync_host(self) -> None:
        if not self._host_current:
            self._device.copy_to(self._host)
            self._host_current = True

    def for_host_kernel(self) -> np.ndarray:
        """The host copy for a CPU kernel (made current)."""
        self._sync_host()
        return self._host

    def written_on_host(self) -> None:
        self._device_current = False

    def for_device_kernel(self) -> DeviceView:
        """The device copy for a GPU kernel (allocated and copied only when stale)."""
        if self._device is None:
            self._device = cuda.to_device(self._host)
        elif not self._device_current:
            self._device.copy_from(self._host)
        self._device_current = True
        return DeviceView(int(self._device.ptr), self._host.shape, self._host.dtype)

    def written_on_device(self) -> None:
        if self._device is None:
            raise LoopoptError("loopopt.array: written on a device it was never copied to")
        self._host_current = False

    def device(self) -> DeviceView:
        """The device copy for torch/CuPy (`torch.as_tensor(A.device(), device="cuda")`);
        they may write it, so the host copy counts as stale from now on."""
        view = self.for_device_kernel()
        self._host_current = False
        return view

    def free_device(self) -> None:
        """Copy back if needed and release the device copy."""
        self._sync_host()
        if self._device is not None:
            self._device.free()
        self._device = None
        self._device_current = False
