"""Python expressions → front-end values and ops (affine.load, arith, math, selects, ifs).

    A[i, k] * B[k][j]          → affine.load %A[%i, %k], affine.load %B[%k, %j], arith.mulf
    x if i > 0 else 0.0        → arith.select (both sides safe to evaluate) or affine.if/scf.if
    0 < i and A[i - 1] > t     → scf.if: Python does not evaluate the right side when i == 0

Subscripts must be affine in loop variables and integer parameters (A[i * i], A[idx[k]] are
errors); a constant negative subscript counts from the end, as in Python. Names are the
function's locals, else numbers, `math`/`numpy` functions and constants bound globally.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.frontend import calls
from loopopt.frontend.branches import Branches, Condition, safe
from loopopt.frontend.operators import binary, promote_all, type_of, unary
from loopopt.frontend.source import MISSING
from loopopt.frontend.types import BOOL, DTYPES, Ty
from loopopt.frontend.values import (
    Array,
    BoolConst,
    FloatConst,
    Index,
    Scalar,
    Shape,
    Tuple,
    Undefined,
    Value,
    constant_of,
)


class Expressions(Branches):
    """Evaluates expressions in the environment `env` (Python name → value)."""

    env: dict[str, Value]

    def expr(self, node: ast.expr) -> Value:
        method: Callable[[ast.expr], Value] | None = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            what = type(node).__name__
            raise self.error(node, f"{what} '{self.source.text(node)}' is outside the subset")
        return method(node)

    def number(self, node: ast.expr) -> Value:
        value = self.expr(node)
        type_of(self, value, node)
        return value

    def _Constant(self, node: ast.Constant) -> Value:
        return self.constant_value(node.value, node)

    def constant_value(self, value: object, node: ast.AST) -> Value:
        if isinstance(value, bool | np.bool_):
            return BoolConst(bool(value))
        if isinstance(value, int | np.integer):
            if not -(2**63) <= int(value) < 2**63:
                raise self.error(
                    node, f"'{self.source.text(node)}' does not fit in 64 bits (a kernel's ints do)"
                )
            return Index(AffineExpr.constant(int(value)))
        if isinstance(value, float):
            return FloatConst(value)
        if isinstance(value, np.floating) and value.dtype.name in DTYPES:
            ty = DTYPES[value.dtype.name]
            return Scalar(self.constant(float(value), ty, node), ty)
        kind = type(value).__name__
        raise self.error(node, f"'{self.source.text(node)}' ({kind}) is outside the subset")

    def _Name(self, node: ast.Name) -> Value:
        value = self.env.get(node.id)
        if isinstance(value, Undefined):
            raise self.error(node, value.reason)
        if value is not None:
            return value
        bound = self.source.resolve(node.id)
        if bound is MISSING:
            raise self.error(node, f"name '{node.id}' is not defined")
        return self.global_value(bound, node)

    def global_value(self, bound: object, node: ast.AST) -> Value:
        if isinstance(bound, int | float | bool | np.number | np.bool_):
            return self.constant_value(bound, node)
        what = "a module" if isinstance(bound, types.ModuleType) else type(bound).__name__
        if isinstance(bound, np.ndarray):
            what = "a global array (pass arrays as arguments)"
        raise self.error(node, f"'{self.source.text(node)}' is {what}: outside the subset")

    def global_object(self, node: ast.expr) -> object:
        """The Python object a global name or `module.attr` chain is bound to (MISSING if not
        one, e.g. a local)."""
        if isinstance(node, ast.Name):
            return MISSING if node.id in self.env else self.source.resolve(node.id)
        if isinstance(node, ast.Attribute):
            base = self.global_object(node.value)
            if isinstance(base, types.ModuleType):
                return getattr(base, node.attr, MISSING)
        return MISSING

    def _Attribute(self, node: ast.Attribute) -> Value:
        base = self.global_object(node.value)
        if isinstance(base, types.ModuleType):
            if node.attr in calls.CONSTANTS and base.__name__ in ("math", "numpy"):
                return FloatConst(calls.CONSTANTS[node.attr])
            return self.global_value(getattr(base, node.attr, MISSING), node)
        value = self.expr(node.value)
        if isinstance(value, Array):
            if node.attr == "shape":
                return Shape(value)
            if node.attr == "ndim":
                return Index(AffineExpr.constant(len(value.shape)))
        elif node.attr in ("shape", "ndim") and isinstance(
            value, Scalar | Index | FloatConst | BoolConst
        ):  # a number where an array is expected (the caller passed one for it)
            ty = type_of(self, value, node)
            raise self.error(
                node,
                f"'{self.source.text(node.value)}' is a number ({ty}), not an array: "
                f"'{self.source.text(node)}'",
            )
        raise self.error(node, f"attribute '{self.source.text(node)}' is outside the subset")

    def _Tuple(self, node: ast.Tuple) -> Value:
        return Tuple(tuple(self.expr(item) for item in node.elts))

    def _BinOp(self, node: ast.BinOp) -> Value:
        return binary(self, node.op, self.number(node.left), self.number(node.right), node)

    def _UnaryOp(self, node: ast.UnaryOp) -> Value:
        return unary(self, node.op, self.number(node.operand), node)

    def _Compare(self, node: ast.Compare) -> Value:
        return self.condition_value(self.condition(node), node)

    def _BoolOp(self, node: ast.BoolOp) -> Value:
        for operand in node.values:  # Python's `x and y` is x or y itself, not a bool
            if not self._is_condition(operand):
                text = self.source.text(node)
                raise self.error(
                    node,
                    f"'{text}' is a number in Python, not a condition: compare explicitly "
                    "(x != 0) where 'and'/'or' give a value",
                )
        return self.condition_value(self.condition(node), node)

    def _is_condition(self, node: ast.expr) -> bool:
        """Is `node` a comparison, a not, an and/or of conditions, or a bool?"""
        if isinstance(node, ast.Compare):
            return True
        if isinstance(node, ast.UnaryOp):
            return isinstance(node.op, ast.Not)
        if isinstance(node, ast.BoolOp):
            return all(self._is_condition(v) for v in node.values)
        if isinstance(node, ast.Name):
            value = self.env.get(node.id)
            return isinstance(value, BoolConst) or (isinstance(value, Scalar) and value.ty == BOOL)
        return isinstance(node, ast.Constant) and isinstance(node.value, bool)

    def _IfExp(self, node: ast.IfExp) -> Value:
        cond = self.condition(node.test)
        if isinstance(cond, bool):
            return self.expr(node.body if cond else node.orelse)
        if isinstance(cond, SSAValue) and safe(node.body) and safe(node.orelse):
            then, orelse = self.number(node.body), self.number(node.orelse)
            ty = self.join_types([then, orelse], node)
            x, y = self.coerce(then, ty, node), self.coerce(orelse, ty, node)
            return Scalar(self.value(arith.SelectOp(cond, x, y), node), ty)
        (result,) = self.build_if(
            cond, lambda: [self.number(node.body)], lambda: [self.number(node.orelse)], node
        )
        return result

    def _Call(self, node: ast.Call) -> Value:
        callee = self.global_object(node.func)
        text = self.source.text(node.func)
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.error(node, f"call of '{text}' with keywords or * arguments")
        if callee is range:
            raise self.error(node, "range() is only supported as the iterable of a for loop")
        if callee is len:
            array = self.array(node.args[0]) if len(node.args) == 1 else None
            if array is None:
                raise self.error(node, "len() takes one array")
            return Index(array.shape[0])
        if callee is MISSING or not calls.known(callee):
            raise self.error(node, f"call of unknown function '{text}'")
        return calls.call(self, callee, [self.number(arg) for arg in node.args], node)

    def array(self, node: ast.expr) -> Array | None:
        value = self.expr(node)
        return value if isinstance(value, Array) else None

    def _Subscript(self, node: ast.Subscript) -> Value:
        base, indices = self.subscript_parts(node)
        value = self.expr(base)
        if isinstance(value, Shape | Tuple):
            items = value.array.shape if isinstance(value, Shape) else value.items
            position = self.constant_int(indices[0]) if len(indices) == 1 else None
            if position is None:
                raise self.error(node, f"'{self.source.text(node)}' needs a constant position")
            if not -len(items) <= position < len(items):
                what = "dimension" if isinstance(value, Shape) else "item"
                plural = "s" if len(items) != 1 else ""
                raise self.error(
                    node,
                    f"'{self.source.text(node)}' is out of range: "
                    f"'{self.source.text(base)}' has {len(items)} {what}{plural}",
                )
            item = items[position]
            return Index(item) if isinstance(item, AffineExpr) else item
        if not isinstance(value, Array):
            raise self.error(node, f"'{self.source.text(base)}' is not an array")
        amap, operands = self.access(value, indices, node)
        return self.load(value, amap, operands, node)

    def subscript_parts(self, node: ast.Subscript) -> tuple[ast.expr, list[ast.expr]]:
        """`A[i, j]` and `A[i][j]` → (A, [i, j])."""
        indices: list[ast.expr] = []
        base: ast.expr = node
        while isinstance(base, ast.Subscript):
            part = base.slice
            indices[:0] = part.elts if isinstance(part, ast.Tuple) else [part]
            base = base.value
        return base, indices

    def constant_int(self, node: ast.expr) -> int | None:
        value = self.expr(node)
        expr = self.affine(value)
        return None if expr is None else constant_of(self.atoms.simplify(expr))

    def access(
        self, array: Array, indices: list[ast.expr], node: ast.AST
    ) -> tuple[AffineMap, list[SSAValue]]:
        """The affine map and operands of `array[indices]`; errors name the construct."""
        text = self.source.text(node)
        if len(indices) != len(array.shape):
            raise self.error(
                node, f"'{text}' indexes {len(indices)} of the {len(array.shape)} dimensions"
            )
        exprs: list[AffineExpr] = []
        for index, size in zip(indices, array.shape, strict=True):
            if isinstance(index, ast.Slice):
                raise self.error(node, f"slices are outside the subset: '{text}'")
            value = self.expr(index)
            expr = self.affine(value)
            if expr is None:
                what = self.source.text(index)
                raise self.error(
                    node,
                    f"non-affine subscript '{what}' in '{text}' (subscripts must be affine in "
                    "loop variables and integer parameters)",
                )
            known = constant_of(self.atoms.simplify(expr))
            if known is not None and known < 0:
                expr = size + known  # A[-1]: Python counts from the end
            exprs.append(self.atoms.simplify(expr))
        return self.atoms.map(exprs, all_dims=True)

    def join_types(self, values: list[Value], node: ast.AST) -> Ty:
        return promote_all(self, values, node)

    def condition_value(self, cond: Condition, node: ast.AST) -> Value:
        if isinstance(cond, bool):
            return BoolConst(cond)
        if isinstance(cond, SSAValue):
            return Scalar(cond, BOOL)
        return Scalar(self.constraints_value(cond, node), BOOL)
