"""Launch arguments: one device array passed twice is refused (kernel pointers are noalias),
and so is a misaligned array where the kernel asked for aligned ones (vector copies); loading
a kernel reads its resources and warns of spills."""

from __future__ import annotations

import ctypes
import types
import warnings

import pytest

from loopopt.diagnostics import LoopoptError
from loopopt.runtime import cuda
from loopopt.runtime.cuda import require_aligned, require_distinct_arrays

POINTER, SIZE = ctypes.c_void_p, ctypes.c_int64


def test_distinct_arrays_and_sizes_pass() -> None:
    """A size equal to an array's address is no second array; the address as a pointer is."""
    assert require_distinct_arrays("k", [(4096, POINTER), (8192, POINTER), (4096, SIZE)]) is None
    with pytest.raises(LoopoptError, match="arguments 0 and 2 are the same array"):
        require_distinct_arrays("k", [(4096, POINTER), (8192, POINTER), (4096, POINTER)])


def test_null_pointers_are_not_arrays() -> None:
    """Two null pointers (no array) are not the same array twice; two equal addresses are."""
    assert require_distinct_arrays("k", [(None, POINTER), (0, POINTER), (0, POINTER)]) is None
    with pytest.raises(LoopoptError, match="arguments 1 and 2 are the same array"):
        require_distinct_arrays("k", [(None, POINTER), (16, POINTER), (16, POINTER)])


def test_the_same_array_twice_is_refused() -> None:
    with pytest.raises(LoopoptError, match=r"kernel k0: arguments 0 and 2 are the same array"):
        require_distinct_arrays(
            "k0", [(4096, ctypes.c_void_p), (8192, ctypes.c_void_p), (4096, ctypes.c_void_p)]
        )


def test_aligned_arrays_pass_and_sizes_are_not_pointers() -> None:
    """A size of 8 is not checked for alignment; an address of 8 is refused."""
    assert require_aligned("k", [(4096, POINTER), (8, SIZE), (None, POINTER)], 16) is None
    with pytest.raises(LoopoptError, match="argument 1 is not 16-byte aligned"):
        require_aligned("k", [(4096, POINTER), (8, POINTER), (None, POINTER)], 16)


def test_a_misaligned_array_is_refused() -> None:
    with pytest.raises(LoopoptError, match=r"kernel k0: argument 1 is not 16-byte aligned"):
        require_aligned("k0", [(4096, ctypes.c_void_p), (4100, ctypes.c_void_p)], 16)


def test_loading_a_kernel_reads_its_registers_and_warns_of_spills(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """get_kernel asks the driver for the kernel's registers and local memory; more than
    SPILL_WARNING_BYTES of local memory per thread is a SpillWarning naming what to change."""
    attributes = types.SimpleNamespace(
        CU_FUNC_ATTRIBUTE_NUM_REGS="regs", CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES="local"
    )
    values = {"regs": 40, "local": 6240}
    driver = types.SimpleNamespace(CUfunction_attribute=attributes)
    calls = {
        "cuModuleGetFunction": lambda module, name: f"fn:{name.decode()}",
        "cuFuncGetAttribute": lambda attribute, function: values[attribute],
    }
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    monkeypatch.setattr(cuda, "load_ptx", lambda ptx: "module")
    monkeypatch.setattr(cuda, "call", lambda name, *args: calls[name](*args))
    monkeypatch.setattr(cuda, "_KERNELS", {})
    with pytest.warns(
        cuda.SpillWarning,
        match=r"kernel k0: 40 registers and 6240 bytes .*"
        r"max-registers=cap",
    ):
        kernel = cuda.get_kernel("ptx", "k0")
    assert (kernel.registers, kernel.local_bytes, kernel.function) == (40, 6240, "fn:k0")
    values["local"] = cuda.SPILL_WARNING_BYTES
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cuda.get_kernel("ptx", "k1").local_bytes == cuda.SPILL_WARNING_BYTES
