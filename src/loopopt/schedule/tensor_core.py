"""Tensor-core schedules of f16/bf16 matmul nests: the recipe, its space and its time.

    tensor_core(s, 128, 128, 32, 64, 64).pipeline
      == "loop-tile{tile-sizes=128,128,32},loop-tile{loops=i,j tile-sizes=64,64},"
         "promote{arrays=A loop=k_t memory-space=shared pad=8},promote{arrays=B ...},"
         "gpu-mma,gpu-map-loops{block=64,2 max-registers=cap},scalar-replace{loop=k_t}"

A bm x bn block tile, bk-deep slices of A and B in shared memory (rows padded by 8 halves:
16-byte aligned, conflict-free for ldmatrix), wm x wn warp tiles whose C fragments stay in
registers across k_t (gpu-mma, scalar-replace); blocks of 32·(bn/wn) x bm/wm threads.
Partial tiles run padded (pad-tiles). `candidates` offers them for nests whose operands are
2-byte floats and whose accumulator is f32, on sm_80 and later (the space adds them to the
matmul class's: schedule/space.py); tf32 stays opt-in (`gpu-mma{precision=tf32}` by hand).

`prediction` is the model's time of such a schedule (cost_model.predict defers to it): the
block's mma.sync work at the device's dense tensor rate (`Device.tensor_tflops`, data-sheet
peaks) times MMA_SYNC_EFFICIENCY, its ldmatrix bytes at the SM's shared bandwidth, the L2
traffic of the copies and the compulsory DRAM bytes, as a soft roofline; each k step's copy
waits its global latency once per resident block (copies are not issued ahead).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from xdsl.passes import ModulePass

from loopopt.diagnostics import LoopoptError
from loopopt.loops.tile import fresh_name
from loopopt.passes.gpu_map_loops import GpuMapLoopsPass
from loopopt.passes.gpu_mma import GpuMmaPass
from loopopt.passes.loop_tile import LoopTilePass
from loopopt.passes.pad_tiles import PadTilesPass
from loopopt.passes.promote import PromotePass
from loopopt.passes.scalar_replace import ScalarReplacePass
from loopopt.schedule import occupancy, registers
from loopopt.schedule.resources import shared_bytes
from loopopt.schedule.roles import matmul_roles
from loopopt.schedule.types import Device, NestSummary, Schedule

if TYPE_CHECKING:
    from loopopt.schedule.cost_model import Prediction

RECIPE = "tensor_core"
MMA_PAD = 8
"""Halves of padding per shared row: rows stay 16-byte aligned and 8 rows of an ldmatrix
fall in distinct banks."""
WARP = 32
MMA_SYNC_EFFICIENCY = {"sm_80": 0.8, "sm_89": 0.8, "sm_90": 0.6}
"""Sustained fraction of the dense tensor peak that mma.sync reaches (sm_90's peak needs
wgmma, which loopopt does not emit: CUTLASS's sm80-style kernels reach ≈ 60% on the H100)."""
SHARED_BYTES_PER_CLOCK = 128
"""Shared memory bandwidth per SM per clock (32 banks of 4 bytes)."""
L2_BYTES_PER_CLOCK = 28
"""As cost_model.L2_BYTES_PER_CLOCK (L2 → SM, per SM per clock)."""
LATENCY_GLOBAL = 600
"""Cycles a k step's copy-in waits for global memory (L2 hits and DRAM misses together)."""
SOFTNESS = 4
DRAM_EFFICIENCY = 0.76
"""As cost_model.DRAM_EFFICIENCY."""


def applies(summary: NestSummary, device: Device) -> bool:
    """The nest is a plain matmul of 2-byte operands into f32, and the device has mma.sync."""
    r = matmul_roles(summary)
    if r is None or len(r.operands) != 2 or len(summary.loops) != 3:
        return False
    if any(o.key != o.array for o in r.operands) or device.tensor_tflops <= 0:
        return False
    sizes = {a.array: a.elem_bytes for a in summary.accesses}
    return all(sizes[o.array] == 2 for o in r.operands) and sizes[r.c] == 4


def tensor_core(
    summary: NestSummary, bm: int, bn: int, bk: int, wm: int, wn: int, padded: bool = False
) -> Schedule:
    """The schedule (module docstring); `padded` for tiles that do not divide the loops."""
    r = matmul_roles(summary)
    if r is None:
        raise LoopoptError(f"{RECIPE} recipe: @{summary.func} is not C[i, j] += A * B")
    from loopopt.schedule.recipes import fresh, reorder

    band = [loop.name for loop in summary.loops if loop.name != r.k] + [r.k]
    size = {r.i: bm, r.j: bn, r.k: bk}
    warp = {r.i: wm, r.j: wn}
    p0, p1 = band[0], band[1]
    kt = fresh(summary, f"{r.k}_t")
    threads = (WARP * bn // wn, bm // wm, 1)
    warp_tile = LoopTilePass(loops=(p0, p1), tile_sizes=(warp[p0], warp[p1]))
    promotes: list[ModulePass] = [
        PromotePass(arrays=(o.array,), loop=kt, memory_space="shared", pad=MMA_PAD)
        for o in r.operands
    ]
    pads: list[ModulePass] = []
    if padded:
        taken = [*(loop.name for loop in summary.loops), *(fresh(summary, f"{n}_t") for n in band)]
        tiles = [fresh_name(set(taken), f"{p}_t") for p in (p0, p1)]
        pads = [PadTilesPass(loops=(*tiles, p0, p1, r.k))]
    steps: list[ModulePass] = [
        *reorder(summary, band),
        LoopTilePass(tile_sizes=tuple(size[n] for n in band)),
        warp_tile,
        *pads,
        *promotes,
        GpuMmaPass(),
        GpuMapLoopsPass(block=threads[:2], max_registers="cap"),
        ScalarReplacePass(loop=kt),
    ]
    params = [("bm", bm), ("bn", bn), ("bk", bk), ("wm", wm), ("wn", wn)]
    params += [("padded", 1)] * padded
    return Schedule(
        recipe=RECIPE,
        params=tuple(params),
        pipeline="",
        block_tile=tuple((n, size[n]) for n in band),
        thread_tile=((r.i, wm), (r.j, wn // WARP)),
        threads=threads,
        x_loop=r.j,
        shared=tuple(o.key for o in r.operands),
        pad=MMA_PAD,
        registers=(r.c,),
        extra=(("tensor_core", 1),),
        steps=tuple(steps),
    )


def candidates(summary: NestSummary, device: Device) -> Iterable[Schedule]:
    """Tile shapes that divide the loops (else the padded ones); none where `applies` fails."""
    if not applies(summary, device):
        return
    r = matmul_roles(summary)
    assert r is not None
    m, n, k = (summary.loop(name).trip for name in (r.i, r.j, r.k))
    shapes = list(itertools.product((64, 128, 256), (64, 128, 256), (32, 64), (32, 64), (32, 64)))
    whole = [s for s in shapes if m % s[0] == 0 and n % s[1] == 0 and k % s[2] == 0]
    for bm, bn, bk, wm, wn in whole or shapes:
        if bm % wm or bn % wn or not 2 <= (bm // wm) * (bn // wn) <= 16:
            continue
        yield tensor_core(summary, bm, bn, bk, wm, wn, padded=not whole)


def prediction(summary: NestSummary, schedule: Schedule, device: Device) -> Prediction:
    """The model's prediction of a tensor-core schedule (module docstring; `fma_us` holds the
    mma.sync time, `lsu_us` the ldmatrix bytes' shared-memory time)."""
    from loopopt.schedule.cost_model import Prediction

    tiles = dict(schedule.block_tile)
    r = matmul_roles(summary)
    assert r is not None
    m, n, k = (summary.loop(name).trip for name in (r.i, r.j, r.k))
    bm, bn, bk = tiles[r.i], tiles[r.j], tiles[r.k]
    blocks = math.ceil(m / bm) * math.ceil(n / bn)
    steps = math.ceil(k / bk)
    work = 2.0 * blocks * bm * bn * steps * bk  # padded tiles run whole
    clock = device.clock_ghz * 1e3  # cycles per microsecond
    efficiency = MMA_SYNC_EFFICIENCY.get(device.arch, 0.6)
    mma_us = work / (device.tensor_tflops * 1e6 * efficiency)
    wm, wn = dict(schedule.thread_tile)[r.i], dict(schedule.thread_tile)[r.j] * WARP
    warps = (bm // wm) * (bn // wn)
    ldmatrix = blocks * steps * warps * bk * (wm + wn) * 2.0  # bytes, A and B fragments
    shared_us = ldmatrix / (SHARED_BYTES_PER_CLOCK * device.sms * clock)
    l2 = blocks * steps * bk * (bm + bn) * 2.0 + m * n * 4.0 * 2
    l2_us = l2 / (L2_BYTES_PER_CLOCK * device.sms * clock)
    dram = (m * k + k * n) * 2.0 + m * n * 4.0 * 2
    dram_us = dram / (device.dram_gbps * 1e3 * DRAM_EFFICIENCY)
    resident = max(1, occupancy.blocks_per_sm(summary, schedule, device))
    per_sm = math.ceil(blocks / device.sms)
    latency_us = math.ceil(per_sm / resident) * steps * LATENCY_GLOBAL / clock
    terms = {"fma": mma_us, "lsu": shared_us, "l2": l2_us, "dram": dram_us}
    terms["latency"] = latency_us
    time_us = _soft_max(_soft_max(mma_us, shared_us, l2_us, dram_us), latency_us)
    return Prediction(
        time_us=time_us + device.launch_us,
        bound=max(terms, key=lambda name: terms[name]),
        fma_us=mma_us,
        issue_us=0.0,
        lsu_us=shared_us,
        latency_us=latency_us,
        l2_us=l2_us,
        dram_us=dram_us,
        dispatch_us=0.0,
        launch_us=device.launch_us,
        flops=float(summary.iterations * summary.flops),
        dram_bytes=dram,
        compulsory_bytes=dram,
        l2_bytes=l2,
        sectors_per_request=4.0,
        bank_conflicts=1.0,
        loads_per_fma=0.0,
        registers=registers.allocated_registers(summary, schedule, device),
        spilled_registers=0.0,
        shared_bytes=shared_bytes(summary, schedule),
        blocks=blocks,
        blocks_per_sm=resident,
        waves=blocks / (device.sms * resident),
        tail=per_sm / (blocks / device.sms),
    )


def _soft_max(*times: float) -> float:
    return sum(t**SOFTNESS for t in times) ** (1 / SOFTNESS)
