"""Fuse adjacent sibling loops that run the same iterations (`loop-fuse{loops=i,j}`).

Before:  affine.for %i = 0 to 8 { x[i] = a[i] } {loopopt.name = "i"}
         affine.for %j = 0 to 8 { y[j] = x[j] } {loopopt.name = "j"}
After:   affine.for %i = 0 to 8 { x[i] = a[i]  y[i] = x[i] } {loopopt.name = "i"}

With `loops=A,B`: each loop named A directly followed by a loop named B (only pure ops between;
pairs taken in order, a loop in one pair at most) is fused with it, inner pairs first. Every
pair is checked before any is changed; a pair that cannot be fused is an error: different bounds
or steps (no peeling), iter_args, or a dependence that fusion would reverse
(`loopopt.analysis.legality.require_fusion_legal`: a statement of B at iteration j would run
before a statement of A at iteration i > j that it depends on).

Without `loops=`: in each function, every pair of adjacent sibling loops with the same bounds
(maps and operands) and step is fused where legal, greedily from the first loop of each block,
innermost blocks first; loops that fusion brings together inside the fused loop are fused too.
Pairs refused by a dependence are left apart, with a warning on stderr. The fused loop keeps the
first loop's name and attributes, and `loopopt.parallel` only while it still carries nothing.
Mechanics: `loopopt.loops.fuse`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin
from xdsl.ir import Block

from loopopt.analysis.distribution import is_pure
from loopopt.analysis.legality import require_fusion_legal
from loopopt.analysis.parallel import is_parallel
from loopopt.diagnostics import IllegalTransformError, LoopoptError, warning
from loopopt.dialects.loopopt import PARALLEL
from loopopt.loops.fuse import fuse, fusion_obstacle
from loopopt.loops.nest import body_ops, enclosing_loops, functions, loop_name, named_loops
from loopopt.passes import LoopoptPass


def next_loop(loop: affine.ForOp) -> affine.ForOp | None:
    """The loop after `loop` in its block when only pure ops lie between, else None."""
    op = loop.next_op
    while op is not None and is_pure(op):
        op = op.next_op
    return op if isinstance(op, affine.ForOp) else None


def fuse_checked(first: affine.ForOp, second: affine.ForOp, pass_name: str) -> None:
    """Fuse two loops already checked, and drop `loopopt.parallel` if the result carries a
    dependence."""
    fuse(first, second, pass_name)
    if PARALLEL in first.attributes and not is_parallel(first):
        first.attributes.pop(PARALLEL)


def _last_loop(loop: affine.ForOp) -> affine.ForOp | None:
    """The last loop of `loop`'s body when only pure ops follow it."""
    for op in reversed(body_ops(loop)):
        if isinstance(op, affine.ForOp):
            return op
        if not is_pure(op):
            return None
    return None


def try_fuse(first: affine.ForOp, second: affine.ForOp, pass_name: str) -> bool:
    """Fuse `second` into `first` if they run the same iterations and it is legal (a warning
    when a dependence forbids it); then, likewise, the loops that meet where the two bodies
    join. Whether the two were fused."""
    if fusion_obstacle(first, second) is not None:
        return False
    try:
        require_fusion_legal(first, second, pass_name)
    except IllegalTransformError as refused:
        warning(f"{refused.message}; left apart", op=first)
        return False
    seam = _last_loop(first)
    fuse_checked(first, second, pass_name)
    following = next_loop(seam) if seam is not None else None
    if seam is not None and following is not None:
        try_fuse(seam, following, pass_name)
    return True


def fuse_in_block(block: Block, pass_name: str) -> None:
    """Greedily fuse the adjacent loops of `block` that run the same iterations, where legal,
    from the first (`try_fuse`)."""
    op = block.first_op
    current: affine.ForOp | None = None
    while op is not None:
        following = op.next_op
        if isinstance(op, affine.ForOp):
            if current is None or not try_fuse(current, op, pass_name):
                current = op
        elif not is_pure(op):
            current = None
        op = following


@dataclass(frozen=True)
class LoopFusePass(LoopoptPass):
    """Fuse adjacent sibling loops with the same iterations (loops=A,B, or every legal pair)."""

    name = "loop-fuse"

    loops: tuple[str, ...] = ()
    """Two loop names A,B: fuse each loop A with the loop B right after it (default: every
    adjacent pair with the same bounds and step, where legal)."""

    func: str | None = None
    """Only this function."""

    def pairs(self, module: builtin.ModuleOp) -> list[tuple[affine.ForOp, affine.ForOp]]:
        """The (A, B) pairs that `loops=A,B` names, each checked."""
        if len(self.loops) != 2:
            raise LoopoptError(
                f"{self.name}: loops= takes two loop names (A,B), got {len(self.loops)}: "
                f"{','.join(self.loops)}",
                op=module,
            )
        first_name, second_name = self.loops
        roots = functions(module, self.func) if self.func else [module]
        pairs: list[tuple[affine.ForOp, affine.ForOp]] = []
        taken: set[affine.ForOp] = set()
        firsts: list[affine.ForOp] = []
        for root in roots:
            named_loops(root, second_name, self.name)  # each name must exist
            firsts += named_loops(root, first_name, self.name)
        for first in firsts:
            second = next_loop(first)
            if first in taken or second is None or loop_name(second) != second_name:
                continue
            pairs.append((first, second))
            taken |= {first, second}
        if not pairs:
            raise LoopoptError(
                f"{self.name}: no loop named '{second_name}' follows a loop named "
                f"'{first_name}' in the same block (only pure ops may lie between)",
                op=firsts[0],
            )
        for first, second in pairs:
            obstacle = fusion_obstacle(first, second)
            if obstacle is not None:
                raise LoopoptError(f"{self.name}: {obstacle}", op=first)
            require_fusion_legal(first, second, self.name)
        return pairs

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.loops:
            pairs = self.pairs(op)
            for first, second in sorted(pairs, key=lambda p: -len(enclosing_loops(p[0]))):
                fuse_checked(first, second, self.name)
            return
        for fn in functions(op, self.func):
            blocks = [
                block
                for inner in reversed(list(fn.walk()))
                for region in inner.regions
                for block in region.blocks
            ]
            for block in blocks:
                fuse_in_block(block, self.name)
