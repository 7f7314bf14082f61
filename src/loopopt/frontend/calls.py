"""The functions a kernel may call: builtins, `math`, NumPy scalar functions and casts.

    math.sqrt(A[i])    → extf + math.sqrt in f64: a Python float, as Python computes it
    np.sqrt(A[i])      → math.sqrt in the argument's precision (f32 stays f32)
    math.floor(x)      → math.floor + fptosi: a Python int
    np.float32(x)      → a conversion;  min/max/abs/pow/round/float/int as in Python

`math.*` follows Python (arguments converted to float64, the result a Python float); the NumPy
functions keep a float32 argument in float32. Domain errors (math.sqrt(-1), math.log(0)) give
NaN or infinities instead of Python's exceptions.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith, llvm
from xdsl.dialects import math as mathd
from xdsl.ir import Operation, SSAValue

from loopopt.frontend.emitter import Emitter
from loopopt.frontend.operators import absolute, binary, min_max, promote_all, type_of
from loopopt.frontend.types import BOOL, F32, F64, I32, I64, PY_FLOAT, PY_INT, Ty
from loopopt.frontend.values import FloatConst, Index, Scalar, Value

Unary = Callable[[SSAValue], Operation]

_UNARY: dict[str, Unary] = {
    "sqrt": mathd.SqrtOp, "exp": mathd.ExpOp, "log": mathd.LogOp, "log2": mathd.Log2Op,
    "log10": mathd.Log10Op, "sin": mathd.SinOp, "cos": mathd.CosOp, "tan": mathd.TanOp,
    "tanh": mathd.TanhOp, "sinh": mathd.SinhOp, "cosh": mathd.CoshOp, "asin": mathd.AsinOp,
    "acos": mathd.AcosOp, "atan": mathd.AtanOp, "erf": mathd.ErfOp, "fabs": mathd.AbsFOp,
    "exp2": mathd.Exp2Op,
}  # fmt: skip
_BINARY: dict[str, Callable[[SSAValue, SSAValue], Operation]] = {
    "pow": mathd.PowFOp,
    "atan2": mathd.Atan2Op,
    "copysign": mathd.CopySignOp,
    "fmod": llvm.FRemOp,
}
_TO_INT: dict[str, Unary] = {"floor": mathd.FloorOp, "ceil": mathd.CeilOp, "trunc": mathd.TruncOp}

MATH_FUNCTIONS: dict[object, str] = {
    getattr(math, name): name for name in [*_UNARY, *_BINARY, *_TO_INT] if hasattr(math, name)
}
NUMPY_FUNCTIONS: dict[object, str] = {
    np.sqrt: "sqrt", np.exp: "exp", np.log: "log", np.log2: "log2", np.log10: "log10",
    np.sin: "sin", np.cos: "cos", np.tan: "tan", np.tanh: "tanh", np.sinh: "sinh",
    np.cosh: "cosh", np.arcsin: "asin", np.arccos: "acos", np.arctan: "atan", np.exp2: "exp2",
    np.fabs: "fabs", np.abs: "abs", np.floor: "floor", np.ceil: "ceil", np.trunc: "trunc",
    np.power: "pow", np.arctan2: "atan2", np.copysign: "copysign", np.fmod: "fmod",
    np.minimum: "minimum", np.maximum: "maximum",
}  # fmt: skip
CASTS: dict[object, Ty] = {
    float: PY_FLOAT, int: PY_INT, np.float32: F32, np.float64: F64, np.int32: I32, np.int64: I64,
}  # fmt: skip
BUILTINS: dict[object, str] = {
    min: "min", max: "max", abs: "abs", len: "len", range: "range", pow: "pow", round: "round",
}  # fmt: skip
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}


def known(callee: object) -> bool:
    return any(
        _lookup(table, callee) is not None
        for table in (MATH_FUNCTIONS, NUMPY_FUNCTIONS, CASTS, BUILTINS)
    )


def _lookup(table: dict[object, object], callee: object) -> object | None:
    try:
        return table.get(callee)
    except TypeError:  # unhashable
        return None


def call(e: Emitter, callee: object, args: list[Value], node: ast.Call) -> Value:
    """The value of calling `callee` (a known function) on `args`."""
    builtin = _lookup(BUILTINS, callee)  # type: ignore[arg-type]
    if builtin in ("min", "max"):
        return min_max(e, str(builtin), args, node)
    if builtin == "abs":
        return absolute(e, _one(e, args, node), node)
    if builtin == "pow":
        if len(args) != 2:
            raise e.error(node, "pow() takes two arguments here (no modulus)")
        return binary(e, ast.Pow(), args[0], args[1], node)
    if builtin == "round":
        return _round(e, _one(e, args, node), node)
    cast = _lookup(CASTS, callee)  # type: ignore[arg-type]
    if isinstance(cast, Ty):
        return _cast(e, cast, _one(e, args, node), node)
    name = _lookup(MATH_FUNCTIONS, callee)  # type: ignore[arg-type]
    if isinstance(name, str):
        return _math(e, name, args, node, numpy=False)
    name = _lookup(NUMPY_FUNCTIONS, callee)  # type: ignore[arg-type]
    if isinstance(name, str):
        return _math(e, name, args, node, numpy=True)
    raise e.error(node, f"call of unknown function '{e.source.text(node.func)}'")


def _one(e: Emitter, args: list[Value], node: ast.Call) -> Value:
    if len(args) != 1:
        raise e.error(node, f"'{e.source.text(node.func)}' takes one argument")
    return args[0]


def _round(e: Emitter, value: Value, node: ast.AST) -> Value:
    """Python's round(x): to the nearest int, halves to even."""
    ty = type_of(e, value, node)
    if ty.kind != "float":
        return _cast(e, PY_INT, value, node)
    rounded = e.value(mathd.RoundEvenOp(e.coerce(value, ty, node)), node)
    return Scalar(e.convert(rounded, ty, PY_INT, node), PY_INT)


