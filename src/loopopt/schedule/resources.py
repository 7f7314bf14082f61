"""What a schedule asks of an SM: its mapping, shared memory, registers, occupancy, misfits.

    m = mapping(summary, s)          # per loop: extent per block, range per thread; grid, axes
    shared_bytes(summary, s)         # exact: the promoted boxes as loops/promote.py lays them out
    registers(summary, s)            # an estimate per thread (see `register_parts`)
    blocks_per_sm(summary, s, dev)   # min of the registers, shared memory, threads, blocks limits
    misfit(summary, s, dev)          # "256x256x64 block tile needs 130 KB of shared memory,
                                     #  sm_89 allows 99 KB"

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from loopopt.schedule.types import Access, Device, NestSummary, Schedule

SHARED_ALIGN = 16
"""Each shared buffer starts 16-byte aligned (lowering/gpu_shared.py)."""
SHARED_RESERVED = 1024
"""Shared memory the system reserves per resident block (sm_80 and later)."""
SHARED_GRANULE = 128
REGISTER_GRANULE = 256
"""Registers are allocated per warp in units of 256 (8 per thread)."""
COPY_ADDRESS_REGISTERS = 3
"""Registers a copy instruction in flight holds besides its values: its 64-bit global address
and its shared one (a step's unrolled copies are all loaded before the first is stored; fitted
with the fragments and overhead below to ptxas -v on 134 SGEMM schedules, 10% mean error)."""
HOIST_FMAS = 256
"""The compiler issues shared loads ahead of their FMAs over a window that grows with the
unrolled step: one reduction point's operands in flight per 256 FMAs of the step (fitted with
COPY_ADDRESS_REGISTERS, COPY_OVERLAP and OVERHEAD_REGISTERS to ptxas -v on 207 SGEMM schedules:
9% mean error; 8x8 tiles 32 deep spill, 16 deep do not)."""
COPY_OVERLAP = 4
"""Without pipelining, a quarter of a step's copies are in flight during the previous step's
compute (the compiler issues the loads of invariant data ahead of the barrier)."""
OVERHEAD_REGISTERS = 13
"""Indices, bounds and loop counters a thread keeps besides its data (+ 2 per array)."""
REGISTER_ERROR = 0.15
"""Relative uncertainty of the register estimate (its error against ptxas -v: 10% mean)."""
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


@functools.lru_cache(maxsize=1024)
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
    runs over `extents[loop]` consecutive iterations (loops not given: fixed)."""
    rank = len(accesses[0].shape)
    result = []
    for d in range(rank):
        highs, lows = [], []
        for access in accesses:
            span = [
                c * (extents.get(name, 1) - 1)
                for c, name in zip(access.coeffs[d], loops, strict=True)
            ]
            highs.append(sum(s for s in span if s > 0) + access.offset[d])
            lows.append(sum(s for s in span if s < 0) + access.offset[d])
        result.append(max(highs) - min(lows) + 1)
    return result


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
    reversed for a transposed buffer."""

    pitch: tuple[int, ...]
    origin: tuple[int, ...]
    transposed: bool = False


def array_layout(access: Access, summary: NestSummary) -> Layout:
    """The array itself (row-major, origin 0)."""
    return Layout(tuple(pitches(access, summary)), (0,) * len(access.shape))


def addresses(
    accesses: Sequence[Access],
    summary: NestSummary,
    ranges: dict[str, int],
    lanes: dict[str, np.ndarray] | None = None,
    layout: Layout | None = None,
) -> np.ndarray:
    """Linear element positions (in `layout`, default the array's) that `accesses` (of one
    array) touch while each loop named in `ranges` runs over that many iterations from 0, the
    other loops at 0: one column per (access, point); with `lanes`, one row per lane, whose
    loop values are added (a warp's threads). Beyond MAX_POINTS points, the longest ranges
    are cut (see `distinct`)."""
    names = [loop.name for loop in summary.loops]
    layout = layout if layout is not None else array_layout(accesses[0], summary)
    used = _used(accesses, summary, ranges)
    axes = [np.arange(ranges[n], dtype=np.int64) for n in used]
    while math.prod(len(a) for a in axes) > MAX_POINTS:
        longest = max(range(len(axes)), key=lambda i: len(axes[i]))
        axes[longest] = axes[longest][: len(axes[longest]) // 2]
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


def shared_shape(summary: NestSummary, schedule: Schedule, array: str) -> list[int]:
    """The shared buffer of `array`: its box over the block tile, dimensions reversed when
    transposed, `pad` elements added to the innermost dimension (loops/promote.py)."""
    m = mapping(summary, schedule)
    names = [loop.name for loop in summary.loops]
    extents = box(by_array(summary)[array], names, m.block)
    if array in schedule.transposed:
        extents = extents[::-1]
    return [*extents[:-1], extents[-1] + schedule.pad] if extents else []


def shared_layout(summary: NestSummary, schedule: Schedule, array: str) -> Layout:
    """The layout of `array`'s shared buffer for the block at the origin of the nest."""
    m = mapping(summary, schedule)
    accesses = by_array(summary)[array]
    names = [loop.name for loop in summary.loops]
    origin = []
    for d in range(len(accesses[0].shape)):
        lows = [
            sum(min(c, 0) * (m.block[n] - 1) for c, n in zip(a.coeffs[d], names, strict=True))
            + a.offset[d]
            for a in accesses
        ]
        origin.append(min(lows))
    shape = shared_shape(summary, schedule, array)
    pitch = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        pitch[d] = pitch[d + 1] * shape[d + 1]
    return Layout(tuple(pitch), tuple(origin), array in schedule.transposed)


@functools.lru_cache(maxsize=1024)
def shared_bytes(summary: NestSummary, schedule: Schedule) -> int:
    """Bytes of shared memory per block: every staged buffer (`stages` of each in a cp.async
    ring), each 16-byte aligned."""
    groups = by_array(summary)
    total = 0
    for array in schedule.shared:
        size = math.prod(shared_shape(summary, schedule, array)) * groups[array][0].elem_bytes
        total += -(-size * schedule.stages // SHARED_ALIGN) * SHARED_ALIGN
    return total


def _words(accesses: Iterable[Access]) -> int:
    return max(1, -(-next(iter(accesses)).elem_bytes // 4))


@dataclass(frozen=True)
class Registers:
    """The parts of a thread's register estimate (32-bit registers)."""

    accumulators: int
    fragments: int
    copies: int
    overhead: int
    pipelined: bool

    @property
    def total(self) -> int:
        if self.pipelined:
            live = self.fragments + self.copies
        else:  # copies and fragments take turns, the next copies starting during the compute
            live = max(self.copies, self.fragments + -(-self.copies // COPY_OVERLAP))
        return self.accumulators + live + self.overhead

    @property
    def required(self) -> int:
        """What cannot spill without a load and store per use: accumulators, overhead and
        the copies in flight of a pipelined schedule."""
        return self.accumulators + self.overhead + (self.copies if self.pipelined else 0)


@functools.lru_cache(maxsize=1024)
def register_parts(summary: NestSummary, schedule: Schedule) -> Registers:
    """An estimate of the registers one thread needs (before the compiler's cap):

    - accumulators: arrays in `schedule.registers` hold their per-thread tile (distinct
      elements over the thread's ranges); other written arrays, their distinct elements in
      the unrolled body (without an unrolled reduction, in one iteration of the body's
      outermost loop: an output is stored as soon as it is computed);
    - operand fragments (`_live_operands`): the operands live at once in the unrolled body;
    - copy registers: per staged array, the values of a thread's share of the box and
      COPY_ADDRESS_REGISTERS per copy instruction (one per `copy_width` elements), live during
      the compute when pipelined, else only during the copy (the larger of copies and
      fragments); a cp.async ring's copies hold no values, only their addresses;
    - overhead: OVERHEAD_REGISTERS + 2 per array (64-bit pointers) + 1 per sequential loop.
    """
    m = mapping(summary, schedule)
    names = [loop.name for loop in summary.loops]
    unrolled = {n: m.thread[n] for n in names if n in schedule.unrolled}
    reductions = [n for n, r in unrolled.items() if not summary.loop(n).parallel and r > 1]
    outer = next((n for n in reversed(schedule.unrolled) if unrolled.get(n, 1) > 1), None)
    first = {outer: 1} if outer is not None else {}
    accumulators = copies = 0
    operands: list[tuple[int, list[Access]]] = []
    for array, accesses in by_array(summary).items():
        words = _words(accesses)
        writes = [a for a in accesses if a.write]
        if array in schedule.registers:
            accumulators += words * distinct(accesses, summary, m.thread)
        elif writes:
            streamed = {} if reductions else first
            accumulators += words * distinct(writes, summary, {**unrolled, **streamed})
        reads = [a for a in accesses if not a.write]
        if reads and array not in schedule.registers:
            operands.append((words, reads))
        if array in schedule.shared:
            extents = box(accesses, names, m.block)
            width = copy_width(schedule, extents)
            per_thread = -(-math.prod(extents) // width // schedule.threads_per_block)
            values = 0 if schedule.stages > 1 else width * words
            copies += per_thread * (values + COPY_ADDRESS_REGISTERS)
    fragments = _live_operands(operands, summary, unrolled, reductions, first)
    sequential = sum(1 for n in names if n not in schedule.unrolled and m.thread[n] > 1)
    overhead = OVERHEAD_REGISTERS + 2 * len(by_array(summary)) + sequential
    return Registers(accumulators, fragments, copies, overhead + (m.steps > 1), schedule.pipelined)


def _live_operands(
    operands: Sequence[tuple[int, list[Access]]],
    summary: NestSummary,
    unrolled: dict[str, int],
    reductions: Sequence[str],
    first: dict[str, int],
) -> int:
    """Operand registers live at once in the unrolled body (`operands`: words and read
    accesses per array), for the compiler's cheapest order of the body: at most everything
    it reads; the loads of one iteration of its outermost loop (without a reduction, twice:
    the next iteration's loads are issued ahead); with an unrolled reduction, what one
    iteration of the outermost reduction loop reads of the arrays its iterations reuse (a
    convolution's image rows), and what one reduction point reads of the others (a matrix
    product's A column and B row)."""

    def total(ranges: dict[str, int]) -> int:
        return sum(words * distinct(reads, summary, ranges) for words, reads in operands)

    whole = total(unrolled)
    per_outer = total({**unrolled, **first}) if first else whole
    if not reductions:
        return min(whole, 2 * per_outer)
    outer = reductions[0]
    at_point = {n: r for n, r in unrolled.items() if n not in reductions}
    ahead = max(1.0, math.prod(unrolled.values()) * summary.flops / 2 / HOIST_FMAS)
    per_step = 0
    for words, reads in operands:
        one = distinct(reads, summary, {**unrolled, outer: 1})
        if distinct(reads, summary, unrolled) < unrolled[outer] * one:
            per_step += words * one
        else:
            per_step += words * round(ahead * distinct(reads, summary, at_point))
    return min(whole, per_outer, per_step)


def copy_width(schedule: Schedule, extents: Sequence[int]) -> int:
    """Elements a thread copies at a time into a shared buffer of box `extents` (array order):
    the schedule's `copy_vector` (Schedule.extra, gpu-map-loops{copy-vector}) where it divides
    the box's rows, else 1."""
    width = dict(schedule.extra).get("copy_vector", 1)
    return width if width > 1 and extents and extents[-1] % width == 0 else 1


def registers(summary: NestSummary, schedule: Schedule) -> int:
    """The estimated registers per thread (`register_parts`' total)."""
    return register_parts(summary, schedule).total


def register_cap(schedule: Schedule, device: Device) -> int:
    """The most registers per thread the compiler may use: the device's limit, what one block
    (or `min_blocks` blocks, the launch bounds) of this size can have on an SM."""
    warps = -(-schedule.threads_per_block // device.warp_size)
    blocks = max(1, schedule.min_blocks)
    per_warp = device.regs_per_sm // (warps * blocks)
    fit = (per_warp // REGISTER_GRANULE) * REGISTER_GRANULE // device.warp_size
    return min(device.max_regs_per_thread, fit)


def spilled_registers(
    summary: NestSummary, schedule: Schedule, device: Device, required: bool = False
) -> float:
    """The registers the compiler is expected to spill (of the `required` part only, with
    `required`): the estimate's excess over the cap, averaged over the estimate's uncertainty
    (the true need uniform within ±REGISTER_ERROR of it), so that a schedule whose estimate is
    just under the cap already risks some."""
    parts = register_parts(summary, schedule)
    need = parts.required if required else parts.total
    cap = register_cap(schedule, device)
    low, high = need * (1 - REGISTER_ERROR), need * (1 + REGISTER_ERROR)
    if cap >= high:
        return 0.0
    if cap <= low:
        return need - cap
    return (high - cap) ** 2 / (2 * (high - low))


def allocated_registers(summary: NestSummary, schedule: Schedule, device: Device) -> int:
    """The estimate rounded up to the allocation unit (8 per thread), at most the cap (beyond,
    the compiler spills)."""
    estimate = -(-registers(summary, schedule) // 8) * 8
    return min(estimate, register_cap(schedule, device))


def occupancy_limits(summary: NestSummary, schedule: Schedule, device: Device) -> dict[str, int]:
    """Resident blocks per SM allowed by each resource (0: one block does not fit)."""
    warps = -(-schedule.threads_per_block // device.warp_size)
    regs = allocated_registers(summary, schedule, device)
    warp_regs = -(-regs * device.warp_size // REGISTER_GRANULE) * REGISTER_GRANULE
    smem = shared_bytes(summary, schedule)
    smem_blocks = device.max_blocks_per_sm
    if smem:
        per_block = -(-smem // SHARED_GRANULE) * SHARED_GRANULE + SHARED_RESERVED
        smem_blocks = device.smem_per_sm // per_block
        if smem > device.smem_per_block_optin:
            smem_blocks = 0
    return {
        "registers": (device.regs_per_sm // warp_regs) // warps,
        "shared memory": smem_blocks,
        "threads": device.max_threads_per_sm // (warps * device.warp_size),
        "blocks": device.max_blocks_per_sm,
    }


def blocks_per_sm(summary: NestSummary, schedule: Schedule, device: Device) -> int:
    """Resident blocks per SM: the tightest of the registers, shared memory, threads and blocks
    limits (with their allocation granularities)."""
    return min(occupancy_limits(summary, schedule, device).values())


def _tile(pairs: Sequence[tuple[str, int]]) -> str:
    return "x".join(str(size) for _, size in pairs) or "untiled"


def misfit(summary: NestSummary, schedule: Schedule, device: Device) -> str | None:
    """Why the schedule cannot run on `device` (one actionable line), or None if it fits."""
    arch = device.arch
    x, y, z = schedule.threads
    threads = schedule.threads_per_block
    if threads > device.max_threads_per_block or z > 64 or min(x, y, z) < 1:
        return (
            f"a {x}x{y}x{z} block has {threads} threads, {arch} allows "
            f"{device.max_threads_per_block} (and at most 64 along z)"
        )
    tiles = dict(schedule.block_tile)
    for name, size in schedule.thread_tile:
        if name in tiles and tiles[name] % size:
            return (
                f"the block tile {tiles[name]} of loop {name} is not a multiple of its "
                f"thread tile {size}"
            )
    smem = shared_bytes(summary, schedule)
    if smem > device.smem_per_block_optin:
        return (
            f"{_tile(schedule.block_tile)} block tile needs {-(-smem // 1024)} KB of shared "
            f"memory, {arch} allows {device.smem_per_block_optin // 1024} KB"
        )
    parts = register_parts(summary, schedule)
    cap = register_cap(schedule, device)
    if parts.required > cap:
        blocks = max(1, schedule.min_blocks)
        if cap == device.max_regs_per_thread:
            return (
                f"{_tile(schedule.thread_tile)} thread tile needs ~{parts.required} registers "
                f"per thread, {arch} allows {device.max_regs_per_thread}"
            )
        return (
            f"{blocks} block(s) of {threads} threads with ~{parts.required} registers each "
            f"need {-(-parts.required * threads * blocks // 1024)} K registers, {arch} has "
            f"{device.regs_per_sm // 1024} K per SM (use fewer threads or a smaller thread tile)"
        )
    if blocks_per_sm(summary, schedule, device) == 0:
        limits = occupancy_limits(summary, schedule, device)
        short = ", ".join(name for name, n in limits.items() if n == 0)
        return f"one block does not fit on an {arch} SM ({short})"
    return None
