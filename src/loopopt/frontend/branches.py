"""Conditions and two-way branches: affine.if where the condition is affine, else scf.if.

    i > 0 and j <= n - 2        → affine_set<(d0, d1)[s0] : (d0 - 1 >= 0, s0 - d1 - 2 >= 0)>
    A[i] > 0.0                  → an i1 (arith.cmpf), branches in scf.if
    i != j, i == j or i == 0    → i1s combined with arith.andi/ori (not one affine set)

A condition is a compile-time bool, a list of affine constraints (expr >= 0, or == 0 where the
flag is set) or an i1. `build_if` emits the if, with the values its branches produce merged as
results (types joined as NumPy would); `and`/`or` evaluate their right side only where Python
would when it could fault (an array read, an integer division).
"""

from __future__ import annotations

import ast
from abc import abstractmethod
from collections.abc import Callable, Sequence

from xdsl.dialects import affine, arith, scf
from xdsl.dialects.builtin import AffineSetAttr
from xdsl.ir import Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.ir.affine.affine_set import AffineConstraintExpr, AffineConstraintKind, AffineSet

from loopopt.dialects import affine_ext
from loopopt.frontend.emitter import Emitter
from loopopt.frontend.operators import compare, type_of
from loopopt.frontend.types import BOOL, PromotionError, Ty, join
from loopopt.frontend.values import BoolConst, Scalar, Value, constant_of

Constraints = list[tuple[AffineExpr, bool]]
Condition = bool | Constraints | SSAValue


def safe(node: ast.AST) -> bool:
    """Can `node` be evaluated even where Python would not (no loads, no integer division)?"""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Subscript):
            return False
        if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.FloorDiv | ast.Mod):
            return False
    return True


