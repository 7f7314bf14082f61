"""The tensor-core schedules (schedule/tensor_core.py): offered for f16/bf16 matmuls only,
predicted from the device's tensor rate, and what auto-schedule picks for them."""

from __future__ import annotations

from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest
from test_gpu_mma import _run, matmul_text  # pyright: ignore[reportPrivateUsage]
from xdsl.dialects import func
from xdsl.parser import Parser

from loopopt.context import make_context
from loopopt.schedule.cost_model import predict
from loopopt.schedule.device import device_for
from loopopt.schedule.space import candidates
from loopopt.schedule.summary import summarize
from loopopt.schedule.tensor_core import applies, tensor_core
from loopopt.schedule.types import NestSummary


def _summary(m: int, n: int, k: int, element: str) -> NestSummary:
    module = Parser(make_context(), matmul_text(m, n, k, element)).parse_module()
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return summarize(fn)


def test_offered_for_half_operands_only() -> None:
    h200 = device_for("H200")
    assert applies(_summary(256, 256, 128, "bf16"), h200)
    assert applies(_summary(256, 256, 128, "f16"), h200)
    assert not applies(_summary(256, 256, 128, "f32"), h200)  # tf32 is opt-in
    assert not applies(_summary(256, 256, 128, "bf16"), replace(h200, tensor_tflops=0.0))


def test_the_space_puts_tensor_cores_first_and_pads_odd_sizes() -> None:
    h200 = device_for("H200")
    found = candidates(_summary(512, 512, 256, "bf16"), h200)
    assert found[0].recipe == "tensor_core"
    assert "gpu-mma" in found[0].pipeline and "pad-tiles" not in found[0].pipeline
    odd = [
        s for s in candidates(_summary(300, 200, 100, "bf16"), h200) if s.recipe == "tensor_core"
    ]
    assert odd and all("pad-tiles" in s.pipeline for s in odd)
    assert all(s.recipe != "tensor_core" for s in candidates(_summary(512, 512, 256, "f32"), h200))


def test_the_model_is_bound_by_the_tensor_rate_on_large_nests() -> None:
    s = _summary(4096, 4096, 4096, "bf16")
    schedule = tensor_core(s, 128, 128, 32, 64, 64)
    h200, a100 = device_for("H200"), device_for("A100")
    p = predict(s, schedule, h200)
    tflops = 2 * 4096**3 / p.time_us / 1e6
    assert 300 < tflops < 989 * 0.6  # below mma.sync's share of the data-sheet peak
    assert predict(s, schedule, a100).time_us > p.time_us  # 312 vs 989 TFLOP/s
    scalar = min(
        (c for c in candidates(s, h200) if c.recipe != "tensor_core"),
        key=lambda c: predict(s, c, h200).time_us,
    )
    assert predict(s, scalar, h200).time_us > 5 * p.time_us


@pytest.mark.parametrize(
    ("m", "n", "k"), [pytest.param(64, 128, 64, marks=pytest.mark.slow), (40, 70, 40)]
)
def test_the_recipe_runs_emulated(m: int, n: int, k: int, rng: np.random.Generator) -> None:
    """The recipe's whole pipeline (padded where the tiles do not divide; scalar-replace's
    accumulators carried across the barriers of k_t) on the emulated GPU."""
    text = matmul_text(m, n, k, "bf16")
    summary = _summary(m, n, k, "bf16")
    schedule = next(
        s
        for s in candidates(summary, device_for("H200"))
        if s.params[:5] == (("bm", 64), ("bn", 64), ("bk", 32), ("wm", 32), ("wn", 32))
    )
    a = rng.uniform(-1, 1, (m, k)).astype(ml_dtypes.bfloat16)
    b = rng.uniform(-1, 1, (k, n)).astype(ml_dtypes.bfloat16)
    c = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    expected = c + a.astype(np.float64) @ b.astype(np.float64)
    assert schedule.pipeline.endswith(",scalar-replace{loop=k_t}")
    _run(text, schedule.pipeline, [a, b, c])
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)
