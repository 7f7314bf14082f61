"""Loop unrolling, and the affine rewriting helpers that unroll-and-jam and peeling share.

Partial unroll by a factor: the main loop steps `factor * step` and holds `factor` copies of the
body; copy u sees the induction variable as `iv + u * step`, composed into the affine maps of its
loads, stores, applies and inner loop bounds (an `affine.apply` is kept only for non-affine uses).
Iter_args thread through the copies. A remainder loop named `<name>_rem` runs the leftover
iterations; there is none when the factor divides a constant trip count.

    affine.for %k = 0 to 10 {             affine.for %k = 0 to 8 step 4 {
      S(%k)                      ==>        S(%k)  S(%k + 1)  S(%k + 2)  S(%k + 3)
    } {loopopt.name = "k"}                } {loopopt.name = "k"}
                                          affine.for %k = 8 to 10 { S(%k) } {loopopt.name = "k_rem"}

With non-constant bounds the split point is the affine map
`lb + (ceildiv(ub - lb, step) floordiv factor) * factor * step` (MLIR's
getCleanupLoopLowerBound; a `max` lower or `min` upper bound of valid symbols is first computed
by an affine.max/affine.min op) and the remainder starts at `max(lb, split)`, which keeps it empty
when the trip count is negative. A max/min of loop IVs (the point loop of a tile ends at
`min(%it + 8, %n)`) cannot be an SSA value upstream MLIR takes as a dim: the loop keeps its
bounds, steps `factor * step`, and copy u runs under `affine.if (iv + u * step <= ub_k - 1 ...)`
(`copy_guards`, loops/guard.py); iter_args come out of the if (the else yields them unchanged).
Full unroll replaces a loop with a constant trip count (constant bounds, or bounds a constant
apart such as `%t to %t + 4`) by its copies, chaining iter_args.

The helpers below (`Bound`, `MapBuilder`, `substitute`, `fold_apply`, `split_loop`, ...) are
shared with unroll_jam.py and peel.py. Maps of affine.load/store are built with symbols only,
the form xDSL's parser produces and the only one its printer prints correctly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import AffineMapAttr, DenseArrayBase, IndexType, IntegerAttr, i32
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.affine_ext import MaxOp
from loopopt.loops.guard import Escape, Guard, IterationDomain, guarded_copy, materializable
from loopopt.loops.nest import (
    body_ops,
    constant_trip_count,
    describe_loop,
    enclosing_loops,
    loop_name,
    loops_in,
    set_loop_name,
    step_of,
)

REMAINDER_SUFFIX = "_rem"
"""Name suffix of the loop that runs the iterations a partial unroll (or jam) leaves over."""

BoundKind = Literal["min", "max"]


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


def _simplify(expr: AffineExpr, num_dims: int, num_symbols: int) -> AffineExpr:
    try:
        return expr.simplify(num_dims, num_symbols)
    except NotImplementedError:  # semi-affine: keep as written
        return expr


def _constant_difference(a: AffineExpr, b: AffineExpr, num_dims: int) -> int | None:
    diff = _simplify(a - b, num_dims, 0)
    return diff.value if isinstance(diff, AffineConstantExpr) else None


def _prune(results: list[AffineExpr], kind: BoundKind, num_dims: int) -> list[AffineExpr]:
    """Drop results of a min (max) that another result is never above (below)."""

    def redundant(candidate: AffineExpr, other: AffineExpr) -> bool:
        diff = _constant_difference(candidate, other, num_dims)
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


def single_lower(loop: affine.ForOp, builder: MapBuilder) -> AffineExpr:
    """`loop`'s lower bound as one expression; a `max` bound becomes an affine.max op."""
    bound = builder.build(builder.exprs(lower_bound(loop)), "max")
    if len(bound.map.results) == 1:
        return builder.exprs(bound)[0]
    maximum = MaxOp(list(bound.operands), AffineMapAttr(bound.map))
    _insert_before(maximum, hoisting_point(bound.operands, loop))
    return builder.value(maximum.result)


def single_upper(loop: affine.ForOp, builder: MapBuilder) -> AffineExpr:
    """`loop`'s upper bound as one expression; a `min` bound becomes an affine.min op."""
    bound = builder.build(builder.exprs(upper_bound(loop)), "min")
    if len(bound.map.results) == 1:
        return builder.exprs(bound)[0]
    return builder.value(materialize_min(bound, loop))


def materialize_min(bound: Bound, before: Operation) -> SSAValue:
    """An SSA value for `bound` (the min of its results), computed before `before`, hoisted out
    of the loops around `before` that it does not depend on."""
    if len(bound.map.results) == 1:
        op: Operation = affine.ApplyOp(list(bound.operands), AffineMapAttr(bound.map))
    else:
        op = affine.MinOp(list(bound.operands), AffineMapAttr(bound.map))
    _insert_before(op, hoisting_point(bound.operands, before))
    return op.results[0]


