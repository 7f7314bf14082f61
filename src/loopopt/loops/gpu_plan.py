"""Choosing which loops of a nest become GPU blocks and threads (`gpu-map-loops`'s plan).

    affine.for %i = 0 to 1000 {                 plan_kernel(i) == KernelPlan(chosen=[
      affine.for %j = 0 to 1000 {                 Candidate(tile=None, point=j),    x, 16
        affine.for %k = 0 to 1000 {               Candidate(tile=None, point=i)],   y, 16
          C[i, j] += A[i, k] * B[k, j]            blocks=(16, 16), caps=(2^31-1, 65535))
    } } }                                       (k carries C[i, j] → C[i, j]: sequential)

Candidates come from the *parallel prefix* of the nest's perfect band (the outermost loops that
carry no dependence, by the exact analysis) whose bounds the host can compute. A tile loop
`i_t` (step S over the original range, from `loop-tile`) offers itself as blocks and its point
loop `i` (from `i_t` to min(i_t + S, ub)) as threads; any other loop of the prefix is
strip-mined by the block size (blocks of its iterations, one per thread). Up to three
candidates are mapped: threadIdx.x gets the loop that indexes the contiguous (last) dimension
with stride 1 in the most accesses (ties: the one most stores are contiguous in, then the
innermost), y and z the innermost others whose thread loops still form one perfect chain
inside all chosen tile loops. Block sizes: `block=` (x, y, z; missing trailing sizes are 1),
else the tile size of a tiled loop, else 256, 16x16 or 16x4x4 threads. `grid=` caps the blocks
per dimension (default: the device limits 2^31-1, 65535, 65535); larger ranges loop over
blocks.

Not checked here: what lies between the tile and point loops (`gpu_kernel` validates it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects import affine
from xdsl.ir import Operation, SSAValue

from loopopt.analysis.access import Access, Dim, collect_accesses
from loopopt.analysis.parallel import parallel_loops
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import COPY
from loopopt.loops.affine_maps import linear_form, lower_bound, upper_bound
from loopopt.loops.nest import (
    describe_loop,
    enclosing_loops,
    iv,
    loops_in,
    only_child_loop,
    perfect_band,
    step_of,
)
from loopopt.loops.outline import defined_outside
from loopopt.target import BLOCK_LIMITS, GRID_LIMITS, THREADS_PER_BLOCK

AXES = ("x", "y", "z")
DEFAULT_BLOCKS = {1: (256,), 2: (16, 16), 3: (16, 4, 4)}


@dataclass(frozen=True)
class Candidate:
    """A loop to spread over blocks and threads: `point` becomes the thread index; `tile`
    (its tile loop, None for an untiled loop still to be strip-mined) the block index."""

    tile: affine.ForOp | None
    point: affine.ForOp


@dataclass(frozen=True)
class KernelPlan:
    """The mapping of one nest: candidates in x, y, z order with their block sizes and the
    most blocks each grid dimension may have."""

    root: affine.ForOp
    chosen: tuple[Candidate, ...]
    blocks: tuple[int, ...]
    caps: tuple[int, ...]


def host_bounded(loop: affine.ForOp, root: Operation) -> bool:
    """The bounds of `loop` use only values defined outside `root` (computable on the host)."""
    operands = [*loop.lowerBoundOperands, *loop.upperBoundOperands]
    return all(defined_outside(v, root) for v in operands)


def _is(form: dict[SSAValue | None, int] | None, value: SSAValue, const: int) -> bool:
    if form is None:
        return False
    rest = {k: c for k, c in form.items() if c != 0}
    return rest.pop(None, 0) == const and rest == {value: 1}


def point_loop_of(tile: affine.ForOp) -> affine.ForOp | None:
    """The point loop of a tile loop: a loop under it running from the tile IV to at most
    tile IV + tile step (as `loop-tile` builds them), or None."""
    t, size = iv(tile), step_of(tile)
    for loop in loops_in(tile):
        if COPY in loop.attributes or size % step_of(loop) != 0:
            continue
        lb, ub = lower_bound(loop), upper_bound(loop)
        starts = any(_is(linear_form(lb, k), t, 0) for k in range(len(lb.map.results)))
        ends = any(_is(linear_form(ub, k), t, size) for k in range(len(ub.map.results)))
        if starts and ends:
            return loop
    return None


def extent_bound(loop: affine.ForOp) -> int | None:
    """A constant c >= upper - lower for every execution of `loop` (two of its bound results
    a constant apart), or None."""
    found = [
        _difference(loop, u, lo)
        for u in range(len(loop.upperBoundMap.data.results))
        for lo in range(len(loop.lowerBoundMap.data.results))
    ]
    constants = [c for c in found if c is not None]
    return min(constants) if constants else None


def _difference(loop: affine.ForOp, upper: int, lower: int) -> int | None:
    """Upper-bound result `upper` minus lower-bound result `lower` of `loop`, if constant."""
    high = linear_form(upper_bound(loop), upper)
    low = linear_form(lower_bound(loop), lower)
    if high is None or low is None:
        return None
    diff = dict(high)
    for key, c in low.items():
        diff[key] = diff.get(key, 0) - c
    if any(c != 0 for key, c in diff.items() if key is not None):
        return None
    return diff.get(None, 0)


def upper_always_holds(loop: affine.ForOp, upper: int, count: int) -> bool:
    """IV values lb + k * step for k < count all satisfy upper-bound result `upper` (and
    `loop` has a single lower bound)."""
    if len(loop.lowerBoundMap.data.results) != 1:
        return False
    diff = _difference(loop, upper, 0)
    return diff is not None and diff >= (count - 1) * step_of(loop) + 1


def max_trip_count(loop: affine.ForOp) -> int | None:
    """A constant bound on the trip count of `loop` in any execution, or None."""
    extent = extent_bound(loop)
    return None if extent is None else max(0, -(-extent // step_of(loop)))


def coalescing_score(loop: affine.ForOp, accesses: Sequence[Access]) -> tuple[int, int]:
    """(accesses, stores) whose last index moves by ±1 with `loop`'s IV."""
    terms: list[tuple[int, bool]] = []
    for access in accesses:
        depth = next((d for d, outer in enumerate(access.loops) if outer is loop), None)
        if depth is None or not access.indices or access.indices[-1] is None:
            continue
        terms.append((dict(access.indices[-1].terms).get(Dim(depth), 0), access.is_write))
    return contiguous_accesses(terms)


