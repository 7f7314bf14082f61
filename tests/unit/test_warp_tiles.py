"""Warp-level thread tiles of SGEMM: gpu-map-loops{warp-lanes=LX,LY} (loops/gpu_map.
arrange_warps), cyclic point loops with constant trip counts, and the matmul recipe's strided
per-thread fragments (`fragment=`), emulated on the CPU (gpu_emulator) on random inputs,
dividing and non-dividing (padded) sizes, and their PTX (128 accumulators of a 16 x 8 tile
in registers, 128-bit shared loads, no local memory)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from equivalence import transform
from gpu_emulator import emulate
from xdsl.dialects import affine, gpu
from xdsl.dialects.builtin import IntegerAttr, ModuleOp

from loopopt.backend.ptx import assemble, find_ptxas, module_to_ptx
from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.loops.gpu_map import warp_lanes_fit
from loopopt.loops.nest import find_loops, trip_count
from loopopt.pass_pipeline import pipeline_text
from loopopt.passes.loop_unroll import LoopUnrollPass
from loopopt.passes.scalar_replace import ScalarReplacePass
from loopopt.runtime.cpu import run_function
from loopopt.schedule import recipes
from loopopt.schedule.summary import summarize_module

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import workloads  # noqa: E402


def _recipe(sizes: tuple[int, int, int], *tile: int, **options: Any) -> recipes.Schedule:
    text = workloads.sgemm_mlir(sizes)
    return recipes.matmul(summarize_module(parse_module(text), "sgemm"), *tile, **options)


def _emulated_pipeline(schedule: recipes.Schedule, unrolled: bool) -> str:
    """The schedule, unless `unrolled` with the compute loops rolled (the emulator is slow on
    unrolled code) and so without scalar-replace (which needs them unrolled); copy unrolls
    stay."""
    keep = []
    for step in schedule.steps:
        if not unrolled and isinstance(step, ScalarReplacePass):
            continue
        if not unrolled and isinstance(step, LoopUnrollPass) and "copy" not in (step.loop or ""):
            continue
        keep.append(step)
    return pipeline_text(keep)


def _emulated_error(pipeline: str, sizes: tuple[int, int, int], reverse: bool) -> float:
    m, n, k = sizes
    rng = np.random.default_rng(m + 3 * n + 7 * k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    module = parse_module(transform(workloads.sgemm_mlir(sizes), pipeline))
    emulate(module, reverse=reverse)
    run_function(module, workloads.SGEMM.func, [a, b, c])
    return float(np.abs(c - a.astype(np.float64) @ b.astype(np.float64)).max())


def test_warp_lanes_fit_says_why_not() -> None:
    assert warp_lanes_fit((8, 4), (16, 16, 1)) is None
    assert warp_lanes_fit((4, 8), (32, 8)) is None
    assert "product is 32" in str(warp_lanes_fit((8, 8), (16, 16)))
    assert "product is 32" in str(warp_lanes_fit((32,), (32, 8)))
    assert "does not divide" in str(warp_lanes_fit((8, 4), (4, 64)))
    assert "does not divide" in str(warp_lanes_fit((8, 4), (16, 8, 2)))


def _warp_maps(kernel: gpu.FuncOp) -> list[affine.ApplyOp]:
    return [
        op
        for op in kernel.body.block.ops
        if isinstance(op, affine.ApplyOp) and op.result.name_hint in ("tx_warp", "ty_warp")
    ]


@pytest.mark.parametrize(
    ("block", "lanes"), [((16, 16), (8, 4)), ((16, 16), (4, 8)), ((32, 8), (8, 4))]
)
def test_warps_run_lane_tiles_and_every_thread_runs_once(
    block: tuple[int, int], lanes: tuple[int, int]
) -> None:
    """The renumbering is a bijection of the block's threads, and the 32 threads of each warp
    (consecutive linear ids) cover one LX x LY rectangle of the thread grid."""
    bx, by = block
    pipeline = (
        f"loop-tile{{tile-sizes={by},{bx}}},"
        f"gpu-map-loops{{block={bx},{by} warp-lanes={lanes[0]},{lanes[1]}}}"
    )
    module = parse_module(transform(workloads.sgemm_mlir((64, 64, 8)), pipeline))
    (kernel,) = [op for op in module.walk() if isinstance(op, gpu.FuncOp)]
    x_map, y_map = (op.map.data for op in _warp_maps(kernel))
    seen: dict[int, set[tuple[int, int]]] = {}
    for ty in range(by):
        for tx in range(bx):
            point = (x_map.eval([tx, ty], [])[0], y_map.eval([tx, ty], [])[0])
            seen.setdefault((ty * bx + tx) // 32, set()).add(point)
    assert set().union(*seen.values()) == {(x, y) for x in range(bx) for y in range(by)}
    for points in seen.values():
        xs, ys = {x for x, _ in points}, {y for _, y in points}
        assert (len(xs), len(ys)) == lanes and min(xs) % lanes[0] == 0 and min(ys) % lanes[1] == 0


def test_cyclic_thread_loops_have_a_constant_trip_count() -> None:
    """A 4 x 4 fragment loop with 32 chunks on 8 threads: each thread runs 4 (unrollable);
    a partial tile (a min upper bound) keeps the plain cyclic loop."""
    pipeline = "loop-tile{tile-sizes=128,64},loop-tile{loops=i,j tile-sizes=4,4},"
    module = parse_module(
        transform(workloads.sgemm_mlir((128, 128, 8)), pipeline + "gpu-map-loops{block=8,8}")
    )
    assert [trip_count(loop) for loop in find_loops(module, "i_t2")] == [4]
    assert [trip_count(loop) for loop in find_loops(module, "j_t2")] == [2]
    module = parse_module(
        transform(workloads.sgemm_mlir((100, 128, 8)), pipeline + "gpu-map-loops{block=8,8}")
    )
    assert [trip_count(loop) for loop in find_loops(module, "i_t2")] == [None]


def test_fragment_must_divide_the_thread_tile() -> None:
    with pytest.raises(LoopoptError, match="fragment=3 must divide tm=8 and tn=4"):
        _recipe((64, 64, 16), 64, 64, 16, 8, 4, fragment=3)


CASES = [
    # sizes, tile (bm, bn, bk, tm, tn), options, unrolled
    (
        (128, 128, 48),
        (64, 64, 16, 8, 8),
        {"fragment": 4, "warp_lanes": (4, 8), "copy_vector": 4, "stages": 3},
        False,
    ),
    (
        (64, 128, 32),
        (64, 64, 16, 8, 4),
        {"fragment": 4, "warp_lanes": (8, 4), "pipelined": False},
        False,
    ),
    (
        (64, 64, 16),
        (32, 32, 8, 4, 4),
        {"fragment": 2, "warp_lanes": (8, 4), "copy_vector": 4, "stages": 3},
        True,
    ),
    (
        (100, 70, 44),
        (64, 64, 16, 8, 8),
        {"fragment": 4, "warp_lanes": (4, 8), "padded": True, "pipelined": False},
        False,
    ),
    pytest.param(  # the padded ring: 20 s in the emulator; the cases above cover its parts
        (52, 36, 40),
        (32, 32, 8, 4, 8),
        {"fragment": 4, "warp_lanes": (4, 8), "padded": True, "copy_vector": 4, "stages": 3},
        True,
        marks=pytest.mark.slow,
    ),
]


@pytest.mark.parametrize(("sizes", "tile", "options", "unrolled"), CASES)
def test_emulated_fragment_schedules(
    sizes: tuple[int, int, int], tile: tuple[int, ...], options: dict[str, Any], unrolled: bool
) -> None:
    """Strided fragments on warp tiles compute A @ B: cp.async rings and plain copies,
    dividing sizes and padded ones no tile divides (zero-filled partial tiles), rolled and
    unrolled. Register double buffering (`pipelined`) is left out: like scalar-replace, it
    carries a thread's values across barriers, which the emulator cannot."""
    schedule = _recipe(sizes, *tile, **options)
    pipeline = _emulated_pipeline(schedule, unrolled)
    assert _emulated_error(pipeline, sizes, reverse=bool(options.get("stages"))) < 1e-4


