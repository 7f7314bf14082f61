"""The explicit schedules (pass pipelines) of the benchmark kernels, one place for all of them.

Each entry is a loopopt pass pipeline applied to the workload's loop nest (benchmarks/workloads.py
builds the MLIR). `benchmarks/run.py` times them next to the anchors; examples/ reuse them.
"""

from __future__ import annotations


def sgemm(
    bm: int,
    bn: int,
    bk: int,
    tm: int,
    tn: int,
    pipelined: bool = True,
    min_blocks: int = 0,
    outer_product: bool = False,
    a_transposed: bool = False,
) -> str:
    """Two-level tiling for C[i, j] += A[i, k] * B[k, j]: a bm x bn block tile (threads
    bn/tn x bm/tm), bk-deep slices of A (stored k-major: vector loads of a thread's tm rows)
    and B in shared memory, a tm x tn register tile per thread (unrolled, accumulators kept
    in registers across k_t by scalar-replace), copies unrolled and pipelined one k_t ahead;
    `min_blocks` blocks per SM cap the registers (launch bounds). `outer_product` puts k
    outside the register tile (fewer live registers; measured slower on the H200: the i, j, k
    order lets the scheduler keep more shared loads in flight). `a_transposed`: the nest reads
    A[k, i] (AᵀB), whose slice is k-major already."""
    mapping = f"block={bn // tn},{bm // tm}" + (
        f" min-blocks-per-sm={min_blocks}" if min_blocks else ""
    )
    return ",".join(
        [
            f"loop-tile{{tile-sizes={bm},{bn},{bk}}}",
            "promote{arrays=A loop=k_t memory-space=shared pad=4"
            + ("}" if a_transposed else " transpose}"),
            "promote{arrays=B loop=k_t memory-space=shared pad=4}",
            f"loop-tile{{loops=i,j tile-sizes={tm},{tn}}}",
            *(["loop-interchange{loops=i,j,k permutation=1,2,0}"] if outer_product else []),
            f"gpu-map-loops{{{mapping}}}",
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

SGEMM_ATB = sgemm(128, 64, 16, 8, 4, a_transposed=True)
"""H200, 2048²: 0.441 ms, 39 TFLOP/s (0.77x cuBLAS)."""

SGEMM_64 = sgemm(64, 64, 16, 8, 4)
"""Sizes that 64 divides but 128 does not (1088 = 17·64, 2496, 5312, 8000): 64 x 64 block
tiles of 128 threads. H200, 1088³: 0.102 ms, 25 TFLOP/s (0.80x cuBLAS)."""
SGEMM_1088 = SGEMM_2496 = SGEMM_5312 = SGEMM_8000 = SGEMM_64
"""C[i, j] += A[k, i] * B[k, j]."""


def conv2d(bi: int, bj: int, rows: int) -> str:
    """A bi x bj output tile per block, `rows` consecutive outputs of a column per thread
    (threads bj x bi/rows, j contiguous along threadIdx.x): with the filter loops and the rows
    unrolled, each image element a thread needs is loaded once and reused from a register by
    every (output, tap) pair that reads it."""
    return ",".join(
        [
            f"loop-tile{{tile-sizes={bi},{bj}}}",
            f"loop-tile{{loops=i tile-sizes={rows}}}",
            "loop-interchange{loops=i,j permutation=1,0}",
            f"gpu-map-loops{{block={bj},{bi // rows}}}",
            "loop-unroll{unroll-full loop=q}",
            "loop-unroll{unroll-full loop=p}",
            "loop-unroll{unroll-full loop=i}",
        ]
    )


CONV2D = conv2d(64, 64, 8)
"""H200, 4096² with 16x16: 0.394 ms (30.7x cuDNN); memory-bound small filters like smaller
tiles (CONV2D_3X3)."""

CONV2D_3X3 = conv2d(32, 32, 4)
"""out[i, j] += image[i + p, j + q] * filt[p, q] (out zeroed)."""


def conv3d(bj: int, bl: int, rows: int) -> str:
    """One output plane i per grid z, a bj x bl tile of (j, l) per block, `rows` outputs along
    j per thread (l contiguous on threadIdx.x); per filter plane p (a loop), the q and r taps
    and the rows are unrolled so that rows share image loads; the outputs stay in registers
    across p (scalar-replace)."""
    return ",".join(
        [
            f"loop-tile{{tile-sizes=0,{bj},{bl}}}",
            f"loop-tile{{loops=j tile-sizes={rows}}}",
            "loop-interchange{loops=j,l permutation=1,0}",
            "loop-interchange{loops=j,p permutation=1,0}",
            f"gpu-map-loops{{block={bl},{bj // rows},1}}",
            "loop-unroll{unroll-full loop=r}",
            "loop-unroll{unroll-full loop=q}",
            "loop-unroll{unroll-full loop=j}",
            "scalar-replace{loop=p}",
        ]
    )


CONV3D = conv3d(32, 32, 8)
"""H200, 608³ with 8x8x8: 6.42 ms, 35.9 TFLOP/s (78x cuDNN)."""
"""out[i, j, l] += image[i + p, j + q, l + r] * filt[p, q, r]."""


def jacobi2d(bi: int, bj: int, rows: int) -> str:
    """A bi x bj tile per block, `rows` consecutive rows of a column per thread: unrolled, the
    rows share their loads (each element is read once per thread, not three times); partial
    tiles keep guarded copies."""
    return ",".join(
        [
            f"loop-tile{{tile-sizes={bi},{bj}}}",
            f"loop-tile{{loops=i tile-sizes={rows}}}",
            "loop-interchange{loops=i,j permutation=1,0}",
            f"gpu-map-loops{{block={bj},{bi // rows}}}",
            f"loop-unroll{{unroll-factor={rows} loop=i}}",
        ]
    )


JACOBI2D = jacobi2d(32, 64, 4)
"""H200, 8192²: 0.160 ms (80% of the copy-bandwidth floor, 7.6x torch)."""
"""out[i, j] = 0.2 * (a[i, j] + a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])."""
