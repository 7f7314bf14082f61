"""Reading affine maps applied to SSA values (`Bound`) and building new ones over them.

A `Bound` is a map and its operands (dims first, then symbols). As a loop bound, several lower
results mean their max, several upper results their min (exclusive), as in `affine.for`:

    lb: affine_map<(d0) -> (d0)>(%i_t)
    ub: affine_map<(d0)[s0] -> (d0 + 32, s0)>(%i_t)[%N]          (min: point-loop upper bound)

`MapBuilder` gives one placeholder per distinct value (`value`, `exprs`); `build` makes a value a
symbol only where it was only ever one, simplifies, and for a `min`/`max` kind drops dominated
results; `access=True` gives the all-dimension form of affine.load/store maps (what MLIR's
parser makes of `%A[%i, %j + 1]` and loopopt's parser too, context.py; xDSL's printer prints
maps of only dims or only symbols correctly, and MLIR refuses a loop index as a symbol).
`composed` reads a map with the affine.apply ops and constants among its operands composed in.

Nothing here changes the IR (loops/affine_maps.py writes bounds and substitutes maps).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)

BoundKind = Literal["min", "max"]
"""How the results of a multi-result map combine (upper bounds: min, lower bounds: max)."""


@dataclass(frozen=True)
class Bound:
    """An affine map applied to SSA values (dims first, then symbols): a loop bound, an index."""

    map: AffineMap
    operands: tuple[SSAValue, ...]

    @staticmethod
    def constant(value: int) -> Bound:
        return Bound(AffineMap.constant_map(value), ())


def lower_bound(loop: affine.ForOp) -> Bound:
    return Bound(loop.lowerBoundMap.data, tuple(loop.lowerBoundOperands))


def upper_bound(loop: affine.ForOp) -> Bound:
    return Bound(loop.upperBoundMap.data, tuple(loop.upperBoundOperands))


def bound_values(bound: Bound) -> set[SSAValue]:
    """The operands that the bound's results actually use."""
    amap, operands = bound.map, bound.operands
    used: set[SSAValue] = set()
    for expr in amap.results:
        for node in expr.dfs():
            if isinstance(node, AffineDimExpr):
                used.add(operands[node.position])
            elif isinstance(node, AffineSymExpr):
                used.add(operands[amap.num_dims + node.position])
    return used


def coefficient(expr: AffineExpr, target: AffineExpr) -> int | None:
    """The constant coefficient of `target` (a dim or symbol) in `expr`; None where `target`
    appears under mod, floordiv, ceildiv or a product with a non-constant."""
    if expr == target:
        return 1
    if not isinstance(expr, AffineBinaryOpExpr):
        return 0
    if expr.kind == AffineBinaryOpKind.Add:
        lhs, rhs = coefficient(expr.lhs, target), coefficient(expr.rhs, target)
        return None if lhs is None or rhs is None else lhs + rhs
    uses = target in set(expr.dfs())
    if expr.kind == AffineBinaryOpKind.Mul:
        for factor, other in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if isinstance(factor, AffineConstantExpr):
                inner = coefficient(other, target)
                return None if inner is None else inner * factor.value
    return None if uses else 0


def linear_form(bound: Bound, index: int) -> dict[SSAValue | None, int] | None:
    """Result `index` of `bound` as {operand: coefficient, None: constant}; None if not linear."""
    amap, operands = bound.map, bound.operands

    def walk(expr: AffineExpr) -> dict[SSAValue | None, int] | None:
        if isinstance(expr, AffineConstantExpr):
            return {None: expr.value}
        if isinstance(expr, AffineDimExpr):
            return {operands[expr.position]: 1}
        if isinstance(expr, AffineSymExpr):
            return {operands[amap.num_dims + expr.position]: 1}
        assert isinstance(expr, AffineBinaryOpExpr)
        if expr.kind == AffineBinaryOpKind.Add:
            lhs, rhs = walk(expr.lhs), walk(expr.rhs)
            if lhs is None or rhs is None:
                return None
            return {k: lhs.get(k, 0) + rhs.get(k, 0) for k in lhs.keys() | rhs.keys()}
        if expr.kind == AffineBinaryOpKind.Mul:
            for factor, other in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
                if isinstance(factor, AffineConstantExpr):
                    inner = walk(other)
                    return (
                        None if inner is None else {k: c * factor.value for k, c in inner.items()}
                    )
        return None

    return walk(amap.results[index])


