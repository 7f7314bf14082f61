"""Unroll-and-jam: unroll an outer loop and fuse ("jam") the copies of its inner loops.

The body of the loop is split, as in MLIR's loopUnrollJamByFactor, into runs of non-loop
statements and inner `affine.for` ops. Each run is replicated `factor` times in place (copy u
sees the IV as `iv + u * step`); each inner loop is kept once and jammed recursively, so its body
holds the `factor` copies of its statements. Inner loops carrying iter_args (reductions) get one
set of iter_args per copy. A remainder loop `<name>_rem` (a plain copy of the original) runs the
leftover iterations. This is register tiling (NUDA's dmine). Where the loop's bounds are a
max/min of loop IVs (`copy_guards`), there is no remainder: each replicated run of copy u sits in
an `affine.if` on `iv + u * step` being in bounds, which yields the values used after the run.

    affine.for %j = 0 to 6 {                     affine.for %j = 0 to 6 step 2 {
      affine.for %k = 0 to 8 {          ==>        affine.for %k = 0 to 8 {
        S(%j, %k)                                    S(%j, %k)  S(%j + 1, %k)
      }                                            }
    } {loopopt.name = "j"}                       } {loopopt.name = "j"}

Mechanics only: the caller proves legality (analysis.legality.require_unroll_jam_legal).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from xdsl.dialects import affine
from xdsl.ir import Block, Operation, OpResult, SSAValue

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.affine_ext import MaxOp
from loopopt.loops.affine_maps import fold_apply, lower_bound, offset_apply, set_bounds, upper_bound
from loopopt.loops.guard import Escape, Guard, guarded_copy
from loopopt.loops.nest import body_ops, defined_inside, describe_loop, step_of, trip_count
from loopopt.loops.unroll import (
    MAX_OPS,
    copy_guards,
    require_expansion_within,
    split_off_remainder,
)

Mapper = dict[SSAValue, SSAValue]


class Copy(NamedTuple):
    """One unrolled copy: the values it sees instead of the originals (IV: `iv + u * step`), and
    the condition it runs under when the loop's bounds need guards (None: always)."""

    mapper: Mapper
    guard: Guard | None


def jammed_loops(loop: affine.ForOp) -> list[affine.ForOp]:
    """The inner loops that unroll-and-jam of `loop` fuses: loops directly in its body, and
    recursively in theirs (loops inside other region ops, e.g. affine.if, are copied whole)."""
    found: list[affine.ForOp] = []
    for op in body_ops(loop):
        if isinstance(op, affine.ForOp):
            found.append(op)
            found.extend(jammed_loops(op))
    return found


def _same_for_every_copy(value: SSAValue, loop: affine.ForOp, shared: set[int]) -> bool:
    """Whether `value` is the same in every unrolled copy: defined outside `loop`, the IV of a
    jammed loop, or a pure affine.apply/min/max of such values."""
    if not defined_inside(value, loop) or id(value) in shared:
        return True
    if isinstance(value, OpResult) and isinstance(value.op, affine.ApplyOp | affine.MinOp | MaxOp):
        return all(_same_for_every_copy(v, loop, shared) for v in value.op.operands)
    return False


def unroll_jam_obstacle(loop: affine.ForOp) -> tuple[str, Operation] | None:
    """Why `loop` cannot be unrolled and jammed (message, op to point at), or None.

    Jamming needs the inner loops' trip counts to be the same for every copy: their bounds may
    use values from outside `loop`, the IVs of other jammed loops and affine.apply/min/max of
    those, nothing else.
    """
    name = describe_loop(loop)
    if loop.inits:
        return f"cannot unroll-jam '{name}': it carries iter_args (use loop-unroll)", loop
    inner = jammed_loops(loop)
    shared = {id(other.body.block.args[0]) for other in inner}
    for other in inner:
        for value in (*lower_bound(other).operands, *upper_bound(other).operands):
            if not _same_for_every_copy(value, loop, shared):
                return (
                    f"cannot jam '{name}' into '{describe_loop(other)}': the bounds of "
                    f"'{describe_loop(other)}' vary with '{name}'",
                    other,
                )
    return None


def unroll_jam(
    loop: affine.ForOp, factor: int, pass_name: str = "loop-unroll-jam", max_ops: int = MAX_OPS
) -> affine.ForOp | None:
    """Unroll `loop` by `factor` and jam the copies into its inner loops; returns the remainder
    loop if one was made. A constant trip count below `factor` lowers the factor to it.

    Raises LoopoptError (prefixed with `pass_name`) when `unroll_jam_obstacle` finds one, or
    when the copies (and the remainder loop) would be more than `max_ops` ops.
    Not checked: dependences.
    """
    if factor < 1:
        raise LoopoptError(f"{pass_name}: factor must be at least 1, got {factor}", op=loop)
    obstacle = unroll_jam_obstacle(loop)
    if obstacle is not None:
        raise LoopoptError(f"{pass_name}: {obstacle[0]}", op=obstacle[1])
    known = trip_count(loop)
    if known is not None:
        factor = min(factor, max(known, 1))
    if factor == 1:
        return None
    require_expansion_within(loop, factor, max_ops, pass_name, f"unroll-and-jam by {factor} of")
    step = step_of(loop)
    guards = copy_guards(loop, factor)
    remainder = split_off_remainder(loop, factor) if guards is None else None
    set_bounds(loop, step=factor * step)
    block = loop.body.block
    ops = body_ops(loop)
    first = ops[0] if ops else block.last_op
    if first is None:
        return remainder
    count = factor - 1 if guards is None else len(guards)  # copies past the guards never run
    applies = [offset_apply(block.args[0], copy * step, first) for copy in range(1, count + 1)]
    copies = [
        Copy({block.args[0]: apply.result}, guards[index] if guards is not None else None)
        for index, apply in enumerate(applies)
    ]
    _jam_ops(ops, copies)
    for apply in applies:
        fold_apply(apply)
    return remainder


