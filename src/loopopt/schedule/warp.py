"""One warp's work, simulated lane by lane: instructions, sectors, lines, bank wavefronts.

    m = resources.mapping(summary, s)
    w = warp_work(summary, s, device, m, l1_lines=64)
    w.fma, w.instructions        # warp instructions of warp 0 of a block (every warp alike)
    w.sectors, w.l2_sectors      # 32-byte sectors its global accesses address / fetch from L2
    w.wavefronts                 # load/store unit cycles: L1 and shared wavefronts, spills

Global memory: for each distinct element a thread loads in one run of its unrolled body (the
loads a thread repeats there stay in registers), the 32 lanes' addresses give the sectors
and 128-byte lines of that warp instruction (stride 1 in the last dimension: 4 sectors for
32 floats; 8 floats apart or more: 32); L1 serves it in the wavefronts of its 4-byte words
over L1's 32 banks, as shared memory does (`l1_cycles`). From L2 come the sectors distinct
among the run's instructions, the block's warps (L1) and, when the warps' lines fit in L1,
REUSE_RUNS consecutive runs of the innermost sequential loop, in whole lines (L2_GRANULE).
Arrays held in registers across the reduction (scalar-replace) are read and written once
per thread; those the nest initializes (summary.initialized) only written, when they are
held or every reduction loop is unrolled (the stored 0 reaches the first update in a register).

Shared memory: a staged array's block-tile box is copied in (rows in array order, one
element, or `copy_vector` elements, per thread per round) once per reduction step; reads from
the buffer merge into accesses of up to 16 bytes where a thread's elements are consecutive
and aligned. A warp access of W bytes per lane is served 128 bytes per cycle: in W/4
phases of 128/W lanes (two lanes of a pair with one address share their data, halving the
phases), and a phase takes as many wavefronts as the most distinct 4-byte words one of the 32
banks holds in it. So a 128-bit load takes 4 wavefronts even when every lane reads the same
address (2: the pair rule), and a column of an unpadded 32-wide tile 32.

Registers beyond the compiler's cap spill (`spill_accesses`): local loads and stores per run.

The candidates of a nest share few access patterns: a run's direct accesses (`_direct_run`),
a copy round (`_copy_round`) and a run's buffer accesses (`_buffer_run`) are memoized on all
they read (accesses, summary, ranges, warp 0's lanes, layout, device).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loopopt.loops.gpu_map import warp_tile_ids
from loopopt.loops.promote import swizzled_column
from loopopt.schedule import registers, resources
from loopopt.schedule.resources import Mapping, addresses, operands
from loopopt.schedule.types import Access, Device, NestSummary, Schedule

SECTOR = 32
LINE = 128
L2_GRANULE = LINE
"""Loads fetch from L2 in whole 128-byte lines' worth (a request per line: a warp row of 16
floats, or a misaligned row's second line, costs a full line; jacobi-2d and conv2d 3×3 with
16-wide blocks run 1.5x slower on the H200 than with 32 and more)."""
REUSE_RUNS = 8
"""Consecutive runs of the innermost sequential loop whose shared sectors L1 serves once."""
LOOP_INSTRUCTIONS = 3
"""Instructions per run of a thread's loop: increment, compare, branch."""
COPY_INSTRUCTIONS = 2
"""Instructions per copy besides its load and store: address and guard."""
PADDED_COPY_INSTRUCTIONS = 6
"""Those of a zero-filled copy (pad-tiles): its own 64-bit address, the in-bounds tests of
both coordinates and the select of 0."""


@dataclass
class WarpWork:
    """One warp's work in one block (counts of warp instructions, wavefronts, sectors)."""

    fma: float = 0.0
    instructions: float = 0.0
    global_loads: float = 0.0
    global_stores: float = 0.0
    shared_loads: float = 0.0
    shared_stores: float = 0.0
    wavefronts: float = 0.0
    """Load/store unit cycles: global lines + shared wavefronts (+ local, added by the model)."""
    shared_wavefronts: float = 0.0
    shared_ideal: float = 0.0
    """Wavefronts of the same shared accesses without bank conflicts."""
    sectors: float = 0.0
    """Sectors the warp's global instructions address (coalescing)."""
    l2_sectors: float = 0.0
    """Sectors fetched from or written to L2."""
    step_loads: float = 0.0
    """Global load instructions per step whose latency a step exposes (copy-in)."""
    spills: float = 0.0
    """Local-memory loads and stores of spilled registers (warp instructions)."""
    body_sectors: float = 0.0
    body_fetched: float = 0.0
    """Sectors the body runs' global loads address, and those L1 misses."""
    runs: int = 1
    """Runs of the thread's unrolled body (steps × sequential iterations)."""


