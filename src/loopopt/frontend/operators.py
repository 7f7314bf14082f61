"""Python's arithmetic, comparisons, min/max/abs and ** on front-end values, exactly.

    i + 1        → Index(d0 + 1)              affine where it can be (no op)
    n * m        → a symbol computed once at the top level (arith.muli), still affine
    x // y       → floordivsi (ints) or Python's float floor division (frem + fix-ups)
    max(a, b)    → select(b > a, b, a)         Python keeps the first of equal maxima
    A[i] ** 2    → A[i] * A[i];  x ** y → math.powf

Types follow NumPy 2 (see types.py); integer // and % round toward -inf and float % takes the
divisor's sign, as in Python. Division by zero and integer overflow are not checked (Python
raises or grows): integer x // 0 is 0 and x % 0 is x (lowering/arith_to_llvm.py defines them),
other integer overflow wraps, and float division by zero gives IEEE infinities and NaNs.
"""

from __future__ import annotations

import ast
import math

from xdsl.dialects import arith, llvm
from xdsl.dialects import math as mathd
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr

from loopopt.frontend.emitter import Emitter
from loopopt.frontend.types import BOOL, F64, PY_FLOAT, PY_INT, PromotionError, Ty, promote
from loopopt.frontend.values import (
    BoolConst,
    Bound,
    FloatConst,
    Index,
    Scalar,
    Value,
    constant_of,
)

SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
    ast.RShift: ">>", ast.MatMult: "@",
}  # fmt: skip
FLOAT_OPS = {ast.Add: arith.AddfOp, ast.Sub: arith.SubfOp, ast.Mult: arith.MulfOp}
INT_OPS = {
    ast.Add: arith.AddiOp, ast.Sub: arith.SubiOp, ast.Mult: arith.MuliOp,
    ast.BitAnd: arith.AndIOp, ast.BitOr: arith.OrIOp, ast.BitXor: arith.XOrIOp,
    ast.LShift: arith.ShLIOp, ast.RShift: arith.ShRSIOp,
}  # fmt: skip
FLOAT_PREDICATES = {
    ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge", ast.Eq: "oeq", ast.NotEq: "une",
}  # fmt: skip
INT_PREDICATES = {
    ast.Lt: "slt", ast.LtE: "sle", ast.Gt: "sgt", ast.GtE: "sge", ast.Eq: "eq", ast.NotEq: "ne",
}  # fmt: skip


def type_of(e: Emitter, value: Value, node: ast.AST) -> Ty:
    if isinstance(value, Index | Bound):
        return PY_INT
    if isinstance(value, FloatConst):
        return PY_FLOAT
    if isinstance(value, BoolConst):
        return BOOL
    return e.materialize(value, node).ty


def _promote(e: Emitter, a: Value, b: Value, node: ast.AST) -> Ty:
    return promote_all(e, [a, b], node)


def promote_all(e: Emitter, values: list[Value], node: ast.AST) -> Ty:
    ty = type_of(e, values[0], node)
    try:
        for value in values[1:]:
            ty = promote(ty, type_of(e, value, node))
    except PromotionError:
        text = e.source.text(node)
        raise e.error(node, f"cannot combine a condition with a number in '{text}'") from None
    return ty


def binary(e: Emitter, op: ast.operator, a: Value, b: Value, node: ast.AST) -> Value:
    """`a <op> b` with Python/NumPy semantics."""
    kind = type(op)
    if kind not in SYMBOLS or kind is ast.MatMult:
        raise e.error(node, f"operator '{SYMBOLS.get(kind, kind.__name__)}' is not supported")
    x, y = e.affine(a), e.affine(b)
    if x is not None and y is not None:
        folded = _affine(e, kind, x, y, node)
        if folded is not None:
            return folded
    if isinstance(a, FloatConst | Index) and isinstance(b, FloatConst | Index):
        folded_float = _fold(e, kind, a, b, node)
        if folded_float is not None:
            return folded_float
    ty = _promote(e, a, b, node)
    if ty == BOOL:
        raise e.error(node, f"arithmetic on conditions: '{e.source.text(node)}'")
    if kind is ast.Pow:
        return power(e, a, b, ty, node)
    if kind is ast.Div and ty.kind == "int":
        ty = PY_FLOAT if ty.weak else F64
    lhs, rhs = e.coerce(a, ty, node), e.coerce(b, ty, node)
    return Scalar(_apply(e, kind, lhs, rhs, ty, node), ty)


