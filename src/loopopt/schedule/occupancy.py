"""Resident blocks per SM and why a schedule does not fit a device.

blocks_per_sm(summary, s, dev)   # min of the registers, shared memory, threads, blocks limits
misfit(summary, s, dev)          # "256x256x64 block tile needs 130 KB of shared memory,
                                 #  sm_89 allows 99 KB"
"""

from __future__ import annotations

from collections.abc import Sequence

from loopopt.schedule.registers import (
    allocated_registers,
    register_cap,
    register_parts,
)
from loopopt.schedule.resources import shared_bytes
from loopopt.schedule.types import Device, NestSummary, Schedule
from loopopt.target import REGISTER_GRANULE, SHARED_GRANULE, SHARED_RESERVED


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
