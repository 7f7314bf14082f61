"""Device descriptions for the cost model and the resource checks: built-in tables, or the GPU.

    device_for("sm_90")      # Device(name="H100 SXM", sms=132, clock_ghz=1.98, ...)
    device_for("H200")       # the same SM, 141 GB of HBM3e at 4.8 TB/s
    current_device()         # read from the driver (cuda-python) when a GPU is usable, else None

The tables hold the vendors' published numbers (NVIDIA's A100, L40S and H100/H200 data sheets
and the CUDA C++ Programming Guide's table of compute capabilities): SMs, boost clock, DRAM
bandwidth, L2 size, 64 K registers per SM (at most 255 per thread), shared memory per SM and per
block (48 KiB without the dynamic opt-in, 1 KiB of each SM's carve-out reserved per block), and
the resident threads and blocks per SM. `fp32_lanes_per_sm` is the FFMA issue width: 64 on
sm_80 (A100), 128 on sm_89 and sm_90. `tensor_tflops` / `tf32_tflops`: the data sheets' dense
tensor-core peaks (f16/bf16 with f32 accumulation; tf32), without sparsity. The limits the
architectures share (threads per block, registers, shared memory per block) come from
loopopt/target.py.
"""

from __future__ import annotations

from dataclasses import replace

from loopopt.diagnostics import LoopoptError
from loopopt.schedule.types import Device
from loopopt.target import (
    ARCHS,
    KIB,
    MAX_REGISTERS,
    REGISTERS_PER_SM,
    STATIC_SHARED_BYTES,
    THREADS_PER_BLOCK,
)

MIB = 1024 * KIB

A100 = Device(
    name="A100 SXM 80GB",
    arch="sm_80",
    sms=108,
    clock_ghz=1.41,
    fp32_lanes_per_sm=64,
    dram_gbps=2039.0,
    l2_bytes=40 * MIB,
    max_threads_per_block=THREADS_PER_BLOCK,
    max_threads_per_sm=2048,
    max_blocks_per_sm=32,
    regs_per_sm=REGISTERS_PER_SM,
    max_regs_per_thread=MAX_REGISTERS,
    smem_per_sm=164 * KIB,
    smem_per_block=STATIC_SHARED_BYTES,
    smem_per_block_optin=ARCHS["sm_80"].max_shared_bytes,
    tensor_tflops=312.0,
    tf32_tflops=156.0,
)

L40S = Device(
    name="L40S",
    arch="sm_89",
    sms=142,
    clock_ghz=2.52,
    fp32_lanes_per_sm=128,
    dram_gbps=864.0,
    l2_bytes=96 * MIB,
    max_threads_per_block=THREADS_PER_BLOCK,
    max_threads_per_sm=1536,
    max_blocks_per_sm=24,
    regs_per_sm=REGISTERS_PER_SM,
    max_regs_per_thread=MAX_REGISTERS,
    smem_per_sm=100 * KIB,
    smem_per_block=STATIC_SHARED_BYTES,
    smem_per_block_optin=ARCHS["sm_89"].max_shared_bytes,
    tensor_tflops=362.0,
    tf32_tflops=183.0,
)

H100 = Device(
    name="H100 SXM",
    arch="sm_90",
    sms=132,
    clock_ghz=1.98,
    fp32_lanes_per_sm=128,
    dram_gbps=3350.0,
    l2_bytes=50 * MIB,
    max_threads_per_block=THREADS_PER_BLOCK,
    max_threads_per_sm=2048,
    max_blocks_per_sm=32,
    regs_per_sm=REGISTERS_PER_SM,
    max_regs_per_thread=MAX_REGISTERS,
    smem_per_sm=228 * KIB,
    smem_per_block=STATIC_SHARED_BYTES,
    smem_per_block_optin=ARCHS["sm_90"].max_shared_bytes,
    tensor_tflops=989.0,
    tf32_tflops=494.0,
)

