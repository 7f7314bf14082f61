"""The explicit schedules (pass pipelines) of the benchmark kernels, one place for all of them.

Each entry is a loopopt pass pipeline applied to the workload's loop nest (benchmarks/workloads.py
builds the MLIR). `benchmarks/run.py` times them next to the anchors; examples/ reuse them. The
pipelines come from the recipes of loopopt.schedule.recipes, instantiated on the summary of the
workload's nest (its loop and array names); the auto-scheduler's space holds them too.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import workloads

from loopopt.context import parse_module
from loopopt.schedule import recipes
from loopopt.schedule.summary import summarize_module
from loopopt.schedule.types import NestSummary


@cache
def _summary(family: workloads.Family) -> NestSummary:
    """The nest of the family's first benchmark row (its sizes decide, e.g., which copies
    have more elements than a block has threads)."""
    sizes = next(w.sizes for w in workloads.WORKLOADS if w.family == family)
    return summarize_module(parse_module(family.mlir(sizes), family.func))


def sgemm(
    bm: int, bn: int, bk: int, tm: int, tn: int, a_transposed: bool = False, **options: Any
) -> str:
    """recipes.matmul's pipeline on the benchmark's SGEMM nest (`a_transposed`: the AᵀB nest,
    A[k, i]) with its options (pipelined, min_blocks, outer_product, copy_vector, stages).
    Measured on the H200: `outer_product` (k outside the register tile) is slower, as the
    i, j, k order lets the scheduler keep more shared loads in flight; `copy_vector=4` gains
    3% at 4096³; a 3-stage cp.async ring (`stages=3`, A not transposed) another 2%."""
    nest = _summary(workloads.SGEMM_ATB if a_transposed else workloads.SGEMM)
    return recipes.matmul(nest, bm, bn, bk, tm, tn, **options).pipeline


SGEMM = sgemm(64, 128, 32, 8, 4, copy_vector=4, stages=3)
"""C[i, j] += A[i, k] * B[k, j] (perfect, accumulating nest; C zeroed), sizes divisible by
the 64 x 128 x 32 tile, a 3-stage cp.async ring (auto-schedule's choice on the H200). H200,
4096³: 3.16 ms, 0.86x cuBLAS (register double buffering in 64 x 128 x 16 tiles: 3.23 ms;
128 x 64: 3.32 ms; with scalar copies 3.43 ms)."""

SGEMM_ATB = sgemm(128, 64, 16, 8, 4, a_transposed=True, copy_vector=4)
"""C[i, j] += A[k, i] * B[k, j]. H200, 2048²: 0.441 ms, 39 TFLOP/s (0.77x cuBLAS)."""

SGEMM_64 = sgemm(64, 64, 16, 8, 4, copy_vector=4)
"""Sizes that 64 divides but 128 does not (1088 = 17·64, 2496, 5312, 8000): 64 x 64 block
tiles of 128 threads. H200, 1088³: 0.102 ms, 25 TFLOP/s (0.80x cuBLAS)."""
SGEMM_2496 = SGEMM_5312 = SGEMM_8000 = SGEMM_64
SGEMM_1088 = sgemm(64, 64, 32, 8, 4, copy_vector=4, stages=3)
"""1088³: 289 blocks of 64 x 64, a 3-stage cp.async ring of 32-deep k steps. H200 (kernel
time, cold L2): 0.088 ms, the fastest of the model's 28 best that `loopopt tune` measured
(SGEMM_64: 0.095 ms; the model's pick, 32 x 64 x 32: 0.091 ms)."""

SGEMM_PADDED = sgemm(64, 64, 16, 8, 4, padded=True)
"""Sizes no tile divides (1000 = 8·125, 3001 prime): pad-tiles runs the partial tiles as full
ones (zero-filled shared tiles, guarded C), so the 8 x 4 register tile stays unrolled; the
copies are scalar and issued a k step ahead through registers (no cp.async ring). H200:
3001³ 1.75 ms (0.72x cuBLAS; 64 x 128 x 32: 1.84 ms; unpipelined 2.5x slower)."""
SGEMM_1000 = sgemm(64, 64, 8, 8, 4, padded=True)
"""H200, 1000³: 0.079 ms (0.77x cuBLAS; 1024³ with full tiles: 0.075 ms), the fastest of the
56 padded schedules model_quality.py measured."""
SGEMM_3001 = SGEMM_PADDED


SGEMM_VARIANTS: dict[str, tuple[tuple[int, int, int, int, int], dict[str, Any]]] = {
    "64x128x32 8x4 ring (SGEMM)": ((64, 128, 32, 8, 4), {"copy_vector": 4, "stages": 3}),
    "64x128x32 8x4 ring frag4": (
        (64, 128, 32, 8, 4),
        {"copy_vector": 4, "stages": 3, "fragment": 4},
    ),
    "64x128x16 8x8 ring frag4": (
        (64, 128, 16, 8, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4},
    ),
    "64x128x16 8x8 ring frag4 swizzle": (
        (64, 128, 16, 8, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "swizzle": True},
    ),
    "128x128x8 8x8 ring": ((128, 128, 8, 8, 8), {"copy_vector": 4, "stages": 3}),
    "128x128x8 8x8 ring frag4": (
        (128, 128, 8, 8, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4},
    ),
    "128x128x8 8x8 ring frag4 lanes8x4": (
        (128, 128, 8, 8, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "warp_lanes": (8, 4)},
    ),
    "128x128x16 8x8 ring frag4": (
        (128, 128, 16, 8, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4},
    ),
    "128x128x8 8x8 ring frag4 2/SM": (
        (128, 128, 8, 8, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "min_blocks": 2},
    ),
    "128x256x8 16x8 ring": ((128, 256, 8, 16, 8), {"copy_vector": 4, "stages": 3}),
    "128x256x8 16x8 ring frag4": (
        (128, 256, 8, 16, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4},
    ),
    "128x128x8 8x8 ring frag4 swizzle": (
        (128, 128, 8, 8, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "swizzle": True},
    ),
    "128x256x8 16x8 ring frag4 swizzle": (
        (128, 256, 8, 16, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "swizzle": True},
    ),
    "256x128x8 16x8 ring frag4 swizzle": (
        (256, 128, 8, 16, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "swizzle": True},
    ),
    "128x256x8 16x8 ring frag4 group8": (
        (128, 256, 8, 16, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "block_group": 8},
    ),
    "256x128x8 16x8 ring frag4": (
        (256, 128, 8, 16, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4},
    ),
    "256x128x8 16x8 ring frag4 lanes8x4": (
        (256, 128, 8, 16, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "warp_lanes": (8, 4)},
    ),
    "256x128x8 16x8 ring frag4 lanes4x8": (
        (256, 128, 8, 16, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "warp_lanes": (4, 8)},
    ),
    "256x128x8 16x8 ring frag4 group8": (
        (256, 128, 8, 16, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "block_group": 8},
    ),
    "64x64x32 8x4 ring (SGEMM_1088)": ((64, 64, 32, 8, 4), {"copy_vector": 4, "stages": 3}),
    "64x64x16 8x4 (SGEMM_64)": ((64, 64, 16, 8, 4), {"copy_vector": 4}),
    "64x64x16 8x8 ring frag4": ((64, 64, 16, 8, 8), {"copy_vector": 4, "stages": 3, "fragment": 4}),
    "64x64x16 8x8 ring frag4 swizzle": (
        (64, 64, 16, 8, 8),
        {"copy_vector": 4, "stages": 3, "fragment": 4, "swizzle": True},
    ),
    "64x64x32 8x4 ring frag4": ((64, 64, 32, 8, 4), {"copy_vector": 4, "stages": 3, "fragment": 4}),
    "64x64x16 8x4 padded (SGEMM_PADDED)": ((64, 64, 16, 8, 4), {"padded": True}),
    "64x64x16 8x8 padded frag4": ((64, 64, 16, 8, 8), {"padded": True, "fragment": 4}),
    "128x128x8 8x8 padded ring frag4": (
        (128, 128, 8, 8, 8),
        {"padded": True, "pipelined": False, "copy_vector": 4, "stages": 3, "fragment": 4},
    ),
}
"""SGEMM schedule candidates of issue 16 (warp-level thread tiles, strided fragments, larger
block tiles), name -> (bm, bn, bk, tm, tn), recipes.matmul options. benchmarks/run.py
--sgemm-variants times those that apply to each SGEMM row (`sgemm_variants`) in one process,
cuBLAS once per row."""


def sgemm_variants(sizes: tuple[int, ...]) -> dict[str, str]:
    """The pipelines of SGEMM_VARIANTS for C[m, n] += A[m, k] * B[k, n] at `sizes` (m, n, k):
    the full-tile ones whose block tile divides the sizes (with 3 k steps for the ring), the
    padded ones where some size is not divided by their tile (a padded ring only where rows
    of 4 floats stay aligned, as schedule/space.py offers it)."""
    m, n, k = sizes
    chosen: dict[str, str] = {}
    for name, ((bm, bn, bk, tm, tn), options) in SGEMM_VARIANTS.items():
        divides = m % bm == 0 and n % bn == 0 and k % bk == 0 and k // bk >= 3
        padded = bool(options.get("padded"))
        if padded and options.get("stages") and any(size % 4 for size in sizes):
            continue
        if divides != padded:
            chosen[name] = sgemm(bm, bn, bk, tm, tn, **options)
    return chosen


def conv2d(bi: int, bj: int, rows: int, constant: bool = False, cols: int = 1) -> str:
    """A bi x bj output tile per block, a rows x cols register tile per thread (threads
    bj/cols x bi/rows, j along threadIdx.x): with the filter loops and the tile unrolled, each
    image element a thread needs is loaded once and reused from a register by every (output,
    tap) pair that reads it. `constant`: the filter in constant memory."""
    return recipes.conv(_summary(workloads.CONV2D), bi, bj, rows, constant, cols).pipeline


CONV2D = conv2d(16, 64, 8, constant=True)
"""out[i, j] = 0, then += image[i + p, j + q] * filt[p, q]. H200, 4096² with 16x16:
0.253 ms with the filter in constant memory (0.295 ms without; 64 x 64 tiles: 0.39 ms);
smaller filters like more rows per thread and the filter in global memory (CONV2D_5X5,
CONV2D_8X8: the copy into constant memory costs 5 us a launch) and memory-bound 3x3 smaller
tiles (CONV2D_3X3)."""

CONV2D_3X3 = conv2d(32, 32, 4)
CONV2D_5X5 = conv2d(16, 128, 16)
CONV2D_8X8 = conv2d(16, 64, 16, cols=2)
"""16 x 2 outputs per thread: 207 image loads for 2048 FMAs (16 x 1: 184 for 1024). H200,
4096² (kernel time, cold L2): 60.6 us, 53% of the FMA floor (16 x 1 in 16 x 128 tiles:
68.6 us)."""


def conv3d(bj: int, bl: int, rows: int) -> str:
    """One output plane i per grid z, a bj x bl tile of (j, l) per block, `rows` outputs along
    j per thread (l contiguous on threadIdx.x); per filter plane p (a loop), the q and r taps
    and the rows are unrolled so that rows share image loads; the outputs stay in registers
    across p (scalar-replace)."""
    return recipes.conv(_summary(workloads.CONV3D), bj, bl, rows).pipeline


CONV3D = conv3d(16, 32, 16)
"""out[i, j, l] += image[i + p, j + q, l + r] * filt[p, q, r]. H200, 608³ with 8x8x8:
5.37 ms, 42.8 TFLOP/s (93x cuDNN; 8 rows per thread in 32 x 32 tiles: 6.42 ms)."""


def jacobi2d(bi: int, bj: int, rows: int) -> str:
    """A bi x bj tile per block, `rows` consecutive rows of a column per thread: unrolled, the
    rows share their loads (each element is read once per thread, not three times); partial
    tiles keep guarded copies."""
    return recipes.stencil(_summary(workloads.JACOBI2D), bi, bj, rows).pipeline


JACOBI2D = jacobi2d(8, 256, 4)
"""out[i, j] = 0.2 * (a[i, j] + a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]).
H200, 8192²: 0.156 ms (82% of the copy-bandwidth floor; 32 x 64 tiles: 0.160 ms)."""
