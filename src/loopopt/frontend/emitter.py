"""Emitting ops for the translator: locations, constants, hoisting, values and conversions.

    e.emit(arith.AddfOp(a, b), node)       # appended to the current block, located at `node`
    e.coerce(Index(d0 + 1), F32, node)      # affine.apply, index_cast, sitofp → an f32 value
    e.hoist(key, build)                     # symbol arithmetic computed once at the top level

Every op gets a `FileLineColLoc` of the Python node it comes from. Constants and arithmetic on
symbols only (sizes, integer parameters) are emitted once at the function's top level, right
after the definitions they use, so they are valid affine symbols everywhere below.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Hashable, Sequence

import numpy as np
from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import AffineMapAttr, FloatAttr, IndexType, IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.diagnostics import LoopoptError
from loopopt.dialects import affine_ext
from loopopt.element_types import bfloat_bits
from loopopt.frontend.source import Source
from loopopt.frontend.types import BOOL, F32, PY_FLOAT, PY_INT, Ty
from loopopt.frontend.values import (
    Array,
    Atoms,
    BoolConst,
    Bound,
    FloatConst,
    Index,
    Scalar,
    Undefined,
    Value,
    constant_of,
)


def _round_to_16_bits(value: float, ty: Ty) -> float:
    """`value` rounded (to nearest even) to float16 or bfloat16, as a Python float."""
    if not ty.brain:
        return float(np.float16(value))
    bits = np.array([bfloat_bits(value) << 16], np.uint32)
    return float(bits.view(np.float32)[0])


def name(value: SSAValue, hint: str) -> None:
    """Name an SSA value after a Python name (if the IR's syntax allows that name)."""
    if hint.isascii() and SSAValue.is_valid_name(hint):
        value.name_hint = hint


class Emitter:
    """Where ops go (the current block) and how values become SSA values of a given type."""

    def __init__(self, source: Source):
        self.source = source
        self.atoms = Atoms()
        self.top = Block()
        self.block = self.top
        self._prelude_end: Operation | None = None
        self._hoisted: dict[Hashable, SSAValue] = {}

    def error(self, node: ast.AST, message: str) -> LoopoptError:
        return self.source.error(node, message)

    def emit(self, op: Operation, node: ast.AST) -> Operation:
        op.location = self.source.loc(node)
        self.block.add_op(op)
        return op

    def value(self, op: Operation, node: ast.AST) -> SSAValue:
        return self.emit(op, node).results[0]

    def top_level(self, value: SSAValue) -> bool:
        if isinstance(value, BlockArgument):
            return value.block is self.top
        return value.owner.parent is self.top

    def hoist(self, key: Hashable, build: Callable[[], SSAValue]) -> SSAValue:
        """The value `build()` emits, computed at the top level right after the definitions
        it uses (which must all be top-level values); built once per `key`."""
        cached = self._hoisted.get(key)
        if cached is not None and (isinstance(cached, BlockArgument) or cached.owner.parent):
            return cached
        saved, scratch = self.block, Block()
        self.block = scratch
        try:
            value = build()
        finally:
            self.block = saved
        anchor = self._anchor(list(scratch.ops))
        for op in list(scratch.ops):
            scratch.detach_op(op)
            if anchor is None:
                first = self.top.first_op
                if first is None:
                    self.top.add_op(op)
                else:
                    self.top.insert_op_before(op, first)
            else:
                self.top.insert_op_after(op, anchor)
            if anchor is self._prelude_end:
                self._prelude_end = op
            anchor = op
        self._hoisted[key] = value
        return value

    def drop_unused_hoisted(self) -> None:
        """Erase hoisted ops nothing uses (sizes and constants made but not needed)."""
        hoisted = {v.owner for v in self._hoisted.values() if not isinstance(v, BlockArgument)}
        for op in reversed(list(self.top.ops)):
            if op in hoisted and all(not r.uses for r in op.results):
                self.top.detach_op(op)
                op.erase()

    def _anchor(self, ops: Sequence[Operation]) -> Operation | None:
        """The top-level op after which `ops` may go: after everything they use, and after
        the prelude (the constants and sizes at the top of the function)."""
        owners = {
            v.owner for op in ops for v in op.operands if not isinstance(v, BlockArgument)
        } - set(ops)
        owners.add(self._prelude_end)
        anchor = None
        for op in self.top.ops:
            if op in owners:
                anchor = op
        return anchor

    def constant(self, value: int | float | bool, ty: Ty, node: ast.AST) -> SSAValue:
        """A constant of type `ty`, hoisted to the top of the function."""
        ir_type = ty.ir()
        if ty.kind == "float":
            if ty.bits == 32:
                value = float(np.float32(value))  # as numpy rounds a Python float
            elif ty.bits == 16:
                value = _round_to_16_bits(float(value), ty)
            attr: IntegerAttr | FloatAttr = FloatAttr(float(value), ir_type)  # pyright: ignore
        elif ty == BOOL:
            attr = IntegerAttr(int(bool(value)), ir_type)  # pyright: ignore[reportArgumentType]
        else:
            attr = IntegerAttr(int(value), ir_type)  # pyright: ignore[reportArgumentType]
        key = ("constant", str(attr), repr(float(value)) if ty.kind == "float" else None)
        return self.hoist(key, lambda: self.value(arith.ConstantOp(attr), node))

    def load(
        self, array: Array, amap: AffineMap, operands: Sequence[SSAValue], node: ast.AST
    ) -> Scalar:
        """An element of `array`; a float16/bfloat16 one widened to float32 (types.py)."""
        load = affine.LoadOp(array.value, operands, AffineMapAttr(amap), array.ty.ir())
        value = self.value(load, node)
        if not array.ty.storage_only:
            return Scalar(value, array.ty)
        return Scalar(self.value(arith.ExtFOp(value, F32.ir()), node), F32)

    def index(self, expr: AffineExpr, node: ast.AST) -> SSAValue:
        """An index value computing `expr` (constant, atom, or affine.apply)."""
        expr = self.atoms.simplify(expr)
        value = constant_of(expr)
        if value is not None:
            return self.constant(value, PY_INT, node)
        atom = self.atoms.single(expr)
        if atom is not None:
            return atom
        amap, operands = self.atoms.map([expr])

        def build() -> SSAValue:
            return self.value(affine.ApplyOp(operands, AffineMapAttr(amap)), node)

        if self.atoms.symbolic(expr):
            return self.hoist(("apply", str(amap), tuple(operands)), build)
        return build()

    def bound(self, bound: Bound, node: ast.AST) -> SSAValue:
        amap, operands = self.atoms.map(bound.exprs)
        if bound.kind == "min":
            return self.value(affine.MinOp(operands, AffineMapAttr(amap)), node)
        return self.value(affine_ext.MaxOp(operands, AffineMapAttr(amap)), node)

    def affine(self, value: Value) -> AffineExpr | None:
        """`value` as an affine expression over atoms, if it is an int that can be one."""
        if isinstance(value, Index):
            return value.expr
        if isinstance(value, Scalar) and value.ty == PY_INT and self.top_level(value.value):
            return self.atoms.atom(value.value, is_dim=False)
        if isinstance(value, Bound) and all(self.atoms.symbolic(e) for e in value.exprs):
            bound = value
            key = ("bound", bound.kind, tuple(str(e) for e in bound.exprs))
            symbol = self.hoist(key, lambda: self.bound(bound, self.source.tree))
            return self.atoms.atom(symbol, is_dim=False)
        return None

    def materialize(self, value: Value, node: ast.AST) -> Scalar:
        """`value` as an SSA value with its front-end type."""
        if isinstance(value, Scalar):
            return value
        if isinstance(value, Index):
            return Scalar(self.index(value.expr, node), PY_INT)
        if isinstance(value, Bound):
            return Scalar(self.bound(value, node), PY_INT)
        if isinstance(value, FloatConst):
            return Scalar(self.constant(value.value, PY_FLOAT, node), PY_FLOAT)
        if isinstance(value, BoolConst):
            return Scalar(self.constant(value.value, BOOL, node), BOOL)
        if isinstance(value, Undefined):
            raise self.error(node, value.reason)
        raise self.error(node, f"'{self.source.text(node)}' is not a number")

    def coerce(self, value: Value, ty: Ty, node: ast.AST) -> SSAValue:
        """`value` converted to `ty` (as numpy would when computing in or storing to `ty`)."""
        if isinstance(value, FloatConst) and ty.kind == "float":
            return self.constant(value.value, ty, node)
        if isinstance(value, Index) and ty.kind != "bool":
            known = constant_of(self.atoms.simplify(value.expr))
            if known is not None:
                return self.constant(known, ty, node)
        scalar = self.materialize(value, node)
        return self.convert(scalar.value, scalar.ty, ty, node)

    def convert(self, value: SSAValue, source: Ty, target: Ty, node: ast.AST) -> SSAValue:
        """`value` of type `source` as a `target` (computed once, at the top level, for a
        top-level value such as a parameter)."""
        if source.ir() == target.ir():
            return value
        if self.top_level(value):
            key = ("convert", value, source, target)
            return self.hoist(key, lambda: self._convert(value, source, target, node))
        return self._convert(value, source, target, node)

    def _convert(self, value: SSAValue, source: Ty, target: Ty, node: ast.AST) -> SSAValue:
        if target == BOOL:
            return self.truth(Scalar(value, source), node)
        if source.kind == "float" and target.kind == "float":
            cast = arith.ExtFOp if target.bits > source.bits else arith.TruncFOp
            return self.value(cast(value, target.ir()), node)
        if source.kind == "float":  # to an integer: truncation toward zero, as numpy
            wide = target if not target.weak else Ty("int", 64)
            value = self.value(arith.FPToSIOp(value, wide.ir()), node)
            return self._convert(value, wide, target, node)
        if source == BOOL:
            value = self.value(arith.ExtUIOp(value, Ty("int", 64).ir()), node)
            source = Ty("int", 64)
            if source.ir() == target.ir():
                return value
        if source.weak and target.kind == "int":
            return self.value(arith.IndexCastOp(value, target.ir()), node)
        if source.weak:  # index → i64 first
            value = self.value(arith.IndexCastOp(value, Ty("int", 64).ir()), node)
            source = Ty("int", 64)
        if target.kind == "float":
            return self.value(arith.SIToFPOp(value, target.ir()), node)
        if target.weak:
            return self.value(arith.IndexCastOp(value, IndexType()), node)
        if target.bits == source.bits:
            return value
        cast = arith.ExtSIOp if target.bits > source.bits else arith.TruncIOp
        return self.value(cast(value, target.ir()), node)

    def truth(self, value: Value, node: ast.AST) -> SSAValue:
        """An i1: the value as a condition (`x` means `x != 0`, as in Python)."""
        scalar = self.materialize(value, node)
        if scalar.ty == BOOL:
            return scalar.value
        zero = self.constant(0, scalar.ty, node)
        if scalar.ty.kind == "float":
            return self.value(arith.CmpfOp(scalar.value, zero, "une"), node)
        return self.value(arith.CmpiOp(scalar.value, zero, "ne"), node)
