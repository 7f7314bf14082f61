"""The NVIDIA GPU target, described once: what passes, lowering, backend, runtime and the
schedule model all read.

    from loopopt import target
    target.arch("sm_90").max_shared_bytes       # 232448: 227 KiB per block with the opt-in
    target.STATIC_SHARED_BYTES                  # 49152: more needs dynamic shared memory
    target.register_cap(256, min_blocks=2)      # 128 registers per thread
    target.SHARED_SPACE                         # 3: NVVM's address space of shared memory

The numbers are NVIDIA's (CUDA C++ Programming Guide, "Technical Specifications per Compute
Capability"; the NVVM IR spec's address spaces) for the architectures loopopt compiles for,
sm_80, sm_89 and sm_90: the same thread, block, grid and register-file limits, and per
architecture the PTX ISA version and the shared memory one block may have. schedule/device.py
describes whole GPUs (SMs, clocks, bandwidth) on top of these.

This module imports nothing from loopopt but diagnostics, so every layer may import it.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopopt.diagnostics import LoopoptError

KIB = 1024

WARP_SIZE = 32
"""Threads of a warp."""
THREADS_PER_BLOCK = 1024
"""Threads one block may have."""
BLOCK_LIMITS = (1024, 1024, 64)
"""Threads per block along x, y, z."""
GRID_LIMITS = (2**31 - 1, 65535, 65535)
"""Blocks per grid along x, y, z."""

REGISTERS_PER_SM = 64 * KIB
"""32-bit registers of an SM."""
MAX_REGISTERS = 255
"""Registers a thread can have."""
REGISTER_GRANULE = 256
"""Registers are allocated per warp in units of 256 (8 per thread)."""

SHARED_BANKS = 32
"""Shared-memory banks (4-byte words)."""
STATIC_SHARED_BYTES = 48 * KIB
"""Shared memory a block may have without the dynamic opt-in (and the most PTX allows
statically): beyond it a kernel uses dynamic shared memory and its launches opt in."""
SHARED_RESERVED = 1 * KIB
"""Shared memory of each SM's carve-out reserved per resident block (by the system)."""
SHARED_GRANULE = 128
"""Shared memory is allocated to a block in units of 128 bytes."""
SHARED_ALIGN = 16
"""Each shared buffer starts 16-byte aligned (vector loads and stores: ld.shared.v4)."""

GLOBAL_SPACE = 1
"""NVVM's address space of global memory."""
SHARED_SPACE = 3
"""NVVM's address space of shared (workgroup) memory; a memref in it has memory space 3."""
CONSTANT_SPACE = 4
"""NVVM's address space of constant memory."""
LOCAL_SPACE = 5
"""NVVM's address space of a thread's local (private) memory."""
CONSTANT_BANK_BYTES = 64 * KIB
"""Constant memory a module may have (one bank)."""


@dataclass(frozen=True)
class Arch:
    """A GPU architecture: the PTX ISA it needs and the shared memory one block may have."""

    name: str
    ptx_isa: str
    max_shared_bytes: int
    """Per block, with the dynamic opt-in."""


ARCHS: dict[str, Arch] = {
    "sm_80": Arch("sm_80", "7.0", 163 * KIB),
    "sm_89": Arch("sm_89", "7.8", 99 * KIB),
    "sm_90": Arch("sm_90", "7.8", 227 * KIB),
}
DEFAULT_ARCH = "sm_90"


def arch(name: str) -> Arch:
    """The architecture named `name` (sm_80, sm_89, sm_90), or a LoopoptError."""
    if name not in ARCHS:
        raise LoopoptError(f"unknown GPU architecture '{name}' (use one of {', '.join(ARCHS)})")
    return ARCHS[name]


MAX_SHARED_BYTES = ARCHS[DEFAULT_ARCH].max_shared_bytes
"""Shared memory one block may have on the default architecture (sm_90: 227 KiB): what the
passes, which do not know the architecture yet, allow; backend/ptx.py checks the target's."""


def register_cap(
    threads: int,
    min_blocks: int = 1,
    registers_per_sm: int = REGISTERS_PER_SM,
    max_registers: int = MAX_REGISTERS,
    warp_size: int = WARP_SIZE,
) -> int:
    """The most registers a thread can have so that `min_blocks` blocks of `threads` threads
    fit in an SM's register file: warps get registers REGISTER_GRANULE at a time, so a
    multiple of REGISTER_GRANULE / warp_size (8)."""
    warps = -(-threads // warp_size)
    per_warp = registers_per_sm // (warps * max(1, min_blocks))
    return min(max_registers, per_warp // REGISTER_GRANULE * REGISTER_GRANULE // warp_size)
