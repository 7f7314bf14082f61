"""Affine maps applied to SSA values (`Bound`): reading and writing them on ops, building new
ones from expressions over SSA values, and composing one map into the maps that use a value.

A `Bound` is a map and its operands (dims first, then symbols). As a loop bound, several lower
results mean their max, several upper results their min (exclusive), as in `affine.for`:

    lb: affine_map<(d0) -> (d0)>(%i_t)
    ub: affine_map<(d0)[s0] -> (d0 + 32, s0)>(%i_t)[%N]          (min: point-loop upper bound)

Two builders number the operands of a new map:
- `BoundBuilder`: the caller says which values are dims (`dim`) and which symbols (`sym`);
  `build` deduplicates the results and keeps the operands they use, in that order.
- `MapBuilder`: one placeholder per distinct value (`value`, `exprs`); `build` makes a value a
  symbol only where it was only ever one, simplifies, and for a `min`/`max` kind drops dominated
  results; `access=True` gives the all-symbol form of affine.load/store maps (the form xDSL's
  parser produces and the only one its printer prints correctly).

`substitute` composes a one-result map into every affine map that uses a value (loads, stores,
applies, min/max, loop bounds); `fold_apply` does so for an `affine.apply` and erases it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import AffineMapAttr, DenseArrayBase, IndexType, IntegerAttr, i32
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.affine_ext import MaxOp

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


def set_bounds(
    loop: affine.ForOp,
    lower: Bound | None = None,
    upper: Bound | None = None,
    *,
    step: int | None = None,
    inits: Sequence[SSAValue] | None = None,
) -> None:
    """Change `loop`'s bounds, step or iter_args inits in place (the op object is kept)."""
    lower = lower if lower is not None else lower_bound(loop)
    upper = upper if upper is not None else upper_bound(loop)
    init_values = tuple(inits) if inits is not None else tuple(loop.inits)
    loop.operands = (*lower.operands, *upper.operands, *init_values)
    sizes = [len(lower.operands), len(upper.operands), len(init_values)]
    loop.properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, sizes)
    loop.properties["lowerBoundMap"] = AffineMapAttr(lower.map)
    loop.properties["upperBoundMap"] = AffineMapAttr(upper.map)
    if step is not None:
        loop.properties["step"] = IntegerAttr.from_index_int_value(step)


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


def _simplify(expr: AffineExpr, num_dims: int, num_symbols: int) -> AffineExpr:
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
        """The map of `results`; `access` makes every operand a symbol, the form xDSL's parser
        gives (and its printer expects for) the maps of affine.load/store."""
        exprs = [self.simplified(r) for r in results]
        if kind is not None:
            exprs = _prune(exprs, kind, len(self.values))
        used: set[int] = set().union(*(r.used_dims() for r in exprs))
        dims = [i for i in sorted(used) if not (access or self._symbol[i])]
        syms = [i for i in sorted(used) if access or self._symbol[i]]
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


@dataclass
class BoundBuilder:
    """Collects the operands of one bound map; each distinct SSA value is one dim or symbol."""

    dims: list[SSAValue] = field(default_factory=list[SSAValue])
    syms: list[SSAValue] = field(default_factory=list[SSAValue])

    def dim(self, value: SSAValue) -> AffineExpr:
        if value not in self.dims:
            self.dims.append(value)
        return AffineExpr.dimension(self.dims.index(value))

    def sym(self, value: SSAValue) -> AffineExpr:
        if value not in self.syms:
            self.syms.append(value)
        return AffineExpr.symbol(self.syms.index(value))

    def results_of(
        self, bound: Bound, replace: Mapping[SSAValue, AffineExpr] | None = None
    ) -> list[AffineExpr]:
        """The results of `bound` over this builder's operands; operands in `replace` are
        substituted by the given expressions (which must be over this builder's operands)."""
        amap, operands = bound.map, bound.operands
        replace = replace or {}
        dims = [replace.get(v) or self.dim(v) for v in operands[: amap.num_dims]]
        syms = [replace.get(v) or self.sym(v) for v in operands[amap.num_dims :]]
        return [expr.replace_dims_and_symbols(dims, syms) for expr in amap.results]

    def build(self, results: Sequence[AffineExpr]) -> Bound:
        """The bound map of `results` (deduplicated, simplified) with only the used operands."""
        nd, ns = len(self.dims), len(self.syms)
        unique: list[AffineExpr] = []
        for expr in results:
            expr = expr.simplify(nd, ns) if expr.is_pure_affine() else expr
            if expr not in unique:
                unique.append(expr)
        used_dims = sorted(
            {e.position for r in unique for e in r.dfs() if isinstance(e, AffineDimExpr)}
        )
        used_syms = sorted(
            {e.position for r in unique for e in r.dfs() if isinstance(e, AffineSymExpr)}
        )
        new_dims = [
            AffineExpr.dimension(used_dims.index(d)) if d in used_dims else AffineExpr.constant(0)
            for d in range(nd)
        ]
        new_syms = [
            AffineExpr.symbol(used_syms.index(s)) if s in used_syms else AffineExpr.constant(0)
            for s in range(ns)
        ]
        amap = AffineMap(nd, ns, tuple(unique)).replace_dims_and_symbols(
            new_dims, new_syms, len(used_dims), len(used_syms)
        )
        operands = [self.dims[d] for d in used_dims] + [self.syms[s] for s in used_syms]
        return Bound(amap, tuple(operands))


