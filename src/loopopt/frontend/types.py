"""Scalar types of the Python subset, with NumPy 2's promotion rules, and argument specs.

    promote(F32, PY_FLOAT) == F32        # a Python float adopts the array's precision
    promote(I32, F32) == F64             # as numpy: int32 + float32 -> float64
    spec_of(np.zeros((4, 8), np.float32)) == ArraySpec("float32", (4, 8))

Python ints and floats are *weak* (NEP 50): combined with a NumPy-typed value they take its
type. A Python int is an `index` in the IR (64 bits; loop variables, sizes, integer
parameters), a Python float an f64; array elements and NumPy scalars are strong.

float16 and bfloat16 (ml_dtypes) are array element types only: an element read from such an
array is widened to float32, arithmetic on it is float32, and a store rounds to the array's
type (to nearest even). This is what torch's reductions and matmuls (float32 accumulation)
and compiled torch / Triton kernels do; a single operation `C[i] = A[i] + B[i]` gives
exactly numpy's and torch's float16/bfloat16 result, a chain of them rounds once instead of
after every operation. Scalars of these types (arguments, NumPy scalars) are not accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute

from loopopt.runtime.device_arrays import cuda_array_interface

Kind = Literal["bool", "int", "float"]


@dataclass(frozen=True)
class Ty:
    """A scalar type: kind, bits, whether it is a weak Python number, and for 16-bit floats
    whether it is bfloat16 (else IEEE float16)."""

    kind: Kind
    bits: int
    weak: bool = False
    brain: bool = False

    def ir(self) -> Attribute:
        """The IR type: index for Python ints, i1 for conditions."""
        if self.kind == "bool":
            return i1
        if self.kind == "int":
            return IndexType() if self.weak else (i32 if self.bits == 32 else i64)
        if self.bits == 16:
            return BFloat16Type() if self.brain else Float16Type()
        return Float32Type() if self.bits == 32 else Float64Type()

    @property
    def storage_only(self) -> bool:
        """float16 / bfloat16: read as float32, rounded on store."""
        return self.kind == "float" and self.bits == 16

    def __str__(self) -> str:
        if self.weak:
            return "int" if self.kind == "int" else "float"
        if self.brain:
            return "bfloat16"
        return "bool" if self.kind == "bool" else f"{self.kind}{self.bits}"


BOOL = Ty("bool", 1)
PY_INT = Ty("int", 64, weak=True)
PY_FLOAT = Ty("float", 64, weak=True)
I32 = Ty("int", 32)
I64 = Ty("int", 64)
F32 = Ty("float", 32)
F64 = Ty("float", 64)
F16 = Ty("float", 16)
BF16 = Ty("float", 16, brain=True)

DTYPES: dict[str, Ty] = {"float32": F32, "float64": F64, "int32": I32, "int64": I64}
"""Scalar (and array element) types the front-end computes in, by numpy dtype name."""

ELEMENT_DTYPES: dict[str, Ty] = {**DTYPES, "float16": F16, "bfloat16": BF16}
"""Array element types the front-end supports, by numpy dtype name."""


class PromotionError(Exception):
    """Two types that do not combine (a condition with a number)."""


def promote(a: Ty, b: Ty) -> Ty:
    """The type of `a <op> b` under NumPy 2 (NEP 50) rules, for the supported types."""
    if a == b:
        return a
    if BOOL in (a, b):
        raise PromotionError(f"cannot combine {a} and {b}")
    if a.kind == b.kind:
        if a.weak:
            return b
        if b.weak:
            return a
        return a if a.bits >= b.bits else b
    floating, integer = (a, b) if a.kind == "float" else (b, a)
    if integer.weak:
        return floating
    if floating.weak:
        return F64
    return F64


def join(a: Ty, b: Ty) -> Ty:
    """The type a variable holds when it is assigned values of types `a` and `b`."""
    return promote(a, b)


@dataclass(frozen=True)
class ArraySpec:
    """An array argument: dtype name and shape (None entries: sizes known only at run time)."""

    dtype: str
    shape: tuple[int | None, ...]

    @property
    def ty(self) -> Ty:
        return ELEMENT_DTYPES[self.dtype]


@dataclass(frozen=True)
class ScalarSpec:
    """A scalar argument of type `ty` (Python int → index, Python float → weak f64)."""

    ty: Ty


Spec = ArraySpec | ScalarSpec


def spec_of(value: Any, dynamic: bool = False) -> Spec | None:
    """The spec of an argument value (None if it is not one the front-end accepts)."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return ScalarSpec(PY_INT)
    if isinstance(value, np.floating) and value.dtype.name in DTYPES:
        return ScalarSpec(DTYPES[value.dtype.name])
    if isinstance(value, float):
        return ScalarSpec(PY_FLOAT)
    shape_dtype = _shape_and_dtype(value)
    if shape_dtype is None:
        return None
    shape, dtype = shape_dtype
    if dtype.name not in ELEMENT_DTYPES or not shape:
        return None
    return ArraySpec(dtype.name, tuple(None if dynamic else int(s) for s in shape))


def unsupported_argument(value: Any) -> str:
    """Why `value` is not an argument the front-end accepts (`spec_of` gave None), in the
    caller's terms: `a 0-d float32 array; kernels take numbers and arrays of one or more …`."""
    kinds = "a float16/bfloat16/float32/float64/int32/int64 array, an int or a float"
    shape_dtype = _shape_and_dtype(value)
    if shape_dtype is not None:
        shape, dtype = shape_dtype
        if dtype.name not in ELEMENT_DTYPES:
            article = "an" if dtype.name[0] in "aeiou" else "a"
            return (
                f"{article} {dtype.name} array; arrays must be float16, bfloat16, float32, "
                "float64, int32 or int64"
            )
        return (
            f"a 0-d {dtype.name} array; kernels take numbers and arrays of one or more "
            "dimensions (reshape it to (1,))"
        )
    if isinstance(value, np.floating) and value.dtype.name in ELEMENT_DTYPES:
        return f"a {value.dtype.name} scalar; {value.dtype.name} is an array element type only"
    if isinstance(value, bool | np.bool_):
        return f"a bool, not {kinds}"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}, not {kinds}"


def _shape_and_dtype(value: Any) -> tuple[tuple[int, ...], np.dtype[Any]] | None:
    if isinstance(value, np.ndarray) or hasattr(value, "__loopopt_array__"):
        return tuple(value.shape), np.dtype(value.dtype)
    interface = cuda_array_interface(value)
    if isinstance(interface, dict):
        return tuple(int(s) for s in interface["shape"]), np.dtype(interface["typestr"])
    return None
