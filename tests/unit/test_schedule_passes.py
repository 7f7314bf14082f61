"""Schedules as typed values: the pass objects recipes build print as the pipeline text, and
the text parses back to equal objects (pass_pipeline.pass_text / pipeline_text)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from loopopt.context import parse_module
from loopopt.pass_pipeline import parse_pipeline, pass_text, pipeline_text
from loopopt.passes.gpu_map_loops import GpuMapLoopsPass
from loopopt.passes.loop_tile import LoopTilePass
from loopopt.passes.loop_unroll import LoopUnrollPass
from loopopt.passes.pipeline_copies import PipelineCopiesPass
from loopopt.passes.promote import PromotePass
from loopopt.schedule import recipes
from loopopt.schedule.device import device_for
from loopopt.schedule.space import candidates
from loopopt.schedule.summary import summarize_module
from loopopt.schedule.types import Schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402

ROWSUM = """
func.func @rowsum(%A: memref<40x10xf32>, %S: memref<40xf32>) {
  affine.for %i = 0 to 40 {
    affine.for %k = 0 to 10 {
      %a = affine.load %A[%i, %k] : memref<40x10xf32>
      %s = affine.load %S[%i] : memref<40xf32>
      %t = arith.addf %s, %a : f32
      affine.store %t, %S[%i] : memref<40xf32>
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  return
}
"""

NESTS = {
    "sgemm": workloads.sgemm_mlir((4096, 4096, 4096)),
    "sgemm-odd": workloads.sgemm_mlir((1000, 1000, 1000)),
    "sgemm-atb": workloads.sgemm_atb_mlir((2048, 2048, 2048)),
    "conv2d": workloads.conv_mlir((4096, 4096, 3, 3)),
    "conv3d": workloads.conv_mlir((256, 256, 256, 3, 3, 3)),
    "jacobi2d": workloads.jacobi2d_mlir((1000, 999)),
    "rowsum": ROWSUM,
}


@pytest.mark.parametrize("nest", sorted(NESTS))
def test_every_candidate_round_trips_through_its_text(nest: str) -> None:
    """Each candidate's passes print as its pipeline, which parses back to equal passes."""
    summary = summarize_module(parse_module(NESTS[nest]))
    found = candidates(summary, device_for("H200"))
    assert found
    for s in found:
        assert s.steps, s.key()  # recipes build pass objects
        assert tuple(parse_pipeline(s.pipeline)) == s.steps, s.pipeline
        assert pipeline_text(s.steps) == s.pipeline


def test_a_schedule_is_its_passes() -> None:
    summary = summarize_module(parse_module(workloads.sgemm_mlir((4096, 4096, 4096))))
    s = recipes.matmul(summary, 128, 64, 16, 8, 4, copy_vector=4, stages=3)
    assert s.passes[0] == LoopTilePass(tile_sizes=(128, 64, 16))
    assert PromotePass(loop="k_t", arrays=("A",), memory_space="shared", pad=4) in s.passes
    assert GpuMapLoopsPass(block=(16, 16), max_registers="cap", copy_vector=4) in s.passes
    assert PipelineCopiesPass(loop="k_t", stages=3, cp_async=True) in s.passes
    assert "pipeline-copies{loop=k_t stages=3 async}" in s.pipeline


def test_a_schedule_read_from_text_parses_its_passes() -> None:
    """A schedule rebuilt from its text (a results file) has the same passes and equals it."""
    summary = summarize_module(parse_module(workloads.jacobi2d_mlir((64, 64))))
    s = recipes.stencil(summary, 32, 64, 4)
    text_only = replace(s, steps=())
    assert text_only.steps == () and text_only.pipeline == s.pipeline
    assert text_only.passes == s.passes and text_only == s and hash(text_only) == hash(s)


def test_steps_and_a_different_text_are_refused() -> None:
    with pytest.raises(ValueError, match="is not its steps'"):
        Schedule(
            "map", (), "loop-unroll", (), (), (1, 1, 1), "i", steps=(LoopUnrollPass(loop="i"),)
        )


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (LoopTilePass(), "loop-tile"),
        (LoopTilePass(loops=("i", "j"), tile_sizes=(4, 0)), "loop-tile{loops=i,j tile-sizes=4,0}"),
        (LoopUnrollPass(loop="k"), "loop-unroll{unroll-factor=4 loop=k}"),
        (LoopUnrollPass(unroll_full=True, loop="k"), "loop-unroll{unroll-full loop=k}"),
        (PromotePass(arrays=("A", "B"), transpose=True), "promote{arrays=A,B transpose}"),
        (GpuMapLoopsPass(func="my kernel"), 'gpu-map-loops{func="my kernel"}'),
    ],
)
def test_pass_text_is_mlir_spelling(p: object, text: str) -> None:
    assert pass_text(p) == text  # type: ignore[arg-type]
    assert parse_pipeline(text) == [p]