def _jam_ops(ops: Sequence[Operation], copies: list[Copy]) -> None:
    """Replicate each run of non-loop ops once per copy (after the run); jam each loop."""
    run: list[Operation] = []
    for op in ops:
        if isinstance(op, affine.ForOp):
            _replicate(run, copies)
            run = []
            _jam_loop(op, copies)
        else:
            run.append(op)
    _replicate(run, copies)


def _inside(op: Operation | None, run: set[int]) -> bool:
    while op is not None:
        if id(op) in run:
            return True
        op = op.parent_op()
    return False


def _escaping(run: list[Operation]) -> list[SSAValue]:
    """The results of `run`'s ops used after the run (by later ops or the terminator)."""
    ids = {id(op) for op in run}
    return [
        result
        for op in run
        for result in op.results
        if any(not _inside(use.operation, ids) for use in result.uses)
    ]


def _escape(value: SSAValue, block: Block, mapper: Mapper) -> Escape:
    """What a guarded-off copy of `value` is: the copy's incoming iter_arg where `value` is
    yielded to the enclosing loop (carried), else the first copy's `value` (any value would do:
    every use of a copy's values is guarded by the same condition)."""
    terminator = block.last_op
    if isinstance(terminator, affine.YieldOp):
        for index, yielded in enumerate(terminator.operands):
            if yielded is value:
                return Escape(value, mapper.get(block.args[1 + index], value), True)
    return Escape(value, value, False)


def _replicate(run: list[Operation], copies: list[Copy]) -> None:
    if not run:
        return
    last = run[-1]
    block = last.parent_block()
    if block is None:
        return
    escaping = _escaping(run) if any(copy.guard is not None for copy in copies) else []
    for mapper, guard in copies:
        if guard is not None:
            escapes = [_escape(value, block, mapper) for value in escaping]
            for op in guarded_copy(run, mapper, guard, escapes):
                block.insert_op_after(op, last)
                last = op
            continue
        for op in run:
            copy = op.clone(value_mapper=mapper)
            block.insert_op_after(copy, last)
            last = copy


def _jam_loop(inner: affine.ForOp, copies: list[Copy]) -> None:
    count = len(inner.inits)
    if count:
        inner = _widen_iter_args(inner, [copy.mapper for copy in copies])
    terminator = inner.body.block.last_op
    yielded = list(terminator.operands) if isinstance(terminator, affine.YieldOp) else []
    _jam_ops(body_ops(inner), copies)
    if count and terminator is not None:
        terminator.operands = yielded + [c.mapper.get(v, v) for c in copies for v in yielded]


def _widen_iter_args(inner: affine.ForOp, mappers: list[Mapper]) -> affine.ForOp:
    """Rebuild `inner` with one set of iter_args per copy; record the copies in `mappers`."""
    inits = list(inner.inits)
    types = [v.type for v in inits]
    block = inner.body.block
    old_args = list(block.args[1:])
    extra_inits = [m.get(v, v) for m in mappers for v in inits]
    new_args = [[block.insert_arg(t, len(block.args)) for t in types] for _ in mappers]
    widened = affine.ForOp.from_region(
        list(inner.lowerBoundOperands),
        list(inner.upperBoundOperands),
        inits + extra_inits,
        types * (len(mappers) + 1),
        inner.lowerBoundMap,
        inner.upperBoundMap,
        inner.detach_region(inner.body),
        inner.step,
    )
    widened.attributes.update(inner.attributes)
    widened.location = inner.location
    parent = inner.parent_block()
    if parent is None:
        raise LoopoptError("cannot jam a loop outside any block", op=inner)
    parent.insert_op_before(widened, inner)
    count = len(inits)
    for index in range(count):
        inner.results[index].replace_all_uses_with(widened.results[index])
    for copy, mapper in enumerate(mappers, start=1):
        for index in range(count):
            arg, result = new_args[copy - 1][index], widened.results[copy * count + index]
            arg.name_hint = old_args[index].name_hint
            result.name_hint = inner.results[index].name_hint
            mapper[old_args[index]] = arg
            mapper[widened.results[index]] = result
    parent.erase_op(inner)
    return widened
