"""Loop fusion: two adjacent sibling loops over the same iterations become one.

    affine.for %i = 0 to 8 { S(%i) } {loopopt.name = "i"}          affine.for %i = 0 to 8 {
    %c = arith.constant 1.0 : f32                        ==>          S(%i)
    affine.for %j = 0 to 8 { T(%j, %c) } {loopopt.name = "j"}        T(%i, %c)
                                                                   } {loopopt.name = "i"}

The body of the second loop moves to the end of the first one's, its IV replaced by the first
one's; the fused loop is the first loop (its name and attributes; `loopopt.parallel` only if
both loops had it: the caller should check that the fused loop still carries nothing). Pure ops
between the loops (constants, index arithmetic) move before the first loop.

Not checked: legality (`analysis.legality.require_fusion_legal`). `fusion_obstacle` says why two
loops cannot be fused at all: not adjacent siblings (only pure ops may lie between), iter_args,
or different bounds or steps (the maps and their operands must be the same: no peeling).
"""

from __future__ import annotations

from xdsl.dialects import affine
from xdsl.ir import Operation, SSAValue

from loopopt.analysis.distribution import is_pure
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import PARALLEL
from loopopt.loops.nest import body_ops, describe_loop, iv, step_of


def ops_between(first: affine.ForOp, second: affine.ForOp) -> list[Operation] | None:
    """The ops strictly between `first` and `second` in their block; None when `second` does
    not come after `first` in the same block."""
    found: list[Operation] = []
    op = first.next_op
    while op is not None and op is not second:
        found.append(op)
        op = op.next_op
    return found if op is second else None


def _same_values(a: tuple[SSAValue, ...], b: tuple[SSAValue, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def same_iterations(first: affine.ForOp, second: affine.ForOp) -> bool:
    """Same bound maps with the same operands, and the same step."""
    return (
        first.lowerBoundMap == second.lowerBoundMap
        and first.upperBoundMap == second.upperBoundMap
        and _same_values(tuple(first.lowerBoundOperands), tuple(second.lowerBoundOperands))
        and _same_values(tuple(first.upperBoundOperands), tuple(second.upperBoundOperands))
        and step_of(first) == step_of(second)
    )


def _bound_text(amap: affine.AffineMapAttr, operands: tuple[SSAValue, ...]) -> str:
    data = amap.data
    if not operands and len(data.results) == 1:
        return str(data.results[0])
    names = ", ".join(f"%{value.name_hint or '?'}" for value in operands)
    return f"{data}({names})"


def range_text(loop: affine.ForOp) -> str:
    """`0 to 8`, `0 to () -> (s0)(%n) step 2` …: a loop's iterations for messages."""
    lower = _bound_text(loop.lowerBoundMap, tuple(loop.lowerBoundOperands))
    upper = _bound_text(loop.upperBoundMap, tuple(loop.upperBoundOperands))
    step = f" step {step_of(loop)}" if step_of(loop) != 1 else ""
    return f"{lower} to {upper}{step}"


def fusion_obstacle(first: affine.ForOp, second: affine.ForOp) -> str | None:
    """Why `first` and `second` cannot be fused (whatever the dependences), or None."""
    names = f"({describe_loop(first)}, {describe_loop(second)})"
    between = ops_between(first, second)
    if between is None or any(not is_pure(op) for op in between):
        return f"loops {names} are not adjacent siblings"
    for loop in (first, second):
        if loop.inits:
            return f"loop {describe_loop(loop)} of {names} carries iter_args"
    if not same_iterations(first, second):
        return (
            f"loops {names} have different bounds or steps: {range_text(first)} and "
            f"{range_text(second)}"
        )
    return None


def fuse(first: affine.ForOp, second: affine.ForOp, pass_name: str = "loop-fuse") -> None:
    """Fuse `second` into `first` (see the module docstring); a diagnostic, before any change,
    where `fusion_obstacle` says they cannot be."""
    obstacle = fusion_obstacle(first, second)
    if obstacle is not None:
        raise LoopoptError(f"{pass_name}: {obstacle}", op=first)
    block = first.parent_block()
    terminator = first.body.block.last_op
    between = ops_between(first, second)
    if block is None or terminator is None or between is None:
        raise LoopoptError(f"{pass_name}: cannot fuse detached loops", op=first)
    for op in between:
        op.detach()
        block.insert_op_before(op, first)
    for op in body_ops(second):
        op.detach()
        first.body.block.insert_op_before(op, terminator)
    iv(second).replace_all_uses_with(iv(first))
    if PARALLEL not in second.attributes:
        first.attributes.pop(PARALLEL, None)
    second.detach()
    second.erase()
