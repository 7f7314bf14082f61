"""Python statements → affine loops, ifs, loads and stores.

    for i in range(n - 1, -1, -1):     %r = affine.for %i_rev = 0 to %n iter_args(%s = %s0) {
        s = s + A[i]                       %a = affine.load %A[%n + %i_rev * -1 + -1] ...
                                           affine.yield %s2 } {loopopt.name = "i"}

(A negative step is normalized: the loop counts up, `i` is an affine function of its IV.)

A loop's bounds must be affine (constants, sizes, integer parameters, outer loop variables;
`max(...)` lower and `min(...)` upper bounds); scalars it carries (read before written, or used
after it) become iter_args. An if merges the scalars its branches assign. A name with no
usable value (a loop variable after its loop, a name assigned in only one branch) is an error
where it is read.
"""

from __future__ import annotations

import ast

from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, IndexType
from xdsl.ir import Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.frontend.emitter import name as hint
from loopopt.frontend.expressions import Expressions
from loopopt.frontend.liveness import Liveness, names_assigned
from loopopt.frontend.operators import binary, type_of
from loopopt.frontend.types import PromotionError, Ty, join
from loopopt.frontend.values import (
    Array,
    Bound,
    FloatConst,
    Index,
    Scalar,
    Shape,
    Tuple,
    Undefined,
    Value,
    constant_of,
)
from loopopt.loops.nest import set_loop_name

UNSUPPORTED = {
    ast.While: "while loops are outside the subset (use for ... in range(...))",
    ast.Break: "break is outside the subset",
    ast.Continue: "continue is outside the subset",
    ast.With: "with statements are outside the subset",
    ast.Try: "try statements are outside the subset",
    ast.FunctionDef: "nested functions are outside the subset",
    ast.Global: "global statements are outside the subset",
    ast.Nonlocal: "nonlocal statements are outside the subset",
    ast.Delete: "del is outside the subset",
    ast.Raise: "raise is outside the subset",
}