def _apply(e: Emitter, kind: type, x: SSAValue, y: SSAValue, ty: Ty, node: ast.AST) -> SSAValue:
    if ty.kind == "float":
        if kind in FLOAT_OPS:
            return e.value(FLOAT_OPS[kind](x, y), node)
        if kind is ast.Div:
            return e.value(arith.DivfOp(x, y), node)
        if kind in (ast.FloorDiv, ast.Mod):
            return float_divmod(e, x, y, ty, node)[0 if kind is ast.FloorDiv else 1]
        raise e.error(node, f"operator '{SYMBOLS[kind]}' needs integers")
    if kind in INT_OPS:
        return e.value(INT_OPS[kind](x, y), node)
    quotient = e.value(arith.FloorDivSIOp(x, y), node)
    if kind is ast.FloorDiv:
        return quotient
    product = e.value(arith.MuliOp(quotient, y), node)
    return e.value(arith.SubiOp(x, product), node)


def _affine(e: Emitter, kind: type, x: AffineExpr, y: AffineExpr, node: ast.AST) -> Value | None:
    """`x <op> y` as an affine expression, or a hoisted symbol; None if neither."""
    x, y = e.atoms.simplify(x), e.atoms.simplify(y)
    cx, cy = constant_of(x), constant_of(y)
    if kind is ast.Add:
        return _int64(e, e.atoms.simplify(x + y), node)
    if kind is ast.Sub:
        return _int64(e, e.atoms.simplify(x - y), node)
    if kind is ast.Mult and (cx is not None or cy is not None):
        return _int64(e, e.atoms.simplify(x * y), node)
    if kind in (ast.FloorDiv, ast.Mod) and cy is not None and cy > 0:
        return Index(e.atoms.simplify(x // cy if kind is ast.FloorDiv else x % cy))
    if cx is not None and cy is not None:
        return _fold_ints(e, kind, cx, cy, node)
    integer_op = kind in INT_OPS or kind in (ast.FloorDiv, ast.Mod)
    if integer_op and e.atoms.symbolic(x) and e.atoms.symbolic(y):

        def build() -> SSAValue:
            lhs, rhs = e.index(x, node), e.index(y, node)
            return _apply(e, kind, lhs, rhs, PY_INT, node)

        value = e.hoist((kind.__name__, str(x), str(y)), build)
        return Index(e.atoms.atom(value, is_dim=False))
    return None


def _fold_ints(e: Emitter, kind: type, x: int, y: int, node: ast.AST) -> Value | None:
    if kind in (ast.FloorDiv, ast.Mod, ast.Div) and y == 0:
        raise e.error(node, f"division by zero in '{e.source.text(node)}'")
    if kind in (ast.LShift, ast.RShift) and y < 0:
        raise e.error(node, f"negative shift count in '{e.source.text(node)}'")
    if kind is ast.Pow and y < 0:
        return FloatConst(float(x) ** y)
    if (kind is ast.Pow and abs(x) > 1 and y >= 64) or (kind is ast.LShift and x and y >= 64):
        return _int64(e, None, node)  # not computed: 2 ** 10**9 would take Python minutes
    table = {
        ast.Mult: lambda: x * y, ast.FloorDiv: lambda: x // y, ast.Mod: lambda: x % y,
        ast.Pow: lambda: x**y, ast.BitAnd: lambda: x & y, ast.BitOr: lambda: x | y,
        ast.BitXor: lambda: x ^ y, ast.LShift: lambda: x << y, ast.RShift: lambda: x >> y,
    }  # fmt: skip
    if kind is ast.Div:
        return FloatConst(x / y)
    return _int64(e, AffineExpr.constant(table[kind]()), node) if kind in table else None


INT64 = range(-(2**63), 2**63)
"""The values of a Python int in a kernel (an `index`, 64 bits)."""


def _int64(e: Emitter, expr: AffineExpr | None, node: ast.AST) -> Index:
    """`expr` as an index value; a diagnostic where it is a constant outside 64 bits (None: one
    known to be)."""
    value = None if expr is None else constant_of(expr)
    if expr is None or (value is not None and value not in INT64):
        shown = "" if value is None else f" = {value}"
        raise e.error(
            node, f"'{e.source.text(node)}'{shown} does not fit in 64 bits (a kernel's ints do)"
        )
    return Index(expr)


def _fold(
    e: Emitter, kind: type, a: FloatConst | Index, b: FloatConst | Index, node: ast.AST
) -> Value | None:
    """Python float arithmetic on constants (IEEE double, as Python computes it)."""
    values: list[float] = []
    for v in (a, b):
        if isinstance(v, FloatConst):
            values.append(v.value)
        else:
            known = constant_of(e.atoms.simplify(v.expr))
            if known is None:
                return None
            values.append(float(known))
    x, y = values
    if kind in (ast.Div, ast.FloorDiv, ast.Mod) and y == 0:  # Python raises ZeroDivisionError
        raise e.error(node, f"division by zero in '{e.source.text(node)}'")
    table = {
        ast.Add: lambda: x + y, ast.Sub: lambda: x - y, ast.Mult: lambda: x * y,
        ast.Div: lambda: x / y, ast.FloorDiv: lambda: x // y, ast.Mod: lambda: x % y,
    }  # fmt: skip
    return FloatConst(table[kind]()) if kind in table else None


def float_divmod(
    e: Emitter, x: SSAValue, y: SSAValue, ty: Ty, node: ast.AST
) -> tuple[SSAValue, SSAValue]:
    """Python's float `x // y` and `x % y` (CPython's float_divmod, step by step); by 0,
    where Python raises, NumPy's results (`x // 0.0` is ±inf or NaN, `x % 0.0` NaN)."""
    zero, one, half = (e.constant(c, ty, node) for c in (0.0, 1.0, 0.5))
    mod = e.value(llvm.FRemOp(x, y), node)
    div = e.value(arith.DivfOp(e.value(arith.SubfOp(x, mod), node), y), node)
    nonzero = e.value(arith.CmpfOp(mod, zero, "une"), node)
    y_neg = e.value(arith.CmpfOp(y, zero, "olt"), node)
    mod_neg = e.value(arith.CmpfOp(mod, zero, "olt"), node)
    differ = e.value(arith.XOrIOp(y_neg, mod_neg), node)
    fix = e.value(arith.AndIOp(nonzero, differ), node)
    mod = e.value(arith.SelectOp(fix, e.value(arith.AddfOp(mod, y), node), mod), node)
    div = e.value(arith.SelectOp(fix, e.value(arith.SubfOp(div, one), node), div), node)
    signed_zero = e.value(mathd.CopySignOp(zero, y), node)
    mod = e.value(arith.SelectOp(nonzero, mod, signed_zero), node)
    floor = e.value(mathd.FloorOp(div), node)
    above = e.value(arith.CmpfOp(e.value(arith.SubfOp(div, floor), node), half, "ogt"), node)
    floor = e.value(arith.SelectOp(above, e.value(arith.AddfOp(floor, one), node), floor), node)
    div_nonzero = e.value(arith.CmpfOp(div, zero, "une"), node)
    quotient_sign = e.value(arith.DivfOp(x, y), node)
    zero_div = e.value(mathd.CopySignOp(zero, quotient_sign), node)
    quotient = e.value(arith.SelectOp(div_nonzero, floor, zero_div), node)
    # y == 0, where Python raises: NumPy's floor_divide, x / y (±inf, NaN for 0 / 0); the
    # remainder is already NaN there, as NumPy's
    by_zero = e.value(arith.CmpfOp(y, zero, "oeq"), node)
    return e.value(arith.SelectOp(by_zero, quotient_sign, quotient), node), mod


def power(e: Emitter, a: Value, b: Value, ty: Ty, node: ast.AST) -> Value:
    """`a ** b`: integer powers by repeated squaring (constant exponent >= 0), else powf."""
    exponent = constant_of(e.atoms.simplify(b.expr)) if isinstance(b, Index) else None
    if ty.kind == "int":
        if exponent is None or exponent < 0:
            raise e.error(
                node, "an integer power needs a constant exponent >= 0 (use float(x) ** y)"
            )
        base = e.coerce(a, ty, node)
        result: SSAValue | None = None
        while exponent:
            if exponent & 1:
                result = base if result is None else e.value(arith.MuliOp(result, base), node)
            exponent >>= 1
            if exponent:
                base = e.value(arith.MuliOp(base, base), node)
        return Scalar(result if result is not None else e.constant(1, ty, node), ty)
    if isinstance(b, FloatConst) and b.value == 2.0:
        exponent = 2
    x = e.coerce(a, ty, node)
    if exponent == 2:
        return Scalar(e.value(arith.MulfOp(x, x), node), ty)
    return Scalar(e.value(mathd.PowFOp(x, e.coerce(b, ty, node)), node), ty)


def compare(e: Emitter, op: ast.cmpop, a: Value, b: Value, node: ast.AST) -> Scalar:
    kind = type(op)
    if kind not in INT_PREDICATES:
        raise e.error(node, f"comparison '{e.source.text(node)}' is not supported (is, in)")
    ty = _promote(e, a, b, node)
    if ty == BOOL and kind not in (ast.Eq, ast.NotEq):
        raise e.error(node, f"ordering conditions: '{e.source.text(node)}'")
    x, y = e.coerce(a, ty, node), e.coerce(b, ty, node)
    if ty.kind == "float":
        return Scalar(e.value(arith.CmpfOp(x, y, FLOAT_PREDICATES[kind]), node), BOOL)
    return Scalar(e.value(arith.CmpiOp(x, y, INT_PREDICATES[kind]), node), BOOL)


def unary(e: Emitter, op: ast.unaryop, a: Value, node: ast.AST) -> Value:
    if isinstance(op, ast.Not):
        truth = e.truth(a, node)
        return Scalar(e.value(arith.XOrIOp(truth, e.constant(1, BOOL, node)), node), BOOL)
    if isinstance(op, ast.UAdd):
        type_of(e, a, node)
        return a
    if isinstance(a, Index) or e.affine(a) is not None:
        expr = e.affine(a)
        assert expr is not None
        if isinstance(op, ast.USub):
            return Index(e.atoms.simplify(-expr))
    if isinstance(a, FloatConst) and isinstance(op, ast.USub):
        return FloatConst(-a.value)
    value = e.materialize(a, node)
    if value.ty == BOOL:
        raise e.error(node, f"arithmetic on conditions: '{e.source.text(node)}'")
    if isinstance(op, ast.USub):
        if value.ty.kind == "float":
            return Scalar(e.value(arith.NegfOp(value.value), node), value.ty)
        zero = e.constant(0, value.ty, node)
        return Scalar(e.value(arith.SubiOp(zero, value.value), node), value.ty)
    if value.ty.kind == "float":
        raise e.error(node, "'~' needs an integer")
    ones = e.constant(-1, value.ty, node)
    return Scalar(e.value(arith.XOrIOp(value.value, ones), node), value.ty)


def min_max(e: Emitter, kind: str, args: list[Value], node: ast.AST) -> Value:
    """Python's min/max of two or more numbers (affine ints: a Bound)."""
    if len(args) < 2:
        raise e.error(node, f"{kind}() needs two or more numbers (no sequences)")
    exprs: list[AffineExpr] = []
    for arg in args:
        if isinstance(arg, Bound) and arg.kind == kind:
            exprs += arg.exprs
            continue
        expr = e.affine(arg)
        if expr is None:
            break
        exprs.append(expr)
    else:
        known = [constant_of(e.atoms.simplify(x)) for x in exprs]
        if all(k is not None for k in known):
            pick = min if kind == "min" else max
            return Index(AffineExpr.constant(pick(k for k in known if k is not None)))
        return Bound(kind, tuple(exprs))
    ty = promote_all(e, args, node)
    if ty == BOOL:
        raise e.error(node, f"{kind}() of conditions")
    result = e.coerce(args[0], ty, node)
    for arg in args[1:]:
        other = e.coerce(arg, ty, node)
        if ty.kind == "int":
            op = arith.MinSIOp if kind == "min" else arith.MaxSIOp
            result = e.value(op(result, other), node)
            continue
        better = e.value(arith.CmpfOp(other, result, "olt" if kind == "min" else "ogt"), node)
        result = e.value(arith.SelectOp(better, other, result), node)
    return Scalar(result, ty)


def absolute(e: Emitter, a: Value, node: ast.AST) -> Value:
    if isinstance(a, FloatConst):
        return FloatConst(math.fabs(a.value))
    expr = e.affine(a)
    if expr is not None and constant_of(e.atoms.simplify(expr)) is not None:
        return Index(AffineExpr.constant(abs(constant_of(e.atoms.simplify(expr)) or 0)))
    value = e.materialize(a, node)
    if value.ty == BOOL:
        raise e.error(node, "abs() of a condition")
    if value.ty.kind == "float":
        return Scalar(e.value(mathd.AbsFOp(value.value), node), value.ty)
    zero = e.constant(0, value.ty, node)
    negative = e.value(arith.CmpiOp(value.value, zero, "slt"), node)
    negated = e.value(arith.SubiOp(zero, value.value), node)
    return Scalar(e.value(arith.SelectOp(negative, negated, value.value), node), value.ty)
