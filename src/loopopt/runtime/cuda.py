"""The CUDA driver API through cuda-python: context, PTX modules, launches, buffers, timing.

    kernel = get_kernel(ptx, "vadd_k0")                 # driver JIT, cached by PTX text
    A = to_device(np.ones(1024, np.float32))
    launch(kernel, (4, 1, 1), (256, 1, 1), [(A.ptr, ctypes.c_void_p), (1024, ctypes.c_int64)])
    synchronize(); A.copy_to(host_array); A.free()
    ms = time_kernel(lambda: launch(...))               # median of CUDA-event timings

Every driver call goes through `call()`/`check()`, which raise a LoopoptError with the CUDA
error's name and string. cuda-python is imported on first use only, so importing loopopt never
needs CUDA; without cuda-python, a driver or a device, `context()` raises a LoopoptError that
says which is missing (`unavailable_reason()`) and `available()` is False. Everything runs in
the device's primary context (the one torch and CuPy use) on the legacy default stream, so it
is ordered with their default-stream work.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.metadata
import statistics
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from loopopt.diagnostics import LoopoptError
from loopopt.target import STATIC_SHARED_BYTES


def _driver() -> Any:
    """cuda-python's driver module, or a LoopoptError saying what is missing: cuda-python, or
    what it failed to load (an import error is not taken for cuda-python being absent)."""
    failure: Exception | None = None
    try:
        from cuda.bindings import driver
    except Exception as e:
        failure = e
        try:
            from cuda import cuda as driver  # cuda-python 11/12 layout
        except Exception:
            installed = _installed_cuda_python()
            if installed is None:
                raise LoopoptError(
                    "cuda-python is not installed (pip install 'loopopt[gpu]')"
                ) from None
            detail = str(failure).strip().splitlines()
            raise LoopoptError(
                f"{installed} is installed but cannot be loaded: "
                f"{detail[0] if detail else type(failure).__name__}"
            ) from None
    return driver


def _installed_cuda_python() -> str | None:
    """The installed distribution that provides the driver bindings (`cuda-bindings 13.0.1`)."""
    for distribution in ("cuda-bindings", "cuda-python"):
        try:
            return f"{distribution} {importlib.metadata.version(distribution)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def result_text(code: int) -> str:
    """`NAME: description` of a CUresult's number (what native launches get back)."""
    return _error_text(_driver().CUresult(code))


def _error_text(error: Any) -> str:
    """`NAME: description` of a CUresult."""
    driver = _driver()
    _, name = driver.cuGetErrorName(error)
    _, text = driver.cuGetErrorString(error)
    name = name.decode() if isinstance(name, bytes) else str(error)
    text = text.decode() if isinstance(text, bytes) else ""
    return f"{name}: {text}"


