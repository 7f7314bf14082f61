"""Which loops carry no dependence, and so may run their iterations in any order (on the GPU).

    affine.for %i … {                        parallel_loops(f) == [i, j]
      affine.for %j … {                      (k carries C[i, j] → C[i, j] (RAW) (=, =, <))
        affine.for %k … { C[i, j] += A[i, k] * B[k, j] }

A loop is parallel when no dependence of `loopopt.analysis.dependence` has its first non-`=`
component at it (dependences carried by outer loops do not matter: those iterations are already
ordered by the outer loop). A loop with iter_args carries its reduction and is never parallel.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.ir import Operation

from loopopt.analysis.dependence import Dependence, carried_by, dependences
from loopopt.analysis.nest import loops_in


def _carriers(deps: Sequence[Dependence]) -> set[int]:
    """The ids of the loops that carry some of `deps` (looked up once per loop, not scanned)."""
    return {id(dep.carrier) for dep in deps if dep.carrier is not None}


def is_parallel(loop: affine.ForOp) -> bool:
    """`loop` carries no dependence (and has no iter_args)."""
    return not loop.inits and id(loop) not in _carriers(dependences(loop))


def parallel_loops(root: Operation) -> list[affine.ForOp]:
    """The parallel loops under `root` (and `root` itself if it is one), in pre-order."""
    carriers = _carriers(dependences(root))
    candidates = [root] if isinstance(root, affine.ForOp) else []
    candidates += loops_in(root)
    return [loop for loop in candidates if not loop.inits and id(loop) not in carriers]


def carrying_dependence(loop: affine.ForOp) -> Dependence | None:
    """One dependence carried by `loop` (for messages), or None when it carries none."""
    carried = carried_by(dependences(loop), loop)
    return carried[0] if carried else None