def hoisting_point(operands: Sequence[SSAValue], before: Operation) -> Operation:
    """The outermost op among `before` and its enclosing affine.for ops that no value of
    `operands` is defined in: a pure computation of `operands` may go just before it."""
    anchor = before
    parent = anchor.parent_op()
    while isinstance(parent, affine.ForOp) and not any(defined_inside(v, parent) for v in operands):
        anchor = parent
        parent = anchor.parent_op()
    return anchor


def _insert_before(op: Operation, anchor: Operation) -> None:
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
        _insert_before(constant, apply)
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
    _insert_before(apply, before)
    return apply


def innermost_loops(root: Operation) -> list[affine.ForOp]:
    """The loops under `root` that contain no other loop, in pre-order."""
    return [loop for loop in loops_in(root) if next(loops_in(loop), None) is None]


def defined_inside(value: SSAValue, loop: Operation) -> bool:
    """Whether `value` is defined in `loop`'s regions (its IV and iter_args included)."""
    if isinstance(value, OpResult):
        op: Operation | None = value.op
    elif isinstance(value, BlockArgument):
        op = value.block.parent_op()
    else:
        return False
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op()
    return False


def split_loop(
    loop: affine.ForOp,
    first_upper: Bound,
    second_lower: Bound,
    suffix: str,
    *,
    before: bool = False,
) -> affine.ForOp:
    """Split `loop` into two consecutive loops: the first ends at `first_upper`, the second starts
    at `second_lower`; iter_args flow from the first into the second.

    `loop` itself becomes the second part when `before` is set (else the first); the other part
    is a copy named `<name><suffix>`, returned. Not checked: that the two ranges tile the original.
    """
    copy = loop.clone()
    block = loop.parent_block()
    if block is None:
        raise LoopoptError("cannot split a loop outside any block", op=loop)
    if before:
        block.insert_op_before(copy, loop)
        first, second = copy, loop
    else:
        block.insert_op_after(copy, loop)
        first, second = loop, copy
        for old, new in zip(loop.results, copy.results, strict=True):
            old.replace_all_uses_with(new)
    set_bounds(first, upper=first_upper)
    set_bounds(second, lower=second_lower, inits=tuple(first.results) if loop.inits else None)
    name = loop_name(loop)
    if name is not None:
        set_loop_name(copy, name + suffix)
    return copy


