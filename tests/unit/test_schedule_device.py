"""schedule/device.py, resources.py, registers.py and occupancy.py: the device tables, the
GPU read from the driver, and what a schedule asks of an SM (shared memory, registers,
occupancy, misfits), on hand-built nests and schedules."""

from __future__ import annotations

from dataclasses import replace

import pytest

from loopopt.diagnostics import LoopoptError
from loopopt.schedule import occupancy, registers, resources
from loopopt.schedule.device import DEVICES, current_device, device_for
from loopopt.schedule.types import Access, Loop, NestSummary, Schedule

KB = 1024
H100 = device_for("sm_90")


def matmul(n: int) -> NestSummary:
    """C[i, j] += A[i, k] * B[k, j], n x n x n."""
    return NestSummary(
        "matmul",
        (Loop("i", n, True), Loop("j", n, True), Loop("k", n, False)),
        (
            Access("A", False, ((1, 0, 0), (0, 0, 1)), (0, 0), (n, n), 4),
            Access("B", False, ((0, 0, 1), (0, 1, 0)), (0, 0), (n, n), 4),
            Access("C", False, ((1, 0, 0), (0, 1, 0)), (0, 0), (n, n), 4),
            Access("C", True, ((1, 0, 0), (0, 1, 0)), (0, 0), (n, n), 4),
        ),
        2,
    )