class Branches(Emitter):
    @abstractmethod
    def expr(self, node: ast.expr) -> Value: ...

    @abstractmethod
    def number(self, node: ast.expr) -> Value: ...

    def condition(self, node: ast.expr) -> Condition:
        """`node` as a condition (Python truth: a number means `!= 0`)."""
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.BoolOp):
            return self._bool_op(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self._negate(self.condition(node.operand), node)
        value = self.expr(node)
        if isinstance(value, BoolConst):
            return value.value
        return self.truth(value, node)

    def _compare(self, node: ast.Compare) -> Condition:
        if any(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops):
            text = self.source.text(node)
            raise self.error(node, f"comparison '{text}' is not supported (is, in)")
        operands = [self.number(n) for n in (node.left, *node.comparators)]
        parts: list[Condition] = []
        for op, a, b in zip(node.ops, operands, operands[1:], strict=False):
            x, y = self.affine(a), self.affine(b)
            kind = type(op)
            if x is not None and y is not None and kind is not ast.NotEq:
                if kind is ast.Eq:
                    parts.append([(x - y, True)])
                else:
                    lower, upper = (x, y) if kind in (ast.Lt, ast.LtE) else (y, x)
                    strict = 1 if kind in (ast.Lt, ast.Gt) else 0
                    parts.append([(upper - lower - strict, False)])
            else:
                parts.append(compare(self, op, a, b, node).value)
        return self._all(parts, node)

    def _bool_op(self, node: ast.BoolOp) -> Condition:
        is_and = isinstance(node.op, ast.And)
        if all(safe(v) for v in node.values[1:]):
            parts = [self.condition(v) for v in node.values]
            return self._all(parts, node) if is_and else self._any(parts, node)
        result = self.condition(node.values[0])
        for operand in node.values[1:]:
            if isinstance(result, bool):
                if result != is_and:  # False and ..., True or ...
                    return result
                result = self.condition(operand)
                continue

            def rest(operand: ast.expr = operand) -> list[Value | None]:
                return [Scalar(self.as_i1(self.condition(operand), node), BOOL)]

            def short(value: bool = not is_and) -> list[Value | None]:
                return [BoolConst(value)]

            taken, skipped = (rest, short) if is_and else (short, rest)
            (merged,) = self.build_if(result, taken, skipped, node)
            assert merged is not None
            result = merged.value
        return result

    def _negate(self, cond: Condition, node: ast.AST) -> Condition:
        if isinstance(cond, bool):
            return not cond
        if isinstance(cond, list) and len(cond) == 1 and not cond[0][1]:
            return self._fold([(-cond[0][0] - 1, False)])
        value = self.as_i1(cond, node)
        return self.value(arith.XOrIOp(value, self.constant(1, BOOL, node)), node)

    def _fold(self, constraints: Constraints) -> Condition:
        kept: Constraints = []
        for expr, eq in constraints:
            expr = self.atoms.simplify(expr)
            known = constant_of(expr)
            if known is None:
                kept.append((expr, eq))
            elif (known != 0) if eq else (known < 0):
                return False
        return kept if kept else True

    def _all(self, parts: Sequence[Condition], node: ast.AST) -> Condition:
        if any(p is False for p in parts):
            return False
        rest = [p for p in parts if p is not True]
        if all(isinstance(p, list) for p in rest):
            return self._fold([c for p in rest if isinstance(p, list) for c in p])
        values = [self.as_i1(p, node) for p in rest]
        result = values[0]
        for value in values[1:]:
            result = self.value(arith.AndIOp(result, value), node)
        return result

    def _any(self, parts: Sequence[Condition], node: ast.AST) -> Condition:
        if any(p is True for p in parts):
            return True
        rest = [p for p in parts if p is not False]
        if not rest:
            return False
        if len(rest) == 1:
            return rest[0]
        values = [self.as_i1(p, node) for p in rest]
        result = values[0]
        for value in values[1:]:
            result = self.value(arith.OrIOp(result, value), node)
        return result

    def as_i1(self, cond: Condition, node: ast.AST) -> SSAValue:
        if isinstance(cond, bool):
            return self.constant(cond, BOOL, node)
        if isinstance(cond, SSAValue):
            return cond
        return self.constraints_value(cond, node)

    def constraints_value(self, constraints: Constraints, node: ast.AST) -> SSAValue:
        """An i1 that holds when all `constraints` do (arith.cmpi on index values)."""
        result: SSAValue | None = None
        for expr, eq in constraints:
            lhs, zero = self.index(expr, node), self.constant(0, Ty("int", 64, True), node)
            holds = self.value(arith.CmpiOp(lhs, zero, "eq" if eq else "sge"), node)
            result = holds if result is None else self.value(arith.AndIOp(result, holds), node)
        return result if result is not None else self.constant(True, BOOL, node)

    def in_block(self, block: Block, run: Callable[[], list[Value | None]]) -> list[Value | None]:
        saved, self.block = self.block, block
        try:
            return run()
        finally:
            self.block = saved

    def build_if(
        self,
        cond: Constraints | SSAValue,
        then: Callable[[], list[Value | None]],
        orelse: Callable[[], list[Value | None]],
        node: ast.AST,
    ) -> list[Scalar | None]:
        """Emit an if whose branches run `then`/`orelse`; the values they return (None: no value)
        become its results (None where either branch has none)."""
        then_block, else_block = Block(), Block()
        then_values = self.in_block(then_block, then)
        else_values = self.in_block(else_block, orelse)
        kept = [
            k
            for k, (a, b) in enumerate(zip(then_values, else_values, strict=True))
            if a is not None and b is not None
        ]
        types: list[Ty] = []
        for k in kept:
            a, b = then_values[k], else_values[k]
            assert a is not None and b is not None
            try:
                types.append(join(type_of(self, a, node), type_of(self, b, node)))
            except PromotionError:
                message = "a value is a condition in one branch and a number in the other"
                raise self.error(node, message) from None
        is_affine = not isinstance(cond, SSAValue)
        for block, values in ((then_block, then_values), (else_block, else_values)):

            def finish(block_values: list[Value | None] = values) -> list[Value | None]:
                yielded = [
                    self.coerce(block_values[k], t, node)  # type: ignore[arg-type]
                    for k, t in zip(kept, types, strict=True)
                ]
                self.emit(
                    affine.YieldOp.get(*yielded) if is_affine else scf.YieldOp(*yielded), node
                )
                return []

            self.in_block(block, finish)
        ir_types = [t.ir() for t in types]
        if isinstance(cond, SSAValue):
            op = scf.IfOp(cond, ir_types, Region(then_block), Region(else_block))
        else:
            iset, operands = self.integer_set(cond)
            op = affine_ext.IfOp.build(
                operands=[operands],
                result_types=[ir_types],
                properties={"condition": AffineSetAttr(iset)},
                regions=[Region(then_block), Region(else_block)],
            )
        self.emit(op, node)
        results: list[Scalar | None] = [None] * len(then_values)
        for k, t, value in zip(kept, types, op.results, strict=True):
            results[k] = Scalar(value, t)
        return results

    def integer_set(self, constraints: Constraints) -> tuple[AffineSet, list[SSAValue]]:
        amap, operands = self.atoms.map([expr for expr, _ in constraints])
        zero = AffineExpr.constant(0)
        kinds = [
            AffineConstraintKind.eq if eq else AffineConstraintKind.ge for _, eq in constraints
        ]
        exprs = tuple(
            AffineConstraintExpr(kind, result, zero, canonicalize=False)
            for kind, result in zip(kinds, amap.results, strict=True)
        )
        return AffineSet(amap.num_dims, amap.num_symbols, exprs), operands
