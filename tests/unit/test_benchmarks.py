"""The benchmark harness (benchmarks/): every workload's nest is valid MLIR and computes its
reference on the CPU at a small size; the rows, costs and schedules are the ones of issue 5;
the table shows the columns it promises. (The timings themselves run on the GPU only.)"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.passes import PassPipeline

import loopopt
from loopopt.context import parse_module
from loopopt.universe import all_passes

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import run  # noqa: E402
import schedules  # noqa: E402
import workloads  # noqa: E402
from workloads import WORKLOADS, Workload  # noqa: E402

NAMES = [w.name for w in WORKLOADS]


def _rel_error(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("w", WORKLOADS, ids=NAMES)
def test_mlir_parses_and_names_its_loops(w: Workload) -> None:
    module = parse_module(w.mlir(), w.name)
    names = [op.attributes["loopopt.name"].data for op in module.walk() if op.name == "affine.for"]
    expected = {"sgemm": "ijk", "sgemm_atb": "ijk", "conv2d": "ijpq", "conv3d": "ijlpqr"}
    assert "".join(names) == expected.get(w.func, "ij")


@pytest.mark.parametrize("w", WORKLOADS, ids=NAMES)
def test_small_nest_on_cpu_matches_reference(w: Workload) -> None:
    small = w.small()
    kern = loopopt.compile(small.mlir(), small.func, pipeline="", target="cpu")
    inputs = small.inputs(seed=7)
    out = np.full(small.output_shape, small.output_fill, np.float32)
    kern(*inputs, out)
    ref = small.reference([x.astype(np.float64) for x in inputs])
    assert ref.shape == out[small.written].shape
    assert _rel_error(out[small.written], ref) < 1e-6
    if not small.family.accumulate:  # the poison stays outside the written region
        assert np.isnan(out).sum() == out.size - ref.size


def test_references_are_the_textbook_formulas() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_allclose(workloads.sgemm_reference([a, b]), a @ b)
    np.testing.assert_allclose(workloads.sgemm_atb_reference([a.T, b]), a @ b)
    image, filt = rng.standard_normal((6, 7)), rng.standard_normal((3, 2))
    direct = [
        [
            sum(image[i + p, j + q] * filt[p, q] for p in range(3) for q in range(2))
            for j in range(6)
        ]
        for i in range(4)
    ]
    np.testing.assert_allclose(workloads.conv_reference([image, filt]), direct)
    grid = rng.standard_normal((4, 5))
    out = workloads.jacobi2d_reference([grid])
    point = grid[1, 2] + grid[0, 2] + grid[2, 2] + grid[1, 1] + grid[1, 3]
    assert out.shape == (2, 3) and out[0, 1] == pytest.approx(0.2 * point)


def test_rows_of_issue_5() -> None:
    expected = {
        "sgemm-4096": (4096, 4096, 4096),
        "sgemm-8192": (8192, 8192, 8192),
        "sgemm-1088": (1088, 1088, 1088),
        "sgemm-2496": (2496, 2496, 2496),
        "sgemm-5312": (5312, 5312, 5312),
        "sgemm-8000": (8000, 8000, 8000),
        "sgemm-1000": (1000, 1000, 1000),  # odd sizes: padded tiles
        "sgemm-3001": (3001, 3001, 3001),
        "sgemm-atb-2048": (2048, 2048, 2048),
        "conv2d-4096-3x3": (4096, 4096, 3, 3),
        "conv2d-4096-5x5": (4096, 4096, 5, 5),
        "conv2d-4096-8x8": (4096, 4096, 8, 8),
        "conv2d-4096-16x16": (4096, 4096, 16, 16),
        "conv2d-8000-8x8": (8000, 8000, 8, 8),
        "conv2d-8000-16x16": (8000, 8000, 16, 16),
        "conv3d-608-8x8x8": (608, 608, 608, 8, 8, 8),
        "jacobi2d-8192": (8192, 8192),
    }
    assert {w.name: w.sizes for w in WORKLOADS} == expected
    quick = [w.name for w in workloads.workloads(quick=True)]
    assert "sgemm-4096" in quick and "jacobi2d-8192" in quick and len(quick) < len(WORKLOADS)
    assert [w.name for w in workloads.workloads(only=["conv2d-8000"])] == [
        "conv2d-8000-8x8",
        "conv2d-8000-16x16",
    ]


def test_costs() -> None:
    rows = {w.name: w for w in WORKLOADS}
    n = 4096
    assert rows["sgemm-4096"].flops == 2 * n**3
    assert rows["conv2d-4096-16x16"].flops == 2 * 16**2 * n**2
    assert rows["conv2d-4096-3x3"].shapes == [(4098, 4098), (3, 3), (4096, 4096)]
    assert rows["conv3d-608-8x8x8"].flops == 2 * 8**3 * 608**3
    assert rows["conv3d-608-8x8x8"].shapes[0] == (615, 615, 615)
    jacobi = rows["jacobi2d-8192"]
    assert jacobi.flops == 5 * 8190**2
    assert jacobi.bytes == 4 * (8192**2 + 8190**2)
    assert rows["sgemm-4096"].bytes == 3 * 4 * n**2
    # ANCHORS.md: the 3x3 bandwidth floor 0.032 ms at 4.22 TB/s, the 16x16 FMA floor 0.13 ms.
    assert rows["conv2d-4096-3x3"].bytes / 4.22e12 * 1e3 == pytest.approx(0.032, abs=5e-4)
    assert rows["conv2d-4096-16x16"].flops / 66.9e12 * 1e3 == pytest.approx(0.13, abs=5e-3)


@pytest.mark.parametrize("w", WORKLOADS, ids=NAMES)
def test_schedule_is_a_pipeline(w: Workload) -> None:
    name, pipeline = w.schedule(schedules)
    assert name in (*w.schedule_names, w.family.schedule)
    PassPipeline.parse_spec(all_passes(), pipeline)


def test_schedule_prefers_the_specific_name() -> None:
    class Module:
        SGEMM = "generic"
        SGEMM_1088 = "for 1088"

    rows = {w.name: w for w in WORKLOADS}
    assert rows["sgemm-1088"].schedule(Module) == ("SGEMM_1088", "for 1088")
    assert rows["sgemm-4096"].schedule(Module) == ("SGEMM", "generic")


def _fake_report() -> run.Report:
    sgemm = run.Row(
        "sgemm-4096",
        "SGEMM",
        2 * 4096.0**3,
        3 * 4 * 4096.0**2,
        2.05,
        True,
        run.Timing("loopopt", ms=4.0, runs=20, rel_error=3e-7),
        [
            run.Timing("cuBLAS", ms=2.684, runs=20, rel_error=2e-7),
            run.Timing("Triton", error="ImportError: triton is not installed"),
            run.Timing("MLIR", ms=141.69, quoted=True),
        ],
    )
    jacobi = run.Row(
        "jacobi2d-8192",
        "JACOBI2D",
        5 * 8190.0**2,
        4 * (8192.0**2 + 8190.0**2),
        0.127,
        False,
        run.Timing("loopopt", ms=0.254, runs=20, rel_error=0.5),
        [run.Timing("torch", ms=1.22, runs=20, rel_error=1e-8)],
    )
    broken = run.Row(
        "conv2d-4096-3x3",
        "CONV2D",
        1.0,
        1.0,
        0.032,
        False,
        run.Timing("loopopt", error="<compile>: error: no loop named 'x'"),
        [run.Timing("cuDNN", ms=1.18, runs=20, rel_error=1e-7)],
    )
    rows = [sgemm, jacobi, broken]
    return run.Report("NVIDIA H200", "2026-11-21 10:00 UTC", 20, 66.9e12, "x", 4.22e12, rows)


def test_table_columns_and_cells() -> None:
    report = _fake_report()
    text = run.format_table(report)
    lines = text.splitlines()
    assert "NVIDIA H200" in lines[0] and "2026-11-21" in lines[0]
    header = next(line for line in lines if line.startswith("workload"))
    columns = header.split("  ")
    for column in ["loopopt ms", "rate", "% floor", "cuBLAS ms", "vs cuBLAS", "cuDNN ms"]:
        assert column in header
    for column in ["vs cuDNN", "Triton ms", "vs Triton", "torch ms", "vs torch", "MLIR ms"]:
        assert column in header
    assert "rel. err" in header and columns[-1].strip() == "note"
    assert header.index("cuBLAS ms") < header.index("cuDNN ms") < header.index("Triton ms")
    sgemm = next(line for line in lines if line.startswith("sgemm-4096"))
    assert "34.36 TFLOP/s" in sgemm  # 2 * 4096^3 flop in 4 ms
    assert "0.67x" in sgemm  # cuBLAS 2.684 ms / 4 ms
    assert "141.690*" in sgemm and "35.42x" in sgemm
    assert "51%" in sgemm  # floor 2.05 ms / 4 ms
    assert "Triton: ImportError: triton is not installed" in sgemm
    jacobi = next(line for line in lines if line.startswith("jacobi2d-8192"))
    assert "GB/s" in jacobi and "4.80x" in jacobi and "50%" in jacobi
    assert "WRONG 5.0e-01" in jacobi
    broken = next(line for line in lines if line.startswith("conv2d-4096-3x3"))
    assert "no loop named 'x'" in broken and "1.180" in broken
    assert [row.failed() for row in report.rows] == [False, True, True]
    assert any(line.startswith("* quoted") for line in lines)


def test_json_has_ratios_and_floor_shares() -> None:
    data = run.to_json(_fake_report())
    sgemm = data["rows"][0]
    assert sgemm["ratios"]["cuBLAS"] == pytest.approx(2.684 / 4.0)
    assert sgemm["ratios"]["Triton"] is None
    assert sgemm["floor_share"] == pytest.approx(2.05 / 4.0)
    assert data["gpu"] == "NVIDIA H200" and math.isclose(data["copy_bytes_per_s"], 4.22e12)


def test_repeats_keep_slow_timings_short() -> None:
    assert run.repeats(0.001, 20) == (3, 20)
    assert run.repeats(0.5, 20) == (1, 10)
    assert run.repeats(10.0, 20) == (1, 3)


def test_sgemm_variants_apply_to_their_sizes() -> None:
    """--sgemm-variants: full-tile candidates where their block tile divides the sizes,
    padded ones elsewhere (padded rings only with rows of 4 floats), the old hand schedules
    among them; only A·B rows, each once per variant."""
    big = schedules.sgemm_variants((4096, 4096, 4096))
    assert big["64x128x32 8x4 ring (SGEMM)"] == schedules.SGEMM
    assert (
        "loop-tile{loops=i,j tile-sizes=4,4},gpu-map-loops{block=16,16 max-registers=cap "
        in (big["256x128x8 16x8 ring frag4"])
    )
    assert not any("padded" in name for name in big)
    odd = schedules.sgemm_variants((3001, 3001, 3001))
    assert odd["64x64x16 8x4 padded (SGEMM_PADDED)"] == schedules.SGEMM_PADDED
    assert all("padded" in name and "ring" not in name for name in odd)
    assert "128x128x8 8x8 padded ring frag4" in schedules.sgemm_variants((1000, 1000, 1000))
    pairs = run.variant_runs(workloads.workloads(only=["sgemm-4096", "sgemm-atb", "conv2d"]))
    assert [w.name for w, _ in pairs] == ["sgemm-4096"] * len(big)
    assert [variant for _, variant in pairs] == list(big.items())
