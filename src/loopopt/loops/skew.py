"""Skewing the inner loop of a loop pair by the outer one, and the wavefront it enables.

The inner IV becomes j' = j + factor * i: its bounds are shifted by factor * i and every use
of j is rewritten as j' - factor * i (composed into the affine maps that use it):

    affine.for %i = 1 to 9 {                           factor = 2
      affine.for %j = 1 to 7 { A[i, j] = A[i, j - 1] } {loopopt.name = "j"} }
becomes
    affine.for %i = 1 to 9 {
      affine.for %j_sk = affine_map<(d0) -> (d0 * 2 + 1)>(%i)
          to affine_map<(d0) -> (d0 * 2 + 7)>(%i) {
        A[i, j_sk - 2 * i] = A[i, j_sk - 2 * i - 1] } {loopopt.name = "j_sk"} }

The iterations run in the same order with the same values of j, so skewing is always legal; a
dependence of distance (di, dj) becomes (di, dj + factor * di). What it is for is the
interchange that may follow: with factor large enough that every dependence carried by i gets
dj + factor * di >= 1, the skewed loop, moved outside, carries them all and i becomes parallel
(a wavefront). The loop op is kept (a new op with the same body, attributes and IV), renamed
`<name>_sk` (unique within the function); `loopopt.parallel` marks stay valid.

`wavefront` skews and then interchanges the pair (the skewed loop outside, its bounds and the
original outer loop's recomputed exactly by loops/interchange); `check_wavefront` raises what
it would refuse (a stepped inner loop, non-linear bounds) without changing the IR.

Not checked here: that `inner` is nested in `outer` (a perfect pair is what the pass asks for;
the mechanics need only that `outer`'s IV is defined where `inner` is), and for `wavefront`,
the legality of the interchange (analysis.legality.require_wavefront). Uses of j that are not
affine maps (arith ops, affine.if conditions) read an `affine.apply` computing j at the top of
the body.
"""

from __future__ import annotations

from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.diagnostics import LoopoptError
from loopopt.loops.affine_maps import BoundBuilder, fold_apply, lower_bound, upper_bound
from loopopt.loops.bounds import replace_bounds
from loopopt.loops.interchange import new_bounds, permute_band
from loopopt.loops.nest import describe_loop, iv, loop_name, only_child_loop, set_loop_name
from loopopt.loops.tile import fresh_loop_name, name_iv

SUFFIX = "_sk"
"""Name suffix of a skewed loop."""


def skew(
    outer: affine.ForOp, inner: affine.ForOp, factor: int, pass_name: str = "loop-skew"
) -> affine.ForOp:
    """Skew `inner` by `outer`: its IV becomes j + factor * i (see the module docstring).

    Returns the new inner loop op (do not reuse `inner`). A factor of 0 changes nothing.
    """
    if outer is inner:
        raise LoopoptError(f"{pass_name}: cannot skew a loop by itself", op=inner)
    if factor == 0:
        return inner
    i = iv(outer)
    builder = BoundBuilder()
    shift = builder.dim(i) * factor
    lower = [result + shift for result in builder.results_of(lower_bound(inner))]
    upper = [result + shift for result in builder.results_of(upper_bound(inner))]
    skewed = replace_bounds(inner, builder.build(lower), builder.build(upper))
    j = iv(skewed)
    block = skewed.body.block
    first = block.first_op
    if first is None:
        raise LoopoptError(f"internal: loop '{describe_loop(skewed)}' has no body", op=skewed)
    original = AffineMap(2, 0, (AffineExpr.dimension(0) - AffineExpr.dimension(1) * factor,))
    apply = affine.ApplyOp([j, i], AffineMapAttr(original))
    block.insert_op_before(apply, first)
    j.replace_all_uses_with(apply.result)
    apply.operands = (j, i)  # the apply itself reads the new IV
    fold_apply(apply)
    name = loop_name(skewed)
    if name is not None:
        new_name = fresh_loop_name(skewed, name + SUFFIX)
        set_loop_name(skewed, new_name)
        name_iv(skewed, new_name)
    return skewed


def wavefront(
    outer: affine.ForOp, inner: affine.ForOp, factor: int, pass_name: str = "loop-skew"
) -> tuple[affine.ForOp, affine.ForOp]:
    """Skew `inner` by `outer` and interchange them; returns the new (outer, inner) loops: the
    skewed loop and the original outer loop. Diagnostics are raised before the IR changes."""
    check_wavefront(outer, inner, factor, pass_name)
    skewed = skew(outer, inner, factor, pass_name)
    new_outer, new_inner = permute_band([outer, skewed], [1, 0], pass_name)
    return new_outer, new_inner


def check_wavefront(
    outer: affine.ForOp, inner: affine.ForOp, factor: int, pass_name: str = "loop-skew"
) -> None:
    """Raise the diagnostic `wavefront` would raise for the bounds of the interchanged pair (a
    stepped inner loop, non-linear bounds), on a copy: the IR is not changed."""
    if only_child_loop(outer) is not inner:
        raise LoopoptError(
            f"{pass_name}: loops {describe_loop(outer)}, {describe_loop(inner)} are not a "
            "perfect pair",
            op=outer,
        )
    copy = outer.clone()
    try:
        copied_inner = only_child_loop(copy)
        assert copied_inner is not None
        skewed = skew(copy, copied_inner, factor, pass_name)
        new_bounds([copy, skewed], [1, 0], pass_name)
    finally:
        copy.erase()
