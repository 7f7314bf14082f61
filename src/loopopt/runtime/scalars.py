"""Scalar arguments of compiled functions (CPU and GPU alike): checked and converted."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import Float32Type, Float64Type, IndexType, IntegerType
from xdsl.ir import Attribute

from loopopt.diagnostics import LoopoptError
from loopopt.runtime.device_arrays import cuda_array_interface


def scalar_argument(where: str, arg: Any, t: Attribute) -> int | float:
    """`arg` as a Python number for a parameter of type `t` (float, integer or index), or a
    LoopoptError naming `where` when it is an array, a bool, not a number, or out of range."""
    if isinstance(arg, np.ndarray | bool | np.bool_) or cuda_array_interface(arg) is not None:
        raise LoopoptError(f"{where}: expected a scalar of type {t}, got {type(arg).__name__}")
    if isinstance(t, Float32Type | Float64Type):
        if not isinstance(arg, int | float | np.integer | np.floating):
            raise LoopoptError(f"{where}: expected a number for {t}, got {type(arg).__name__}")
        return float(arg)
    if not isinstance(arg, int | np.integer):
        raise LoopoptError(f"{where}: expected an integer for {t}, got {type(arg).__name__}")
    bits = 64 if isinstance(t, IndexType) else t.width.data if isinstance(t, IntegerType) else 0
    value = int(arg)
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise LoopoptError(f"{where}: {value} does not fit in {t}")
    return value
