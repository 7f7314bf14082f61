"""Loop distribution (fission): one copy of a loop per group of the ops of its body.

    affine.for %i = 0 to 8 {                      affine.for %i = 0 to 8 {
      %c = arith.constant 2.0 : f32                  %c = arith.constant 2.0 : f32
      S0(%c)                  groups [S0], [S1]      S0(%c)
      S1(%c)                        ==>           } {loopopt.name = "i"}
    } {loopopt.name = "i"}                        affine.for %i = 0 to 8 {
                                                     %c = arith.constant 2.0 : f32
                                                     S1(%c)
                                                   } {loopopt.name = "i"}

The copies run one after the other, in the order of the groups, where the loop was. Each keeps
the loop's bounds, step, name and attributes and holds its group's ops in their original order,
with clones of the *free* ops it uses before them: the ops of the body that are in no group
(pure ops using nothing computed in the body: constants, index arithmetic). The group that uses
the loop's iter_args or computes what it yields (else the last group) carries all the iter_args,
and the loop's results become that copy's results.

Not checked: legality (`analysis.legality.require_distribution_legal`; the groups of
`analysis.distribution.distribution_groups` are legal). Refused with a diagnostic before any
change: an op of the body in no group that is not pure, an op in two groups, a value computed in
one group and used in another, and iter_args used by two groups.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue

from loopopt.analysis.distribution import is_pure, used_values
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import body_ops, describe_loop


def _owners(
    loop: affine.ForOp, groups: Sequence[Sequence[Operation]], pass_name: str
) -> dict[Operation, int]:
    """The group of each op of the body that is in one; a diagnostic for ops in two groups or
    in none that must be in one."""
    ops = body_ops(loop)
    body = set(ops)
    owner: dict[Operation, int] = {}
    for k, group in enumerate(groups):
        for op in group:
            if op in owner or op not in body:
                what = "in two groups" if op in owner else "not in the loop's body"
                raise LoopoptError(f"{pass_name}: {op.name} is {what}", op=op)
            owner[op] = k
    for op in ops:
        if op not in owner and not is_pure(op):
            raise LoopoptError(
                f"{pass_name}: {op.name} in loop {describe_loop(loop)} is in no group", op=op
            )
    return owner


def _free_ops_used(ops: Sequence[Operation], free: set[Operation]) -> set[Operation]:
    """The free ops that `ops` use, directly or through other free ops."""
    found: set[Operation] = set()
    stack = list(ops)
    while stack:
        for value in used_values(stack.pop()):
            if isinstance(value, OpResult) and value.op in free and value.op not in found:
                found.add(value.op)
                stack.append(value.op)
    return found


def _carrier(
    loop: affine.ForOp,
    kept: Sequence[Sequence[Operation]],
    owner: dict[Operation, int],
    pass_name: str,
) -> int:
    """The copy that carries the iter_args, after checking that no value crosses copies
    (`kept`: the ops of each copy, free ones included)."""
    iter_args = set(loop.body.block.args[1:])
    users: set[int] = set()
    for k, ops in enumerate(kept):
        for op in ops:
            for value in used_values(op):
                if value in iter_args:
                    users.add(k)
                elif isinstance(value, OpResult) and owner.get(value.op, k) != k:
                    raise LoopoptError(
                        f"{pass_name}: a value computed by {value.op.name} in one group of loop "
                        f"{describe_loop(loop)} is used by {op.name} in another",
                        op=op,
                    )
    terminator = loop.body.block.last_op
    if iter_args and terminator is not None:
        for value in terminator.operands:
            if isinstance(value, OpResult) and value.op in owner:
                users.add(owner[value.op])
    if len(users) > 1:
        raise LoopoptError(
            f"{pass_name}: the iter_args of loop {describe_loop(loop)} are used by "
            f"{len(users)} groups",
            op=loop,
        )
    return users.pop() if users else len(kept) - 1


def _copy(loop: affine.ForOp, ops: Sequence[Operation], carries: bool) -> affine.ForOp:
    """A loop like `loop` (bounds, step, attributes; iter_args if `carries`) running clones of
    `ops`."""
    inits = tuple(loop.inits) if carries else ()
    old_args = loop.body.block.args
    block = Block(arg_types=[IndexType(), *(value.type for value in inits)])
    mapper: dict[SSAValue, SSAValue] = {}
    for old, new in zip(old_args, block.args, strict=False):
        new.name_hint = old.name_hint
        mapper[old] = new
    for op in ops:
        block.add_op(op.clone(value_mapper=mapper))
    terminator = loop.body.block.last_op
    yielded = terminator.operands if carries and terminator is not None else ()
    block.add_op(affine.YieldOp.get(*(mapper.get(value, value) for value in yielded)))
    copy = affine.ForOp.from_region(
        loop.lowerBoundOperands,
        loop.upperBoundOperands,
        inits,
        [value.type for value in inits],
        loop.lowerBoundMap,
        loop.upperBoundMap,
        Region(block),
        loop.step,
    )
    copy.attributes.update(loop.attributes)
    return copy


def distribute(
    loop: affine.ForOp, groups: Sequence[Sequence[Operation]], pass_name: str = "loop-distribute"
) -> list[affine.ForOp]:
    """Replace `loop` by one copy per group of ops of its body, in the order of `groups`
    (see the module docstring); returns the copies. Groups must be non-empty."""
    if any(not group for group in groups) or not groups:
        raise LoopoptError(f"{pass_name}: empty group for loop {describe_loop(loop)}", op=loop)
    owner = _owners(loop, groups, pass_name)
    block = loop.parent_block()
    if block is None:
        raise LoopoptError(f"{pass_name}: cannot distribute a detached loop", op=loop)
    ops = body_ops(loop)
    position = {op: k for k, op in enumerate(ops)}
    free = {op for op in ops if op not in owner}
    kept = [
        sorted([*group, *_free_ops_used(group, free)], key=position.__getitem__) for group in groups
    ]
    carrier = _carrier(loop, kept, owner, pass_name)
    terminator = loop.body.block.last_op
    if terminator is not None:
        extra = _free_ops_used([terminator], free)
        kept[carrier] = sorted({*kept[carrier], *extra}, key=position.__getitem__)
    copies: list[affine.ForOp] = []
    for k, ops_k in enumerate(kept):
        copy = _copy(loop, ops_k, k == carrier)
        block.insert_op_before(copy, loop)
        copies.append(copy)
    for old, new in zip(loop.results, copies[carrier].results, strict=True):
        old.replace_all_uses_with(new)
    loop.detach()
    loop.erase()
    return copies