def test_emulation_catches_a_thread_that_skips_its_second_fragment() -> None:
    """The cyclic fragment loop with twice its step runs one fragment of two: C is wrong."""
    sizes = (64, 128, 32)
    schedule = _recipe(sizes, 64, 64, 16, 8, 4, False, fragment=4, warp_lanes=(8, 4))
    module = parse_module(
        transform(workloads.sgemm_mlir(sizes), _emulated_pipeline(schedule, False))
    )
    (loop,) = find_loops(module, "i_t2")
    loop.properties["step"] = IntegerAttr.from_index_int_value(2 * loop.step.value.data)
    m, n, k = sizes
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    emulate(module)
    run_function(module, workloads.SGEMM.func, [a, b, c])
    assert np.abs(c - a @ b).max() > 1e-2


PTXAS = find_ptxas()


def _ptx(schedule: recipes.Schedule, sizes: tuple[int, int, int]) -> str:
    module = parse_module(transform(workloads.sgemm_mlir(sizes), schedule.pipeline))
    assert isinstance(module, ModuleOp)
    return module_to_ptx(module)


@pytest.mark.parametrize(
    ("tile", "options", "fmas", "loads"),
    [
        ((128, 256, 8, 16, 8), {"fragment": 4}, 1024, 48),
        ((256, 128, 8, 16, 8), {"fragment": 4, "warp_lanes": (4, 8)}, 1024, 48),
        ((128, 128, 8, 8, 8), {"fragment": 4, "warp_lanes": (8, 4)}, 512, 32),
    ],
)
def test_large_thread_tiles_keep_their_accumulators_in_registers(
    tile: tuple[int, ...], options: dict[str, Any], fmas: int, loads: int
) -> None:
    """16 x 8 (and 8 x 8) tiles in a cp.async ring: every FMA of a k step, 128-bit shared
    loads only (16 rows x 2 float4 of A along k, 8 x 2 float4 of B per 8 k), no local memory."""
    schedule = _recipe((512, 512, 64), *tile, copy_vector=4, stages=3, **options)
    ptx = _ptx(schedule, (512, 512, 64))
    assert len(re.findall(r"\bfma\.rn\.f32\b", ptx)) == fmas
    assert len(re.findall(r"\bld\.shared\.v4\.[bf]32\b", ptx)) == loads
    assert not re.search(r"ld\.shared\.[bf]32|\.local\b", ptx)


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found")
def test_a_16_by_8_tile_fits_255_registers_without_spills() -> None:
    """ptxas keeps the 128 accumulators, a k step's fragments and the ring's addresses in at
    most 255 registers (1 block of 256 threads per SM) with no spills."""
    schedule = _recipe((512, 512, 64), 128, 256, 8, 16, 8, copy_vector=4, stages=3, fragment=4)
    report = assemble(_ptx(schedule, (512, 512, 64)), "sm_90", PTXAS)
    spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", report)
    assert spills and all(s == "0" for s in spills)
    (registers,) = re.findall(r"Used (\d+) registers", report)
    assert 128 < int(registers) <= 255


