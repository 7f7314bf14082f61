"""schedule/cost_model.py on hand-computed cases (sectors of coalesced and strided warps, bank
conflicts of padded and unpadded tiles), its physical trends (occupancy and waves, small
thread tiles, uncoalesced mappings, more traffic never faster), and its calibration against
the H200 measurements of benchmarks/results."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from loopopt.context import parse_module
from loopopt.schedule import recipes, registers, resources, warp
from loopopt.schedule.cost_model import explain, predict
from loopopt.schedule.device import device_for
from loopopt.schedule.space import candidates
from loopopt.schedule.summary import summarize_module
from loopopt.schedule.types import Access, Loop, NestSummary, Schedule
from loopopt.schedule.warp import l1_cycles, sectors_and_lines, shared_cycles, wavefronts

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_schedule_device import copy2d, matmul, tiled  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402

H100, H200 = device_for("H100"), device_for("H200")


def row_map(x_loop: str, threads: tuple[int, int, int] = (32, 8, 1)) -> Schedule:
    """One element per thread, `x_loop` on threadIdx.x."""
    x, y, _ = threads
    other = "i" if x_loop == "j" else "j"
    return Schedule("map", (), "", ((other, y), (x_loop, x)), (), threads, x_loop)


@pytest.mark.parametrize(
    ("stride", "sectors", "lines"), [(0, 1, 1), (1, 4, 1), (2, 8, 2), (8, 32, 8), (64, 32, 32)]
)
def test_sectors_of_one_warp_instruction(stride: int, sectors: int, lines: int) -> None:
    lanes = np.arange(32)[:, None] * stride  # 32 floats, `stride` floats apart
    got_sectors, got_lines = sectors_and_lines(lanes, 4)
    assert (int(got_sectors[0]), int(got_lines[0])) == (sectors, lines)


def test_coalesced_and_strided_warps() -> None:
    n = 4096
    coalesced = predict(copy2d(n), row_map("j"), H100)
    strided = predict(copy2d(n), row_map("i"), H100)
    assert coalesced.sectors_per_request == 4.0  # 32 floats in a row: 4 sectors
    assert strided.sectors_per_request == 32.0  # one row per lane: 32 sectors
    # the block's 8 warps share each sector through L1, but a column of a row-major array
    # sits in one bank of L1's data array: every load and store takes 32 cycles instead of 1
    assert strided.bound == "lsu" and strided.lsu_us > 16 * coalesced.lsu_us
    # one float per thread: too few loads in flight to cover DRAM latency, or DRAM itself
    assert coalesced.bound in ("dram", "latency")
    assert strided.time_us > 1.5 * coalesced.time_us
    wide = NestSummary(  # out[i, j] = a[i, 8 j]: loads 8 floats apart (32 sectors), stores 4
        "wide",
        copy2d(n).loops,
        (
            Access("a", False, ((1, 0), (0, 8)), (0, 0), (n, 8 * n), 4),
            Access("out", True, ((1, 0), (0, 1)), (0, 0), (n, n), 4),
        ),
        0,
    )
    assert predict(wide, row_map("j"), H100).sectors_per_request == (32 + 4) / 2


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (np.arange(32) * 32, 32),  # a column of an unpadded 32-wide tile: one bank
        (np.arange(32) * 33, 1),  # padded by one: every bank once
        (np.arange(32) * 2, 2),
        (np.zeros(32, dtype=np.int64), 1),  # one word: a broadcast
    ],
)
def test_bank_conflicts_of_one_warp_access(words: np.ndarray, expected: int) -> None:
    assert wavefronts(words, 32) == expected


def lane_words(per_lane: int, first: np.ndarray) -> np.ndarray:
    """Per lane, `per_lane` consecutive 4-byte words from `first` (a 32-, 64- or 128-bit load)."""
    return first[:, None] + np.arange(per_lane)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # LDS.128 of 32 lanes reading consecutive 16-byte vectors: 512 bytes, 4 phases
        (lane_words(4, np.arange(32) * 4), (4, 4)),
        # every lane the same vector: lane pairs share their data, 2 phases (not 1)
        (lane_words(4, np.zeros(32, dtype=np.int64)), (2, 2)),
        # 8-float thread tiles along x (16 threads, two rows of a 16 x 16 block): in each
        # phase of 8 lanes, lanes l and l + 4 hit the same 4 banks: 2 wavefronts per phase
        (lane_words(4, (np.arange(32) % 16) * 8), (8, 4)),
        # 4-float tiles: 8 lanes x 4 words cover the 32 banks once
        (lane_words(4, (np.arange(32) % 16) * 4), (4, 4)),
        # LDS.64 of consecutive pairs: 2 phases of 16 lanes
        (lane_words(2, np.arange(32) * 2), (2, 2)),
        # LDS.32 down a column of an unpadded 32-wide tile: 32 wavefronts in one phase
        (lane_words(1, np.arange(32) * 32), (32, 1)),
    ],
)
def test_shared_phases_of_wide_accesses(words: np.ndarray, expected: tuple[int, int]) -> None:
    assert shared_cycles(words, 32) == expected


@pytest.mark.parametrize(
    ("lanes", "cycles"),
    [
        (np.arange(32), 1),  # a row of 32 floats
        (np.arange(32) + 1, 1),  # misaligned: 5 sectors in 2 lines, still 32 distinct banks
        (np.arange(32) * 2, 2),  # every other float: each bank twice
        (np.arange(32) * 4096, 32),  # a column of a 4096-wide array: one bank
        (np.zeros(32, dtype=np.int64), 1),  # one float for the whole warp
    ],
)
def test_l1_cycles_of_global_accesses(lanes: np.ndarray, cycles: int) -> None:
    assert l1_cycles(lanes[:, None], 4, 32) == cycles
    assert l1_cycles(np.stack([lanes, lanes], axis=1), 4, 32) == 2 * cycles


def transpose(n: int) -> NestSummary:
    """out[i, j] = a[j, i]."""
    return NestSummary(
        "transpose",
        (Loop("i", n, True), Loop("j", n, True)),
        (
            Access("a", False, ((0, 1), (1, 0)), (0, 0), (n, n), 4),
            Access("out", True, ((1, 0), (0, 1)), (0, 0), (n, n), 4),
        ),
        0,
    )


def test_padding_removes_the_column_conflicts() -> None:
    # a is staged in a 32 x 32 buffer (rows j, copied row by row: conflict-free, 1 wavefront);
    # threadIdx.x runs along j, so a warp reads a column: 32 wavefronts unpadded, 1 padded.
    staged = replace(row_map("j", (32, 32, 1)), shared=("a",))
    unpadded = predict(transpose(2048), staged, H100)
    padded = predict(transpose(2048), replace(staged, pad=1), H100)
    assert unpadded.bank_conflicts == (1 + 32) / (1 + 1)
    assert padded.bank_conflicts == 1.0
    assert padded.time_us <= unpadded.time_us
    assert padded.sectors_per_request == 4.0  # staging made the transpose coalesced


def test_small_thread_tiles_are_bound_by_shared_loads() -> None:
    good = predict(matmul(4096), tiled(128, 64, 16, 8, 4), H100)
    tiny = predict(matmul(4096), tiled(32, 32, 8, 1, 1), H100)
    assert tiny.loads_per_fma >= 2 > 10 * good.loads_per_fma
    assert tiny.bound in ("lsu", "issue") and good.bound in ("fma", "issue")
    assert tiny.time_us > 3 * good.time_us


def test_huge_tiles_lose_waves() -> None:
    # 1024²: 128 x 128 tiles make 64 blocks for 132 SMs; 64 x 64 tiles fill every SM
    big = predict(matmul(1024), tiled(128, 128, 8, 8, 8), H100)
    small = predict(matmul(1024), tiled(64, 64, 16, 8, 4), H100)
    assert big.blocks == 64 < H100.sms < small.blocks == 256
    assert big.time_us > small.time_us


def test_more_traffic_is_never_faster() -> None:
    sizes = [1024, 2048, 4096, 8192]
    times = [predict(copy2d(n), row_map("j"), H100).time_us for n in sizes]
    assert times == sorted(times)
    base = copy2d(4096)
    extra = replace(base, accesses=(*base.accesses, replace(base.accesses[0], array="b")))
    wider = replace(base, accesses=tuple(replace(a, elem_bytes=8) for a in base.accesses))
    one, two, doubled = (predict(s, row_map("j"), H100) for s in (base, extra, wider))
    assert one.dram_bytes < two.dram_bytes and one.dram_bytes < doubled.dram_bytes
    assert one.time_us <= two.time_us and one.time_us <= doubled.time_us
    assert predict(base, row_map("j"), H200).time_us < one.time_us  # more bandwidth


def test_pure_and_independent_of_the_recipe_name() -> None:
    s = tiled(128, 64, 16, 8, 4)
    first = predict(matmul(2048), s, H100)
    assert predict(matmul(2048), s, H100) == first
    assert predict(matmul(2048), replace(s, recipe="anything", params=()), H100) == first


def test_host_loops_launch_once_per_iteration() -> None:
    one = predict(copy2d(512), row_map("j"), H100)
    hosted = replace(row_map("j"), extra=(("host_loops", 1),))
    many = predict(copy2d(512), hosted, H100)
    assert many.launch_us == 512 * H100.launch_us
    assert many.time_us > 100 * one.time_us


def test_explain_is_one_line() -> None:
    p = predict(matmul(4096), tiled(128, 64, 16, 8, 4), H200)
    line = explain(p)
    assert "\n" not in line
    assert line.startswith(f"{p.time_us:.1f} us {p.bound}-bound: ")
    assert "2 blocks/SM" in line and "12.5 KB shared" in line


def summary_of(name: str) -> NestSummary:
    w = next(w for w in workloads.WORKLOADS if w.name == name)
    return summarize_module(parse_module(w.mlir()), w.func)


def test_calibrated_on_the_h200_measurements() -> None:
    """benchmarks/results/*-h200-2026-11-21*.json: SGEMM 4096³ 3.42 ms, conv2d 4096² 3×3
    0.052-0.056 ms (bandwidth-bound; the output initialized in the nest, never read), jacobi-2d
    8192² 0.157 ms: the model within 20%."""
    sgemm = summary_of("sgemm-4096")
    p = predict(sgemm, recipes.matmul(sgemm, 128, 64, 16, 8, 4), H200)
    assert p.bound in ("fma", "issue") and 0.8 < p.time_us / 3422 < 1.2
    conv = summary_of("conv2d-4096-3x3")
    p = predict(conv, recipes.conv(conv, 32, 32, 4), H200)
    assert p.bound == "dram" and 0.8 < p.time_us / 54.0 < 1.2
    jacobi = summary_of("jacobi2d-8192")
    p = predict(jacobi, recipes.stencil(jacobi, 32, 64, 4), H200)
    assert p.bound == "dram" and 0.8 < p.time_us / 157.4 < 1.2


def test_vector_copies_issue_fewer_loads() -> None:
    # gpu-map-loops{copy-vector=4}: a thread copies 4 consecutive floats with one 128-bit load
    scalar = tiled(128, 64, 16, 8, 4)
    vector = replace(scalar, extra=(("copy_vector", 4),))
    one, four = (predict(matmul(4096), s, H100) for s in (scalar, vector))
    assert four.sectors_per_request > one.sectors_per_request
    assert four.loads_per_fma < one.loads_per_fma
    assert four.dram_bytes == one.dram_bytes and four.time_us <= one.time_us


def test_thread_tiles_rank_as_measured_on_the_h200() -> None:
    """benchmarks/results (H200, SGEMM 4096³): 128x64x16 with 8x4 tiles, pipelined, 3.4 ms;
    128x128 with 8x8 tiles ~4.0 ms (8x8 B reads: 2-way bank conflicts, 1 block per SM);
    4x8 tiles 5.6-6.1 ms (their B rows are the conflicted 128-bit loads, A the cheap ones)."""
    sgemm = summary_of("sgemm-4096")
    best = predict(sgemm, recipes.matmul(sgemm, 128, 64, 16, 8, 4), H200)
    square = predict(sgemm, recipes.matmul(sgemm, 128, 128, 8, 8, 8), H200)
    wide = predict(sgemm, recipes.matmul(sgemm, 128, 64, 16, 4, 8), H200)
    assert best.time_us < square.time_us < wide.time_us
    assert square.bank_conflicts > 1.5 > 1.1 > best.bank_conflicts
    assert wide.bound == "lsu" and wide.time_us > 1.3 * best.time_us


def test_registers_beyond_the_cap_spill() -> None:
    """SGEMM 4096³ on the H200: 256x64x32 8x4 tiles, pipelined, in blocks of 512 threads (128
    registers each at most) measured 128 ms, 37x the best: the accumulators and the copies
    in flight (~130 registers) do not fit, and spill at every reduction point."""
    sgemm = summary_of("sgemm-4096")
    fits = predict(sgemm, recipes.matmul(sgemm, 128, 64, 16, 8, 4), H200)
    spills = predict(sgemm, recipes.matmul(sgemm, 256, 64, 32, 8, 4), H200)
    assert fits.spilled_registers == 0.0 and spills.spilled_registers > 10
    assert spills.time_us > 2 * fits.time_us


def test_operands_reloaded_within_a_short_span_do_not_spill() -> None:
    """conv2d 4096² on the H200 (model-quality-h200-2026-11-21-*.json): 8x8 filter, 128 x 128
    tiles of 16 x 2 per thread in 512-thread blocks (cap 128): 60.5 us, as fast as the best;
    its operands, reused within 128 FMAs, are loaded again rather than spilled. 16x16 filter,
    64 x 128 tiles of 8 rows in 1024-thread blocks (cap 64): 2.97 ms, 12x the best; 256 FMAs
    apart, they spill."""
    small = summary_of("conv2d-4096-8x8")
    wide = recipes.conv(small, 128, 128, 16, cols=2)
    parts = registers.register_parts(small, wide)
    assert parts.deferrable and parts.total > registers.register_cap(wide, H200)
    assert registers.spilled_registers(small, wide, H200) == 0.0
    best = predict(small, recipes.conv(small, 16, 64, 16, cols=2), H200)
    assert predict(small, wide, H200).time_us < 1.2 * best.time_us
    big = summary_of("conv2d-4096-16x16")
    spills = recipes.conv(big, 64, 128, 8)
    assert not registers.register_parts(big, spills).deferrable
    assert registers.spilled_registers(big, spills, H200) > 50
    assert (
        predict(big, spills, H200).time_us
        > 3 * predict(big, recipes.conv(big, 8, 32, 8, constant=True), H200).time_us
    )
    sgemm = summary_of("sgemm-4096")  # operands staged in shared memory: never deferred
    assert not registers.register_parts(sgemm, recipes.matmul(sgemm, 128, 64, 16, 8, 4)).deferrable


def test_many_small_blocks_wait_for_dispatch() -> None:
    """jacobi-2d 8192² with one row of 32 threads per block: 2 M blocks, 1.27 ms on the H200,
    160 cycles per block per SM however little each does."""
    jacobi = summary_of("jacobi2d-8192")
    p = predict(jacobi, recipes.stencil(jacobi, 1, 32, 1), H200)
    assert p.bound == "dispatch" and 0.9 < p.time_us / 1275 < 1.1
    assert predict(jacobi, recipes.stencil(jacobi, 16, 128, 4), H200).dispatch_us < 25


def test_half_warp_rows_fetch_whole_lines() -> None:
    """16-wide blocks put two rows of 16 floats in a warp: each fetches a whole line from L2
    (conv2d 4096² 3×3 and jacobi-2d on the H200: 1.5x slower than 32 wide and more)."""
    conv = summary_of("conv2d-4096-3x3")
    narrow = predict(conv, recipes.conv(conv, 32, 16, 4), H200)
    wide = predict(conv, recipes.conv(conv, 16, 32, 4), H200)
    assert narrow.dram_bytes == wide.dram_bytes
    assert narrow.l2_bytes > 1.2 * wide.l2_bytes and narrow.time_us > 1.1 * wide.time_us


def test_tall_waves_conflict_in_dram_rows() -> None:
    """jacobi-2d 8192² on the H200 with 256-wide blocks: 8 rows per thread 162 us, 16 rows
    177 us (a wave of resident blocks spans twice the rows: 35 MB at once, more than the DRAM
    keeps open); 4 rows 158 us."""
    jacobi = summary_of("jacobi2d-8192")
    four, eight, sixteen = (
        predict(jacobi, recipes.stencil(jacobi, rows * 4, 256, rows), H200) for rows in (4, 8, 16)
    )
    assert four.dram_bytes == eight.dram_bytes == sixteen.dram_bytes
    assert sixteen.dram_us > 1.1 * eight.dram_us > 1.1 * four.dram_us
    assert sixteen.time_us > eight.time_us


def test_cp_async_rings_as_measured_on_the_h200() -> None:
    """H200, SGEMM 4096³ (scratch runs of 2026-11-21): 64x128x32 8x4 tiles with a 3-stage
    cp.async ring (A as it is: 16-byte copies) 3.16 ms, register double buffering 64x128x16
    3.23 ms; the ring holds 3 slices of shared memory and no copy registers."""
    sgemm = summary_of("sgemm-4096")
    ring = recipes.matmul(sgemm, 64, 128, 32, 8, 4, copy_vector=4, stages=3)
    staged = recipes.matmul(sgemm, 64, 128, 16, 8, 4, copy_vector=4)
    flat = recipes.matmul(sgemm, 64, 128, 32, 8, 4, pipelined=False, copy_vector=4)
    assert ring.stages == 3 and ring.transposed == () and staged.stages == 1
    p_ring, p_staged, p_flat = (predict(sgemm, s, H200) for s in (ring, staged, flat))
    assert p_ring.time_us < p_staged.time_us and p_ring.time_us < p_flat.time_us
    one_slice = predict(sgemm, replace(ring, extra=(("copy_vector", 4),)), H200)
    assert p_ring.shared_bytes == 3 * one_slice.shared_bytes
    assert p_ring.registers <= p_flat.registers


def test_blocks_of_half_an_sm_drain_slowly() -> None:
    """H200, jacobi-2d 8192²: 1024-thread blocks (2 per SM) 0.17 ms, 512-thread blocks 0.156
    ms: the model prefers the smaller blocks of the same rows per thread."""
    jacobi = summary_of("jacobi2d-8192")
    big = predict(jacobi, recipes.stencil(jacobi, 16, 256, 4), H200)
    half = predict(jacobi, recipes.stencil(jacobi, 8, 256, 4), H200)
    assert big.blocks_per_sm == 2 and half.blocks_per_sm == 4
    assert half.time_us < big.time_us


def test_constant_weights_pay_for_large_filters() -> None:
    """H200, conv2d 4096² (scratch runs of 2026-11-21): the filter in constant memory takes
    16x16 from 0.295 to 0.253 ms (its loads leave the L1) and 3x3 from 0.061 to 0.072 ms (the
    copy before each launch)."""
    big, small = summary_of("conv2d-4096-16x16"), summary_of("conv2d-4096-3x3")
    for summary, tiles, faster in ((big, (16, 64, 8), True), (small, (32, 32, 4), False)):
        plain = predict(summary, recipes.conv(summary, *tiles), H200)
        constant = predict(summary, recipes.conv(summary, *tiles, constant=True), H200)
        assert (constant.time_us < plain.time_us) == faster
        assert constant.loads_per_fma < plain.loads_per_fma


MEMOIZED = (
    warp._direct_run,  # pyright: ignore[reportPrivateUsage]
    warp._fetched,  # pyright: ignore[reportPrivateUsage]
    warp._copy_round,  # pyright: ignore[reportPrivateUsage]
    warp._buffer_run,  # pyright: ignore[reportPrivateUsage]
    warp._shared_cycles,  # pyright: ignore[reportPrivateUsage]
    warp._shared_access_of,  # pyright: ignore[reportPrivateUsage]
    resources._distinct,  # pyright: ignore[reportPrivateUsage]
)


@pytest.mark.parametrize("name", ["sgemm-3001", "conv2d-4096-5x5", "jacobi2d-8192"])
def test_memoized_parts_answer_as_if_computed_afresh(name: str) -> None:
    """The warp's memoized parts are keyed by all they read: every candidate's prediction is
    the same whatever was asked before it (all candidates, then again backwards from empty
    caches)."""
    summary = summary_of(name)
    chosen = candidates(summary, H200)
    forward = [predict(summary, s, H200) for s in chosen]
    for cached in MEMOIZED:
        cached.cache_clear()
    backward = [predict(summary, s, H200) for s in reversed(chosen)]
    assert len(chosen) > 10 and forward == backward[::-1]
