"""The benchmark schedules (benchmarks/schedules.py) on the GPU, at small sizes they divide,
against float64 references on fresh random inputs. Skipped without a CUDA device."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import loopopt

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import schedules  # noqa: E402
import workloads  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    ("m", "n", "k", "pipeline"),
    [
        (192, 256, 96, schedules.SGEMM),
        (128, 128, 32, schedules.sgemm(128, 128, 8, 8, 8)),
        (128, 64, 24, schedules.sgemm(64, 64, 8, 4, 4, pipelined=False)),
        (333, 250, 77, schedules.SGEMM_PADDED),  # partial tiles in i, j and k
        (7, 5, 3, schedules.SGEMM_PADDED),  # one partial tile
        (100, 70, 45, schedules.sgemm(64, 64, 16, 8, 4, pipelined=False, padded=True)),
        # padded tiles with a 3-stage ring of zero-filling 16-byte cp.async copies
        (333, 252, 80, schedules.sgemm(64, 128, 16, 8, 4, copy_vector=4, stages=3, padded=True)),
    ],
)
def test_sgemm_schedules(m: int, n: int, k: int, pipeline: str, rng: np.random.Generator) -> None:
    _check_sgemm(m, n, k, pipeline, rng)


@pytest.mark.parametrize(
    ("stages", "m", "n", "k"), [(2, 256, 256, 64), (3, 384, 256, 80), (4, 256, 512, 48)]
)
def test_sgemm_cp_async_rings(
    stages: int, m: int, n: int, k: int, rng: np.random.Generator
) -> None:
    """The SGEMM recipe with its copies as cp.async into rings of 2-4 shared tiles (sm_80+;
    4 stages of 64x128x16: dynamic shared memory) in place of the register double buffer."""
    pipeline = schedules.sgemm(64, 128, 16, 8, 4, copy_vector=4, stages=stages)
    assert f"pipeline-copies{{loop=k_t stages={stages} async}}" in pipeline
    _check_sgemm(m, n, k, pipeline, rng)


@pytest.mark.parametrize(
    "name",
    [
        "128x128x8 8x8 ring frag4",
        "128x128x8 8x8 ring frag4 swizzle",
        "128x128x8 8x8 ring frag4 lanes8x4",
        "128x256x8 16x8 ring frag4 swizzle",
        "256x128x8 16x8 ring frag4 lanes4x8",
        "256x128x8 16x8 ring frag4 group8",
        "64x64x16 8x8 ring frag4 swizzle",
    ],
)
def test_sgemm_issue_16_variants(name: str, rng: np.random.Generator) -> None:
    """Strided fragments, warp tiles, swizzled cp.async rings (the swizzle of the copies'
    destinations runs only here: the emulator turns cp.async into plain copies) and grouped
    order, at 512 x 768 x 64 (every tile divides it)."""
    m, n, k = 512, 768, 64
    _check_sgemm(m, n, k, schedules.sgemm_variants((m, n, k))[name], rng)


@pytest.mark.parametrize("name", ["64x64x16 8x8 padded frag4", "128x128x8 8x8 padded ring frag4"])
def test_padded_sgemm_issue_16_variants(name: str, rng: np.random.Generator) -> None:
    """Padded fragments at sizes no tile divides (rows of 4 floats for the ring)."""
    m, n, k = (333, 250, 77) if "ring" not in name else (332, 252, 80)
    _check_sgemm(m, n, k, schedules.sgemm_variants((m, n, k))[name], rng)


def _check_sgemm(m: int, n: int, k: int, pipeline: str, rng: np.random.Generator) -> None:
    """C = A B through `pipeline` on the GPU, against float64, on fresh random inputs."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    text = workloads.sgemm_mlir((m, n, k))
    kern = loopopt.compile(text, workloads.SGEMM.func, pipeline=pipeline, target="gpu")
    kern(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-5


@pytest.mark.parametrize(
    ("schedule", "sizes"),
    [
        (schedules.CONV2D_8X8, (32, 256, 8, 8)),  # 16 x 2 outputs per thread
        (schedules.conv2d(8, 128, 4, cols=4), (16, 256, 5, 5)),
        (schedules.CONV2D_3X3, (64, 96, 3, 3)),
    ],
)
def test_conv2d_filter_in_constant_memory(
    schedule: str, sizes: tuple[int, int, int, int], rng: np.random.Generator
) -> None:
    """The conv2d schedules + gpu-constant-memory{arrays=F}: the filter is copied into the
    module's constant global before each launch, so a second call with another filter (same
    compiled kernel) uses the new one."""
    pipeline = f"{schedule},gpu-constant-memory{{arrays=F}}"
    text = workloads.conv_mlir(sizes)
    kern = loopopt.compile(text, workloads.CONV2D.func, pipeline=pipeline, target="gpu")
    image_shape, filt_shape, out_shape = workloads.conv_shapes(sizes)
    image = rng.standard_normal(image_shape).astype(np.float32)
    for _ in range(2):
        filt = rng.standard_normal(filt_shape).astype(np.float32)
        out = np.full(out_shape, np.nan, np.float32)  # the nest sets each output to 0 first
        kern(image, filt, out)
        ref = workloads.conv_reference([image.astype(np.float64), filt.astype(np.float64)])
        assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-5
