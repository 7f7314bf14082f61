"""The cost model: a pure function (loop nest, schedule, device) → predicted time, explained.

    p = predict(summary, recipes.matmul(summary, 128, 64, 16, 8, 4), device_for("sm_90"))
    explain(p)  # "3877.5 us issue-bound: 35.4 TFLOP/s, DRAM 0.722 GB (2.69x compulsory), ...
                #  112 regs, 12.5 KB shared, 2 blocks/SM, 7.76 waves (tail 1.03x) | fma ... us"

It reads the nest's affine accesses and the schedule's mapping (schedule/resources.py), never
the recipe's name, and simulates one warp lane by lane (schedule/warp.py: warp 0 of a block;
every warp does the same): the sectors, lines and L1 cycles of its global accesses, the L2
traffic in whole lines, the phases and bank wavefronts of its shared accesses (a 128-bit load
takes 4 wavefronts even as a broadcast; a column of an unpadded tile 32), its instructions.

- registers (registers.register_parts: accumulators, live operands, copies in flight with
  their addresses) set the occupancy. What exceeds the compiler's cap spills, in expectation
  over the estimate's ±15% (registers.spilled_registers): values live at every reduction
  point (accumulators, a pipelined step's copies) are stored and loaded at each point, the
  rest once per step or per reuse (warp.spill_accesses); the spill slots of the resident
  threads stay in L1 when they fit, else they go to L2.
- DRAM: each array's footprint once (compulsory); when a launch's arrays do not fit in L2,
  each wave of resident blocks (blockIdx.x order) reads its footprint, less what the wave
  before it left in L2 when two waves' footprints fit. Row-buffer conflicts slow DRAM down
  when a wave works on more bytes at once than the rows the DRAM keeps open (`_open_rows`:
  tall waves of many rows per thread).
- SM time: per block, the FMA pipe (FMAs / lanes per clock), the issue slots (4 warp
  instructions per clock: FMAs, loads, stores, address and loop overhead) and the load/store
  unit (1 wavefront per clock) give a throughput time. A block's critical path adds the
  latency it cannot cover itself: without barriers one warp's chain (WARP_ISSUE instructions
  per clock, and at each run of its body its slowest load: memory latency when the run fetches
  from L2), with shared-memory steps each step's copy-in wait (pipelined: what the step's
  compute does not cover) and two barriers. With k blocks resident a round takes
  soft_max(k × throughput, path) (latency hidden by occupancy); the busiest SM runs
  ceil(blocks / SMs) blocks in rounds of k (waves, tail). DRAM latency is the loaded one
  (1 us), and latency-bound time overlaps the memory system's time only in part
  (MEMORY_SOFTNESS: requests queue).
- constant memory (Schedule.constant, e.g. a conv's weights): their loads, uniform at offsets the
  unrolling fixes, cost nothing; each launch first copies them (CONSTANT_COPY_US).
- dispatch: an SM takes in a new block every BLOCK_DISPATCH_CYCLES, whatever its size; the
  memory system's time grows by BLOCK_DRAIN / (2 × resident blocks) (a block's slots free
  only when its last warp ends).

time = launches × (soft_max(soft_max(SM, soft_max(L2, DRAM)), dispatch) + launch overhead):
the largest bound plus the part of the others that does not overlap with it (a roofline with
soft corners); `bound` names the largest term. Host loops (`host_loops` in Schedule.extra)
make one launch per iteration. Efficiencies and latencies are calibrated on the H200
measurements of benchmarks/results (SGEMM 4096³ 3.42 ms, conv2d 4096² 3×3 0.060 ms, jacobi-2d
8192² 0.157 ms: the model 1.13x, 1.04x, 1.02x) and its rankings on benchmarks/model_quality's
(56 schedules of each of 7 kernels, with ptxas -v's registers of each).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from loopopt.schedule import occupancy, registers, resources
from loopopt.schedule.resources import Mapping, by_array
from loopopt.schedule.types import Access, Device, NestSummary, Schedule
from loopopt.schedule.warp import LINE, SECTOR, WarpWork, warp_work

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
LATENCY_L1, LATENCY_SHARED, LATENCY_L2, LATENCY_DRAM_NS = 35, 30, 260, 1000
"""Load-to-use latencies in cycles (DRAM in nanoseconds)."""
BARRIER_CYCLES = 24
WARP_ISSUE = 0.6
"""Instructions one warp issues per clock on its own (operand dependences, register bank
reads): a block's critical path. Blocks of one warp with 4-5 resident per SM (SGEMM 1088³ in
64 x 32 tiles of 8 x 8: 0.121 ms, 20% slower than 64-thread blocks on the H200) are bound by
it; the fit is flat from 0.4 to 0.8 over the model-quality kernels."""
SOFTNESS = 4
"""Overlap of concurrent bounds (soft_max): 4 lets a bound at half the largest add 3%."""
DISPATCH_SOFTNESS = 16
"""Block dispatch overlaps the blocks' work almost entirely (jacobi-2d with 256 K blocks of
32 threads: dispatch 160 us, DRAM 147 us, measured 171 us)."""
MEMORY_SOFTNESS = 3
"""Overlap of the SMs' time (latency rounds) with the memory system's: loads queue for DRAM,
so a latency-bound time at half the bandwidth-bound one adds 4% (jacobi-2d 8192² and conv2d
4096² 3×3 on the H200: 1-2 rows per thread run 1.2-1.7x the bandwidth bound)."""
DRAM_OPEN_BYTES = 13 << 20
"""Bytes of DRAM rows the memory system keeps open at once (HBM3: thousands of banks)."""
DRAM_ROW_CONFLICT = 0.1
"""DRAM time added per further DRAM_OPEN_BYTES a wave works on at once (jacobi-2d 8192² on the
H200: 4, 8 and 16 rows per thread, waves of 9, 17 and 35 MB, 158, 162 and 177 us)."""
LSU_EFFICIENCY = 0.9
"""Sustained fraction of the load/store unit's one wavefront (L1 line, shared phase) per clock."""
BLOCK_DRAIN = 0.1
"""A block frees its SM slots only when its last warp ends: while its warps drain, the SM runs
fewer loads, a loss of BLOCK_DRAIN / (2 k) of the memory system's rate with k blocks resident
(jacobi-2d 8192² on the H200: blocks of 1024 threads, 2 per SM, 0.169-0.172 ms; of 512 and
256 threads 0.156-0.159 ms; fitted on two model-quality runs)."""
CONSTANT_COPY_US = 5.0
"""The copy of constant-memory arrays before each launch (a device-to-device memcpy on the
launch's stream: conv2d 4096² 5x5 and 8x8 on the H200 take 5 us longer with the filter in
constant memory; 16x16 saves 42 us of 295 in fewer L1 requests)."""
BLOCK_DISPATCH_CYCLES = 160
"""An SM takes in a new block at most every 160 cycles (jacobi-2d 8192² on the H200 with 2 M
blocks of 32 threads: 1.27 ms, 160 cycles per block per SM, whatever the block's size)."""


