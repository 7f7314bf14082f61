"""The explicit schedules (pass pipelines) of the benchmark kernels, one place for all of them.

Each entry is a loopopt pass pipeline applied to the workload's loop nest (benchmarks/workloads.py
builds the MLIR). `benchmarks/run.py` times them next to the anchors; examples/ reuse them.
"""

from __future__ import annotations


def sgemm(bm: int, bn: int, bk: int, tm: int, tn: int, pipelined: bool = True) -> str:
    """Two-level tiling for C[i, j] += A[i, k] * B[k, j]: a bm x bn block tile (threads
    bn/tn x bm/tm), bk-deep slices of A (stored k-major: vector loads of a thread's tm rows)
    and B in shared memory, a tm x tn register tile per thread (unrolled, accumulators kept
    in registers across k_t by scalar-replace), copies unrolled and pipelined one k_t ahead."""
    return ",".join(
        [
            f"loop-tile{{tile-sizes={bm},{bn},{bk}}}",
            "promote{arrays=A loop=k_t memory-space=shared transpose pad=4}",
            "promote{arrays=B loop=k_t memory-space=shared pad=4}",
            f"loop-tile{{loops=i,j tile-sizes={tm},{tn}}}",
            f"gpu-map-loops{{block={bn // tn},{bm // tm}}}",
            "loop-unroll{unroll-full loop=A_copy_in}",
            "loop-unroll{unroll-full loop=B_copy_in}",
            *(["pipeline-copies{loop=k_t}"] if pipelined else []),
            "loop-unroll{unroll-full loop=k}",
            "loop-unroll{unroll-full loop=j}",
            "loop-unroll{unroll-full loop=i}",
            "scalar-replace{loop=k_t}",
        ]
    )


SGEMM = sgemm(128, 64, 16, 8, 4)
"""C[i, j] += A[i, k] * B[k, j] (perfect, accumulating nest; C zeroed), sizes divisible by
the 128 x 64 x 16 tile. H200, 4096³: 40.2 TFLOP/s, 0.79x cuBLAS (2026-11-21)."""

SGEMM_ATB = "gpu-map-loops{block=32,8}"
"""C[i, j] += A[k, i] * B[k, j]."""

CONV2D = "gpu-map-loops{block=32,8}"
"""out[i, j] += image[i + p, j + q] * filt[p, q] (out zeroed)."""

CONV3D = "gpu-map-loops{block=32,4,2}"
"""out[i, j, l] += image[i + p, j + q, l + r] * filt[p, q, r]."""

JACOBI2D = "gpu-map-loops{block=32,8}"
"""out[i, j] = 0.2 * (a[i, j] + a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])."""