def tiled(bm: int, bn: int, bk: int, tm: int, tn: int, pad: int = 4) -> Schedule:
    """The SGEMM schedule of benchmarks/schedules.py as a mapping (A stored k-major)."""
    return Schedule(
        recipe="matmul",
        params=(("bm", bm), ("bn", bn), ("bk", bk), ("tm", tm), ("tn", tn)),
        pipeline="",
        block_tile=(("i", bm), ("j", bn), ("k", bk)),
        thread_tile=(("i", tm), ("j", tn)),
        threads=(bn // tn, bm // tm, 1),
        x_loop="j",
        shared=("A", "B"),
        pad=pad,
        transposed=("A",),
        unrolled=("k", "j", "i"),
        registers=("C",),
        pipelined=True,
    )


def copy2d(n: int) -> NestSummary:
    """out[i, j] = a[i, j]."""
    return NestSummary(
        "copy",
        (Loop("i", n, True), Loop("j", n, True)),
        (
            Access("a", False, ((1, 0), (0, 1)), (0, 0), (n, n), 4),
            Access("out", True, ((1, 0), (0, 1)), (0, 0), (n, n), 4),
        ),
        0,
    )


def mapped(threads: tuple[int, int, int], **fields: object) -> Schedule:
    x, y, _ = threads
    base = Schedule("map", (), "", (("i", y), ("j", x)), (), threads, "j")
    return replace(base, **fields)  # type: ignore[arg-type]


def test_tables_hold_the_published_numbers() -> None:
    a100, l40s, h100, h200 = (device_for(n) for n in ("A100", "L40S", "H100", "H200"))
    assert (a100.sms, a100.fp32_lanes_per_sm, a100.smem_per_block_optin) == (108, 64, 163 * KB)
    assert (l40s.sms, l40s.max_threads_per_sm, l40s.max_blocks_per_sm) == (142, 1536, 24)
    assert (h100.sms, h100.clock_ghz, h100.l2_bytes) == (132, 1.98, 50 * KB * KB)
    assert replace(h200, name=h100.name, dram_gbps=h100.dram_gbps) == h100
    assert h200.dram_gbps == 4800.0 > h100.dram_gbps
    for device in DEVICES.values():
        assert device.arch in ("sm_80", "sm_89", "sm_90")
        assert device.regs_per_sm == 65536 and device.max_regs_per_thread == 255
        assert device.smem_per_block == 48 * KB
        assert device.smem_per_block < device.smem_per_block_optin <= device.smem_per_sm - KB
        assert device.max_threads_per_sm % device.warp_size == 0
        assert 1.0 < device.clock_ghz < 3.0 and device.dram_gbps > 500


def test_device_for_arch_and_name() -> None:
    assert device_for("sm_90") is device_for("h100") is DEVICES["H100"]
    assert device_for("sm_80").name == "A100 SXM 80GB"
    assert device_for(" L40S ").arch == "sm_89"
    with pytest.raises(LoopoptError, match=r"unknown device 'sm_75'; known: sm_80, sm_89, sm_90"):
        device_for("sm_75")


def test_current_device_is_none_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from loopopt.runtime import cuda

    monkeypatch.setattr(cuda, "available", lambda: False)
    assert current_device() is None


@pytest.mark.gpu
def test_current_device_reads_the_driver() -> None:
    device = current_device()
    assert device is not None
    table = DEVICES[device.arch]
    assert device.sms > 0 and device.clock_ghz > 0.5 and device.dram_gbps > 100
    assert device.regs_per_sm == table.regs_per_sm
    assert device.smem_per_block_optin >= device.smem_per_block == 48 * KB


def test_shared_bytes_is_promote_layout() -> None:
    # A: box 128 x 16, stored transposed (16 x 128) + pad 4 → 16 x 132; B: 16 x (64 + 4).
    s = tiled(128, 64, 16, 8, 4)
    assert resources.shared_shape(matmul(4096), s, "A") == [16, 132]
    assert resources.shared_shape(matmul(4096), s, "B") == [16, 68]
    assert resources.shared_bytes(matmul(4096), s) == (16 * 132 + 16 * 68) * 4
    # each buffer 16-byte aligned: 3 x (5 + 0) floats = 60 bytes take 64
    small = replace(tiled(3, 5, 1, 1, 1, pad=0), transposed=(), shared=("B",))
    assert resources.shared_shape(matmul(64), small, "B") == [1, 5]
    assert (
        resources.shared_bytes(
            matmul(64), replace(small, block_tile=(("i", 3), ("j", 15), ("k", 1)))
        )
        == 64
    )


def test_shared_box_has_halos() -> None:
    k = 3
    conv = NestSummary(
        "conv",
        (Loop("i", 64, True), Loop("j", 64, True), Loop("p", k, False), Loop("q", k, False)),
        (
            Access("img", False, ((1, 0, 1, 0), (0, 1, 0, 1)), (0, 0), (66, 66), 4),
            Access("f", False, ((0, 0, 1, 0), (0, 0, 0, 1)), (0, 0), (k, k), 4),
            Access("out", True, ((1, 0, 0, 0), (0, 1, 0, 0)), (0, 0), (64, 64), 4),
        ),
        2,
    )
    s = Schedule("conv", (), "", (("i", 32), ("j", 32)), (), (32, 32, 1), "j", ("img",), 1)
    assert resources.shared_shape(conv, s, "img") == [34, 35]
    assert resources.shared_bytes(conv, s) == 4768  # 34 x 35 floats, 16-byte aligned


def test_register_estimate_parts() -> None:
    parts = registers.register_parts(matmul(4096), tiled(128, 64, 16, 8, 4))
    assert parts.accumulators == 32  # the 8 x 4 tile of C
    # A column and B row of one k, and of one more k per 256 FMAs of the step (512 here)
    assert parts.fragments == (8 + 4) * 16 * 32 // registers.HOIST_FMAS
    shallow = registers.register_parts(matmul(4096), tiled(128, 64, 8, 8, 4))
    assert shallow.fragments == 8 + 4
    # 12 floats copied per thread and step, each load in flight with its value and addresses
    assert parts.copies == (128 * 16 + 16 * 64) // 256 * (1 + registers.COPY_ADDRESS_REGISTERS)
    assert parts.total == 32 + 24 + 48 + parts.overhead  # pipelined: copies live in the compute
    assert parts.required == 32 + 48 + parts.overhead
    assert registers.registers(matmul(4096), tiled(128, 128, 8, 8, 8)) > parts.total
    # not pipelined: copies and fragments take turns
    plain = replace(tiled(128, 64, 16, 8, 4), pipelined=False)
    assert registers.registers(matmul(4096), plain) == 32 + 48 + parts.overhead


def test_vector_copies_need_fewer_address_registers() -> None:
    # copy-vector=4: 12 floats per thread in 3 128-bit loads, 3 addresses instead of 12
    vector = replace(tiled(128, 64, 16, 8, 4), extra=(("copy_vector", 4),))
    assert registers.register_parts(matmul(4096), vector).copies == 12 + 3 * 3
    # a box whose rows the width does not divide is copied one element at a time
    assert registers.copy_width(vector, [16, 6]) == 1 and registers.copy_width(vector, [6, 16]) == 4


def test_spilled_registers_follow_the_uncertain_estimate() -> None:
    mm = matmul(4096)
    s = tiled(128, 64, 16, 8, 4)  # ~112 registers
    need = registers.registers(mm, s)
    assert registers.spilled_registers(mm, s, H100) == 0.0  # far below 255
    # 512 threads cap a thread at 128: within the estimate's ±15%, some spill is expected
    crowded = replace(s, min_blocks=2)
    cap = registers.register_cap(crowded, H100)
    assert cap == 128 and need < cap
    high = need * (1 + registers.REGISTER_ERROR)
    expected = (high - cap) ** 2 / (2 * need * 2 * registers.REGISTER_ERROR)
    assert registers.spilled_registers(mm, crowded, H100) == pytest.approx(expected)
    # 1024 threads: 64 registers, the whole excess spills
    packed = replace(crowded, min_blocks=4)
    assert registers.spilled_registers(mm, packed, H100) == need - 64


def stencil5(n: int) -> NestSummary:
    """out[i, j] = a[i, j] + a[i ± 1, j] + a[i, j ± 1] (interior, offset by one)."""
    taps = [(1, 1), (0, 1), (2, 1), (1, 0), (1, 2)]
    return NestSummary(
        "stencil5",
        (Loop("i", n - 2, True), Loop("j", n - 2, True)),
        (
            *(Access("a", False, ((1, 0), (0, 1)), t, (n, n), 4) for t in taps),
            Access("out", True, ((1, 0), (0, 1)), (1, 1), (n, n), 4),
        ),
        5,
    )


def test_streamed_bodies_keep_one_row_live() -> None:
    # 16 rows per thread, unrolled: each output is stored once computed and the loads of a
    # row and the next are in flight (ptxas -v on jacobi-2d: 32 registers for 1 to 16 rows)
    rows = Schedule("stencil", (), "", (("i", 64), ("j", 64)), (("i", 16),), (64, 4, 1), "j")
    rows = replace(rows, unrolled=("i",))
    parts = registers.register_parts(stencil5(4096), rows)
    assert parts.accumulators == 1
    assert parts.fragments == 2 * 5  # a row's 5 loads, and the next row's
    assert parts.total <= 32
    # a reduction keeps its outputs: matmul's accumulators stay whatever the order
    assert registers.register_parts(matmul(4096), tiled(64, 64, 8, 8, 8)).accumulators == 64


def test_occupancy_limited_by_registers() -> None:
    limits = occupancy.occupancy_limits(matmul(4096), tiled(128, 128, 8, 8, 8), H100)
    assert min(limits, key=limits.__getitem__) == "registers"
    assert occupancy.blocks_per_sm(matmul(4096), tiled(128, 128, 8, 8, 8), H100) == min(
        limits.values()
    )


def test_occupancy_limited_by_shared_memory() -> None:
    # a 40 x 256 float tile in shared memory (40 KB + 1 KB reserved): 2 blocks of 100 KB
    s = mapped((256, 2, 1), block_tile=(("i", 40), ("j", 256)), thread_tile=(("i", 20),))
    s = replace(s, shared=("a",), extra=(("copy_vector", 4),))
    l40s = device_for("sm_89")
    limits = occupancy.occupancy_limits(copy2d(4096), s, l40s)
    assert limits["shared memory"] == 102400 // (40960 + 1024) == 2
    assert limits["threads"] == 3 and limits["registers"] >= 2
    assert occupancy.blocks_per_sm(copy2d(4096), s, l40s) == 2


def test_occupancy_limited_by_threads_and_blocks() -> None:
    big = mapped((256, 3, 1))  # 768 threads: 2 fit in 2048
    assert occupancy.occupancy_limits(copy2d(4096), big, H100)["threads"] == 2
    assert occupancy.blocks_per_sm(copy2d(4096), big, H100) == 2
    one_warp = mapped((32, 1, 1))  # 64 warps would fit; 32 blocks per SM
    limits = occupancy.occupancy_limits(copy2d(4096), one_warp, H100)
    assert limits["threads"] == 64 and limits["blocks"] == 32
    assert occupancy.blocks_per_sm(copy2d(4096), one_warp, H100) == 32
    assert occupancy.blocks_per_sm(copy2d(4096), one_warp, device_for("sm_89")) == 24


def test_misfit_names_the_resource() -> None:
    mm = matmul(4096)
    assert occupancy.misfit(mm, tiled(128, 64, 16, 8, 4), H100) is None
    assert occupancy.misfit(mm, tiled(256, 256, 128, 8, 8), H100) == (
        "256x256x128 block tile needs 260 KB of shared memory, sm_90 allows 227 KB"
    )
    assert occupancy.misfit(mm, tiled(256, 256, 64, 8, 8), device_for("sm_89")) == (
        "256x256x64 block tile needs 130 KB of shared memory, sm_89 allows 99 KB"
    )
    assert occupancy.misfit(copy2d(64), mapped((64, 32, 1)), H100) == (
        "a 64x32x1 block has 2048 threads, sm_90 allows 1024 (and at most 64 along z)"
    )
    huge = occupancy.misfit(mm, tiled(256, 256, 8, 16, 16), H100)
    assert huge is not None and huge.startswith("16x16 thread tile needs ~")
    assert huge.endswith("registers per thread, sm_90 allows 255")
    crowded = occupancy.misfit(mm, tiled(256, 256, 8, 8, 8), H100)  # 1024 threads x ~85
    assert crowded is not None and crowded.startswith("1 block(s) of 1024 threads with ~")
    assert crowded.endswith("sm_90 has 64 K per SM (use fewer threads or a smaller thread tile)")
    odd = replace(tiled(128, 64, 16, 8, 4), thread_tile=(("i", 3), ("j", 4)))
    assert occupancy.misfit(mm, odd, H100) == (
        "the block tile 128 of loop i is not a multiple of its thread tile 3"
    )


def test_mapping_follows_gpu_map_loops() -> None:
    m = resources.mapping(matmul(4096), tiled(128, 64, 16, 8, 4))
    assert m.axes == ("j", "i") and m.grid == (64, 32) and m.blocks == 2048
    assert m.thread == {"i": 8, "j": 4, "k": 16} and m.steps == 256
    # conv3d's plane loop, untiled, goes on z with one thread: one plane per block
    conv3 = NestSummary(
        "c3",
        (Loop("i", 8, True), Loop("j", 64, True), Loop("l", 64, True), Loop("p", 3, False)),
        (Access("o", True, ((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0)), (0, 0, 0), (8, 64, 64), 4),),
        2,
    )
    s = Schedule("conv", (), "", (("j", 32), ("l", 32)), (("j", 8),), (32, 4, 1), "l")
    m = resources.mapping(conv3, s)
    assert m.axes == ("l", "j", "i") and m.block["i"] == 1 and m.blocks == 2 * 2 * 8
    hosted = replace(mapped((32, 8, 1)), extra=(("host_loops", 1),))
    assert resources.mapping(copy2d(64), hosted).launches == 64