def _cast(e: Emitter, ty: Ty, value: Value, node: ast.AST) -> Value:
    if ty == PY_INT and isinstance(value, Index):
        return value
    if ty == PY_FLOAT and isinstance(value, FloatConst):
        return value
    type_of(e, value, node)  # a number
    return Scalar(e.coerce(value, ty, node), ty)  # float → int: toward zero, as int()/astype


def _math(e: Emitter, name: str, args: list[Value], node: ast.Call, numpy: bool) -> Value:
    arity = 2 if name in _BINARY or name in ("minimum", "maximum") else 1
    if len(args) != arity:
        raise e.error(node, f"'{e.source.text(node.func)}' takes {arity} argument(s) here")
    ty = promote_all(e, args, node)
    if ty == BOOL:
        raise e.error(node, f"'{e.source.text(node.func)}' of a condition")
    if numpy and ty.kind == "int" and name in ("abs", "minimum", "maximum"):
        if name == "abs":
            return absolute(e, args[0], node)
        return min_max(e, "min" if name == "minimum" else "max", args, node)
    if not numpy:
        ty = PY_FLOAT  # math.* computes in float64 and returns a Python float
    elif ty.kind == "int" or ty.weak:
        ty = F64
    values = [e.coerce(arg, ty, node) for arg in args]
    if name in ("minimum", "maximum"):
        op = arith.MinimumfOp if name == "minimum" else arith.MaximumfOp
        return Scalar(e.value(op(values[0], values[1]), node), ty)
    if name in _BINARY:
        return Scalar(e.value(_BINARY[name](values[0], values[1]), node), ty)
    if name == "abs":
        return Scalar(e.value(mathd.AbsFOp(values[0]), node), ty)
    if name in _TO_INT:
        rounded = e.value(_TO_INT[name](values[0]), node)
        if numpy:
            return Scalar(rounded, ty)
        return Scalar(e.convert(rounded, ty, PY_INT, node), PY_INT)
    return Scalar(e.value(_UNARY[name](values[0]), node), ty)