class Statements(Expressions):
    liveness: Liveness

    def body(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.stmt(stmt)

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.For):
            self.for_loop(node)
        elif isinstance(node, ast.If):
            self.if_stmt(node)
        elif isinstance(node, ast.Assign):
            value = self.expr(node.value)
            for target in node.targets:
                self.assign(target, value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign(node.target, self.expr(node.value))
        elif isinstance(node, ast.AugAssign):
            self.augmented(node)
        elif isinstance(node, ast.Pass):
            return
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # a docstring or a bare constant does nothing
        elif isinstance(node, ast.Return):
            raise self.error(node, "return is only allowed at the end, without a value")
        elif type(node) in UNSUPPORTED:
            raise self.error(node, UNSUPPORTED[type(node)])
        else:
            text = self.source.text(node).splitlines()[0]
            raise self.error(node, f"statement '{text}' is outside the subset")

    def assign(self, target: ast.expr, value: Value) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            items = value.array.shape if isinstance(value, Shape) else None
            values = [Index(s) for s in items] if items is not None else None
            if isinstance(value, Tuple):
                values = list(value.items)
            if values is None or len(values) != len(target.elts):
                raise self.error(target, f"cannot unpack into '{self.source.text(target)}'")
            for item, item_value in zip(target.elts, values, strict=True):
                self.assign(item, item_value)
        elif isinstance(target, ast.Subscript):
            self.store(target, value)
        else:
            raise self.error(target, f"cannot assign to '{self.source.text(target)}'")

    def store(
        self,
        target: ast.Subscript,
        value: Value,
        access: tuple[AffineMap, list[SSAValue]] | None = None,
    ) -> None:
        base, indices = self.subscript_parts(target)
        array = self.expr(base)
        if not isinstance(array, Array):
            raise self.error(target, f"'{self.source.text(base)}' is not an array")
        if access is None:
            access = self.access(array, indices, target)
        amap, operands = access
        stored = self.coerce(value, array.ty, target)
        self.emit(affine.StoreOp(stored, array.value, operands, AffineMapAttr(amap)), target)

    def augmented(self, node: ast.AugAssign) -> None:
        target = node.target
        if isinstance(target, ast.Name):
            current = self._Name(target)
            self.env[target.id] = binary(self, node.op, current, self.number(node.value), node)
            return
        if not isinstance(target, ast.Subscript):
            raise self.error(target, f"cannot assign to '{self.source.text(target)}'")
        base, indices = self.subscript_parts(target)
        array = self.expr(base)
        if not isinstance(array, Array):
            raise self.error(target, f"'{self.source.text(base)}' is not an array")
        access = self.access(array, indices, target)
        amap, operands = access
        current = self.load(array, amap, operands, target)
        self.store(target, binary(self, node.op, current, self.number(node.value), node), access)

    def for_loop(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node, "for ... else is outside the subset")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name")
        lower, upper, step, start = self.range_bounds(node)
        name = node.target.id
        carried = self.liveness.carried(node)
        initial = [self._carried_value(n, node) for n in carried]
        types = [type_of(self, v, node) for v in initial]
        outer_env = self.env
        while True:
            block = Block(arg_types=[IndexType(), *(t.ir() for t in types)])
            iv = self.atoms.atom(block.args[0], is_dim=True)
            hint(block.args[0], name if step > 0 else f"{name}_rev")
            env = dict(outer_env)
            env[name] = Index(iv) if step > 0 else Index(self.atoms.simplify(start - iv * -step))
            for k, (n, t) in enumerate(zip(carried, types, strict=True)):
                hint(block.args[k + 1], n)
                env[n] = Scalar(block.args[k + 1], t)
            self.env = env
            self.in_block(block, lambda: self._run(node.body))
            yielded = [self._yielded(env, n, node) for n in carried]
            self.env = outer_env
            new_types = [
                self._join(t, y, n, node) for t, y, n in zip(types, yielded, carried, strict=True)
            ]
            if new_types == types:
                break
            for op in reversed(list(block.ops)):  # a carried scalar changes type: again
                block.detach_op(op)
                op.erase()
            types = new_types
        self.in_block(block, lambda: self._yield(yielded, types, node))
        inits = [self.coerce(v, t, node) for v, t in zip(initial, types, strict=True)]
        lb_map, lb_operands = self.atoms.map(lower)
        ub_map, ub_operands = self.atoms.map(upper)
        loop = affine.ForOp.from_region(
            lb_operands, ub_operands, inits, [t.ir() for t in types],
            AffineMapAttr(lb_map), AffineMapAttr(ub_map), Region(block), max(step, 1),
        )  # fmt: skip
        set_loop_name(loop, name)
        self.emit(loop, node)
        line = self.source.position(node)[0]
        for assigned in names_assigned(node.body):
            why = f"'{assigned}' was assigned in the loop at line {line}; not available after it"
            self.env[assigned] = Undefined(why)
        why = f"'{name}' is the variable of the loop at line {line}; it is not available after it"
        self.env[name] = Undefined(why)
        for k, n in enumerate(carried):
            self.env[n] = Scalar(loop.results[k], types[k])

    def _run(self, stmts: list[ast.stmt]) -> list[Value | None]:
        self.body(stmts)
        return []

    def _yield(self, values: list[Value], types: list[Ty], node: ast.AST) -> list[Value | None]:
        coerced = [self.coerce(v, t, node) for v, t in zip(values, types, strict=True)]
        self.emit(affine.YieldOp.get(*coerced), node)
        return []

    def _carried_value(self, name: str, node: ast.For) -> Value:
        value = self.env.get(name)
        if value is None or isinstance(value, Undefined):
            raise self.error(
                node,
                f"'{name}' is carried by this loop (read before it is assigned, or after the "
                "loop) but has no value before it",
            )
        if isinstance(value, Array | Shape | Tuple):
            raise self.error(node, f"'{name}' is not a number and cannot change in a loop")
        return value

    def _yielded(self, env: dict[str, Value], name: str, node: ast.For) -> Value:
        value = env.get(name)
        if value is None or isinstance(value, Undefined | Array | Shape | Tuple):
            raise self.error(node, f"'{name}' must hold a number at the end of each iteration")
        return value

    def _join(self, ty: Ty, value: Value, name: str, node: ast.AST) -> Ty:
        try:
            return join(ty, type_of(self, value, node))
        except PromotionError:
            raise self.error(node, f"'{name}' holds a condition and a number") from None

    def range_bounds(
        self, node: ast.For
    ) -> tuple[list[AffineExpr], list[AffineExpr], int, AffineExpr]:
        """Lower bounds (max), upper bounds (min), step and start of `for ... in range(...)`;
        a negative step is normalized to `0 .. ceil((start - stop) / -step)`."""
        call = node.iter
        text = self.source.text(call)
        if not (isinstance(call, ast.Call) and self.global_object(call.func) is range):
            raise self.error(call, f"for loops must iterate over range(...), not '{text}'")
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.error(call, f"range() takes 1 to 3 positional arguments: '{text}'")
        args = [self.expr(arg) for arg in call.args]
        for arg, value in zip(call.args, args, strict=True):
            self._require_int(arg, value, call)
        step = 1
        if len(args) == 3:
            known = self.affine(args[2])
            step_value = constant_of(self.atoms.simplify(known)) if known is not None else None
            if step_value is None or step_value == 0:
                raise self.error(call, f"the step of '{text}' must be a nonzero constant")
            step = step_value
        start = args[0] if len(args) > 1 else Index(AffineExpr.constant(0))
        stop = args[1] if len(args) > 1 else args[0]
        lower = self._bound_exprs(start, "max" if step > 0 else None, call)
        upper = self._bound_exprs(stop, "min" if step > 0 else None, call)
        if step > 0:
            return lower, upper, step, lower[0]
        trip = (lower[0] - upper[0]).ceil_div(-step)
        return [AffineExpr.constant(0)], [self.atoms.simplify(trip)], step, lower[0]

    def _require_int(self, arg: ast.expr, value: Value, call: ast.expr) -> None:
        """range() takes integers (Python raises TypeError for a float): say so of a float."""
        if isinstance(value, FloatConst) or (
            isinstance(value, Scalar) and value.ty.kind == "float"
        ):
            raise self.error(
                arg,
                f"range() takes integers, and '{self.source.text(arg)}' is a float: "
                f"'{self.source.text(call)}'",
            )

    def _bound_exprs(self, value: Value, allowed: str | None, call: ast.expr) -> list[AffineExpr]:
        if isinstance(value, Bound) and value.kind == allowed:
            return list(value.exprs)
        expr = self.affine(value)
        if expr is None:
            raise self.error(
                call,
                f"loop bounds must be affine (constants, sizes, integer parameters, outer loop "
                f"variables; max() lower and min() upper bounds): '{self.source.text(call)}'",
            )
        return [expr]

    def if_stmt(self, node: ast.If) -> None:
        cond = self.condition(node.test)
        if isinstance(cond, bool):
            self.body(node.body if cond else node.orelse)
            return
        merged = self.liveness.merged(node)
        before = self.env

        def branch(stmts: list[ast.stmt]):  # noqa: ANN202
            def run() -> list[Value | None]:
                self.env = dict(before)
                self.body(stmts)
                values = [self.env.get(n) for n in merged]
                self.env = before
                return [v if isinstance(v, Index | Scalar) or _number(v) else None for v in values]

            return run

        results = self.build_if(cond, branch(node.body), branch(node.orelse), node)
        line = self.source.position(node)[0]
        for name in names_assigned([*node.body, *node.orelse]):
            self.env[name] = Undefined(
                f"'{name}' has no single value after the if at line {line} (assigned in one "
                "branch only, or not a number)"
            )
        for name, result in zip(merged, results, strict=True):
            if result is not None:
                self.env[name] = result


def _number(value: Value | None) -> bool:
    return value is not None and not isinstance(value, Undefined | Array | Shape | Tuple)
