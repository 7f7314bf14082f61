"""What a Python name or expression stands for while a kernel is translated.

    i            → Index(d3)                  an int that is an affine function of loop
    n - i - 1    → Index(d1 - d3 - 1)         variables and symbols (atoms), no op yet
    A[i, k] * 2  → Scalar(%7, float32)        an SSA value with its front-end type
    0.5          → FloatConst(0.5)            a Python float, typed where it is used
    max(0, i-2)  → Bound("max", (0, d3 - 2))  usable as a loop bound, else affine.max

Atoms are the index values affine expressions range over: loop induction variables (dims) and
symbols (values defined at the function's top level: integer arguments, array sizes, hoisted
arithmetic on symbols). An expression over atoms becomes an affine map at its use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap

from loopopt.frontend.types import Ty


@dataclass(frozen=True)
class Index:
    """A Python int that is an affine expression over atoms (AffineDimExpr k = atom k)."""

    expr: AffineExpr


@dataclass(frozen=True)
class Scalar:
    """A value computed in the IR, of front-end type `ty`."""

    value: SSAValue
    ty: Ty


@dataclass(frozen=True)
class FloatConst:
    """A Python float known at compile time (folded exactly like Python would)."""

    value: float


@dataclass(frozen=True)
class BoolConst:
    value: bool


@dataclass(frozen=True)
class Bound:
    """`min(...)`/`max(...)` of affine ints: a loop bound, or an affine.min/max where used."""

    kind: str
    exprs: tuple[AffineExpr, ...]


@dataclass(frozen=True)
class Array:
    """An array argument: its memref, element type and size of each dimension."""

    value: SSAValue
    ty: Ty
    name: str
    shape: tuple[AffineExpr, ...]


@dataclass(frozen=True)
class Shape:
    """`A.shape`."""

    array: Array


@dataclass(frozen=True)
class Tuple:
    items: tuple[Value, ...]


@dataclass(frozen=True)
class Undefined:
    """A name that has no usable value here; reading it is an error saying why."""

    reason: str


Value = Index | Scalar | FloatConst | BoolConst | Bound | Array | Shape | Tuple | Undefined


class Atoms:
    """The index values of one function that affine expressions range over."""

    def __init__(self) -> None:
        self.values: list[SSAValue] = []
        self.is_dim: list[bool] = []
        self._position: dict[SSAValue, int] = {}

    def atom(self, value: SSAValue, is_dim: bool) -> AffineExpr:
        position = self._position.get(value)
        if position is None:
            position = len(self.values)
            self._position[value] = position
            self.values.append(value)
            self.is_dim.append(is_dim)
        return AffineExpr.dimension(position)

    def simplify(self, expr: AffineExpr) -> AffineExpr:
        return expr.simplify(len(self.values), 0)

    def single(self, expr: AffineExpr) -> SSAValue | None:
        """The atom `expr` is, if it is exactly one atom."""
        if isinstance(expr, AffineDimExpr):
            return self.values[expr.position]
        return None

    def symbolic(self, expr: AffineExpr) -> bool:
        """Does `expr` use symbols only (no loop variable)?"""
        return not any(self.is_dim[p] for p in expr.used_dims())

    def used(self, exprs: Sequence[AffineExpr]) -> list[SSAValue]:
        return [self.values[p] for p in sorted({p for e in exprs for p in e.used_dims()})]

    def map(
        self, exprs: Sequence[AffineExpr], all_dims: bool = False
    ) -> tuple[AffineMap, list[SSAValue]]:
        """An affine map computing `exprs` and its operands: loop variables as dims, then
        symbols (or every operand a dim, as in `affine.load %A[%i + %n]`, with `all_dims`)."""
        used = sorted({p for e in exprs for p in e.used_dims()})
        dims = [p for p in used if self.is_dim[p] or all_dims]
        syms = [p for p in used if not (self.is_dim[p] or all_dims)]
        count = len(self.values)
        dim_exprs: list[AffineExpr] = [AffineExpr.constant(0)] * count
        for k, p in enumerate(dims):
            dim_exprs[p] = AffineExpr.dimension(k)
        for k, p in enumerate(syms):
            dim_exprs[p] = AffineExpr.symbol(k)
        results = tuple(
            e.replace_dims_and_symbols(dim_exprs, []).simplify(len(dims), len(syms)) for e in exprs
        )
        operands = [self.values[p] for p in (*dims, *syms)]
        return AffineMap(len(dims), len(syms), results), operands


def constant_of(expr: AffineExpr) -> int | None:
    return expr.value if isinstance(expr, AffineConstantExpr) else None
