"""Loop unrolling: partial (by a factor, with a remainder loop or guarded copies) and full.

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

Both refuse, before changing anything, to create more than `max_ops` ops (copies × the ops of
the body, nested ones included; default `MAX_OPS`): fully unrolling 10⁹ iterations would
otherwise run for days and fill the memory.
"""

from __future__ import annotations

from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr
from xdsl.ir import SSAValue

from loopopt.diagnostics import LoopoptError
from loopopt.loops.affine_maps import (
    MapBuilder,
    fold_apply,
    insert_before,
    lower_bound,
    offset_apply,
    set_bounds,
    upper_bound,
)
from loopopt.loops.bounds import iteration_value, single_lower, single_upper, split_loop
from loopopt.loops.guard import Escape, Guard, IterationDomain, guarded_copy, materializable
from loopopt.loops.nest import body_ops, describe_loop, enclosing_loops, step_of, trip_count

REMAINDER_SUFFIX = "_rem"
"""Name suffix of the loop that runs the iterations a partial unroll (or jam) leaves over."""

MAX_OPS = 65_536
"""The most ops an unroll (or unroll-and-jam) creates unless told otherwise (`max-ops=`); the
register tiles and copy loops that schedules unroll stay far below it (a few thousand), and
creating it takes seconds."""


def require_expansion_within(
    loop: affine.ForOp, copies: int, max_ops: int, pass_name: str, how: str
) -> None:
    """Refuse (a diagnostic naming the loop, the count and the limit) to make `copies` copies of
    the body of `loop` when that creates more than `max_ops` ops. `how`: what the pass does
    (`fully unrolling`, `unrolling by 8`)."""
    if copies <= 0:
        return
    size = sum(1 for op in body_ops(loop) for _ in op.walk())
    if copies * size > max_ops:
        raise LoopoptError(
            f"{pass_name}: {how} '{describe_loop(loop)}' would create {copies * size} ops "
            f"({copies} copies of a body of {size}), more than max-ops={max_ops} "
            "(raise max-ops to allow it)",
            op=loop,
        )


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


def unroll(
    loop: affine.ForOp, factor: int, pass_name: str = "loop-unroll", max_ops: int = MAX_OPS
) -> affine.ForOp | None:
    """Unroll `loop` by `factor` (>= 1); returns the remainder loop if one was made.

    A constant trip count of at most `factor` unrolls fully (`unroll_full`). Always legal: the
    iterations keep their order. Diagnostics are prefixed with `pass_name`; more than `max_ops`
    new ops (the factor's copies and the remainder loop) is one.
    """
    if factor < 1:
        raise LoopoptError(f"{pass_name}: unroll factor must be at least 1, got {factor}", op=loop)
    if factor == 1:
        return None
    known = trip_count(loop)
    if known is not None and known <= factor:
        unroll_full(loop, pass_name, max_ops)
        return None
    require_expansion_within(loop, factor, max_ops, pass_name, f"unrolling by {factor}")
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


def unroll_full(loop: affine.ForOp, pass_name: str = "loop-unroll", max_ops: int = MAX_OPS) -> None:
    """Replace `loop` (constant `trip_count`) by its iterations, in order; iter_args become the
    chained values. A trip count of 0 erases the loop (its results become its inits). Refused
    when that creates more than `max_ops` ops."""
    known = trip_count(loop)
    if known is None:
        raise LoopoptError(
            f"{pass_name}: cannot fully unroll '{describe_loop(loop)}': its trip count is not "
            "constant",
            op=loop,
        )
    require_expansion_within(loop, known, max_ops, pass_name, "fully unrolling")
    block = loop.body.block
    iv, *iter_args = block.args
    terminator = block.last_op
    yielded = list(terminator.operands) if isinstance(terminator, affine.YieldOp) else []
    body = body_ops(loop)
    current = list(loop.inits)
    for iteration in range(known):
        index = iteration_value(loop, iteration)
        apply = affine.ApplyOp(list(index.operands), AffineMapAttr(index.map))
        insert_before(apply, loop)
        mapper: dict[SSAValue, SSAValue] = {iv: apply.result}
        mapper.update(zip(iter_args, current, strict=True))
        for op in body:
            insert_before(op.clone(value_mapper=mapper), loop)
        current = [mapper.get(v, v) for v in yielded]
        fold_apply(apply)
    for result, value in zip(loop.results, current, strict=True):
        result.replace_all_uses_with(value)
    parent = loop.parent_block()
    if parent is not None:
        parent.erase_op(loop)