def contiguous_accesses(terms: Iterable[tuple[int, bool]]) -> tuple[int, int]:
    """(accesses, stores) whose last index moves by ±1 with a loop, from each access's
    coefficient of that loop in its last index and whether it is a store."""
    moving = [write for coefficient, write in terms if abs(coefficient) == 1]
    return len(moving), sum(moving)


def thread_x_rank(score: tuple[int, int], depth: int) -> tuple[int, int, int]:
    """gpu-map-loops' rank of a candidate for threadIdx.x, the highest chosen: its
    `coalescing_score`, then depth (the innermost). The schedule model ranks with it too."""
    return (*score, depth)


def _depth(loop: affine.ForOp) -> int:
    return len(enclosing_loops(loop))


def perfect_chain(loops: Sequence[affine.ForOp]) -> bool:
    """The loops are nested in one another with nothing but loops between them."""
    ordered = sorted(loops, key=_depth)
    for outer, inner in zip(ordered, ordered[1:], strict=False):
        step: affine.ForOp | None = outer
        while step is not None and step is not inner:
            step = only_child_loop(step)
        if step is not inner:
            return False
    return True


def _encloses(outer: affine.ForOp, inner: affine.ForOp) -> bool:
    return outer is not inner and outer.is_ancestor(inner)


def candidates(root: affine.ForOp) -> list[Candidate] | None:
    """The loops of `root`'s nest that may be mapped; None when `root` itself carries a
    dependence (it stays on the host, or the nest is refused)."""
    parallel = set(parallel_loops(root))
    prefix: list[affine.ForOp] = []
    for loop in perfect_band(root):
        if loop not in parallel:
            break
        prefix.append(loop)
    if not prefix:
        return None
    tiled: list[Candidate] = []
    for loop in prefix:
        point = point_loop_of(loop)
        if point is not None and point in parallel and host_bounded(loop, root):
            tiled.append(Candidate(loop, point))
    paired = {c.point for c in tiled} | {c.tile for c in tiled}
    untiled = [
        Candidate(None, loop)
        for loop in prefix
        if loop not in paired and host_bounded(loop, root) and COPY not in loop.attributes
    ]
    return tiled + untiled


