"""Naming and marking loops; with the read-only queries of analysis/nest.py (re-exported here),
the vocabulary every pass shares.

Loops are `affine.for` ops; a loop's user-visible name is its `loopopt.name` string attribute
(set by the Python frontend or by `loop-name`). A *band* is a list of loops, outermost first, each
the only op (besides the terminator) in the body of the previous one: a perfect nest.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
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
    host_buffer_op,
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
from loopopt.diagnostics import LoopoptError
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
    "host_buffer_op",
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


def name_unnamed(loops: Sequence[Operation], taken: set[str]) -> None:
    """Name the unnamed ones of `loops` `i0, i1, …` in order (`loop-name`'s scheme), skipping the
    names in `taken`, which grows by the names given."""
    counter = 0
    for loop in loops:
        if loop_name(loop) is not None:
            continue
        while f"i{counter}" in taken:
            counter += 1
        set_loop_name(loop, f"i{counter}")
        taken.add(f"i{counter}")
        counter += 1


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


NON_AFFINE_LOOPS = ("scf.for", "scf.parallel", "scf.while", "affine.parallel")
"""Loops that loop passes do not transform (`raise-scf-to-affine` raises those it can)."""


def warn_if_only_scf_loops(module: ModuleOp, func_name: str | None, pass_name: str) -> None:
    """One warning per function (of `func_name`, else all) that holds no affine.for but loops of
    other kinds: the loop pass would silently match nothing there."""
    from loopopt.diagnostics import warning

    try:
        fns = functions(module, func_name)
    except LoopoptError:  # the pass reports an unknown func= itself
        return
    for fn in fns:
        if next(loops_in(fn), None) is not None:
            continue
        kinds = sorted({op.name for op in fn.walk() if op.name in NON_AFFINE_LOOPS})
        if kinds:
            warning(
                f"{pass_name}: no affine.for in @{fn.sym_name.data} (it holds {', '.join(kinds)} "
                "loops: run raise-scf-to-affine first)",
                op=fn,
            )
