"""Launch arguments: one device array passed twice is refused (kernel pointers are noalias)."""

from __future__ import annotations

import ctypes

import pytest

from loopopt.diagnostics import LoopoptError
from loopopt.runtime.cuda import require_distinct_arrays


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
