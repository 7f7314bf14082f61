"""auto-schedule on contractions written with a scalar accumulator, the way Python users write
them (`s = 0.0; for k: s += A[i, k] * B[k, j]; C[i, j] = alpha * s`): the accumulator is kept
in C instead (reduction-to-memory), which splits into a fill, the memory-form contraction that
the matmul recipe takes, and the epilogue. It got the default mapping (a thread per output, or
a block of 256 threads per output for A·Bᵀ). Reductions that no recipe takes keep their
iter_args (gpu-map-loops' block and grid reductions)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from gpu_emulator import emulate
from xdsl.dialects import gpu
from xdsl.passes import PassPipeline

import loopopt.passes.auto_schedule as auto_schedule
from loopopt.context import make_context, verify_ir
from loopopt.dialects.loopopt import MAPPING
from loopopt.frontend.kernel import Kernel
from loopopt.runtime.cpu import run_function
from loopopt.universe import all_passes


def scaled_product(A, B, C, alpha):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = alpha * s


def scores(Q, K, S):
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            s = 0.0
            for d in range(Q.shape[1]):
                s += Q[i, d] * K[j, d]
            S[i, j] = s


def row_sums(A, out):
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j]
        out[i] = s


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _mappings(function: Callable[..., None], args: list[Any]) -> tuple[Any, list[str]]:
    module = Kernel(function).module(*args)
    PassPipeline.parse_spec(all_passes(), "auto-schedule{device=sm_90}").apply(
        make_context(), module
    )
    verify_ir(module, "scheduled")
    found = [str(op.attributes[MAPPING]) for op in module.walk() if isinstance(op, gpu.FuncOp)]
    return module, found


def test_a_scalar_accumulator_matmul_gets_the_matmul_recipe(rng: np.random.Generator) -> None:
    """A fill, the register-tiled contraction (its threads on the tile loops `*_t2`), and the
    scaling epilogue; A·Bᵀ without a block per output."""
    args = [_f32(rng, 19, 11), _f32(rng, 11, 23), np.zeros((19, 23), np.float32), 0.5]
    _, found = _mappings(scaled_product, args)
    assert len(found) == 3 and sum('thread_x = "j_t2"' in m for m in found) == 1, found
    _, found = _mappings(scores, [_f32(rng, 19, 16), _f32(rng, 23, 16), _f32(rng, 19, 23)])
    assert any('thread_x = "j_t2"' in m for m in found), found
    assert not any("one block" in m for m in found), found


def test_a_reduction_no_recipe_takes_keeps_its_iter_args() -> None:
    args = [np.zeros((4096, 1000), np.float32), np.zeros(4096, np.float32)]
    _, found = _mappings(row_sums, args)
    assert found == ['{region = "one block", threads_x = "j", block_x = "i"}']


@pytest.mark.slow
@pytest.mark.parametrize("function", [scaled_product, scores], ids=lambda f: f.__name__)
def test_the_memory_form_computes_what_python_does(
    function: Callable[..., None], rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Emulated at sizes no tile divides, without the register stages that the emulator
    cannot run (pipeline-copies, scalar-replace: tested on their own)."""
    split = auto_schedule.split_pipeline

    def without_stages(pipeline: Any) -> Any:
        host, kernel = split(pipeline)
        return host, [p for p in kernel if p.name not in ("pipeline-copies", "scalar-replace")]

    monkeypatch.setattr(auto_schedule, "split_pipeline", without_stages)
    if function is scaled_product:
        args = [_f32(rng, 19, 11), _f32(rng, 11, 23), np.zeros((19, 23), np.float32), 0.5]
    else:
        args = [_f32(rng, 19, 16), _f32(rng, 23, 16), np.zeros((19, 23), np.float32)]
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    function(*expected)
    module, found = _mappings(function, args)
    assert any("_t2" in m for m in found), found
    emulate(module, reverse=True)
    run_function(module, function.__name__, args)
    np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4)
