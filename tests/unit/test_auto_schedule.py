"""auto-schedule: the model's choice, applied; the same results as the nest (CPU and GPU)."""

from __future__ import annotations

import kernels
import numpy as np
import pytest

import loopopt
from loopopt.context import make_context, parse_module
from loopopt.loops.nest import functions
from loopopt.passes.auto_schedule import choose, launched_kernels, split_pipeline
from loopopt.passes.gpu_map_loops import GpuMapLoopsPass
from loopopt.schedule.device import device_for


def _matmul_ref(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)


def test_choice_is_the_best_prediction_and_deterministic(rng: np.random.Generator) -> None:
    text, name, _ = kernels.matmul(64, 64, 32, rng)
    (fn,) = functions(parse_module(text), name)
    first, second = choose(fn, device_for("sm_90")), choose(fn, device_for("sm_90"))
    times = [t for _, t in first.ranked]
    assert times == sorted(times) and len(times) > 50
    assert [s.key() for s, _ in first.ranked] == [s.key() for s, _ in second.ranked]


def test_a_nest_without_summary_keeps_the_default_mapping(rng: np.random.Generator) -> None:
    text, name, _ = kernels.jacobi_1d(4, 40, rng)
    (fn,) = functions(parse_module(text), name)
    choice = choose(fn, device_for("sm_90"))
    assert not choice.ranked and choice.reason


def test_pipeline_splits_at_the_gpu_mapping() -> None:
    host, kernel = split_pipeline("loop-tile{tile-sizes=8},gpu-map-loops,loop-unroll{unroll-full}")
    assert [p.name for p in host] == ["loop-tile", "gpu-map-loops"]
    assert [p.name for p in kernel] == ["loop-unroll"]


@pytest.mark.parametrize("sizes", [(37, 29, 23), (64, 64, 32)])
def test_cpu_runs_the_loop_level_part(
    sizes: tuple[int, int, int], rng: np.random.Generator
) -> None:
    text, name, (a, b, c) = kernels.matmul(*sizes, rng)
    ref = _matmul_ref(a, b, c)
    loopopt.compile(text, name, pipeline="auto-schedule{device=sm_90}", target="cpu")(a, b, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


def test_kernel_schedule_auto_on_the_cpu(rng: np.random.Generator) -> None:
    @loopopt.kernel
    def gemm(A, B, C):  # type: ignore[no-untyped-def]
        for i in range(C.shape[0]):
            for j in range(C.shape[1]):
                for k in range(A.shape[1]):
                    C[i, j] += A[i, k] * B[k, j]

    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((33, 20), (20, 48)))
    c = np.zeros((33, 48), np.float32)
    ref = _matmul_ref(a, b, c)
    gemm(a, b, c, schedule="auto", target="cpu")
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [(256, 256, 128), (100, 70, 90)])
def test_gpu_runs_the_choice(sizes: tuple[int, int, int], rng: np.random.Generator) -> None:
    text, name, (a, b, c) = kernels.matmul(*sizes, rng)
    ref = _matmul_ref(a, b, c)
    loopopt.compile(text, name, pipeline="auto-schedule", target="gpu")(a, b, c)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


def test_kernels_launched_by_the_function(rng: np.random.Generator) -> None:
    text, name, _ = kernels.matmul(64, 64, 32, rng)
    module = parse_module(text)
    GpuMapLoopsPass().apply(make_context(), module)
    (fn,) = functions(module, name)
    assert launched_kernels(fn) == [f"{name}_k0"]