def trip_count(loop: affine.ForOp) -> int | None:
    """The number of iterations of `loop` when it is a constant: constant bounds, or one-result
    bounds a constant apart (`%t to %t + 32`, a point loop of a full tile)."""
    known = constant_trip_count(loop)
    if known is not None:
        return known
    builder = MapBuilder()
    lower, upper = builder.exprs(lower_bound(loop)), builder.exprs(upper_bound(loop))
    if len(lower) != 1 or len(upper) != 1:
        return None
    difference = _constant_difference(upper[0], lower[0], len(builder.values))
    if difference is None:
        return None
    return max(0, -(-difference // step_of(loop)))


def iteration_value(loop: affine.ForOp, iteration: int) -> Bound:
    """The IV value of iteration `iteration` of `loop` (one-result lower bound): lb + n * step."""
    builder = MapBuilder()
    [lower] = builder.exprs(lower_bound(loop))
    return builder.build([lower + iteration * step_of(loop)])


def split_off_remainder(loop: affine.ForOp, factor: int) -> affine.ForOp | None:
    """Shrink `loop` to a multiple of `factor` iterations and return the loop, `<name>_rem`,
    that runs the rest after it (None when `factor` divides a constant trip count)."""
    step = step_of(loop)
    known = trip_count(loop)
    if known is not None:
        if known % factor == 0:
            return None
        split_at = iteration_value(loop, (known // factor) * factor)
        return split_loop(loop, split_at, split_at, REMAINDER_SUFFIX)
    builder = MapBuilder()
    lower = single_lower(loop, builder)
    upper = single_upper(loop, builder)
    trip_count_expr = upper - lower if step == 1 else (upper - lower).ceil_div(step)
    split_at = lower + (trip_count_expr // factor) * (factor * step)
    first_upper = builder.build([split_at])
    second_lower = builder.build([*builder.exprs(lower_bound(loop)), split_at], "max")
    return split_loop(loop, first_upper, second_lower, REMAINDER_SUFFIX)


def copy_guards(loop: affine.ForOp, factor: int) -> list[Guard | None] | None:
    """How unrolling `loop` by `factor` keeps the copies in bounds: None when the loop can be
    split into a main loop and a remainder (one-result bounds, or a max/min of valid symbols,
    which an affine.max/min op can hold); else the guard of each copy u = 1 .. n (n < factor),
    `iv + u * step <= ub_k - 1` for each result ub_k of the upper bound (None: always runs).

    A constraint that holds in every iteration of the unrolled loop (`IterationDomain`) is left
    out: `%i = %it to min(%it + 8, %n) step 4` needs no `%i + 3 <= %it + 7`. Copies from the
    first one whose guard never holds on are left out (n is the last copy that may run).
    """
    builder = MapBuilder()
    lowers = builder.build(builder.exprs(lower_bound(loop)), "max")
    uppers = builder.build(builder.exprs(upper_bound(loop)), "min")
    if all(len(b.map.results) == 1 or materializable(b.operands) for b in (lowers, uppers)):
        return None
    step = step_of(loop)
    domain = IterationDomain([*enclosing_loops(loop), loop], factor * step)
    iv = builder.value(loop.body.block.args[0])
    guards: list[Guard | None] = []
    for copy in range(1, factor):
        needed = [upper - iv - (copy * step + 1) for upper in builder.exprs(uppers)]
        if not domain.feasible(needed, builder.values):
            break
        needed = [c for c in needed if not domain.holds(c, builder.values)]
        if not needed:
            guards.append(None)
            continue
        bound = builder.build(needed)
        guards.append(Guard(bound.map, bound.operands))
    return guards


def unroll(loop: affine.ForOp, factor: int, pass_name: str = "loop-unroll") -> affine.ForOp | None:
    """Unroll `loop` by `factor` (>= 1); returns the remainder loop if one was made.

    A constant trip count of at most `factor` unrolls fully (`unroll_full`). Always legal: the
    iterations keep their order. Diagnostics are prefixed with `pass_name`.
    """
    if factor < 1:
        raise LoopoptError(f"{pass_name}: unroll factor must be at least 1, got {factor}", op=loop)
    if factor == 1:
        return None
    known = trip_count(loop)
    if known is not None and known <= factor:
        unroll_full(loop, pass_name)
        return None
    step = step_of(loop)
    guards = copy_guards(loop, factor)
    remainder = split_off_remainder(loop, factor) if guards is None else None
    set_bounds(loop, step=factor * step)
    block = loop.body.block
    iv, *iter_args = block.args
    terminator = block.last_op
    if not isinstance(terminator, affine.YieldOp):
        raise LoopoptError("affine.for body does not end with affine.yield", op=loop)
    body = body_ops(loop)
    yielded = list(terminator.operands)
    current = list(yielded)
    applies: list[affine.ApplyOp] = []
    first = body[0] if body else terminator
    for copy in range(1, factor if guards is None else len(guards) + 1):
        apply = offset_apply(iv, copy * step, first)
        applies.append(apply)
        mapper: dict[SSAValue, SSAValue] = {iv: apply.result}
        mapper.update(zip(iter_args, current, strict=True))
        guard = guards[copy - 1] if guards is not None else None
        if guard is not None:
            escaping = [Escape(v, f, True) for v, f in zip(yielded, current, strict=True)]
            for op in guarded_copy(body, mapper, guard, escaping):
                block.insert_op_before(op, terminator)
        else:
            for op in body:
                block.insert_op_before(op.clone(value_mapper=mapper), terminator)
        current = [mapper.get(v, v) for v in yielded]
    terminator.operands = current
    for apply in applies:
        fold_apply(apply)
    return remainder


def unroll_full(loop: affine.ForOp, pass_name: str = "loop-unroll") -> None:
    """Replace `loop` (constant `trip_count`) by its iterations, in order; iter_args become the
    chained values. A trip count of 0 erases the loop (its results become its inits)."""
    known = trip_count(loop)
    if known is None:
        raise LoopoptError(
            f"{pass_name}: cannot fully unroll '{describe_loop(loop)}': its trip count is not "
            "constant",
            op=loop,
        )
    block = loop.body.block
    iv, *iter_args = block.args
    terminator = block.last_op
    yielded = list(terminator.operands) if isinstance(terminator, affine.YieldOp) else []
    body = body_ops(loop)
    current = list(loop.inits)
    for iteration in range(known):
        index = iteration_value(loop, iteration)
        apply = affine.ApplyOp(list(index.operands), AffineMapAttr(index.map))
        _insert_before(apply, loop)
        mapper: dict[SSAValue, SSAValue] = {iv: apply.result}
        mapper.update(zip(iter_args, current, strict=True))
        for op in body:
            _insert_before(op.clone(value_mapper=mapper), loop)
        current = [mapper.get(v, v) for v in yielded]
        fold_apply(apply)
    for result, value in zip(loop.results, current, strict=True):
        result.replace_all_uses_with(value)
    parent = loop.parent_block()
    if parent is not None:
        parent.erase_op(loop)
