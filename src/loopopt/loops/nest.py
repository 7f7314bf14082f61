"""Naming and marking loops; with the read-only queries of analysis/nest.py (re-exported here),
the vocabulary every pass shares.

Loops are `affine.for` ops; a loop's user-visible name is its `loopopt.name` string attribute
(set by the Python frontend or by `loop-name`). A *band* is a list of loops, outermost first, each
the only op (besides the terminator) in the body of the previous one: a perfect nest.
"""

from __future__ import annotations

from xdsl.dialects import affine
from xdsl.dialects.builtin import StringAttr, UnitAttr
from xdsl.ir import Operation

from loopopt.analysis.nest import (
    bands_by_names,
    body_ops,
    constant_bounds,
    constant_trip_count,
    defined_inside,
    describe_loop,
    enclosing_loops,
    find_loop,
    find_loops,
    function_ops,
    functions,
    innermost_loops,
    iv,
    loop_name,
    loops_in,
    named_loops,
    only_child_loop,
    outermost_loops,
    perfect_band,
    step_of,
)
from loopopt.dialects.loopopt import LOOP_NAME, PARALLEL

__all__ = [
    "bands_by_names",
    "body_ops",
    "constant_bounds",
    "constant_trip_count",
    "defined_inside",
    "describe_loop",
    "enclosing_loops",
    "find_loop",
    "find_loops",
    "function_ops",
    "functions",
    "innermost_loops",
    "iv",
    "loop_name",
    "loops_in",
    "mark_parallel",
    "named_loops",
    "only_child_loop",
    "outermost_loops",
    "perfect_band",
    "set_loop_name",
    "step_of",
    "trip_count",
]
"""Its own names, and the read-only queries it re-exports from analysis/ (where they live)."""


def set_loop_name(loop: Operation, name: str) -> None:
    loop.attributes[LOOP_NAME] = StringAttr(name)


def mark_parallel(loop: Operation, parallel: bool = True) -> None:
    if parallel:
        loop.attributes[PARALLEL] = UnitAttr()
    else:
        loop.attributes.pop(PARALLEL, None)


def trip_count(loop: affine.ForOp) -> int | None:
    """The number of iterations of `loop` when it is a constant: constant bounds, or one-result
    bounds a constant apart (`%t to %t + 32`, a point loop of a full tile)."""
    from loopopt.loops.affine_maps import MapBuilder, constant_difference, lower_bound, upper_bound

    known = constant_trip_count(loop)
    if known is not None:
        return known
    builder = MapBuilder()
    lower, upper = builder.exprs(lower_bound(loop)), builder.exprs(upper_bound(loop))
    if len(lower) != 1 or len(upper) != 1:
        return None
    difference = constant_difference(upper[0], lower[0], len(builder.values))
    if difference is None:
        return None
    return max(0, -(-difference // step_of(loop)))