def insert_before(op: Operation, anchor: Operation) -> None:
    """Insert `op` just before `anchor` (a diagnostic if `anchor` is in no block)."""
    block = anchor.parent_block()
    if block is None:
        raise LoopoptError("cannot insert next to an op outside any block", op=anchor)
    block.insert_op_before(op, anchor)


def _is_access(op: Operation) -> bool:
    return isinstance(
        op, affine.LoadOp | affine.VectorLoadOp | affine.StoreOp | affine.VectorStoreOp
    )


def _map_groups(op: Operation) -> list[tuple[str, Bound, BoundKind | None]]:
    """The affine maps of `op` with their operands (and how a multi-result map combines)."""
    if isinstance(op, affine.LoadOp | affine.VectorLoadOp | affine.StoreOp | affine.VectorStoreOp):
        return [("map", Bound(op.map.data, tuple(op.indices)), None)]
    if isinstance(op, affine.ApplyOp):
        return [("map", Bound(op.map.data, tuple(op.mapOperands)), None)]
    if isinstance(op, affine.MinOp):
        return [("map", Bound(op.map.data, tuple(op.arguments)), "min")]
    if isinstance(op, MaxOp):
        return [("map", Bound(op.map.data, tuple(op.arguments)), "max")]
    if isinstance(op, affine.ForOp):
        return [("lower", lower_bound(op), "max"), ("upper", upper_bound(op), "min")]
    return []


def _set_map_group(op: Operation, key: str, bound: Bound) -> None:
    if isinstance(op, affine.ForOp):
        set_bounds(
            op, lower=bound if key == "lower" else None, upper=bound if key == "upper" else None
        )
        return
    if isinstance(op, affine.StoreOp | affine.VectorStoreOp):
        op.operands = (op.value, op.memref, *bound.operands)
    elif isinstance(op, affine.LoadOp | affine.VectorLoadOp):
        op.operands = (op.memref, *bound.operands)
    else:
        op.operands = bound.operands
    op.properties["map"] = AffineMapAttr(bound.map)


def substitute(value: SSAValue, replacement: Bound) -> None:
    """Compose `replacement` (a one-result map of SSA values) into every affine map using `value`.

    Non-affine uses of `value` are left alone.
    """
    for use in list(value.uses):
        op = use.operation
        for key, bound, kind in _map_groups(op):
            if not any(v is value for v in bound.operands):
                continue
            builder = MapBuilder()
            [rep] = builder.exprs(replacement)
            num_dims = bound.map.num_dims
            dims = [rep if v is value else builder.value(v) for v in bound.operands[:num_dims]]
            syms = [
                rep if v is value else builder.value(v, symbol=True)
                for v in bound.operands[num_dims:]
            ]
            results = [r.replace_dims_and_symbols(dims, syms) for r in bound.map.results]
            _set_map_group(op, key, builder.build(results, kind, access=_is_access(op)))


def fold_apply(apply: affine.ApplyOp) -> None:
    """Compose `apply` into its affine users; erase it when no use is left, turn it into an
    `arith.constant` when it is a constant still used by non-affine ops."""
    substitute(apply.result, Bound(apply.map.data, tuple(apply.mapOperands)))
    result_map = apply.map.data
    replacement: SSAValue | None = None
    if not apply.result.uses:
        pass
    elif len(apply.mapOperands) == 0 and isinstance(result_map.results[0], AffineConstantExpr):
        constant = arith.ConstantOp(IntegerAttr(result_map.results[0].value, IndexType()))
        insert_before(constant, apply)
        replacement = constant.result
    elif result_map == AffineMap.identity(1) or result_map == AffineMap.identity(0, 1):
        replacement = apply.mapOperands[0]
    else:
        return
    if replacement is not None:
        apply.result.replace_all_uses_with(replacement)
    block = apply.parent_block()
    if block is not None:
        block.erase_op(apply)


def offset_apply(iv: SSAValue, offset: int, before: Operation) -> affine.ApplyOp:
    """`affine.apply (d0 + offset)(iv)` placed just before `before`."""
    offset_map = AffineMap(1, 0, (AffineDimExpr(0) + offset,))
    apply = affine.ApplyOp([iv], AffineMapAttr(offset_map))
    insert_before(apply, before)
    return apply


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