def test_the_model_sees_fragments_warp_tiles_and_swizzles() -> None:
    """Warp 0's lanes and offsets come from the pass's own functions: contiguous 8-wide B
    fragments put lanes 32 bytes apart (bank conflicts), strided ones do not; warp tiles
    place the lanes where arrange_warps does; a swizzled layout leaves no conflict."""
    from loopopt.schedule.cost_model import predict
    from loopopt.schedule.device import device_for
    from loopopt.schedule.resources import mapping
    from loopopt.schedule.warp import lanes, pieces

    device = device_for("sm_90")
    sizes = (4096, 4096, 4096)
    summary = summarize_module(parse_module(workloads.sgemm_mlir(sizes)), "sgemm")

    def conflicts(**options: Any) -> float:
        schedule = recipes.matmul(summary, 128, 256, 8, 16, 8, copy_vector=4, stages=3, **options)
        return predict(summary, schedule, device).bank_conflicts

    assert conflicts() > 1.3 > 1.1 > conflicts(fragment=4) >= 1.0
    assert conflicts(fragment=4, swizzle=True) == 1.0
    tiled = recipes.matmul(summary, 256, 128, 8, 16, 8, fragment=4, warp_lanes=(4, 8))
    m = mapping(summary, tiled)
    assert pieces(tiled, m) == (("j", 4, 16), ("i", 4, 16))
    warp = lanes(tiled, m, device)
    assert sorted(set(warp["j"].tolist())) == [0, 4, 8, 12]  # 4 lanes along x, 4 apart
    assert sorted(set(warp["i"].tolist())) == list(range(0, 32, 4))  # 8 along y
