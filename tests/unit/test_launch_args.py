"""Launch arguments: one device array passed twice is refused (kernel pointers are noalias),
and so is a misaligned array where the kernel asked for aligned ones (vector copies)."""

from __future__ import annotations

import ctypes

import pytest

from loopopt.diagnostics import LoopoptError
from loopopt.runtime.cuda import require_aligned, require_distinct_arrays


def test_distinct_arrays_and_sizes_pass() -> None:
    require_distinct_arrays(
        "k", [(4096, ctypes.c_void_p), (8192, ctypes.c_void_p), (4096, ctypes.c_int64)]
    )


def test_null_pointers_are_not_arrays() -> None:
    require_distinct_arrays("k", [(None, ctypes.c_void_p), (0, ctypes.c_void_p)])


def test_the_same_array_twice_is_refused() -> None:
    with pytest.raises(LoopoptError, match=r"kernel k0: arguments 0 and 2 are the same array"):
        require_distinct_arrays(
            "k0", [(4096, ctypes.c_void_p), (8192, ctypes.c_void_p), (4096, ctypes.c_void_p)]
        )


def test_aligned_arrays_pass_and_sizes_are_not_pointers() -> None:
    require_aligned(
        "k", [(4096, ctypes.c_void_p), (8, ctypes.c_int64), (None, ctypes.c_void_p)], 16
    )


def test_a_misaligned_array_is_refused() -> None:
    with pytest.raises(LoopoptError, match=r"kernel k0: argument 1 is not 16-byte aligned"):
        require_aligned("k0", [(4096, ctypes.c_void_p), (4100, ctypes.c_void_p)], 16)
