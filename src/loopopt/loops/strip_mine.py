"""Strip-mining one `affine.for` loop: a strided outer loop over short inner strips.

    affine.for %i = 0 to 100 { body } {loopopt.name = "i"}                      factor = 32
becomes
    affine.for %i_s = 0 to 100 step 32 {
      affine.for %i = affine_map<(d0) -> (d0)>(%i_s)
          to min affine_map<(d0) -> (d0 + 32, 100)>(%i_s) { body } {loopopt.name = "i"}
    } {loopopt.name = "i_s"}

The original loop op becomes the inner loop and keeps its name, IV, body and attributes; the new
outer loop is named `<name>_s` (made unique within the function) and inherits
`loopopt.parallel`. The min is left out when constant bounds make the factor divide the trip
count. Loops with iter_args are supported: the outer loop carries the values and the inner loop
starts from the outer loop's iteration arguments.

Always legal (the iteration order is unchanged); the only precondition is `factor >= 1`.
"""

from __future__ import annotations

from xdsl.dialects import affine

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import PARALLEL
from loopopt.loops.affine_maps import lower_bound, upper_bound
from loopopt.loops.bounds import new_loop, replace_bounds
from loopopt.loops.nest import describe_loop, iv, loop_name, set_loop_name, step_of
from loopopt.loops.tile import fresh_loop_name, name_iv, point_bounds, tile_band

SUFFIX = "_s"


def strip_mine(
    loop: affine.ForOp, factor: int, pass_name: str = "loop-strip-mine"
) -> tuple[affine.ForOp, affine.ForOp]:
    """Split `loop` into (outer, inner): outer steps by `factor * step` over the original
    bounds, inner runs the `factor` iterations of one strip. Do not reuse `loop` afterwards."""
    if factor < 1:
        raise LoopoptError(
            f"{pass_name}: factor must be a positive integer, got {factor} for loop "
            f"'{describe_loop(loop)}'",
            op=loop,
        )
    if not loop.inits:
        (outer,), (inner,) = tile_band([loop], [factor], pass_name, suffix=SUFFIX)
        return outer, inner

    outer = new_loop(lower_bound(loop), upper_bound(loop), factor * step_of(loop), loop.inits)
    outer.location = loop.location
    name = loop_name(loop)
    if name is not None:
        outer_name = fresh_loop_name(loop, name + SUFFIX)
        set_loop_name(outer, outer_name)
        name_iv(outer, outer_name)
    if PARALLEL in loop.attributes:
        outer.attributes[PARALLEL] = loop.attributes[PARALLEL]
    block = loop.parent_block()
    if block is None:
        raise LoopoptError(f"{pass_name}: cannot strip-mine a detached loop", op=loop)
    block.insert_op_before(outer, loop)
    for outer_arg, arg in zip(outer.body.block.args[1:], loop.body.block.args[1:], strict=True):
        outer_arg.name_hint = arg.name_hint
    for old, new in zip(loop.results, outer.results, strict=True):
        old.replace_all_uses_with(new)
    loop.detach()
    terminator = outer.body.block.last_op
    if not isinstance(terminator, affine.YieldOp):
        raise LoopoptError("internal: strip loop without terminator", op=outer)
    outer.body.block.insert_op_before(loop, terminator)
    lb, ub = point_bounds(loop, factor, iv(outer), ())
    inner = replace_bounds(loop, lb, ub, inits=outer.body.block.args[1:])
    terminator.operands = inner.results
    return outer, inner
