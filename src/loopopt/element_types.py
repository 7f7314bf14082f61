"""The scalar types loopopt compiles and runs, defined once: IR type ↔ numpy dtype ↔ C type.

    numpy_dtype(BFloat16Type())        # ml_dtypes' bfloat16: bf16 arrays on the host
    numpy_dtype(Float16Type())         # numpy.float16
    c_type(Float32Type())              # ctypes.c_float, for a scalar argument or result
    c_type(Float16Type())              # None: f16/bf16 are element types, not call arguments
    bfloat_bits(0.1)                   # 0x3DCD: the bfloat16 nearest to 0.1

Floats are f16 (IEEE binary16), bf16 (bfloat16: f32's exponent, 8 significant bits), f32 and
f64; LLVM calls the first two `half` and `bfloat`, PTX `.f16` and `.bf16`. Every other float
type (f80, tf32, the f8 types) is refused where the lowering meets it. f16 and bf16 are
storage types at the call boundary: arrays of them are passed by pointer, but a scalar
argument or result must be f32 or f64 (convert inside with arith.extf / arith.truncf): C
(ctypes) has no half type to pass one in a register. bfloat16 arrays on the host are
ml_dtypes' `bfloat16` (the numpy dtype JAX and TensorFlow use).
"""

from __future__ import annotations

import ctypes
import math
import struct
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
)
from xdsl.ir import Attribute

LOWERED_FLOATS = Float16Type | BFloat16Type | Float32Type | Float64Type
"""The float types the lowering knows (others are refused with their name)."""

HALF_FLOATS = Float16Type | BFloat16Type
"""16-bit floats: element (storage) types; math functions on them go through f32."""

INTEGER_WIDTHS = (8, 16, 32, 64)
"""Widths of the integer types arrays and scalars may have."""

_C_TYPES: dict[str, type[Any]] = {
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
}


def bfloat16() -> np.dtype[Any]:
    """ml_dtypes' bfloat16 numpy dtype (imported on first use)."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def numpy_dtype(t: Attribute) -> np.dtype[Any] | None:
    """The numpy dtype of array elements of type `t` (index is int64), else None."""
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, Float16Type):
        return np.dtype(np.float16)
    if isinstance(t, BFloat16Type):
        return bfloat16()
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, IntegerType) and t.width.data in INTEGER_WIDTHS:
        return np.dtype(f"int{t.width.data}")
    return None


SCALAR_TYPES = "scalars are f32, f64, i8 to i64 or index; f16 and bf16 only array elements"
"""What a refused scalar argument or result is told."""


def c_type(t: Attribute) -> type[Any] | None:
    """The ctypes type of a scalar argument or result of type `t`, else None (f16/bf16 too)."""
    dtype = numpy_dtype(t)
    return None if dtype is None else _C_TYPES.get(dtype.name)


def is_float_dtype(dtype: np.dtype[Any]) -> bool:
    """Whether `dtype` holds floats (bfloat16's numpy kind is 'V', not 'f')."""
    return dtype.kind == "f" or dtype == bfloat16()


def bfloat_bits(value: float) -> int:
    """The bfloat16 nearest to `value` (ties to even), as its 16 bits; NaN is a quiet NaN.
    Rounds once: f64 → f32 rounding to odd (keeps the sticky bit), then f32 → bf16 to even."""
    if math.isnan(value):
        return 0x7FC0
    try:
        single = struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:  # beyond float32, so beyond bfloat16: infinity
        return 0xFF80 if value < 0 else 0x7F80
    back = struct.unpack("<f", struct.pack("<I", single))[0]
    if back != value and single & 1 == 0:
        single += -1 if abs(back) > abs(value) else 1
    return (single + 0x7FFF + ((single >> 16) & 1)) >> 16
