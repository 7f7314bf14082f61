"""The model has no copy of a pass's rules: what a schedule says (block shape, shared bytes,
threadIdx.x loop, tile loop names) is what its passes do to the IR."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

from loopopt.api import apply_mapped
from loopopt.context import make_context, parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.schedule import recipes, resources, roles
from loopopt.schedule.conformance import check_mapped, mapped_kernels, promised
from loopopt.schedule.device import device_for
from loopopt.schedule.space import candidates
from loopopt.schedule.summary import summarize_module
from loopopt.schedule.types import NestSummary, Schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402

NESTS = {
    "matmul": workloads.sgemm_mlir((256, 256, 256)),
    "matmul-odd": workloads.sgemm_mlir((200, 136, 72)),
    "matmul-atb": workloads.sgemm_atb_mlir((256, 256, 256)),
    "conv2d": workloads.conv_mlir((256, 256, 3, 3)),
    "conv3d": workloads.conv_mlir((32, 32, 32, 3, 3, 3)),
    "stencil": workloads.jacobi2d_mlir((256, 250)),
}
SAMPLES = 3
"""Candidates checked per nest: spread over the space (first, last and between)."""


def _sample(found: list[Schedule]) -> list[Schedule]:
    picks = {round(i * (len(found) - 1) / (SAMPLES - 1)) for i in range(SAMPLES)}
    shared = [s for s in found if s.shared]  # every variant of staging that the space offers
    rings = [s for s in shared if s.stages > 1][:1]
    padded = [s for s in shared if dict(s.params).get("padded")][:1]
    return [found[i] for i in sorted(picks)] + rings + padded


def _summary(text: str) -> NestSummary:
    return summarize_module(parse_module(text))


SLOW = {"matmul-atb", "conv3d"}


@pytest.mark.parametrize(
    "nest", [pytest.param(n, marks=[pytest.mark.slow] * (n in SLOW)) for n in sorted(NESTS)]
)
def test_mapped_kernels_are_what_the_schedule_says(nest: str) -> None:
    """Block shape and shared bytes of the mapped IR equal the schedule's own description
    (for matmul: promote's buffers as the model sizes them, transposed, padded, in rings)."""
    text = NESTS[nest]
    summary = _summary(text)
    found = candidates(summary, device_for("H200"))
    assert found
    for s in _sample(found):
        ctx = make_context()
        module = parse_module(text, "<test>", ctx)
        apply_mapped(ctx, module, summary.func, list(s.passes))
        check_mapped(module, s, promised(summary, s))
        if s.shared:
            assert mapped_kernels(module)[0].shared_bytes > 0


def test_a_wrong_description_is_reported() -> None:
    summary = _summary(NESTS["matmul"])
    s = recipes.matmul(summary, 64, 64, 16, 4, 4)
    ctx = make_context()
    module = parse_module(NESTS["matmul"], "<test>", ctx)
    apply_mapped(ctx, module, summary.func, list(s.passes))
    promise = promised(summary, s)
    wrong = type(promise)(promise.threads, promise.shared_bytes + 16)
    with pytest.raises(LoopoptError, match=r"says blocks of 16x16x1 threads and \d+ bytes"):
        check_mapped(module, s, wrong)


def test_the_model_asks_the_passes() -> None:
    """The model's copies of pass rules are gone: it calls the passes' own functions (the
    thread mapping's rank, promote's buffer shape, the lowering's buffer placement, loop-tile's
    names) and spells none of their arithmetic."""
    assert "thread_x_rank(" in inspect.getsource(roles.coalescing_rank)
    assert "buffer_shape(" in inspect.getsource(resources.shared_shape)
    assert "slot_bytes(" in inspect.getsource(resources.shared_bytes)
    assert "fresh_name(" in inspect.getsource(recipes.fresh)
    model = "".join(inspect.getsource(m) for m in (roles, resources, recipes))
    for copied in ('f"{base}{counter}"', "extents[-1] + ", "// SHARED_ALIGN", "abs(access."):
        assert copied not in model, copied
