"""What a schedule asks of an SM: its mapping, the boxes its accesses touch, shared memory.

    m = mapping(summary, s)          # per loop: extent per block, range per thread; grid, axes
    shared_bytes(summary, s)         # exact: the promoted boxes as loops/promote.py lays them out
    operands(summary, s)             # the accesses by array, or by operand (A@i, A@j) if so staged
    distinct(accesses, summary, r)   # distinct elements (or sectors) touched over loop ranges

Registers are estimated in schedule/registers.py, occupancy and misfits in
schedule/occupancy.py.

The mapping follows gpu-map-loops: `x_loop` on threadIdx.x, the other parallel loops (tiled
ones first, innermost first) on y and z; a tiled loop spans its block tile per block and its
thread tile per thread (consecutive iterations: thread t computes t·tile .. t·tile + tile - 1);
an untiled mapped loop is strip-mined by its block size (block extent = threads along its axis
× thread tile); an unmapped parallel loop and an unchunked reduction run whole inside each
thread; a chunked reduction (`block_tile` entry) runs `trip / chunk` sequential steps of
`chunk` iterations; the outermost `host_loops` (Schedule.extra) loops stay on the host, one
launch per iteration. Not checked here: that the schedule's pipeline produces this mapping.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from loopopt.loops.gpu_map import cyclic_offsets
from loopopt.loops.promote import buffer_shape, swizzle_params, swizzled_column
from loopopt.lowering.gpu_shared import slot_bytes
from loopopt.schedule.types import Access, NestSummary, Schedule, operand_key, split_key

MAX_POINTS = 1 << 16
"""Enumerate at most this many iteration points to count distinct elements; beyond, a box."""


@dataclass(frozen=True)
class Mapping:
    """How the schedule spreads the nest over blocks and threads."""

    block: dict[str, int]
    """Per loop: iterations one block covers (a reduction: one chunk, or the whole loop)."""
    thread: dict[str, int]
    """Per loop: iterations one thread covers per step."""
    steps: int
    """Sequential steps of the chunked reductions (product of trip / chunk)."""
    axes: tuple[str, ...]
    """The loops on threadIdx.x, y, z."""
    grid_loops: tuple[str, ...]
    """The loops spread over blocks, blockIdx.x's first."""
    grid: tuple[int, ...]
    """Blocks along each of grid_loops."""
    host: tuple[str, ...] = ()
    """Outer sequential loops left on the host: one launch per iteration."""
    trips: dict[str, int] = field(default_factory=dict[str, int])
    """Every loop's trip count."""

    @property
    def blocks(self) -> int:
        """Blocks per launch."""
        return math.prod(self.grid)

    @property
    def launches(self) -> int:
        """Kernel launches: the product of the host loops' trip counts."""
        return math.prod(self.trips[n] for n in self.host)