H200 = replace(H100, name="H200", dram_gbps=4800.0)
"""The H100's SM with HBM3e."""

DEVICES: dict[str, Device] = {
    "sm_80": A100,
    "sm_89": L40S,
    "sm_90": H100,
    "A100": A100,
    "L40S": L40S,
    "H100": H100,
    "H200": H200,
}
"""Built-in devices by architecture (its reference GPU) and by GPU name."""


def device_for(arch_or_name: str) -> Device:
    """The built-in device of an architecture (`sm_90`) or a GPU name (`H200`, any case)."""
    key = arch_or_name.strip()
    for known, device in DEVICES.items():
        if known.lower() == key.lower():
            return device
    raise LoopoptError(f"unknown device '{arch_or_name}'; known: {', '.join(DEVICES)}")


def _table_entry(name: str, arch: str) -> Device:
    """The built-in device whose name the GPU's name contains (`NVIDIA H200` → H200), else
    the reference GPU of its architecture."""
    for known in ("H200", "H100", "L40S", "A100"):
        if known.lower() in name.lower():
            return DEVICES[known]
    return DEVICES[arch]


def current_device() -> Device | None:
    """The GPU in use, described from its driver attributes; None without a usable GPU.

    Bandwidth is the memory clock × bus width × 2 (double data rate); the FFMA width and the
    per-thread register limit are not driver attributes and come from the architecture's
    table entry (as does anything the driver refuses to report)."""
    from loopopt.runtime import cuda

    if not cuda.available():
        return None
    gpu = cuda.context()
    if gpu is None:
        return None
    table = _table_entry(gpu.name, gpu.arch)

    def read(name: str, fallback: int) -> int:
        try:
            attribute = getattr(cuda._driver().CUdevice_attribute, name)
            value = int(cuda.call("cuDeviceGetAttribute", attribute, gpu.handle))
        except (LoopoptError, AttributeError):
            return fallback
        return value if value > 0 else fallback

    prefix = "CU_DEVICE_ATTRIBUTE_"
    clock_khz = read(prefix + "CLOCK_RATE", int(table.clock_ghz * 1e6))
    memory_khz = read(prefix + "MEMORY_CLOCK_RATE", 0)
    bus_bits = read(prefix + "GLOBAL_MEMORY_BUS_WIDTH", 0)
    dram_gbps = 2 * memory_khz * 1e3 * bus_bits / 8 / 1e9 if memory_khz and bus_bits else 0.0
    return Device(
        name=gpu.name,
        arch=gpu.arch,
        sms=read(prefix + "MULTIPROCESSOR_COUNT", table.sms),
        clock_ghz=clock_khz / 1e6,
        fp32_lanes_per_sm=table.fp32_lanes_per_sm,
        dram_gbps=dram_gbps if dram_gbps > 0 else table.dram_gbps,
        l2_bytes=read(prefix + "L2_CACHE_SIZE", table.l2_bytes),
        max_threads_per_block=read(prefix + "MAX_THREADS_PER_BLOCK", table.max_threads_per_block),
        max_threads_per_sm=read(
            prefix + "MAX_THREADS_PER_MULTIPROCESSOR", table.max_threads_per_sm
        ),
        max_blocks_per_sm=read(prefix + "MAX_BLOCKS_PER_MULTIPROCESSOR", table.max_blocks_per_sm),
        regs_per_sm=read(prefix + "MAX_REGISTERS_PER_MULTIPROCESSOR", table.regs_per_sm),
        max_regs_per_thread=table.max_regs_per_thread,
        smem_per_sm=read(prefix + "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", table.smem_per_sm),
        smem_per_block=read(prefix + "MAX_SHARED_MEMORY_PER_BLOCK", table.smem_per_block),
        smem_per_block_optin=read(
            prefix + "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", table.smem_per_block_optin
        ),
        warp_size=read(prefix + "WARP_SIZE", table.warp_size),
    )
