"""Affine maps applied to SSA values (`Bound`): reading and writing them on ops, building new
ones from expressions over SSA values, and composing one map into the maps that use a value.

A `Bound` is a map and its operands (dims first, then symbols). As a loop bound, several lower
results mean their max, several upper results their min (exclusive), as in `affine.for`:

    lb: affine_map<(d0) -> (d0)>(%i_t)
    ub: affine_map<(d0)[s0] -> (d0 + 32, s0)>(%i_t)[%N]          (min: point-loop upper bound)

Two builders number the operands of a new map:
- `BoundBuilder`: the caller says which values are dims (`dim`) and which symbols (`sym`);
  `build` deduplicates the results and keeps the operands they use, in that order.
- `MapBuilder` (analysis/affine_maps.py, with `Bound` and the read-only queries, re-exported
  here): one placeholder per distinct value.

`substitute` composes a one-result map into every affine map that uses a value (loads, stores,
applies, min/max, loop bounds); `fold_apply` does so for an `affine.apply` and erases it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import AffineMapAttr, DenseArrayBase, IndexType, IntegerAttr, i32
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import (
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)

from loopopt.analysis.affine_maps import (
    Bound,
    BoundKind,
    MapBuilder,
    bound_values,
    coefficient,
    composed,
    constant_difference,
    linear_form,
    lower_bound,
    upper_bound,
)
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.affine_ext import MaxOp

__all__ = [
    "Bound",
    "BoundBuilder",
    "BoundKind",
    "MapBuilder",
    "bound_values",
    "coefficient",
    "composed",
    "constant_difference",
    "fold_apply",
    "insert_before",
    "linear_form",
    "lower_bound",
    "offset_apply",
    "set_bounds",
    "substitute",
    "upper_bound",
]
"""Its own names, and the read-only queries it re-exports from analysis/ (where they live)."""


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
