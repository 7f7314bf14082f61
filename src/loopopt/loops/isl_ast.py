"""An isl AST (of a schedule of a nest's statements) turned into affine IR.

    for (int c0 = 0; c0 < n - 1; c0 += 1)        affine.for %c0 = 0 to (s0 - 1)[%n] {
      for (int c1 = c0 + 1; c1 < n; c1 += 1) {  →    affine.for %c1 = (d0 + 1)(%c0) to %n {
        S1(c1, c0);                                     <S1's ops, i := c1, j := c0>
        for (int c2 = c1; c2 < n; c2 += 1)              affine.for %c2 = (d0)(%c1) to %n {
          S2(c1, c2, c0);                                 <S2's ops, i := c1, j := c2, k := c0>

`for` nodes become affine.for (a `max` init: a multi-result lower bound; a conjunction of
`iter <= e` / `iter < e`, each `e` possibly a `min`: a multi-result exclusive upper bound; the
increment: the step), `if` nodes affine.if (a conjunction of comparisons; an else branch: the
else region), blocks their children in order, marks their child, and user nodes a clone of the
statement's ops with each original IV replaced by an `affine.apply` of its AST expression
(composed into the affine maps that use it by `fold`). `fdiv_q`/`pdiv_q`/`div` by a constant
become floordiv, `pdiv_r`/`zdiv_r` mod (isl compares a `zdiv_r` only with 0, where both agree);
anything else (a `min`/`max` inside an expression, `or`, `select`, a product of two
non-constants) is refused with a `LoopoptError` before any IR changes: the ops built are
detached until the caller inserts them.

A loop is named after the original loop whose IV it is for every statement under it (the same
name for all), else it is left unnamed (`name_loops` gives it a fresh `c0, c1 …`).

Not checked here: that the AST's statements are those of `nest` (the AST was built from its
domain) and that the schedule is legal (isl's scheduler respects the validity constraints).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl
from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, AffineSetAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineExpr
from xdsl.ir.affine.affine_set import AffineConstraintExpr, AffineConstraintKind, AffineSet

from loopopt.analysis.statements import PASS, NestStatements, Statement
from loopopt.diagnostics import LoopoptError
from loopopt.dialects import affine_ext
from loopopt.loops.affine_maps import BoundBuilder, fold_apply
from loopopt.loops.bounds import new_loop
from loopopt.loops.guard import is_valid_symbol
from loopopt.loops.nest import set_loop_name
from loopopt.loops.tile import fresh_loop_name, name_iv

_OP = isl.ast_expr_op_type
_NODE = isl.ast_node_type
_EXPR = isl.ast_expr_type


@dataclass
class Generated:
    """The ops built from an AST (detached, in order) and what the caller needs of them."""

    ops: list[Operation] = field(default_factory=list[Operation])
    copies: dict[str, list[list[affine.ForOp]]] = field(
        default_factory=dict[str, list[list[affine.ForOp]]]
    )
    """Statement name -> the loops around each of its copies, outermost first."""
    names: dict[affine.ForOp, str | None] = field(default_factory=dict[affine.ForOp, str | None])
    """Each new loop -> the original loop name it stands for (None: a new dimension)."""
    applies: list[affine.ApplyOp] = field(default_factory=list[affine.ApplyOp])

    def fold(self) -> None:
        """Compose the IV applies into the maps using them (once the ops are in a block)."""
        for apply in self.applies:
            fold_apply(apply)
        self.applies = []
        self.ops = [op for op in self.ops if op.parent is not None]  # folded top-level applies

    def name_loops(self) -> None:
        """Name each new loop as `names` says, or a fresh `c0, c1 …` (once in a function)."""
        counter = 0
        for loop, name in self.names.items():
            if name is None:
                name = fresh_loop_name(loop, f"c{counter}")
                counter += 1
            set_loop_name(loop, name)
            name_iv(loop, name)


def _refuse(reason: str, nest: NestStatements) -> LoopoptError:
    return LoopoptError(f"{PASS}: isl's AST {reason}", op=nest.root)


@dataclass
class _Users:
    """The user nodes under one new loop: (statement, per original IV the AST iterator it is
    exactly, or None)."""

    found: list[tuple[Statement, list[str | None]]] = field(
        default_factory=list[tuple[Statement, list[str | None]]]
    )


class _Emitter:
    def __init__(self, nest: NestStatements) -> None:
        self.nest = nest
        self.statements = {stmt.name: stmt for stmt in nest.statements}
        self.env: dict[str, SSAValue] = {}
        self.loops: list[affine.ForOp] = []
        self.users: list[tuple[str, _Users]] = []
        self.out = Generated()

    def node(self, node: isl.AstNode) -> list[Operation]:
        kind = node.get_type()
        if kind == _NODE.block:
            children = node.block_get_children()
            return [
                op for k in range(children.n_ast_node()) for op in self.node(children.get_at(k))
            ]
        if kind == _NODE.mark:
            return self.node(node.mark_get_node())
        if kind == _NODE.for_:
            return [self.loop(node)]
        if kind == _NODE.if_:
            return [self.guard(node)]
        if kind == _NODE.user:
            return self.user(node.user_get_expr())
        raise _refuse(f"has a node loopopt does not translate ({kind})", self.nest)

    def loop(self, node: isl.AstNode) -> affine.ForOp:
        iterator = node.for_get_iterator().get_id().get_name()
        inc = node.for_get_inc()
        if inc.get_type() != _EXPR.int:
            raise _refuse("has a loop step that is not a constant", self.nest)
        step = int(inc.get_val().to_python())
        lower = BoundBuilder()
        init = node.for_get_init()
        inits = _args(init) if _is_op(init, _OP.max) else [init]
        lb = lower.build([self.expr(e, lower) for e in inits])
        upper = BoundBuilder()
        conditions = _conjuncts(node.for_get_cond())
        ub = upper.build([r for c in conditions for r in self.upper(c, iterator, upper)])
        loop = new_loop(lb, ub, step)
        self.env[iterator] = loop.body.block.args[0]
        self.loops.append(loop)
        users = _Users()
        self.users.append((iterator, users))
        self.out.names[loop] = None
        body = self.node(node.for_get_body())
        self.users.pop()
        self.loops.pop()
        del self.env[iterator]
        block = loop.body.block
        terminator = block.last_op
        assert terminator is not None
        for op in body:
            block.insert_op_before(op, terminator)
        self.out.names[loop] = _common_name(iterator, users)
        return loop

    def upper(self, cond: isl.AstExpr, iterator: str, builder: BoundBuilder) -> list[AffineExpr]:
        """The exclusive upper bounds that `cond` (`iterator <= e` or `< e`) puts on it."""
        if not (_is_op(cond, _OP.le) or _is_op(cond, _OP.lt)):
            raise _refuse("has a loop condition that is not an upper bound", self.nest)
        lhs, rhs = _args(cond)
        if lhs.get_type() != _EXPR.id or lhs.get_id().get_name() != iterator:
            raise _refuse("has a loop condition that is not an upper bound", self.nest)
        bounds = _args(rhs) if _is_op(rhs, _OP.min) else [rhs]
        extra = 1 if _is_op(cond, _OP.le) else 0
        return [self.expr(e, builder) + extra for e in bounds]

    def guard(self, node: isl.AstNode) -> affine.IfOp:
        builder = BoundBuilder()
        constraints: list[AffineConstraintExpr] = []
        for cond in _conjuncts(node.if_get_cond()):
            constraints.append(self.condition(cond, builder))
        condition = AffineSet(len(builder.dims), len(builder.syms), tuple(constraints))
        then_block = self.region(node.if_get_then_node())
        else_region = (
            Region(self.region(node.if_get_else_node())) if node.if_has_else_node() else Region()
        )
        return affine_ext.IfOp.build(
            operands=[[*builder.dims, *builder.syms]],
            result_types=[[]],
            properties={"condition": AffineSetAttr(condition)},
            regions=[Region(then_block), else_region],
        )

    def region(self, node: isl.AstNode) -> Block:
        block = Block()
        for op in self.node(node):
            block.add_op(op)
        block.add_op(affine.YieldOp.get())
        return block

    def condition(self, cond: isl.AstExpr, builder: BoundBuilder) -> AffineConstraintExpr:
        """`cond` as `e >= 0` or `e == 0`."""
        if cond.get_type() != _EXPR.op:
            raise _refuse("has a condition that is not a comparison", self.nest)
        kind = cond.get_op_type()
        if kind not in (_OP.eq, _OP.le, _OP.lt, _OP.ge, _OP.gt):
            raise _refuse(f"has a condition loopopt does not translate ({kind})", self.nest)
        a, b = (self.expr(e, builder) for e in _args(cond))
        difference = {_OP.eq: a - b, _OP.le: b - a, _OP.lt: b - a - 1, _OP.ge: a - b}.get(
            kind, a - b - 1
        )
        relation = AffineConstraintKind.eq if kind == _OP.eq else AffineConstraintKind.ge
        zero = AffineExpr.constant(0)
        return AffineConstraintExpr(relation, difference, zero, canonicalize=False)

    def user(self, call: isl.AstExpr) -> list[Operation]:
        if not _is_op(call, _OP.call):
            raise _refuse("has a user node that is not a call", self.nest)
        callee, *args = _args(call)
        stmt = self.statements[callee.get_id().get_name()]
        ops: list[Operation] = []
        mapper: dict[SSAValue, SSAValue] = {}
        for loop, arg in zip(stmt.loops, args, strict=True):
            builder = BoundBuilder()
            bound = builder.build([self.expr(arg, builder)])
            apply = affine.ApplyOp(list(bound.operands), AffineMapAttr(bound.map))
            self.out.applies.append(apply)
            ops.append(apply)
            mapper[loop.body.block.args[0]] = apply.result
        ops += [op.clone(mapper) for op in stmt.ops]
        self.out.copies.setdefault(stmt.name, []).append(list(self.loops))
        exact = [a.get_id().get_name() if a.get_type() == _EXPR.id else None for a in args]
        for _, users in self.users:
            users.found.append((stmt, exact))
        return ops

    def expr(self, e: isl.AstExpr, builder: BoundBuilder) -> AffineExpr:
        kind = e.get_type()
        if kind == _EXPR.int:
            return AffineExpr.constant(int(e.get_val().to_python()))
        if kind == _EXPR.id:
            name = e.get_id().get_name()
            if name in self.env:
                return builder.dim(self.env[name])
            if name in self.nest.params:
                # an IV of a loop around the nest (an affine.parallel's) is a parameter to isl
                # but not a valid symbol for MLIR: a dimension of the map
                value = self.nest.params[name]
                return builder.sym(value) if is_valid_symbol(value) else builder.dim(value)
            raise _refuse(f"uses an unknown name '{name}'", self.nest)
        op = e.get_op_type()
        args = [self.expr(a, builder) for a in _args(e)]
        if op == _OP.minus:
            return -args[0]
        if op == _OP.add:
            return args[0] + args[1]
        if op == _OP.sub:
            return args[0] - args[1]
        if op == _OP.mul:
            if not any(isinstance(a, AffineConstantExpr) for a in args):
                raise _refuse("multiplies two non-constant expressions", self.nest)
            return args[0] * args[1]
        if op in (_OP.fdiv_q, _OP.pdiv_q, _OP.div, _OP.pdiv_r, _OP.zdiv_r):
            divisor = args[1]
            if not isinstance(divisor, AffineConstantExpr) or divisor.value <= 0:
                raise _refuse("divides by a non-constant", self.nest)
            if op in (_OP.pdiv_r, _OP.zdiv_r):
                return args[0] % divisor.value
            return args[0] // divisor.value
        raise _refuse(f"has an expression loopopt does not translate ({op})", self.nest)


def _is_op(e: isl.AstExpr, kind: int) -> bool:
    return e.get_type() == _EXPR.op and e.get_op_type() == kind


def _args(e: isl.AstExpr) -> list[isl.AstExpr]:
    return [e.get_op_arg(k) for k in range(e.get_op_n_arg())]


def _conjuncts(e: isl.AstExpr) -> list[isl.AstExpr]:
    if _is_op(e, _OP.and_) or _is_op(e, _OP.and_then):
        return [c for a in _args(e) for c in _conjuncts(a)]
    return [e]


def _common_name(iterator: str, users: _Users) -> str | None:
    """The original loop name that `iterator` is exactly for every statement under it."""
    names: set[str | None] = set()
    for stmt, exact in users.found:
        matches = [stmt.loop_names()[k] for k, it in enumerate(exact) if it == iterator]
        if len(matches) != 1:
            return None
        names.add(matches[0])
    if len(names) != 1:
        return None
    return names.pop()


def generate(nest: NestStatements, ast: isl.AstNode) -> Generated:
    """The ops of `ast` (detached; see the module docstring)."""
    emitter = _Emitter(nest)
    emitter.out.ops = emitter.node(ast)
    return emitter.out
