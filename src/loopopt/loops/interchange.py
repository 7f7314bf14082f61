"""Permuting the loops of a perfect band (MLIR LoopUtils `permuteLoops`).

The loop at depth d moves to depth `permutation[d]`:

    affine.for %i = 0 to 8 { affine.for %j = 0 to 4 { body } }          permutation = 1,0
becomes
    affine.for %j = 0 to 4 { affine.for %i = 0 to 8 { body } }

The loop ops themselves move (with their IVs, names and attributes), so the body is untouched.
A loop keeps `loopopt.parallel` only if every band loop that was outside it still is (a loop
moved outward may carry a dependence that an outer loop used to carry).
When no loop's bounds use a loop that ends up inside it, bounds are kept as they are. Otherwise
(triangular bands) the bounds of the loops between the outermost and innermost moved ones are
recomputed by exact projection of their iteration domain (bounds.band_bounds_in_order), the
loops outside being parameters; e.g. for `j <= i`:

    affine.for %i = 0 to 10 { affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) { body } }
becomes
    affine.for %j = 0 to 10 { affine.for %i = affine_map<(d0) -> (d0)>(%j) to 10 { body } }

Not checked here: legality (analysis.legality.require_permutation_legal) and that `band` is a
perfect nest. Refused with a diagnostic: a permutation that is not one of the band's depths,
and non-rectangular bands with non-linear bounds or with a stepped loop whose lower bound is a
max or uses a loop that would end up inside it.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.ir import Operation

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import PARALLEL
from loopopt.loops.affine_maps import Bound, bound_values, lower_bound, upper_bound
from loopopt.loops.bounds import band_bounds_in_order, replace_bounds
from loopopt.loops.nest import body_ops, describe_loop, iv


def check_permutation(
    band: Sequence[affine.ForOp], permutation: Sequence[int], pass_name: str
) -> None:
    """Raise a diagnostic unless `permutation` is a permutation of 0 .. len(band) - 1."""
    if sorted(permutation) != list(range(len(band))):
        raise LoopoptError(
            f"{pass_name}: permutation {','.join(map(str, permutation))} is not a permutation of "
            f"0..{len(band) - 1} for the band {', '.join(map(describe_loop, band))}",
            op=band[0],
        )


def permuted_order(band: Sequence[affine.ForOp], permutation: Sequence[int]) -> list[affine.ForOp]:
    """The loops of `band` in their new order (outermost first)."""
    order: list[affine.ForOp] = list(band)
    for depth, loop in enumerate(band):
        order[permutation[depth]] = loop
    return order


def needs_new_bounds(order: Sequence[affine.ForOp]) -> bool:
    """Whether some loop's bounds use the IV of a loop that `order` puts inside it."""
    for k, loop in enumerate(order):
        inner = {iv(other) for other in order[k + 1 :]}
        if (bound_values(lower_bound(loop)) | bound_values(upper_bound(loop))) & inner:
            return True
    return False


def new_bounds(
    band: Sequence[affine.ForOp], permutation: Sequence[int], pass_name: str
) -> dict[int, tuple[Bound, Bound]]:
    """New (lower, upper) bounds by new depth, for the loops that need them after the
    permutation (none for rectangular bands); a diagnostic where they cannot be computed.
    The loops between the outermost and the innermost moved one are recomputed together."""
    order = permuted_order(band, permutation)
    if not needs_new_bounds(order):
        return {}
    moved = [d for d in range(len(band)) if order[d] is not band[d]]
    lo, hi = moved[0], moved[-1] + 1
    bounds = band_bounds_in_order(band[lo:hi], order[lo:hi], pass_name)
    return dict(enumerate(bounds, start=lo))


def permute_band(
    band: Sequence[affine.ForOp], permutation: Sequence[int], pass_name: str = "loop-interchange"
) -> list[affine.ForOp]:
    """Move the loop at depth d of the perfect `band` to depth `permutation[d]`.

    Returns the loops in their new order (bounds may have been replaced: do not reuse `band`).
    All diagnostics are raised before the IR is changed.
    """
    check_permutation(band, permutation, pass_name)
    order = permuted_order(band, permutation)
    bounds = new_bounds(band, permutation, pass_name)
    for depth, loop in enumerate(band):
        if not set(band[:depth]) <= set(order[: permutation[depth]]):
            loop.attributes.pop(PARALLEL, None)
    _renest(band, order)
    for k, (lb, ub) in bounds.items():
        order[k] = replace_bounds(order[k], lb, ub)
    return order


def _renest(band: Sequence[affine.ForOp], order: Sequence[affine.ForOp]) -> None:
    """Rebuild the nest `band[0] { band[1] { ... body } }` as `order[0] { order[1] { ... } }`."""
    body = body_ops(band[-1])
    for op in body:
        op.detach()
    for loop in reversed(band[1:]):
        loop.detach()
    if order[0] is not band[0]:
        block = band[0].parent_block()
        if block is None:
            raise LoopoptError("internal: cannot permute a detached band", op=band[0])
        block.insert_op_before(order[0], band[0])
        band[0].detach()
    for outer, inner in zip(order, order[1:], strict=False):
        _append(outer, [inner])
    _append(order[-1], body)


def _append(loop: affine.ForOp, ops: Sequence[Operation]) -> None:
    """Add `ops` at the end of `loop`'s body, before its terminator."""
    block = loop.body.block
    terminator = block.last_op
    for op in ops:
        if terminator is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, terminator)
