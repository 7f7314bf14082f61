"""Legality checks used by the loop passes: each raises IllegalTransformError naming the pass,
the loops and one offending dependence with its direction vector, or returns None when legal.

Interface only; the implementation (on loopopt.analysis.dependence) is being written.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine


def require_fully_permutable(band: Sequence[affine.ForOp], pass_name: str) -> None:
    """Tiling precondition: every dependence carried in the band has all components >= 0."""
    raise NotImplementedError


def require_permutation_legal(
    band: Sequence[affine.ForOp], permutation: Sequence[int], pass_name: str
) -> None:
    """Interchange precondition: permuting the band (loop at depth d to depth permutation[d])
    keeps every dependence lexicographically positive."""
    raise NotImplementedError


def require_unroll_jam_legal(loop: affine.ForOp, pass_name: str) -> None:
    """Unroll-and-jam precondition for `loop` over the loops nested in it."""
    raise NotImplementedError
