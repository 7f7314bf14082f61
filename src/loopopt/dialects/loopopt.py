"""The `loopopt.*` attributes: discardable attributes loopopt's passes put on upstream ops.

    affine.for %i = 0 to 100 {
      ...
    } {loopopt.name = "i", loopopt.parallel}
    gpu.func @k(...) kernel attributes {loopopt.max_registers = 128 : i32, ...}

loopopt adds no ops or attribute types of its own for loops: what it records on a loop, a
buffer or a kernel is a builtin attribute (string, unit, integer, dictionary) under one of the
names below. Each name is defined here once; passes, lowering, backend, runtime and the schedule
model read it from this module (or from a module that re-exports it).
"""

from __future__ import annotations

PREFIX = "loopopt."

# On loops
LOOP_NAME = "loopopt.name"
"""String attribute naming a loop (`i`, `j`, `i0` …)."""
PARALLEL = "loopopt.parallel"
"""Unit attribute on a loop that carries no dependence (set by `loop-mark-parallel`)."""
COPY = "loopopt.copy"
"""Unit attribute on the loops that copy a promoted array in or out of its buffer."""
MAPPING = "loopopt.mapping"
"""String attribute saying what became of a loop: `block x`, `thread y`, `threads` (a copy
spread over the block), `one thread`, `sequential`, `host`; on a kernel, a dictionary."""
UNROLL_IN_LLVM = "loopopt.unroll_in_llvm"
"""Unit attribute on a loop left rolled for LLVM to unroll fully (`loop-unroll{unroll-full
in-llvm}`): the lowering carries it from affine.for to scf.for and to the loop's back edge
(cf.br, llvm.br), which the backend gives `!llvm.loop !{!"llvm.loop.unroll.full"}`."""

# On other ops
PADDED = "loopopt.padded"
"""Unit attribute of the affine.if ops that guard the accesses of padded tiles."""
SCOPE = "loopopt.scope"
"""The attribute pairing a buffer moved to the function entry with the loop it belongs to."""
ALLOCATOR = "loopopt.allocator"
"""String attribute of a memref.alloc / memref.dealloc: the function that allocates / frees it
instead of malloc / free (a GPU program's host allocates its buffers on the device)."""

# On kernels (gpu.func, then the llvm.func it lowers to)
MIN_BLOCKS_ATTR = "loopopt.min_blocks_per_sm"
"""Blocks that must fit on one SM at once (gpu-map-loops' min-blocks-per-sm): `.minnctapersm`,
which caps the registers per thread."""
MAX_REGISTERS_ATTR = "loopopt.max_registers"
"""Registers per thread the kernel may use (gpu-map-loops' max-registers): PTX `.maxnreg`."""
POINTER_ALIGN_ATTR = "loopopt.pointer_align"
"""Bytes every array argument of the kernel is aligned to (its pointers are `align N`; the
launch checks it): set where copies move 128-bit vectors."""
CONSTANT_ARGS_ATTR = "loopopt.constant_args"
"""{"<argument index>" = "<global name>"}: copy the argument into the constant-memory global
before each launch."""
SHARED_BYTES_ATTR = "loopopt.shared_bytes"
"""Bytes of shared memory one block of the kernel uses (lowering/gpu_shared.py)."""
DYNAMIC_SHARED_ATTR = "loopopt.dynamic_shared_bytes"
"""Bytes of dynamic shared memory each launch of the kernel must request."""
SWIZZLE_LAYOUT = "loopopt.swizzle"
"""The memref layout of a swizzled shared tile, `#loopopt.swizzle<chunk, period>` (an
attribute type, dialects/layout.py: promote{swizzle}); not a discardable attribute."""

ATTRIBUTES = (
    LOOP_NAME,
    PARALLEL,
    COPY,
    MAPPING,
    UNROLL_IN_LLVM,
    PADDED,
    SCOPE,
    ALLOCATOR,
    MIN_BLOCKS_ATTR,
    MAX_REGISTERS_ATTR,
    POINTER_ALIGN_ATTR,
    CONSTANT_ARGS_ATTR,
    SHARED_BYTES_ATTR,
    DYNAMIC_SHARED_ATTR,
    SWIZZLE_LAYOUT,
)
"""Every `loopopt.*` attribute name."""