@functools.lru_cache(maxsize=1 << 16)
def _simplify(expr: AffineExpr, num_dims: int, num_symbols: int) -> AffineExpr:
    """xDSL's simplification (memoized: unrolled kernels ask for the same ones many times)."""
    try:
        return expr.simplify(num_dims, num_symbols)
    except NotImplementedError:  # semi-affine: keep as written
        return expr


def constant_difference(a: AffineExpr, b: AffineExpr, num_dims: int) -> int | None:
    """`a - b` (expressions over `num_dims` dims) when it is a constant."""
    diff = _simplify(a - b, num_dims, 0)
    return diff.value if isinstance(diff, AffineConstantExpr) else None


def _prune(results: list[AffineExpr], kind: BoundKind, num_dims: int) -> list[AffineExpr]:
    """Drop results of a min (max) that another result is never above (below)."""

    def redundant(candidate: AffineExpr, other: AffineExpr) -> bool:
        diff = constant_difference(candidate, other, num_dims)
        if diff is None:
            return False
        return diff >= 0 if kind == "min" else diff <= 0

    kept: list[AffineExpr] = []
    for result in results:
        if any(redundant(result, other) for other in kept):
            continue
        kept = [other for other in kept if not redundant(other, result)] + [result]
    return kept


class MapBuilder:
    """Builds affine maps over SSA values gathered from several maps.

    `value(v)` and `exprs(bound)` give expressions over placeholder dims, one per distinct value;
    `build(results)` keeps the values the results use, numbers them (dims first, then values that
    were only ever symbols) and simplifies; a `min`/`max` kind also drops dominated results.
    """

    def __init__(self) -> None:
        self.values: list[SSAValue] = []
        self._symbol: list[bool] = []

    def value(self, value: SSAValue, *, symbol: bool = False) -> AffineExpr:
        for index, known in enumerate(self.values):
            if known is value:
                self._symbol[index] = self._symbol[index] and symbol
                return AffineExpr.dimension(index)
        self.values.append(value)
        self._symbol.append(symbol)
        return AffineExpr.dimension(len(self.values) - 1)

    def exprs(self, bound: Bound) -> list[AffineExpr]:
        num_dims = bound.map.num_dims
        dims = [self.value(v) for v in bound.operands[:num_dims]]
        syms = [self.value(v, symbol=True) for v in bound.operands[num_dims:]]
        return [r.replace_dims_and_symbols(dims, syms) for r in bound.map.results]

    def simplified(self, expr: AffineExpr) -> AffineExpr:
        return _simplify(expr, len(self.values), 0)

    def build(
        self, results: Sequence[AffineExpr], kind: BoundKind | None = None, *, access: bool = False
    ) -> Bound:
        """The map of `results`; `access` makes every operand a dimension, the form of the
        maps of affine.load/store (see the module docstring)."""
        exprs = [self.simplified(r) for r in results]
        if kind is not None:
            exprs = _prune(exprs, kind, len(self.values))
        used: set[int] = set().union(*(r.used_dims() for r in exprs))
        dims = [i for i in sorted(used) if access or not self._symbol[i]]
        syms = [i for i in sorted(used) if not access and self._symbol[i]]
        renumber: list[AffineExpr] = [AffineExpr.constant(0)] * len(self.values)
        for position, index in enumerate(dims):
            renumber[index] = AffineExpr.dimension(position)
        for position, index in enumerate(syms):
            renumber[index] = AffineExpr.symbol(position)
        final = tuple(
            _simplify(r.replace_dims_and_symbols(renumber, []), len(dims), len(syms)) for r in exprs
        )
        operands = tuple(self.values[i] for i in dims + syms)
        return Bound(AffineMap(len(dims), len(syms), final), operands)


def composed(
    builder: MapBuilder, amap: AffineMap, operands: Sequence[SSAValue]
) -> list[AffineExpr]:
    """The results of `amap` applied to `operands` over `builder`'s placeholders, the
    affine.apply ops and index constants among the operands composed in, simplified (so that
    accesses and guards that unrolling rewrote differently compare equal)."""
    values: list[AffineExpr] = []
    for value in operands:
        owner = value.owner
        if isinstance(owner, affine.ApplyOp):
            values += composed(builder, owner.map.data, owner.mapOperands)
        elif isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            values.append(AffineExpr.constant(owner.value.value.data))
        else:
            values.append(builder.value(value))
    dims, syms = values[: amap.num_dims], values[amap.num_dims :]
    return [builder.simplified(r.replace_dims_and_symbols(dims, syms)) for r in amap.results]
