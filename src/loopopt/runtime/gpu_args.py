"""Arguments of a GPU program's host function: arrays to device pointers, scalars checked.

    with Arguments("matmul", inputs, (A, B, C)) as prepared:   # numpy A, B, C → device copies
        host_function(*prepared.c_args)                          # device pointers + sizes
        prepared.copy_back()                                     # C (and A, B) copied back

A numpy array is copied to a new device buffer and back; an object with
`__cuda_array_interface__` (torch, CuPy) is passed by its device pointer, without a copy.
Arrays must match the memref type (dtype, rank, static sizes); device arrays must be
C-contiguous. Buffers are freed when the `with` block ends.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import numpy as np
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute

from loopopt.diagnostics import LoopoptError
from loopopt.element_types import numpy_dtype
from loopopt.runtime import cuda
from loopopt.runtime.device_arrays import cuda_array_interface
from loopopt.runtime.scalars import scalar_argument


class Arguments:
    """The C arguments of one call, and the device buffers behind its numpy arrays."""

    def __init__(self, name: str, inputs: tuple[Attribute, ...], args: tuple[Any, ...]):
        if len(args) != len(inputs):
            raise LoopoptError(f"@{name} takes {len(inputs)} arguments, {len(args)} given")
        self.name = name
        self.c_args: list[Any] = []
        self.buffers: list[tuple[np.ndarray, cuda.DeviceBuffer]] = []
        try:
            for index, (arg, t) in enumerate(zip(args, inputs, strict=True)):
                where = f"@{name} argument {index}"
                if isinstance(t, MemRefType):
                    self._array(where, arg, t)
                else:
                    self.c_args.append(scalar_argument(where, arg, t))
        except BaseException:
            self.free()
            raise

    def _array(self, where: str, arg: Any, t: MemRefType) -> None:
        interface = cuda_array_interface(arg)
        if interface is not None:
            pointer, shape = _device_array(where, interface, t)
        elif isinstance(arg, np.ndarray):
            _check(where, arg.dtype, arg.shape, t)
            buffer = cuda.to_device(arg)
            self.buffers.append((arg, buffer))
            pointer, shape = buffer.ptr, arg.shape
        else:
            raise LoopoptError(
                f"{where}: expected a numpy or CUDA array for {t}, got {type(arg).__name__}"
            )
        self.c_args.append(pointer)
        self.c_args += [shape[d] for d, size in enumerate(t.get_shape()) if size < 0]

    def copy_back(self) -> None:
        """Copy the device buffers back into the caller's (writeable) numpy arrays."""
        for array, buffer in self.buffers:
            if not array.flags.writeable:
                continue
            if array.flags.c_contiguous:
                buffer.copy_to(array)
            else:
                host = np.empty(array.shape, array.dtype)
                buffer.copy_to(host)
                np.copyto(array, host)

    def free(self) -> None:
        for _, buffer in self.buffers:
            buffer.free()
        self.buffers = []

    def __enter__(self) -> Arguments:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.free()


def _check(where: str, dtype: np.dtype[Any], shape: tuple[int, ...], t: MemRefType) -> None:
    expected = numpy_dtype(t.element_type)
    if expected is None:
        raise LoopoptError(f"{where}: arrays of {t.element_type} are not supported")
    if dtype != expected:
        raise LoopoptError(f"{where}: expected dtype {expected} for {t}, got {dtype}")
    static = t.get_shape()
    if len(shape) != len(static):
        raise LoopoptError(f"{where}: expected rank {len(static)} for {t}, got {len(shape)}")
    for d, (size, got) in enumerate(zip(static, shape, strict=True)):
        if size >= 0 and size != got:
            raise LoopoptError(
                f"{where}: expected size {size} in dimension {d} for {t}, got shape {shape}"
            )


def _device_array(
    where: str, interface: dict[str, Any], t: MemRefType
) -> tuple[int, tuple[int, ...]]:
    """Pointer and shape of a `__cuda_array_interface__` (must be C-contiguous)."""
    shape = tuple(int(s) for s in interface["shape"])
    dtype = np.dtype(interface["typestr"])
    _check(where, dtype, shape, t)
    strides = interface.get("strides")
    if strides is not None:
        expected: list[int] = []
        step = dtype.itemsize
        for size in reversed(shape):
            expected.insert(0, step)
            step *= size
        if tuple(strides) != tuple(expected) and int(np.prod(shape)) > 1:
            raise LoopoptError(f"{where}: the device array is not C-contiguous")
    return int(interface["data"][0]), shape