def choose(found: Sequence[Candidate], accesses: Sequence[Access]) -> list[Candidate]:
    """Up to three candidates in x, y, z order (see the module docstring)."""

    def rank(c: Candidate) -> tuple[int, int, int]:
        return thread_x_rank(coalescing_score(c.point, accesses), _depth(c.point))

    x = max(found, key=rank)
    chosen = [x]
    for c in sorted(found, key=lambda c: _depth(c.point), reverse=True):
        if c is x or len(chosen) == len(AXES):
            continue
        trial = [*chosen, c]
        tiles = [t.tile for t in trial if t.tile is not None]
        points = [t.point for t in trial]
        if perfect_chain(points) and all(_encloses(t, p) for t in tiles for p in points):
            chosen.append(c)
    return chosen


def _sizes_text(sizes: Sequence[int]) -> str:
    return "x".join(map(str, sizes))


def _names(chosen: Sequence[Candidate]) -> str:
    return ", ".join(f"{AXES[d]}={describe_loop(c.point)}" for d, c in enumerate(chosen))


def block_sizes(
    chosen: Sequence[Candidate], block: Sequence[int], pass_name: str, root: Operation
) -> tuple[int, ...]:
    """Threads per block along x, y, z for the chosen loops; a diagnostic beyond the limits."""
    n = len(chosen)
    if len(block) > n:
        raise LoopoptError(
            f"{pass_name}: block={','.join(map(str, block))} has {len(block)} sizes but "
            f"{n} loop(s) are mapped ({_names(chosen)})",
            op=root,
        )
    if block:
        sizes = (*block, *(1,) * (n - len(block)))
    else:
        sizes = tuple(
            DEFAULT_BLOCKS[n][d] if c.tile is None else step_of(c.tile) // step_of(c.point)
            for d, c in enumerate(chosen)
        )
    for d, size in enumerate(sizes):
        if size < 1 or size > BLOCK_LIMITS[d]:
            raise LoopoptError(
                f"{pass_name}: block size {size} along {AXES[d]} ({describe_loop(chosen[d].point)})"
                f" is outside 1..{BLOCK_LIMITS[d]}",
                op=root,
            )
    total = math.prod(sizes)
    if total > THREADS_PER_BLOCK:
        raise LoopoptError(
            f"{pass_name}: a block of {_sizes_text(sizes)} threads ({_names(chosen)}) has "
            f"{total} threads, more than {THREADS_PER_BLOCK}; pass block= with fewer threads "
            f"(e.g. block=32,32) or tile with smaller sizes",
            op=root,
        )
    return tuple(sizes)


def grid_caps(
    chosen: Sequence[Candidate], grid: Sequence[int], pass_name: str, root: Operation
) -> tuple[int, ...]:
    """The most blocks along x, y, z (`grid=`, else the device limits)."""
    n = len(chosen)
    if len(grid) > n:
        raise LoopoptError(
            f"{pass_name}: grid={','.join(map(str, grid))} has {len(grid)} sizes but {n} "
            f"loop(s) are mapped ({_names(chosen)})",
            op=root,
        )
    caps = (*grid, *GRID_LIMITS[len(grid) : n])
    for d, cap in enumerate(caps):
        if cap < 1 or cap > GRID_LIMITS[d]:
            raise LoopoptError(
                f"{pass_name}: grid size {cap} along {AXES[d]} is outside 1..{GRID_LIMITS[d]}",
                op=root,
            )
    return tuple(caps)


def plan_kernel(
    root: affine.ForOp, block: Sequence[int], grid: Sequence[int], pass_name: str
) -> KernelPlan | None:
    """How `root`'s nest maps onto the GPU; None when `root` carries a dependence or no loop
    of its parallel prefix has bounds the host can compute."""
    found = candidates(root)
    if not found:
        return None
    chosen = choose(found, collect_accesses(root))
    blocks = block_sizes(chosen, block, pass_name, root)
    caps = grid_caps(chosen, grid, pass_name, root)
    return KernelPlan(root, tuple(chosen), blocks, caps)