def sectors_and_lines(columns: np.ndarray, elem_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per warp instruction (a column of lane addresses): its distinct sectors and lines."""
    byte = columns * elem_bytes
    return _distinct_per_column(byte // SECTOR), _distinct_per_column(byte // LINE)


def l1_cycles(columns: np.ndarray, elem_bytes: int, banks: int) -> float:
    """Load/store unit cycles of global warp instructions (a column of lane addresses each,
    in elements): L1's data array is banked like shared memory, so an instruction takes the
    wavefronts `shared_cycles` gives its 4-byte words (a row of 32 floats, aligned or not: 1;
    a column of a row-major array, every word in one bank: 32)."""
    per = max(1, elem_bytes // 4)
    if per > 1:
        return float(
            sum(shared_cycles((c[:, None] * per + np.arange(per)), banks)[0] for c in columns.T)
        )
    ordered = np.sort(columns, axis=0)
    fresh = np.ones_like(ordered, dtype=bool)
    fresh[1:] = np.diff(ordered, axis=0) != 0
    which = np.broadcast_to(np.arange(columns.shape[1]), columns.shape)
    counts = np.bincount(
        (which * banks + ordered % banks)[fresh], minlength=columns.shape[1] * banks
    )
    return float(counts.reshape(-1, banks).max(axis=1).sum())


def _distinct_per_column(values: np.ndarray) -> np.ndarray:
    ordered = np.sort(values, axis=0)
    return 1 + (np.diff(ordered, axis=0) != 0).sum(axis=0)


def wavefronts(words: np.ndarray, banks: int) -> int:
    """Wavefronts of one phase of a shared-memory access: the most distinct 4-byte words that
    any bank holds (equal words are one broadcast)."""
    unique = np.unique(words)
    return int(np.bincount(unique % banks, minlength=banks).max()) if len(unique) else 0


def shared_cycles(lane_words: np.ndarray, banks: int) -> tuple[int, int]:
    """(wavefronts, conflict-free wavefronts) of one warp access; `lane_words`: per lane (row)
    the 4-byte words it reads or writes (W/4 columns). Phases of 128/W lanes, twice as many
    lanes when every lane pair (l, l^1 or l, l^2) has one address; per phase the most distinct
    words of one bank (see the module docstring). The candidates of a nest ask about the same
    few access patterns many times: answers are kept by the words' bytes."""
    words = np.ascontiguousarray(lane_words, dtype=np.int64)
    return _shared_cycles(words.tobytes(), words.shape, banks)


@functools.lru_cache(maxsize=8192)
def _shared_cycles(data: bytes, shape: tuple[int, ...], banks: int) -> tuple[int, int]:
    lane_words = np.frombuffer(data, dtype=np.int64).reshape(shape)
    lanes_count, per_lane = lane_words.shape
    phase = max(1, banks // per_lane)
    if _pairs_share(lane_words):
        phase *= 2
    waves = ideal = 0
    for start in range(0, lanes_count, phase):
        words = lane_words[start : start + phase].ravel()
        waves += max(1, wavefronts(words, banks))
        ideal += max(1, -(-len(np.unique(words)) // banks))
    return waves, ideal


def _pairs_share(lane_words: np.ndarray) -> bool:
    """Every lane pair (l, l ^ 1), or every pair (l, l ^ 2), reads one address."""
    index = np.arange(len(lane_words))
    for partner in (1, 2):
        other = index ^ partner
        inside = other < len(index)
        if inside.any() and bool((lane_words[other[inside]] == lane_words[inside]).all()):
            return True
    return False


def lanes(schedule: Schedule, m: Mapping, device: Device) -> dict[str, np.ndarray]:
    """Warp 0's threads as loop offsets: lane l is thread (x, y, z) of the block's linear id
    l (with warp tiles, `lanes_x` x `lanes_y`: the position gpu_map.warp_tile_ids gives it),
    and its loop on each axis starts at that index × the loop's thread tile (× the fragment,
    with strided fragments: `pieces`)."""
    count = min(device.warp_size, schedule.threads_per_block)
    tid = np.arange(count, dtype=np.int64)
    x, y, _ = schedule.threads
    index = [tid % x, (tid // x) % y, tid // (x * y)]
    extra = dict(schedule.extra)
    if "lanes_x" in extra and count == device.warp_size:
        index[0], index[1] = warp_tile_ids(
            index[0], index[1], x, (extra["lanes_x"], extra["lanes_y"])
        )
    strided = dict((n, f) for n, f, _ in pieces(schedule, m))
    result: dict[str, np.ndarray] = {}
    for axis, name in enumerate(m.axes):
        result[name] = index[axis] * strided.get(name, m.thread[name])
    return result


Pieces = tuple[tuple[str, int, int], ...]
"""Loops whose thread runs strided fragments: (loop, fragment, threads along its axis)."""


def pieces(schedule: Schedule, m: Mapping) -> Pieces:
    """The matmul recipe's strided fragments (`fragment`): on the thread axes whose thread
    tile holds more than one fragment."""
    fragment = dict(schedule.extra).get("fragment", 0)
    if not fragment:
        return ()
    return tuple(
        (name, fragment, schedule.threads[axis])
        for axis, name in enumerate(m.axes[:2])
        if m.thread[name] > fragment
    )


def sequential(summary: NestSummary, schedule: Schedule, m: Mapping) -> list[str]:
    """A thread's loops that run as loops (not unrolled, more than one iteration)."""
    names = [loop.name for loop in summary.loops]
    return [n for n in names if n not in schedule.unrolled and m.thread[n] > 1]


def warp_work(
    summary: NestSummary, schedule: Schedule, device: Device, m: Mapping, l1_lines: float
) -> WarpWork:
    """One warp's work; `l1_lines`: the 128-byte lines of L1 each resident warp may keep."""
    names = [loop.name for loop in summary.loops]
    body = {n: m.thread[n] for n in names if n in schedule.unrolled}
    loops = sequential(summary, schedule, m)
    runs = m.steps * math.prod(m.thread[n] for n in loops)
    lane_key = _lane_key(lanes(schedule, m, device))
    strided = pieces(schedule, m)
    warp = WarpWork(runs=runs)
    warp.fma = m.steps * math.prod(m.thread.values()) * summary.flops / 2
    arrays = operands(summary, schedule)
    warp.instructions = warp.fma + 20 + runs * (LOOP_INSTRUCTIONS + len(arrays))
    inner = loops[-1] if loops else None
    warps = -(-schedule.threads_per_block // device.warp_size)
    spread = {n for n in names if summary.loop(n).parallel and m.block[n] > m.thread[n]}
    per_run = {n: (m.block[n] // m.thread[n] if n in spread else 1) * body.get(n, 1) for n in names}
    once = {n: m.block[n] for n in names}
    reductions_unrolled = all(
        loop.parallel or loop.name in schedule.unrolled for loop in summary.loops
    )
    for array, accesses in arrays.items():
        if array in schedule.constant:
            continue  # ld.const at offsets fixed by the unrolling: uniform, folded by ptxas
        if array in schedule.shared:
            _staged(
                summary, schedule, device, m, array, accesses, body, runs, lane_key, warp, strided
            )
            continue
        held = array in schedule.registers
        if array in summary.initialized and (held or reductions_unrolled):
            accesses = [a for a in accesses if a.write]  # its loads take the registers' values
        _direct(
            summary,
            accesses,
            _Runs(m.thread, 1, None, once, False) if held else _Runs(body, runs, inner, per_run),
            lane_key,
            l1_lines,
            warps,
            device.shared_banks,
            warp,
            strided,
        )
    warp.instructions += (
        warp.global_loads + warp.global_stores + warp.shared_loads + warp.shared_stores
    )
    warp.spills = runs * spill_accesses(summary, schedule, device, body)
    warp.instructions += warp.spills
    return warp


def spill_accesses(
    summary: NestSummary, schedule: Schedule, device: Device, body: dict[str, int]
) -> float:
    """Local loads and stores per run of the registers the compiler spills (expected).
    Values live at every reduction point (accumulators, the copies a pipelined step holds)
    beyond the cap are stored and loaded at each reduction point of the body. Of the rest,
    the compiler spills the longest-lived values first: copies a pipelined step holds across
    its compute (stored once and loaded once per step), then operands, each reloaded at every
    use in the unrolled body (the mean uses per distinct element read), then accumulators and
    the rest (a load and a store at each reduction point)."""
    parts = registers.register_parts(summary, schedule)
    spilled = registers.spilled_registers(summary, schedule, device)
    if spilled <= 0:
        return 0.0
    m = resources.mapping(summary, schedule)
    reduction = math.prod(r for n, r in body.items() if not summary.loop(n).parallel)
    hot = registers.spilled_registers(summary, schedule, device, required=True)
    total = 2 * hot * reduction
    spilled -= hot
    runs_per_step = math.prod(m.thread[n] for n in sequential(summary, schedule, m))
    cold = min(spilled, parts.copies if parts.pipelined else 0)
    total += 2 * cold / runs_per_step
    spilled -= cold
    points = math.prod(body.values())
    uses = kept = 0
    for array, accesses in operands(summary, schedule).items():
        if array in schedule.registers or any(a.write for a in accesses):
            continue
        uses += points * len(accesses)
        kept += resources.distinct(accesses, summary, body)
    fragments = min(spilled, parts.fragments)
    total += fragments * (uses / kept if kept else 1.0)
    return total + 2 * (spilled - fragments) * reduction


@dataclass(frozen=True)
class _Runs:
    """How a thread executes an array's direct accesses: `count` runs over `ranges`, the
    innermost sequential loop around them (`inner`), what the whole block covers per run."""

    ranges: dict[str, int]
    count: int
    inner: str | None
    block: dict[str, int]
    in_body: bool = True
    """Every run waits for its loads (else: read once, before the thread's loops)."""


def _direct(
    summary: NestSummary,
    accesses: Sequence[Access],
    runs: _Runs,
    lane_key: LaneKey,
    l1_lines: float,
    warps: int,
    banks: int,
    warp: WarpWork,
    strided: Pieces = (),
) -> None:
    """Global loads and stores of `accesses` (per warp). Loads come from L2 once per run
    for the sectors distinct among the run's instructions and, when the warps' lines fit in
    L1, among REUSE_RUNS runs of the innermost sequential loop and among the block's warps."""
    ranges = tuple(sorted(runs.ranges.items()))
    for write in (False, True):
        chosen = tuple(a for a in accesses if a.write == write)
        if not chosen:
            continue
        run = _direct_run(chosen, summary, ranges, lane_key, banks, strided)
        warp.sectors += runs.count * run.sectors
        warp.wavefronts += runs.count * run.l1_cycles
        if write:
            warp.global_stores += runs.count * run.count
            warp.l2_sectors += runs.count * run.sectors
            continue
        warp.global_loads += runs.count * run.count
        fetched = run.fetched
        block = resources.distinct(chosen, summary, runs.block, L2_GRANULE) / warps
        inner = runs.inner
        if inner is not None and runs.count > 1 and run.lines <= l1_lines:
            again = min(REUSE_RUNS, summary.loop(inner).trip)
            extended = tuple(sorted({**runs.ranges, inner: again}.items()))
            fetched = min(fetched, _fetched(chosen, summary, extended, lane_key, strided) / again)
            wider = {**runs.block, inner: runs.block[inner] * again}
            block = resources.distinct(chosen, summary, wider, L2_GRANULE) / warps / again
        fetched = min(fetched, block) * (L2_GRANULE // SECTOR)
        warp.l2_sectors += runs.count * fetched
        if runs.in_body:
            warp.body_sectors += runs.count * run.sectors
            warp.body_fetched += runs.count * fetched


LaneKey = tuple[tuple[str, tuple[int, ...]], ...]
"""Warp 0's lanes (`lanes`) as a hashable key of the memoized parts below."""


def _lane_key(warp_lanes: dict[str, np.ndarray]) -> LaneKey:
    return tuple((name, tuple(values.tolist())) for name, values in warp_lanes.items())


def _lane_arrays(key: LaneKey) -> dict[str, np.ndarray]:
    return {name: np.array(values, dtype=np.int64) for name, values in key}


def _spread(strided: Pieces) -> dict[str, tuple[int, int]]:
    return {name: (fragment, threads) for name, fragment, threads in strided}


@dataclass(frozen=True)
class _Run:
    """One run of a thread's direct accesses of one kind (loads or stores), per warp."""

    sectors: np.int64
    """Sectors its instructions address (summed over them)."""
    lines: np.int64
    l1_cycles: float
    count: int
    """Warp instructions (distinct columns of lane addresses)."""
    fetched: float
    """Distinct L2_GRANULE chunks among them."""


@functools.lru_cache(maxsize=4096)
def _direct_run(
    chosen: tuple[Access, ...],
    summary: NestSummary,
    ranges: tuple[tuple[str, int], ...],
    lane_key: LaneKey,
    banks: int,
    strided: Pieces = (),
) -> _Run:
    """The candidates of a nest share few access patterns: memoized on the pattern."""
    elem = chosen[0].elem_bytes
    found = addresses(chosen, summary, dict(ranges), _lane_arrays(lane_key), None, _spread(strided))
    columns = np.unique(found, axis=1)
    sectors, lines = sectors_and_lines(columns, elem)
    fetched = float(len(np.unique(columns * elem // L2_GRANULE)))
    return _Run(
        sectors.sum(), lines.sum(), l1_cycles(columns, elem, banks), columns.shape[1], fetched
    )


@functools.lru_cache(maxsize=4096)
def _fetched(
    chosen: tuple[Access, ...],
    summary: NestSummary,
    ranges: tuple[tuple[str, int], ...],
    lane_key: LaneKey,
    strided: Pieces = (),
) -> int:
    """Distinct L2_GRANULE chunks that `chosen` touch over `ranges` (memoized)."""
    elem = chosen[0].elem_bytes
    columns = addresses(
        chosen, summary, dict(ranges), _lane_arrays(lane_key), None, _spread(strided)
    )
    return len(np.unique(columns * elem // L2_GRANULE))


def _staged(
    summary: NestSummary,
    schedule: Schedule,
    device: Device,
    m: Mapping,
    key: str,
    accesses: Sequence[Access],
    body: dict[str, int],
    runs: int,
    lane_key: LaneKey,
    warp: WarpWork,
    strided: Pieces = (),
) -> None:
    """A shared-memory array: copied in (and out, if written) once per step, element l of
    the box (array order) by thread l mod T, or with a copy width V (gpu-map-loops{copy-vector},
    registers.copy_width) V consecutive elements (l·V + v) per thread, one 128-bit global
    access where the rows stay aligned; read and written in the buffer by every run."""
    names = [loop.name for loop in summary.loops]
    layout = resources.shared_layout(summary, schedule, key)
    extents = resources.box(accesses, names, m.block)
    threads = schedule.threads_per_block
    width = registers.copy_width(schedule, extents)
    groups = math.prod(extents) // width
    rounds = m.steps * -(-groups // threads)
    copy = _copy_round(tuple(accesses), summary, layout, tuple(extents), threads, width, device)
    for copy_in in (True, False):
        if not any(a.write != copy_in for a in accesses):
            continue
        warp.sectors += rounds * copy.sectors
        warp.l2_sectors += rounds * copy.sectors
        warp.wavefronts += rounds * (copy.loads_cycles + copy.waves)
        warp.shared_wavefronts += rounds * copy.waves
        warp.shared_ideal += rounds * copy.ideal
        padded = dict(schedule.params).get("padded")
        warp.instructions += rounds * (PADDED_COPY_INSTRUCTIONS if padded else COPY_INSTRUCTIONS)
        if copy_in:
            warp.global_loads += rounds * copy.requests
            warp.shared_stores += rounds * copy.stores
            warp.step_loads += rounds * copy.requests / m.steps
        else:
            warp.global_stores += rounds * copy.requests
            warp.shared_loads += rounds * copy.stores
    ranges = tuple(sorted(body.items()))
    for write in (False, True):
        chosen = tuple(a for a in accesses if a.write == write)
        if not chosen:
            continue
        count, waves, ideal = _buffer_run(
            chosen, summary, ranges, lane_key, layout, device, strided
        )
        if write:
            warp.shared_stores += runs * count
        else:
            warp.shared_loads += runs * count
        warp.shared_wavefronts += runs * waves
        warp.shared_ideal += runs * ideal
        warp.wavefronts += runs * waves


@dataclass(frozen=True)
class _CopyRound:
    """One round of a staged array's copy (each thread one group of `width` elements), per
    warp: the global side and the buffer side."""

    sectors: np.int64
    requests: int
    """Global warp instructions."""
    loads_cycles: float
    stores: int
    """Shared warp instructions."""
    waves: int
    ideal: int


@functools.lru_cache(maxsize=4096)
def _copy_round(
    accesses: tuple[Access, ...],
    summary: NestSummary,
    layout: resources.Layout,
    extents: tuple[int, ...],
    threads: int,
    width: int,
    device: Device,
) -> _CopyRound:
    """Memoized: the candidates of a nest share few tile boxes and block sizes."""
    elem = accesses[0].elem_bytes
    source = resources.array_layout(accesses[0], summary).pitch
    groups = math.prod(extents) // width
    lanes_count = min(device.warp_size, threads, groups)
    flat = np.arange(lanes_count, dtype=np.int64)[:, None] * width + np.arange(width)
    coords = np.unravel_index(flat, extents)
    at_array = sum((c + o) * p for c, o, p in zip(coords, layout.origin, source, strict=True))
    at_array = np.asarray(at_array)
    aligned = width * elem <= 16 and (len(source) < 2 or source[-2] % width == 0)
    if width > 1 and aligned and layout.origin[-1] % width == 0:
        sectors, _ = sectors_and_lines(at_array.reshape(-1, 1), elem)
        per = max(1, elem // 4)
        words = (at_array[:, :, None] * per + np.arange(per)).reshape(lanes_count, -1)
        loads_cycles = float(shared_cycles(words, device.shared_banks)[0])
    else:
        sectors, _ = sectors_and_lines(at_array, elem)
        loads_cycles = l1_cycles(at_array, elem, device.shared_banks)
    ordered = list(coords[::-1] if layout.transposed else coords)
    if layout.swizzle is not None and len(ordered) >= 2:
        ordered[-1] = swizzled_column(ordered[-2], ordered[-1], *layout.swizzle)
    at_buffer = np.asarray(sum(c * p for c, p in zip(ordered, layout.pitch, strict=True)))
    stores, waves, ideal = _shared_access(at_buffer, elem, device)
    return _CopyRound(sectors.sum(), len(sectors), loads_cycles, stores, waves, ideal)


@functools.lru_cache(maxsize=4096)
def _buffer_run(
    chosen: tuple[Access, ...],
    summary: NestSummary,
    ranges: tuple[tuple[str, int], ...],
    lane_key: LaneKey,
    layout: resources.Layout,
    device: Device,
    strided: Pieces = (),
) -> tuple[int, int, int]:
    """(warp instructions, wavefronts, conflict-free wavefronts) of one run's buffer
    accesses of one kind (memoized)."""
    found = addresses(
        chosen, summary, dict(ranges), _lane_arrays(lane_key), layout, _spread(strided)
    )
    columns = np.unique(found, axis=1)
    return _shared_access(columns, chosen[0].elem_bytes, device)


def _shared_access(columns: np.ndarray, elem: int, device: Device) -> tuple[int, int, int]:
    """(warp instructions, wavefronts, conflict-free wavefronts) of the buffer accesses whose
    lane positions are `columns`: consecutive, aligned elements of every lane merge into one
    access of up to 16 bytes (LLVM's load-store vectorizer on shared pointers). Memoized on
    the pattern: a shift by whole vectors changes neither the merging nor the conflicts."""
    width = max(1, 16 // elem)
    low = int(columns.min()) if columns.size else 0
    shifted = np.ascontiguousarray(columns - (low - low % width), dtype=np.int64)
    return _shared_access_of(shifted.tobytes(), shifted.shape, elem, device.shared_banks)


@functools.lru_cache(maxsize=4096)
def _shared_access_of(
    data: bytes, shape: tuple[int, ...], elem: int, banks: int
) -> tuple[int, int, int]:
    columns = np.frombuffer(data, dtype=np.int64).reshape(shape)
    width = max(1, 16 // elem)
    _, group = np.unique(columns // width, axis=1, return_inverse=True)
    pieces: list[np.ndarray] = []
    for g in range(int(group.max()) + 1 if group.size else 0):
        block = columns[:, group.ravel() == g]
        phases = block % width
        if not bool((phases == phases[:1]).all()):
            pieces.extend(block[:, c : c + 1] for c in range(block.shape[1]))
            continue
        order = [int(v) for v in phases[0]]
        for run in _vector_pieces(sorted(order)):
            pieces.append(block[:, [order.index(v) for v in run]])
    waves = ideal = 0
    per = max(1, elem // 4)
    for piece in pieces:
        words = (piece[:, :, None] * per + np.arange(per)).reshape(piece.shape[0], -1)
        w, i = shared_cycles(words, banks)
        waves += w
        ideal += i
    return len(pieces), waves, ideal


def _vector_pieces(offsets: list[int]) -> list[list[int]]:
    """Split sorted in-vector offsets into aligned power-of-two runs (v4, v2, scalar)."""
    pieces: list[list[int]] = []
    i = 0
    while i < len(offsets):
        size = 1
        for candidate in (4, 2):
            run = offsets[i : i + candidate]
            start = offsets[i]
            if (
                len(run) == candidate
                and start % candidate == 0
                and run == list(range(start, start + candidate))
            ):
                size = candidate
                break
        pieces.append(offsets[i : i + size])
        i += size
    return pieces