@functools.lru_cache(maxsize=1 << 13)
def mapping(summary: NestSummary, schedule: Schedule) -> Mapping:
    """The per-block and per-thread extents of every loop (see the module docstring)."""
    tiles = dict(schedule.block_tile)
    thread_tile = dict(schedule.thread_tile)
    host = tuple(loop.name for loop in summary.loops[: dict(schedule.extra).get("host_loops", 0)])
    parallel = [loop.name for loop in reversed(summary.loops) if loop.parallel]
    tiled = [n for n in parallel if n in tiles and tiles[n] > thread_tile.get(n, 1)]
    untiled = [n for n in parallel if n not in tiles]
    others = [n for n in (*tiled, *untiled) if n != schedule.x_loop]
    axes = tuple([schedule.x_loop, *others][:3])
    block: dict[str, int] = {}
    thread: dict[str, int] = {}
    steps = 1
    for loop in summary.loops:
        name, trip = loop.name, loop.trip
        if name in host:
            block[name] = thread[name] = 1
            continue
        if not loop.parallel:
            block[name] = min(tiles.get(name, trip), trip)
            thread[name] = block[name]
            steps *= -(-trip // block[name])
            continue
        per_thread = thread_tile.get(name, 1)
        if name in tiles:
            block[name] = min(tiles[name], trip)
        elif name in axes:
            block[name] = min(schedule.threads[axes.index(name)] * per_thread, trip)
        else:
            block[name] = trip
            per_thread = trip
        thread[name] = min(per_thread, block[name])
    spread = [n for n in (*axes, *tiles) if n in block and summary.loop(n).parallel]
    grid_loops = tuple(dict.fromkeys(spread))
    grid = tuple(-(-summary.loop(name).trip // block[name]) for name in grid_loops)
    trips = {loop.name: loop.trip for loop in summary.loops}
    return Mapping(block, thread, steps, axes, grid_loops, grid, host, trips)


def box(accesses: Sequence[Access], loops: Sequence[str], extents: dict[str, int]) -> list[int]:
    """The bounding box (extent per array dimension) that `accesses` touch while each loop
    runs over `extents[loop]` consecutive iterations (loops not given: fixed). Memoized: the
    candidates of a nest ask for the same boxes many times."""
    ranges = tuple(extents.get(name, 1) - 1 for name in loops)
    return list(_box(tuple(accesses), ranges))


@functools.lru_cache(maxsize=1 << 14)
def _box(accesses: tuple[Access, ...], ranges: tuple[int, ...]) -> tuple[int, ...]:
    result = []
    for d in range(len(accesses[0].shape)):
        highs, lows = [], []
        for access in accesses:
            span = [c * r for c, r in zip(access.coeffs[d], ranges, strict=True)]
            highs.append(sum(s for s in span if s > 0) + access.offset[d])
            lows.append(sum(s for s in span if s < 0) + access.offset[d])
        result.append(max(highs) - min(lows) + 1)
    return tuple(result)


def pitches(access: Access, summary: NestSummary) -> list[int]:
    """Row-major element strides of the array's dimensions (a dynamic size, ≤ 0, is taken as
    the extent the nest's accesses span in that dimension)."""
    names = [loop.name for loop in summary.loops]
    span = box([access], names, {loop.name: loop.trip for loop in summary.loops})
    sizes = [
        n if n > 0 else s + abs(o)
        for n, s, o in zip(access.shape, span, access.offset, strict=True)
    ]
    result = [1] * len(sizes)
    for d in range(len(sizes) - 2, -1, -1):
        result[d] = result[d + 1] * sizes[d + 1]
    return result


def _used(accesses: Sequence[Access], summary: NestSummary, ranges: dict[str, int]) -> list[str]:
    """The loops with a range above 1 that some access's index depends on."""
    names = [loop.name for loop in summary.loops]
    return [
        n
        for n in names
        if ranges.get(n, 1) > 1
        and any(any(row[names.index(n)] for row in a.coeffs) for a in accesses)
    ]


@dataclass(frozen=True)
class Layout:
    """Where element `index` of an array lives: sum((index - origin)[dims] * pitch), `dims`
    reversed for a transposed buffer, the last index first swizzled by the one before it
    (loops/promote.swizzled_column) for a swizzled buffer."""

    pitch: tuple[int, ...]
    origin: tuple[int, ...]
    transposed: bool = False
    swizzle: tuple[int, int] | None = None
    """(chunk, period) of promote{swizzle}'s layout."""


def array_layout(access: Access, summary: NestSummary) -> Layout:
    """The array itself (row-major, origin 0)."""
    return Layout(tuple(pitches(access, summary)), (0,) * len(access.shape))


def addresses(
    accesses: Sequence[Access],
    summary: NestSummary,
    ranges: dict[str, int],
    lanes: dict[str, np.ndarray] | None = None,
    layout: Layout | None = None,
    pieces: dict[str, tuple[int, int]] | None = None,
) -> np.ndarray:
    """Linear element positions (in `layout`, default the array's) that `accesses` (of one
    array) touch while each loop named in `ranges` runs over that many iterations from 0, the
    other loops at 0: one column per (access, point); with `lanes`, one row per lane, whose
    loop values are added (a warp's threads). Beyond MAX_POINTS points, the longest ranges
    are cut (see `distinct`). `pieces`: loops whose thread runs strided fragments (loop ->
    (fragment, threads): gpu_map.cyclic_offsets) instead of consecutive iterations."""
    names = [loop.name for loop in summary.loops]
    layout = layout if layout is not None else array_layout(accesses[0], summary)
    used = _used(accesses, summary, ranges)
    axes = [np.arange(ranges[n], dtype=np.int64) for n in used]
    while math.prod(len(a) for a in axes) > MAX_POINTS:
        longest = max(range(len(axes)), key=lambda i: len(axes[i]))
        axes[longest] = axes[longest][: len(axes[longest]) // 2]
    for i, n in enumerate(used):
        if pieces and n in pieces:
            axes[i] = cyclic_offsets(axes[i], *pieces[n])
    points = [g.ravel() for g in np.meshgrid(*axes, indexing="ij")] if axes else []
    count = len(points[0]) if points else 1
    lane_count = len(next(iter(lanes.values()))) if lanes else 1
    columns = []
    for access in accesses:
        indices = []
        for d, row in enumerate(access.coeffs):
            index = np.full((lane_count, count), access.offset[d] - layout.origin[d], np.int64)
            for n, values in zip(used, points, strict=True):
                index += row[names.index(n)] * values[None, :]
            for n, values in (lanes or {}).items():
                index += row[names.index(n)] * values[:, None]
            indices.append(index)
        if layout.transposed:
            indices = indices[::-1]
        if layout.swizzle is not None and len(indices) >= 2:
            indices[-1] = swizzled_column(indices[-2], indices[-1], *layout.swizzle)
        linear = np.zeros((lane_count, count), dtype=np.int64)
        for index, pitch in zip(indices, layout.pitch, strict=True):
            linear += index * pitch
        columns.append(linear)
    return np.concatenate(columns, axis=1)


def distinct(
    accesses: Sequence[Access], summary: NestSummary, ranges: dict[str, int], granule: int = 0
) -> int:
    """How many distinct elements (with `granule`: distinct aligned chunks of that many bytes,
    such as 32-byte sectors) `accesses` touch over `ranges`; a cut range is extrapolated in
    proportion. Memoized: the candidates of one nest ask about the same ranges again."""
    return _distinct(tuple(accesses), summary, tuple(sorted(ranges.items())), granule)


@functools.lru_cache(maxsize=1 << 14)
def _distinct(
    accesses: tuple[Access, ...],
    summary: NestSummary,
    range_items: tuple[tuple[str, int], ...],
    granule: int,
) -> int:
    ranges = dict(range_items)
    used = _used(accesses, summary, ranges)
    full = math.prod(ranges[n] for n in used)
    found = addresses(accesses, summary, ranges)
    if granule:
        found = found * accesses[0].elem_bytes // granule
    enumerated = found.shape[1] // len(accesses)
    return int(round(len(np.unique(found)) * full / enumerated))


def by_array(summary: NestSummary) -> dict[str, list[Access]]:
    """The accesses grouped by array, in order of first appearance."""
    groups: dict[str, list[Access]] = {}
    for access in summary.accesses:
        groups.setdefault(access.array, []).append(access)
    return groups


def operands(summary: NestSummary, schedule: Schedule) -> dict[str, list[Access]]:
    """The accesses grouped as the schedule treats them: by array, except that an array
    staged per operand (`A@i` entries of `schedule.shared`) has a group per entry, each of the
    accesses whose index uses that loop (promote{indexed-by=i}); in order of first appearance.
    Memoized per (summary, staged entries): callers must not change what it returns."""
    return _operands(summary, schedule.shared)


@functools.lru_cache(maxsize=1024)
def _operands(summary: NestSummary, shared: tuple[str, ...]) -> dict[str, list[Access]]:
    names = [loop.name for loop in summary.loops]
    split: dict[str, list[str]] = {}
    for key in shared:
        array, loop = split_key(key)
        if loop is not None:
            split.setdefault(array, []).append(loop)
    groups: dict[str, list[Access]] = {}
    for access in summary.accesses:
        key = access.array
        for loop in split.get(access.array, []):
            if any(row[names.index(loop)] for row in access.coeffs):
                key = operand_key(access.array, loop)
                break
        groups.setdefault(key, []).append(access)
    return groups


def shared_shape(summary: NestSummary, schedule: Schedule, key: str) -> list[int]:
    """The shared buffer of `key` (an array or an operand key): promote's buffer
    (loops/promote.py's `buffer_shape`) for its box over the block tile, padded by
    `schedule.pad`, transposed as the schedule says."""
    m = mapping(summary, schedule)
    names = [loop.name for loop in summary.loops]
    extents = box(operands(summary, schedule)[key], names, m.block)
    return buffer_shape(extents, schedule.pad, key in schedule.transposed)


def shared_layout(summary: NestSummary, schedule: Schedule, key: str) -> Layout:
    """The layout of `key`'s shared buffer for the block at the origin of the nest."""
    m = mapping(summary, schedule)
    accesses = operands(summary, schedule)[key]
    names = [loop.name for loop in summary.loops]
    origin = []
    for d in range(len(accesses[0].shape)):
        lows = [
            sum(min(c, 0) * (m.block[n] - 1) for c, n in zip(a.coeffs[d], names, strict=True))
            + a.offset[d]
            for a in accesses
        ]
        origin.append(min(lows))
    shape = shared_shape(summary, schedule, key)
    pitch = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        pitch[d] = pitch[d + 1] * shape[d + 1]
    swizzle = None
    if dict(schedule.extra).get("swizzle") and len(shape) >= 2:
        swizzle = swizzle_params(shape[-1], accesses[0].elem_bytes)
    return Layout(tuple(pitch), tuple(origin), key in schedule.transposed, swizzle)


@functools.lru_cache(maxsize=1 << 13)
def shared_bytes(summary: NestSummary, schedule: Schedule) -> int:
    """Bytes of shared memory per block: every staged buffer (`stages` of each in a cp.async
    ring), each placed as the lowering places it (lowering/gpu_shared.py's `slot_bytes`)."""
    groups = operands(summary, schedule)
    total = 0
    for key in schedule.shared:
        size = math.prod(shared_shape(summary, schedule, key)) * groups[key][0].elem_bytes
        total += slot_bytes(size * schedule.stages)
    return total