@dataclass(frozen=True)
class Prediction:
    """A predicted kernel time and where it comes from (times in microseconds)."""

    time_us: float
    bound: str
    """The largest term: fma, issue, lsu (load/store unit: shared + L1 wavefronts),
    latency, l2, dram, dispatch or launch."""
    fma_us: float
    issue_us: float
    lsu_us: float
    latency_us: float
    l2_us: float
    dram_us: float
    dispatch_us: float
    """Block dispatch: BLOCK_DISPATCH_CYCLES per block an SM runs."""
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
    spilled_registers: float
    """Registers the compiler is expected to spill to local memory (registers.spilled_registers)."""
    shared_bytes: int
    blocks: int
    blocks_per_sm: int
    waves: float
    tail: float
    """Blocks of the busiest SM over the mean (1.0: no tail)."""


def predict(summary: NestSummary, schedule: Schedule, device: Device) -> Prediction:
    """The predicted time of `schedule` on `device` (see the module docstring)."""
    if dict(schedule.extra).get("tensor_core"):  # mma.sync warp tiles: their own roofline
        from loopopt.schedule.tensor_core import prediction

        return prediction(summary, schedule, device)
    m = resources.mapping(summary, schedule)
    warps = -(-schedule.threads_per_block // device.warp_size)
    k = max(1, occupancy.blocks_per_sm(summary, schedule, device))
    regs = registers.allocated_registers(summary, schedule, device)
    smem = resources.shared_bytes(summary, schedule)
    l1_bytes = device.smem_per_sm + L1_EXTRA - k * smem
    warp = warp_work(summary, schedule, device, m, l1_bytes / LINE / (k * warps))
    clock = device.clock_ghz * 1e3  # cycles per microsecond

    spilled = registers.spilled_registers(summary, schedule, device)
    # each spill slot written once and read once on average: its 4 bytes for every thread
    slots = warp.spills / warp.runs / 2 * 4 * k * schedule.threads_per_block
    local_in_l1 = slots <= l1_bytes
    warp.wavefronts += warp.spills  # 32 lanes x 4 bytes: one L1 cycle each
    if not local_in_l1:
        warp.l2_sectors += warp.spills * LINE / SECTOR
    fma_cycles = warps * warp.fma / (device.fp32_lanes_per_sm / 32) / ISSUE_EFFICIENCY
    issue_cycles = warps * warp.instructions / ISSUE_PER_CLOCK / ISSUE_EFFICIENCY
    lsu_cycles = warps * warp.wavefronts / LSU_EFFICIENCY
    throughput = soft_max(max(fma_cycles, issue_cycles), lsu_cycles)

    dram, compulsory = _dram_bytes(summary, device, m, k)
    l2_bytes = m.blocks * warps * warp.l2_sectors * SECTOR
    miss = min(1.0, dram / l2_bytes) if l2_bytes else 1.0
    memory_latency = LATENCY_L2 + miss * (LATENCY_DRAM_NS * device.clock_ghz - LATENCY_L2)
    path = _critical_path(schedule, m, warp, throughput, memory_latency, local_in_l1)

    per_sm = -(-m.blocks // device.sms)
    resident = min(k, per_sm)
    full, rest = divmod(per_sm, resident)
    sm_cycles = full * soft_max(resident * throughput, path)
    if rest:
        sm_cycles += soft_max(rest * throughput, path)
    launches = m.launches
    sm_us = sm_cycles / clock
    l2_us = l2_bytes / (L2_BYTES_PER_CLOCK * device.sms * clock)
    pages = _open_rows(summary, device, m, k)
    dram_us = dram / launches / (device.dram_gbps * 1e3 * DRAM_EFFICIENCY) * pages
    dispatch_us = per_sm * BLOCK_DISPATCH_CYCLES / clock
    terms = {
        "fma": per_sm * fma_cycles / clock,
        "issue": per_sm * issue_cycles / clock,
        "lsu": per_sm * lsu_cycles / clock,
        "latency": -(-per_sm // resident) * path / clock,
        "l2": l2_us,
        "dram": dram_us,
        "dispatch": dispatch_us,
    }
    memory_us = soft_max(l2_us, dram_us) * (1 + BLOCK_DRAIN / (2 * resident))
    busy_us = soft_max(sm_us, memory_us, softness=MEMORY_SOFTNESS)
    run_us = soft_max(busy_us, dispatch_us, softness=DISPATCH_SOFTNESS)
    copy_us = CONSTANT_COPY_US if schedule.constant else 0.0
    time_us = launches * (run_us + device.launch_us + copy_us)
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
        dispatch_us=float(terms["dispatch"]),
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
        spilled_registers=float(spilled),
        shared_bytes=int(smem),
        blocks=launches * m.blocks,
        blocks_per_sm=k,
        waves=m.blocks / (device.sms * k),
        tail=per_sm / (m.blocks / device.sms),
    )


def soft_max(*times: float, softness: float = SOFTNESS) -> float:
    """The largest time plus what the others do not overlap with it: their SOFTNESS-norm
    (a bound alone is its own time; two equal bounds cost 2^(1/SOFTNESS) = 1.19x one)."""
    top = max(times)
    if top <= 0:
        return 0.0
    return top * sum((t / top) ** softness for t in times) ** (1 / softness)


def explain(p: Prediction) -> str:
    """One line: time, bound, the main numbers."""
    rate = p.flops / p.time_us / 1e6
    ratio = p.dram_bytes / p.compulsory_bytes if p.compulsory_bytes else 1.0
    return (
        f"{p.time_us:.1f} us {p.bound}-bound: {rate:.1f} TFLOP/s, "
        f"DRAM {p.dram_bytes / 1e9:.3g} GB ({ratio:.2f}x compulsory), "
        f"L2 {p.l2_bytes / 1e9:.3g} GB, {p.sectors_per_request:.1f} sectors/request, "
        f"bank conflicts {p.bank_conflicts:.2f}x, {p.loads_per_fma:.2f} loads/FMA, "
        f"{p.registers} regs, {p.spilled_registers:.0f} spilled, "
        f"{p.shared_bytes / 1024:.1f} KB shared, "
        f"{p.blocks_per_sm} blocks/SM, {p.waves:.2f} waves (tail {p.tail:.2f}x) | "
        f"fma {p.fma_us:.1f} issue {p.issue_us:.1f} lsu {p.lsu_us:.1f} "
        f"latency {p.latency_us:.1f} l2 {p.l2_us:.1f} dram {p.dram_us:.1f} "
        f"dispatch {p.dispatch_us:.1f} us"
    )


def _region(m: Mapping, full: dict[str, int], blocks: float) -> dict[str, int]:
    """Per loop, the extent that `blocks` consecutive blocks (blockIdx.x fastest) cover."""
    region = dict(full)
    left = blocks
    for name, count in zip(m.grid_loops, m.grid, strict=True):
        region[name] = min(full[name], max(1, round(min(float(count), left) * m.block[name])))
        left = left / count
    return region


def _open_rows(summary: NestSummary, device: Device, m: Mapping, k: int) -> float:
    """The DRAM time factor of row-buffer conflicts: 1 while the bytes a wave of resident
    blocks works on at once (every array's footprint over the wave's region, one step of
    the reduction loops) fit in the rows the DRAM keeps open (DRAM_OPEN_BYTES), growing by
    DRAM_ROW_CONFLICT per further such amount."""
    names = [loop.name for loop in summary.loops]
    stepped = {
        loop.name: 1
        if loop.name in m.host
        else (loop.trip if loop.parallel else m.block[loop.name])
        for loop in summary.loops
    }
    region = _region(m, stepped, min(m.blocks, device.sms * k))
    footprint = 0.0
    for accesses in by_array(summary).values():
        spans = resources.box(accesses, names, region)
        clamped = [min(e, n) for e, n in zip(spans, accesses[0].shape, strict=True)]
        footprint += math.prod(clamped) * accesses[0].elem_bytes
    return 1 + DRAM_ROW_CONFLICT * max(0.0, footprint / DRAM_OPEN_BYTES - 1)


def _dram_bytes(summary: NestSummary, device: Device, m: Mapping, k: int) -> tuple[float, float]:
    """(DRAM bytes of all launches, compulsory bytes). Compulsory: each array's footprint read once
    (if it is read, and not initialized by the nest) and written once (if written). When a
    launch's arrays do not fit in the usable L2, a wave of resident blocks reads its own
    footprint; if two consecutive waves' footprints fit, a wave reads only what the previous
    one did not (halos and shared rows hit). Launches after the first (host loops) find
    their arrays in L2 when a launch's footprint fits, else read them again."""
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
    for array, accesses in by_array(summary).items():
        loads = [a for a in accesses if not a.write and array not in summary.initialized]
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
    schedule: Schedule,
    m: Mapping,
    warp: WarpWork,
    throughput: float,
    memory_latency: float,
    local_in_l1: bool,
) -> float:
    """Cycles one block needs however little else runs on its SM. A warp issues at most
    WARP_ISSUE instructions per clock, and waits at each run of its body for its slowest
    global load there (memory latency when the run fetches a sector from L2, else L1
    latency) and for reloaded spills (from L1 or L2); the block's warps overlap these
    waits with each other's work, so without barriers the block takes the longer of its
    throughput time and one warp's chain. With shared-memory steps every step ends in two
    barriers: the block waits for its copy-in (pipelined: for what the step's compute does
    not cover; a cp.async ring of S stages: what S - 1 steps' compute does not cover, one
    barrier), then for its slowest warp, so a step takes its share of the throughput time
    plus those waits."""
    chain = warp.instructions / WARP_ISSUE
    if warp.body_sectors:
        waits = min(warp.runs, warp.body_fetched)  # runs that fetch a sector from L2
        chain += warp.runs * LATENCY_L1 + waits * (memory_latency - LATENCY_L1)
    elif warp.global_loads and not warp.step_loads:
        chain += memory_latency
    if warp.spills:
        chain += warp.runs * (LATENCY_L1 if local_in_l1 else LATENCY_L2)
    if not warp.step_loads:
        return max(throughput, chain)
    steps = m.steps
    compute = warp.instructions / steps
    ahead = schedule.stages - 1 if schedule.stages > 1 else int(schedule.pipelined)
    waiting = max(0.0, memory_latency - ahead * compute)
    barriers = 1 if schedule.stages > 1 else 2
    waits = steps * (
        waiting + barriers * BARRIER_CYCLES + (LATENCY_SHARED if warp.shared_loads else 0)
    )
    return max(throughput, chain) + waits