def check(result: Any, what: str) -> Any:
    """The values of a driver call's result `(CUresult, *values)`, or a LoopoptError."""
    driver = _driver()
    error, *values = result if isinstance(result, tuple) else (result,)
    if error != driver.CUresult.CUDA_SUCCESS:
        raise LoopoptError(f"CUDA error in {what}: {_error_text(error)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def call(name: str, *args: Any) -> Any:
    """Call driver function `name` and check its result."""
    return check(getattr(_driver(), name)(*args), name)


@dataclass
class Device:
    """The GPU in use (device 0) and its primary context."""

    ordinal: int
    handle: Any
    context: Any
    name: str
    compute_capability: tuple[int, int]

    @property
    def arch(self) -> str:
        """The PTX target for this device: sm_80, sm_89 or sm_90 (newer GPUs JIT sm_90 PTX)."""
        major, minor = self.compute_capability
        if (major, minor) < (8, 0):
            raise LoopoptError(f"{self.name} (sm_{major}{minor}) is older than sm_80")
        if major >= 9:
            return "sm_90"
        return "sm_89" if (major, minor) >= (8, 9) else "sm_80"


_DEVICE: Device | None = None
_LOCK = threading.Lock()
_CURRENT = threading.local()


def context() -> Device:
    """Initialize CUDA once (device 0, primary context) and make it current in this thread."""
    global _DEVICE
    with _LOCK:
        if _DEVICE is None:
            _DEVICE = _open_device()
    if getattr(_CURRENT, "context", None) is not _DEVICE.context:
        call("cuCtxSetCurrent", _DEVICE.context)
        _CURRENT.context = _DEVICE.context
    return _DEVICE


def _open_device() -> Device:
    driver = _driver()
    try:
        result = driver.cuInit(0)
    except Exception as e:  # no libcuda: cuda-python raises its own loader errors
        raise LoopoptError(f"no CUDA driver: {str(e).splitlines()[0]}") from None
    check(result, "cuInit")
    if call("cuDeviceGetCount") == 0:
        raise LoopoptError("no CUDA device")
    handle = call("cuDeviceGet", 0)
    raw_name = call("cuDeviceGetName", 256, handle)
    name = raw_name.split(b"\0", 1)[0].decode() if isinstance(raw_name, bytes) else str(raw_name)
    attribute = driver.CUdevice_attribute
    major = call(
        "cuDeviceGetAttribute", attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle
    )
    minor = call(
        "cuDeviceGetAttribute", attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle
    )
    ctx = call("cuDevicePrimaryCtxRetain", handle)
    return Device(0, handle, ctx, name, (int(major), int(minor)))


def available() -> bool:
    """Is a CUDA device usable here (cuda-python, a driver and a GPU)?"""
    return unavailable_reason() is None


def unavailable_reason() -> str | None:
    """Why no CUDA device is usable here, naming what is missing (cuda-python, the driver, a
    device), or None when one is."""
    try:
        context()
    except LoopoptError as e:
        return e.message
    return None


@dataclass
class Kernel:
    """A kernel of a loaded PTX module."""

    name: str
    function: Any
    shared_opt_in: int = STATIC_SHARED_BYTES
    registers: int = 0
    """Registers per thread the driver's compiler allocated."""
    local_bytes: int = 0
    """Local memory per thread: spilled registers (and local arrays)."""


_MODULES: dict[str, Any] = {}
_KERNELS: dict[tuple[str, str], Kernel] = {}


def load_ptx(ptx: str) -> Any:
    """Load PTX into the context (the driver compiles it for the device); cached by text."""
    context()
    module = _MODULES.get(ptx)
    if module is None:
        image = ctypes.create_string_buffer(ptx.encode())
        module = call("cuModuleLoadData", ctypes.addressof(image))
        _MODULES[ptx] = module
    return module


def get_kernel(ptx: str, name: str) -> Kernel:
    """Kernel `name` of the PTX module `ptx`."""
    kernel = _KERNELS.get((ptx, name))
    if kernel is None:
        function = call("cuModuleGetFunction", load_ptx(ptx), name.encode())
        attribute = _driver().CUfunction_attribute
        registers, local = (
            int(call("cuFuncGetAttribute", a, function))
            for a in (
                attribute.CU_FUNC_ATTRIBUTE_NUM_REGS,
                attribute.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
            )
        )
        kernel = Kernel(name, function, registers=registers, local_bytes=local)
        warn_spills(kernel)
        _KERNELS[(ptx, name)] = kernel
    return kernel


_GLOBALS: dict[tuple[str, str], tuple[int, int]] = {}


def module_global(ptx: str, name: str) -> tuple[int, int]:
    """Device address and bytes of the global `name` of the PTX module `ptx` (cached)."""
    found = _GLOBALS.get((ptx, name))
    if found is None:
        address, nbytes = call("cuModuleGetGlobal", load_ptx(ptx), name.encode())
        found = (int(address), int(nbytes))
        _GLOBALS[(ptx, name)] = found
    return found


def copy_to_global(ptx: str, name: str, source: int | float | None, nbytes: int) -> None:
    """Copy `nbytes` of device memory at `source` into the global `name` of the module `ptx`
    (a constant-memory array), on the default stream: ordered after earlier launches and
    before later ones, without synchronizing the host."""
    context()
    address, size = module_global(ptx, name)
    if size != nbytes or not source:
        raise LoopoptError(f"cannot copy {nbytes} bytes into {name} ({size} bytes)")
    call("cuMemcpyDtoDAsync", address, int(source), nbytes, _driver().CUstream(0))


SPILL_WARNING_BYTES = 256
"""Local memory per thread above which loading a kernel warns (its registers spilled)."""


class SpillWarning(UserWarning):
    """A kernel keeps part of its registers in local memory."""


def warn_spills(kernel: Kernel) -> None:
    """Warn, once per kernel load, when the compiled kernel spills more than
    SPILL_WARNING_BYTES per thread: what it has and what to change."""
    if kernel.local_bytes <= SPILL_WARNING_BYTES:
        return
    warnings.warn(
        SpillWarning(
            f"kernel {kernel.name}: {kernel.registers} registers and {kernel.local_bytes} bytes "
            "of local memory per thread (spilled registers); use a smaller register tile or "
            "fewer threads per block, or gpu-map-loops{max-registers=cap} when ptxas chose "
            "fewer registers than the block allows"
        ),
        stacklevel=3,
    )


Param = tuple[int | float | None, type[Any]]
"""A kernel argument and its ctypes type (c_void_p for device pointers)."""


def require_distinct_arrays(kernel: str, params: Sequence[Param]) -> None:
    """Refuse a launch that passes one device array as two arguments: the kernels' pointer
    parameters are `noalias` (loopopt's dependence analysis assumes distinct arrays do not
    overlap), so such a launch could compute a wrong result silently."""
    seen: dict[int, int] = {}
    for position, (value, ctype) in enumerate(params):
        if ctype is not ctypes.c_void_p or not value:
            continue
        address = int(value)
        if address in seen:
            raise LoopoptError(
                f"kernel {kernel}: arguments {seen[address]} and {position} are the same array; "
                "loopopt assumes distinct arrays do not overlap (pass a copy)"
            )
        seen[address] = position


def require_aligned(kernel: str, params: Sequence[Param], align: int) -> None:
    """Refuse a launch whose array arguments are not `align`-byte aligned: the kernel's
    pointer parameters promise it (its copies move 128-bit vectors)."""
    for position, (value, ctype) in enumerate(params):
        if ctype is ctypes.c_void_p and value and int(value) % align:
            raise LoopoptError(
                f"kernel {kernel}: argument {position} is not {align}-byte aligned (its copies "
                f"use {align * 8}-bit vectors; pass an aligned copy of the array)"
            )


def launch(
    kernel: Kernel,
    grid: Sequence[int],
    block: Sequence[int],
    params: Sequence[Param],
    shared_bytes: int = 0,
) -> None:
    """Launch `kernel` on the default stream; `params` are (value, ctypes type) pairs."""
    context()
    require_distinct_arrays(kernel.name, params)
    if shared_bytes > kernel.shared_opt_in:
        attribute = _driver().CUfunction_attribute
        call(
            "cuFuncSetAttribute",
            kernel.function,
            attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            shared_bytes,
        )
        kernel.shared_opt_in = shared_bytes
    values = [ctype(0 if value is None else value) for value, ctype in params]
    pointers = (ctypes.c_void_p * max(1, len(values)))(*(ctypes.addressof(v) for v in values))
    call(
        "cuLaunchKernel",
        kernel.function,
        *(int(g) for g in grid),
        *(int(b) for b in block),
        int(shared_bytes),
        _driver().CUstream(0),
        ctypes.addressof(pointers),
        0,
    )


def function_handle(kernel: Any) -> int | None:
    """The CUfunction of a loaded kernel as an address (None for anything else: a test's
    stand-in kernel never launches natively)."""
    return int(kernel.function) if isinstance(kernel, Kernel) else None


@functools.cache
def launch_kernel_address() -> int:
    """The address of the driver's `cuLaunchKernel` (for native launches from JIT code: the
    library cuda-python loaded, as the process has it open)."""
    library = ctypes.CDLL("libcuda.so.1")
    address = ctypes.cast(library.cuLaunchKernel, ctypes.c_void_p).value
    assert address is not None
    return address


def synchronize() -> None:
    """Wait for all work of the context; launch errors surface here."""
    context()
    call("cuCtxSynchronize")


class DeviceBuffer:
    """`nbytes` of device memory; freed by `free()` or when garbage-collected."""

    def __init__(self, nbytes: int):
        context()
        self.nbytes = nbytes
        self.ptr = int(call("cuMemAlloc", max(1, nbytes)))

    def copy_from(self, array: np.ndarray) -> None:
        """Host → device (a C-contiguous array of exactly `nbytes`)."""
        _check_host(array, self.nbytes)
        if self.nbytes:
            call("cuMemcpyHtoD", self.ptr, array.ctypes.data, self.nbytes)

    def copy_to(self, array: np.ndarray) -> None:
        """Device → host (a writeable C-contiguous array of exactly `nbytes`)."""
        _check_host(array, self.nbytes)
        if self.nbytes:
            call("cuMemcpyDtoH", array.ctypes.data, self.ptr, self.nbytes)

    def free(self) -> None:
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            call("cuMemFree", ptr)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the context may be gone
            self.free()


def _check_host(array: np.ndarray, nbytes: int) -> None:
    if not array.flags.c_contiguous or array.nbytes != nbytes:
        raise LoopoptError(f"host array must be C-contiguous with {nbytes} bytes")


def to_device(array: np.ndarray) -> DeviceBuffer:
    """A device copy of `array`."""
    host = np.ascontiguousarray(array)
    buffer = DeviceBuffer(host.nbytes)
    buffer.copy_from(host)
    return buffer


L2_FLUSH_BYTES = 256 * 1024 * 1024
"""Bytes written before each timed run (as triton.testing.do_bench): more than any L2 (the
H200's holds 50 MB), so every run starts with a cold cache."""

_FLUSH: DeviceBuffer | None = None


def _flush_l2() -> None:
    """Queue a write of `L2_FLUSH_BYTES` on the default stream (evicts the L2 cache)."""
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = DeviceBuffer(L2_FLUSH_BYTES)
    call("cuMemsetD32Async", _FLUSH.ptr, 0, L2_FLUSH_BYTES // 4, _driver().CUstream(0))


def time_kernel(run: Callable[[], object], *, warmup: int = 3, repeat: int = 20) -> float:
    """Median milliseconds of `run()` (which launches work): kernel time only, measured with
    CUDA events as triton.testing.do_bench does. Before each run, an L2 flush is queued, and
    the run's events and launches are queued behind it. The GPU is busy with the flush while
    the host launches, so the host's launch overhead stays out of the events' interval.
    Events taken around a launch on an idle GPU would count it: about 10 us a launch on an
    H200 host, 15% of a 65 us convolution."""
    context()
    for _ in range(warmup):
        run()
    synchronize()
    stream = _driver().CUstream(0)
    pairs = [(call("cuEventCreate", 0), call("cuEventCreate", 0)) for _ in range(max(1, repeat))]
    try:
        for start, end in pairs:
            _flush_l2()
            call("cuEventRecord", start, stream)
            run()
            call("cuEventRecord", end, stream)
        call("cuEventSynchronize", pairs[-1][1])
        times = [float(call("cuEventElapsedTime", start, end)) for start, end in pairs]
    finally:
        for start, end in pairs:
            call("cuEventDestroy", start)
            call("cuEventDestroy", end)
    return statistics.median(times)
