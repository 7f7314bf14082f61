"""The cost model: a pure function (loop nest, schedule, device) → predicted time, explained.

    p = predict(summary, recipes.matmul(summary, 128, 64, 16, 8, 4), device_for("sm_90"))
    explain(p)  # "3326.8 us issue-bound: 41.3 TFLOP/s, DRAM 0.722 GB (2.69x compulsory), ...
                #  88 regs, 12.5 KB shared, 2 blocks/SM, 7.76 waves (tail 1.03x) | fma ... us"

It reads the nest's affine accesses and the schedule's mapping (schedule/resources.py), never
the recipe's name, and simulates one warp (warp 0 of a block; every warp does the same):

- global memory: for each distinct element a thread loads in one run of its unrolled body
  (loads a thread repeats there stay in registers), the 32 lanes' addresses give the 32-byte
  sectors and 128-byte lines of that warp instruction (stride 1 in the last dimension: 4
  sectors for 32 floats; 8 floats or more: 32). From L2 come the sectors distinct among the
  run's instructions, the block's warps (L1) and, when the warps' lines fit in L1, 8
  consecutive runs of the innermost sequential loop. Arrays held in registers across the
  reduction (scalar-replace) are read and written once per thread.
- shared memory: a staged array's block-tile box is copied in (rows in array order, one
  element, or `copy_vector` elements, per thread per round) once per reduction step; reads
  from the buffer merge into accesses of up to 16 bytes where a thread's elements are
  consecutive and aligned, and each warp access costs as many wavefronts as the most
  distinct 4-byte words one of the 32 banks holds (pad and transposition decide it).
- registers (resources.register_parts) set the occupancy; beyond the compiler's cap, each
  spilled operand is stored and reloaded at each of its reuses.
- DRAM: each array's footprint once (compulsory); when a launch's arrays do not fit in L2,
  each wave of resident blocks (blockIdx.x order) reads its footprint, less what the wave
  before it left in L2 when two waves' footprints fit.
- SM time: per block, the FMA pipe (FMAs / lanes per clock), the issue slots (4 warp
  instructions per clock: FMAs, loads, stores, address and loop overhead) and the load/store
  unit (1 wavefront per clock) give a throughput time; a block's critical path adds the
  memory latency it cannot cover itself: a step waits for its copy-in (pipelined: for what
  its compute does not cover) and two barriers, a body run for its global loads. With k
  blocks resident a round takes soft_max(k × throughput, path) (latency hidden by
  occupancy); the busiest SM runs ceil(blocks / SMs) blocks in rounds of k (waves, tail).

time = launches × (soft_max(SM time, L2 time, DRAM time) + launch overhead): the largest
bound plus the part of the others that does not overlap with it (a roofline with soft
corners); `bound` names the largest term. Host loops (`host_loops` in Schedule.extra) make one
launch per iteration. Efficiencies and latencies are calibrated on the H200 measurements of
benchmarks/results: SGEMM 4096³ 3.42 ms, conv2d 4096² 3×3 0.060 ms, 16×16 0.389 ms, jacobi-2d
8192² 0.157 ms (the model: 0.97x, 1.01x, 0.98x, 0.99x).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loopopt.schedule import resources
from loopopt.schedule.resources import Mapping, addresses, by_array
from loopopt.schedule.types import Access, Device, NestSummary, Schedule

SECTOR = 32
LINE = 128
ISSUE_PER_CLOCK = 4
"""Warp instructions an SM issues per clock (one per scheduler)."""
ISSUE_EFFICIENCY = 0.78
"""Sustained fraction of the issue and FMA rates (cuBLAS reaches 76% of the H200's FMA peak)."""
DRAM_EFFICIENCY = 0.76
"""Achieved fraction of the DRAM bandwidth by loop nests that load and store (jacobi-2d and
conv2d 3×3 on the H200: 71% of 4.8 TB/s with their other bounds; a device copy: 88%)."""
L2_BYTES_PER_CLOCK = 28
"""L2 → SM bandwidth per SM per clock (≈ 7 TB/s on the H100/H200, 4.3 TB/s on the A100)."""
L2_USABLE = 0.75
"""Fraction of L2 that holds reused data (the rest: streaming, set conflicts)."""
L1_EXTRA = 28 * 1024
"""L1 data cache beyond the shared-memory carve-out maximum (256 KB - 228 KB on sm_90)."""
LATENCY_L1, LATENCY_SHARED, LATENCY_L2, LATENCY_DRAM_NS = 35, 30, 260, 480
"""Load-to-use latencies in cycles (DRAM in nanoseconds)."""
BARRIER_CYCLES = 24
SOFTNESS = 4
"""Overlap of concurrent bounds (soft_max): 4 lets a bound at half the largest add 3%."""
REUSE_RUNS = 8
"""Consecutive runs of the innermost sequential loop whose shared sectors L1 serves once."""


@dataclass(frozen=True)
class Prediction:
    """A predicted kernel time and where it comes from (times in microseconds)."""

    time_us: float
    bound: str
    """The largest term: fma, issue, lsu (load/store unit: shared + L1 wavefronts),
    latency, l2, dram or launch."""
    fma_us: float
    issue_us: float
    lsu_us: float
    latency_us: float
    l2_us: float
    dram_us: float
    launch_us: float
    flops: float
    dram_bytes: float
    compulsory_bytes: float
    l2_bytes: float
    """Bytes moved between L2 and the SMs (sectors × 32)."""
    sectors_per_request: float
    """Mean 32-byte sectors per global warp load or store (4: coalesced floats, 32: strided)."""
    bank_conflicts: float
    """Mean wavefronts per shared warp access over the ideal (1.0: conflict-free)."""
    loads_per_fma: float
    """Load instructions (global + shared) per FMA instruction, per warp."""
    registers: int
    shared_bytes: int
    blocks: int
    blocks_per_sm: int
    waves: float
    tail: float
    """Blocks of the busiest SM over the mean (1.0: no tail)."""


@dataclass
class _Warp:
    """One warp's work in one block (counts of warp instructions, wavefronts, sectors)."""

    fma: float = 0.0
    instructions: float = 0.0
    global_loads: float = 0.0
    global_stores: float = 0.0
    shared_loads: float = 0.0
    shared_stores: float = 0.0
    wavefronts: float = 0.0
    """Load/store unit: global lines + shared wavefronts."""
    shared_wavefronts: float = 0.0
    shared_ideal: float = 0.0
    sectors: float = 0.0
    """Sectors the warp's global instructions address (coalescing)."""
    l2_sectors: float = 0.0
    """Sectors fetched from or written to L2."""
    step_loads: float = 0.0
    """Global load instructions per step whose latency a step exposes (copy-in)."""
    spills: float = 0.0
    """Local-memory loads and stores of spilled registers."""
    body_sectors: float = 0.0
    body_fetched: float = 0.0
    """Sectors the body runs' global loads address, and those L1 misses."""


def predict(summary: NestSummary, schedule: Schedule, device: Device) -> Prediction:
    """The predicted time of `schedule` on `device` (see the module docstring)."""
    m = resources.mapping(summary, schedule)
    warps = -(-schedule.threads_per_block // device.warp_size)
    k = max(1, resources.blocks_per_sm(summary, schedule, device))
    regs = resources.allocated_registers(summary, schedule, device)
    smem = resources.shared_bytes(summary, schedule)
    l1_bytes = device.smem_per_sm + L1_EXTRA - k * smem
    warp = _warp_work(summary, schedule, device, m, l1_bytes / LINE / (k * warps))
    clock = device.clock_ghz * 1e3  # cycles per microsecond

    fma_cycles = warps * warp.fma / (device.fp32_lanes_per_sm / 32) / ISSUE_EFFICIENCY
    issue_cycles = warps * warp.instructions / ISSUE_PER_CLOCK / ISSUE_EFFICIENCY
    lsu_cycles = warps * warp.wavefronts
    throughput = max(fma_cycles, issue_cycles, lsu_cycles)

    dram, compulsory = _dram_bytes(summary, device, m, k)
    l2_bytes = m.blocks * warps * warp.l2_sectors * SECTOR
    miss = min(1.0, dram / l2_bytes) if l2_bytes else 1.0
    memory_latency = LATENCY_L2 + miss * (LATENCY_DRAM_NS * device.clock_ghz - LATENCY_L2)
    path = _critical_path(summary, schedule, m, warp, throughput, memory_latency)

    per_sm = -(-m.blocks // device.sms)
    resident = min(k, per_sm)
    full, rest = divmod(per_sm, resident)
    sm_cycles = full * soft_max(resident * throughput, path)
    if rest:
        sm_cycles += soft_max(rest * throughput, path)
    launches = m.launches
    sm_us = sm_cycles / clock
    l2_us = l2_bytes / (L2_BYTES_PER_CLOCK * device.sms * clock)
    dram_us = dram / launches / (device.dram_gbps * 1e3 * DRAM_EFFICIENCY)
    terms = {
        "fma": per_sm * fma_cycles / clock,
        "issue": per_sm * issue_cycles / clock,
        "lsu": per_sm * lsu_cycles / clock,
        "latency": -(-per_sm // resident) * path / clock,
        "l2": l2_us,
        "dram": dram_us,
    }
    time_us = launches * (soft_max(sm_us, l2_us, dram_us) + device.launch_us)
    bound = max(terms, key=lambda name: terms[name])
    if device.launch_us > terms[bound]:
        bound = "launch"
    terms = {name: launches * t for name, t in terms.items()}
    loads = warp.global_loads + warp.shared_loads
    return Prediction(
        time_us=float(time_us),
        bound=bound,
        fma_us=float(terms["fma"]),
        issue_us=float(terms["issue"]),
        lsu_us=float(terms["lsu"]),
        latency_us=float(terms["latency"]),
        l2_us=float(terms["l2"]),
        dram_us=float(terms["dram"]),
        launch_us=launches * device.launch_us,
        flops=float(summary.iterations * summary.flops),
        dram_bytes=float(dram),
        compulsory_bytes=float(compulsory),
        l2_bytes=float(launches * l2_bytes),
        sectors_per_request=float(warp.sectors / max(warp.global_loads + warp.global_stores, 1)),
        bank_conflicts=float(
            warp.shared_wavefronts / warp.shared_ideal if warp.shared_ideal else 1
        ),
        loads_per_fma=float(loads / warp.fma if warp.fma else loads > 0),
        registers=int(regs),
        shared_bytes=int(smem),
        blocks=launches * m.blocks,
        blocks_per_sm=k,
        waves=m.blocks / (device.sms * k),
        tail=per_sm / (m.blocks / device.sms),
    )


def soft_max(*times: float) -> float:
    """The largest time plus what the others do not overlap with it: their SOFTNESS-norm
    (a bound alone is its own time; two equal bounds cost 2^(1/SOFTNESS) = 1.19x one)."""
    top = max(times)
    if top <= 0:
        return 0.0
    return top * sum((t / top) ** SOFTNESS for t in times) ** (1 / SOFTNESS)


def explain(p: Prediction) -> str:
    """One line: time, bound, the main numbers."""
    rate = p.flops / p.time_us / 1e6
    ratio = p.dram_bytes / p.compulsory_bytes if p.compulsory_bytes else 1.0
    return (
        f"{p.time_us:.1f} us {p.bound}-bound: {rate:.1f} TFLOP/s, "
        f"DRAM {p.dram_bytes / 1e9:.3g} GB ({ratio:.2f}x compulsory), "
        f"L2 {p.l2_bytes / 1e9:.3g} GB, {p.sectors_per_request:.1f} sectors/request, "
        f"bank conflicts {p.bank_conflicts:.2f}x, {p.loads_per_fma:.2f} loads/FMA, "
        f"{p.registers} regs, {p.shared_bytes / 1024:.1f} KB shared, "
        f"{p.blocks_per_sm} blocks/SM, {p.waves:.2f} waves (tail {p.tail:.2f}x) | "
        f"fma {p.fma_us:.1f} issue {p.issue_us:.1f} lsu {p.lsu_us:.1f} "
        f"latency {p.latency_us:.1f} l2 {p.l2_us:.1f} dram {p.dram_us:.1f} us"
    )


def lanes(schedule: Schedule, m: Mapping, device: Device) -> dict[str, np.ndarray]:
    """Warp 0's threads as loop offsets: lane l is thread (x, y, z) of the block's linear id
    l, and its loop on each axis starts at that index × the loop's thread tile."""
    count = min(device.warp_size, schedule.threads_per_block)
    tid = np.arange(count, dtype=np.int64)
    x, y, _ = schedule.threads
    index = [tid % x, (tid // x) % y, tid // (x * y)]
    result: dict[str, np.ndarray] = {}
    for axis, name in enumerate(m.axes):
        result[name] = index[axis] * m.thread[name]
    return result


def sectors_and_lines(columns: np.ndarray, elem_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per warp instruction (a column of lane addresses): its distinct sectors and lines."""
    byte = columns * elem_bytes
    return _distinct_per_column(byte // SECTOR), _distinct_per_column(byte // LINE)


def _distinct_per_column(values: np.ndarray) -> np.ndarray:
    ordered = np.sort(values, axis=0)
    return 1 + (np.diff(ordered, axis=0) != 0).sum(axis=0)


def wavefronts(words: np.ndarray, banks: int) -> int:
    """Wavefronts of one shared-memory warp access: the most distinct 4-byte words that any
    bank holds (equal words are one broadcast)."""
    unique = np.unique(words)
    return int(np.bincount(unique % banks, minlength=banks).max()) if len(unique) else 0


def _sequential(summary: NestSummary, schedule: Schedule, m: Mapping) -> list[str]:
    """A thread's loops that run as loops (not unrolled, more than one iteration)."""
    names = [loop.name for loop in summary.loops]
    return [n for n in names if n not in schedule.unrolled and m.thread[n] > 1]


def _warp_work(
    summary: NestSummary, schedule: Schedule, device: Device, m: Mapping, l1_lines: float
) -> _Warp:
    """One warp's work; `l1_lines`: the 128-byte lines of L1 each resident warp may keep."""
    names = [loop.name for loop in summary.loops]
    body = {n: m.thread[n] for n in names if n in schedule.unrolled}
    sequential = _sequential(summary, schedule, m)
    runs = m.steps * math.prod(m.thread[n] for n in sequential)
    warp_lanes = lanes(schedule, m, device)
    warp = _Warp()
    warp.fma = m.steps * math.prod(m.thread.values()) * summary.flops / 2
    arrays = by_array(summary)
    warp.instructions = warp.fma + 20 + runs * (3 + len(arrays))
    inner = sequential[-1] if sequential else None
    warps = -(-schedule.threads_per_block // device.warp_size)
    spread = {n for n in names if summary.loop(n).parallel and m.block[n] > m.thread[n]}
    per_run = {n: (m.block[n] // m.thread[n] if n in spread else 1) * body.get(n, 1) for n in names}
    once = {n: m.block[n] for n in names}
    for array, accesses in arrays.items():
        if array in schedule.shared:
            _staged(summary, schedule, device, m, accesses, body, runs, warp_lanes, warp)
            continue
        held = array in schedule.registers
        _direct(
            summary,
            accesses,
            _Runs(m.thread, 1, None, once, False) if held else _Runs(body, runs, inner, per_run),
            warp_lanes,
            l1_lines,
            warps,
            warp,
        )
    warp.instructions += (
        warp.global_loads + warp.global_stores + warp.shared_loads + warp.shared_stores
    )
    warp.spills = runs * _spills(summary, schedule, device, body)
    warp.instructions += warp.spills
    warp.wavefronts += warp.spills
    return warp


def _spills(
    summary: NestSummary, schedule: Schedule, device: Device, body: dict[str, int]
) -> float:
    """Extra loads and stores per run when the estimate exceeds the register cap: a spilled
    operand is stored once and reloaded at each of its reuses in the unrolled body (the mean
    uses per distinct element read, beyond the first); a spilled value beyond the fragments
    (accumulators, copies) is stored and loaded once."""
    parts = resources.register_parts(summary, schedule)
    spilled = parts.total - resources.register_cap(schedule, device)
    if spilled <= 0:
        return 0.0
    points = math.prod(body.values())
    uses = kept = 0
    for array, accesses in by_array(summary).items():
        if array in schedule.registers or any(a.write for a in accesses):
            continue
        uses += points * len(accesses)
        kept += resources.distinct(accesses, summary, body)
    reuse = (uses - kept) / kept if kept else 0.0
    operands = min(spilled, parts.fragments)
    return operands * (1 + reuse) + 2 * (spilled - operands)


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
    warp_lanes: dict[str, np.ndarray],
    l1_lines: float,
    warps: int,
    warp: _Warp,
) -> None:
    """Global loads and stores of `accesses` (per warp). Loads come from L2 once per run
    for the sectors distinct among the run's instructions and, when the warps' lines fit in
    L1, among REUSE_RUNS runs of the innermost sequential loop and among the block's warps."""
    elem = accesses[0].elem_bytes
    for write in (False, True):
        chosen = [a for a in accesses if a.write == write]
        if not chosen:
            continue
        columns = np.unique(addresses(chosen, summary, runs.ranges, warp_lanes), axis=1)
        sectors, lines = sectors_and_lines(columns, elem)
        count = columns.shape[1]
        warp.sectors += runs.count * sectors.sum()
        warp.wavefronts += runs.count * lines.sum()
        if write:
            warp.global_stores += runs.count * count
            warp.l2_sectors += runs.count * sectors.sum()
            continue
        warp.global_loads += runs.count * count
        fetched = float(len(np.unique(columns * elem // SECTOR)))
        block = resources.distinct(chosen, summary, runs.block, SECTOR) / warps
        inner = runs.inner
        if inner is not None and runs.count > 1 and lines.sum() <= l1_lines:
            again = min(REUSE_RUNS, summary.loop(inner).trip)
            extended = {**runs.ranges, inner: again}
            columns = addresses(chosen, summary, extended, warp_lanes)
            fetched = min(fetched, len(np.unique(columns * elem // SECTOR)) / again)
            wider = {**runs.block, inner: runs.block[inner] * again}
            block = resources.distinct(chosen, summary, wider, SECTOR) / warps / again
        fetched = min(fetched, block)
        warp.l2_sectors += runs.count * fetched
        if runs.in_body:
            warp.body_sectors += runs.count * sectors.sum()
            warp.body_fetched += runs.count * fetched


def _staged(
    summary: NestSummary,
    schedule: Schedule,
    device: Device,
    m: Mapping,
    accesses: Sequence[Access],
    body: dict[str, int],
    runs: int,
    warp_lanes: dict[str, np.ndarray],
    warp: _Warp,
) -> None:
    """A shared-memory array: copied in (and out, if written) once per step, element l of
    the box (array order) by thread l mod T, or with `copy_vector` V in `schedule.extra`
    (gpu-map-loops{copy-vector=V}) V consecutive elements (l·V + v) per thread, one 128-bit
    global access where the rows stay aligned; read and written in the buffer by every run."""
    names = [loop.name for loop in summary.loops]
    elem = accesses[0].elem_bytes
    layout = resources.shared_layout(summary, schedule, accesses[0].array)
    extents = resources.box(accesses, names, m.block)
    threads = schedule.threads_per_block
    source = resources.array_layout(accesses[0], summary).pitch
    width = dict(schedule.extra).get("copy_vector", 1)
    if width < 1 or extents[-1] % width:
        width = 1
    groups = math.prod(extents) // width
    rounds = m.steps * -(-groups // threads)
    lanes_count = min(device.warp_size, threads, groups)
    flat = np.arange(lanes_count, dtype=np.int64)[:, None] * width + np.arange(width)
    coords = np.unravel_index(flat, extents)
    at_array = sum((c + o) * p for c, o, p in zip(coords, layout.origin, source, strict=True))
    aligned = width * elem <= 16 and (len(source) < 2 or source[-2] % width == 0)
    if width > 1 and aligned and layout.origin[-1] % width == 0:
        sectors, lines = sectors_and_lines(np.asarray(at_array).reshape(-1, 1), elem)
    else:
        sectors, lines = sectors_and_lines(np.asarray(at_array), elem)
    ordered = coords[::-1] if layout.transposed else coords
    at_buffer = sum(c * p for c, p in zip(ordered, layout.pitch, strict=True))
    stores, waves, ideal = _shared_access(np.asarray(at_buffer), elem, device)
    for copy_in in (True, False):
        if not any(a.write != copy_in for a in accesses):
            continue
        warp.sectors += rounds * sectors.sum()
        warp.l2_sectors += rounds * sectors.sum()
        warp.wavefronts += rounds * (lines.sum() + waves)
        warp.shared_wavefronts += rounds * waves
        warp.shared_ideal += rounds * ideal
        warp.instructions += 2 * rounds  # addresses and guard
        if copy_in:
            warp.global_loads += rounds * len(sectors)
            warp.shared_stores += rounds * stores
            warp.step_loads += rounds * len(sectors) / m.steps
        else:
            warp.global_stores += rounds * len(sectors)
            warp.shared_loads += rounds * stores
    for write in (False, True):
        chosen = [a for a in accesses if a.write == write]
        if not chosen:
            continue
        columns = np.unique(addresses(chosen, summary, body, warp_lanes, layout), axis=1)
        count, waves, ideal = _shared_access(columns, elem, device)
        if write:
            warp.shared_stores += runs * count
        else:
            warp.shared_loads += runs * count
        warp.shared_wavefronts += runs * waves
        warp.shared_ideal += runs * ideal
        warp.wavefronts += runs * waves


def _words(columns: np.ndarray, elem: int) -> np.ndarray:
    """The 4-byte words of elements at `columns` (element positions)."""
    per = max(1, elem // 4)
    return (columns[..., None] * per + np.arange(per)).ravel()


def _ideal(words: np.ndarray, device: Device) -> int:
    """Wavefronts of the same access without conflicts: its distinct words over the banks."""
    return max(1, -(-len(np.unique(words)) // device.shared_banks))


def _shared_access(columns: np.ndarray, elem: int, device: Device) -> tuple[int, int, int]:
    """(warp instructions, wavefronts, conflict-free wavefronts) of the buffer accesses whose
    lane positions are `columns`: consecutive, aligned elements of every lane merge into one
    access of up to 16 bytes (LLVM's load-store vectorizer on shared pointers)."""
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
    if not pieces:
        return 0, 0, 0
    words = [_words(piece, elem) for piece in pieces]
    ids = np.concatenate([np.full(len(w), n, dtype=np.int64) for n, w in enumerate(words)])
    flat = np.concatenate(words)
    span = int(flat.max()) + 1
    pairs = np.unique(ids * span + flat)
    which, word = pairs // span, pairs % span
    banks = device.shared_banks
    per_bank = np.bincount(which * banks + word % banks, minlength=len(words) * banks)
    waves = int(per_bank.reshape(len(words), banks).max(axis=1).sum())
    ideal = int((-(-np.bincount(which, minlength=len(words)) // banks)).clip(min=1).sum())
    return len(words), waves, ideal


def _vector_pieces(offsets: list[int]) -> list[list[int]] | None:
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


def _region(m: Mapping, full: dict[str, int], blocks: float) -> dict[str, int]:
    """Per loop, the extent that `blocks` consecutive blocks (blockIdx.x fastest) cover."""
    region = dict(full)
    left = blocks
    for name, count in zip(m.grid_loops, m.grid, strict=True):
        region[name] = min(full[name], max(1, round(min(float(count), left) * m.block[name])))
        left = left / count
    return region


def _dram_bytes(summary: NestSummary, device: Device, m: Mapping, k: int) -> tuple[float, float]:
    """(DRAM bytes of all launches, compulsory bytes). Compulsory: each array's footprint
    read once (if it is read) and written once (if written). When a launch's arrays do not
    fit in the usable L2, a wave of resident blocks reads its own footprint; if two
    consecutive waves' footprints fit, a wave reads only what the previous one did not
    (halos and shared rows hit). Launches after the first (host loops) find their arrays in
    L2 when a launch's footprint fits, else read them again."""
    names = [loop.name for loop in summary.loops]
    whole = {loop.name: loop.trip for loop in summary.loops}
    full = {n: 1 if n in m.host else t for n, t in whole.items()}
    per_wave = min(m.blocks, device.sms * k)
    waves = m.blocks / per_wave
    one, two = _region(m, full, per_wave), _region(m, full, 2 * per_wave)

    def size(accesses: Sequence[Access], extents: dict[str, int]) -> float:
        spans = resources.box(accesses, names, extents)
        clamped = [min(e, n) for e, n in zip(spans, accesses[0].shape, strict=True)]
        return float(math.prod(clamped) * accesses[0].elem_bytes)

    reads: list[tuple[float, float, float]] = []
    written = compulsory = 0.0
    for accesses in by_array(summary).values():
        loads = [a for a in accesses if not a.write]
        stores = [a for a in accesses if a.write]
        if loads:
            reads.append((size(accesses, full), size(accesses, one), size(accesses, two)))
            compulsory += size(accesses, whole)
        if stores:
            written += size(stores, full)
            compulsory += size(stores, whole)
    launch = sum(r[0] for r in reads) + written
    usable = L2_USABLE * device.l2_bytes
    if launch <= usable:
        return (compulsory if compulsory <= usable else launch * m.launches), compulsory
    keep = sum(r[2] for r in reads) <= usable
    total = written
    for full_size, first, pair in reads:
        again = pair - first if keep else first
        total += max(full_size, first + (waves - 1) * again)
    return total * m.launches, compulsory


def _critical_path(
    summary: NestSummary,
    schedule: Schedule,
    m: Mapping,
    warp: _Warp,
    throughput: float,
    memory_latency: float,
) -> float:
    """Cycles one block needs however little else runs: its throughput time (at least one
    warp's instructions, one per clock), plus the latency it cannot cover itself: each step
    waits for its copy-in (pipelined: for what its compute does not cover) and two barriers;
    each run of a body with global loads waits for them (L1 hits: L1 latency)."""
    path = max(throughput, warp.instructions)
    steps = m.steps
    if warp.step_loads:
        compute = warp.instructions / steps
        waiting = max(0.0, memory_latency - compute) if schedule.pipelined else memory_latency
        path += steps * (waiting + 2 * BARRIER_CYCLES)
    if warp.body_sectors:
        runs = m.steps * math.prod(m.thread[n] for n in _sequential(summary, schedule, m))
        miss = warp.body_fetched / warp.body_sectors
        path += runs * (LATENCY_L1 + miss * (memory_latency - LATENCY_L1))
    elif warp.global_loads and not warp.step_loads:
        path += memory_latency
    if warp.shared_loads:
        path += steps * LATENCY_SHARED
    return path
