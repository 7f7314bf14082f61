"""The measured tuner with the CPU stand-in timer: verification, errors as +inf, cache, resume.

Fake timers (below) wrap `CpuTimer` to make chosen candidates wrong, crash, hang or count
calls; they are module-level frozen dataclasses so they travel to the worker processes.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from equivalence import transform
from kernels import matmul

import loopopt
from loopopt.diagnostics import LoopoptError
from loopopt.schedule.tune import CpuTimer, GpuTimer, Progress, tune
from loopopt.schedule.tune_cache import Measurement, TuneCache
from loopopt.schedule.tune_check import NumpyArrays, max_rel_error, reference_check
from loopopt.schedule.tune_timers import CpuArtifact, GpuArtifact
from loopopt.schedule.types import Schedule

TEXT, FUNC, _ = matmul(13, 11, 9, np.random.default_rng(0))
SCALE = """
func.func @scale(%A: memref<37xf32>, %B: memref<37xf32>) {
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 37 {
    %a = affine.load %A[%i] : memref<37xf32>
    %b = arith.mulf %a, %two : f32
    affine.store %b, %B[%i] : memref<37xf32>
  } {loopopt.name = "i"}
  return
}
"""
CALLS: list[str] = []
"""What the counting timer was asked to do in this process."""


def tiles(*sizes: tuple[int, ...]) -> list[Schedule]:
    return [candidate(f"loop-tile{{tile-sizes={','.join(map(str, s))}}}") for s in sizes]


def candidate(pipeline: str) -> Schedule:
    return Schedule("test", (("n", len(pipeline)),), pipeline, (), (), (1, 1, 1), "j")


def run_tune(tmp_path: Path, schedules: list[Schedule], timer: Any, **kw: Any) -> Any:
    options: dict[str, Any] = {"jobs": 0, "isolate": False, "progress": False}
    options.update(kw)
    budget = options.pop("budget", len(schedules))
    return tune(
        TEXT, FUNC, schedules, budget=budget, device="cpu", timer=timer, cache_dir=tmp_path,
        **options,
    )  # fmt: skip


@dataclass(frozen=True)
class WrongTimer(CpuTimer):
    """Candidates whose pipeline contains `wrong` add 1 to C[0, 0] after running."""

    wrong: str = "tile-sizes=4"

    def load(self, artifact: CpuArtifact) -> Any:
        kernel = super().load(artifact)
        if self.wrong not in artifact.pipeline:
            return kernel

        def broken(*args: np.ndarray) -> None:
            kernel(*args)
            args[-1][0, 0] += 1.0

        return broken


@dataclass(frozen=True)
class CountingTimer(CpuTimer):
    """Records builds and timings in CALLS; `stop_after` timings raise KeyboardInterrupt."""

    stop_after: int = -1
    name: ClassVar[str] = "cpu"

    def build(self, text: str, func: str, pipeline: str) -> CpuArtifact:
        CALLS.append(f"build {pipeline}")
        return super().build(text, func, pipeline)

    def time(self, kernel: Any, args: Any) -> float:
        if sum(c.startswith("time") for c in CALLS) == self.stop_after:
            raise KeyboardInterrupt
        CALLS.append("time")
        return super().time(kernel, args)


@dataclass(frozen=True)
class MisbehavingTimer(CpuTimer):
    """Pipelines with tile size 3 kill the compiler process, 5 the timing process, 6 hang."""

    def build(self, text: str, func: str, pipeline: str) -> CpuArtifact:
        if "tile-sizes=3" in pipeline:
            os._exit(3)
        return super().build(text, func, pipeline)

    def load(self, artifact: CpuArtifact) -> Any:
        if "tile-sizes=5" in artifact.pipeline:
            os._exit(5)
        if "tile-sizes=6" in artifact.pipeline:
            time.sleep(60)
        return super().load(artifact)


def test_a_wrong_candidate_is_rejected_before_it_is_timed(tmp_path: Path) -> None:
    result = run_tune(tmp_path, tiles((4, 4), (8, 8)), WrongTimer())
    by_rank = {m.rank: m for m in result.results}
    assert by_rank[0].status == "wrong" and by_rank[0].ms == math.inf
    assert by_rank[0].detail.startswith("max rel error")
    assert by_rank[1].status == "ok" and by_rank[1].ms > 0
    assert result.winner == by_rank[1]
    assert result.results[0] == by_rank[1]  # sorted: inf last


def test_errors_count_as_inf_and_the_search_goes_on(tmp_path: Path) -> None:
    schedules = [
        candidate("no-such-pass"),
        candidate("loop-interchange{permutation=5,5}"),
        *tiles((2, 2), (8, 8, 4)),
    ]
    result = run_tune(tmp_path, schedules, CpuTimer())
    by_rank = {m.rank: m for m in result.results}
    assert by_rank[0].status == "compile-error" and "no-such-pass" in by_rank[0].detail
    assert by_rank[1].status == "compile-error" and "permutation" in by_rank[1].detail
    assert {by_rank[2].status, by_rank[3].status} == {"ok"}
    assert [m.rank for m in result.results[2:]] == [0, 1]
    assert result.winner is not None and result.winner.rank in (2, 3)


def test_no_correct_candidate_has_no_winner_pipeline(tmp_path: Path) -> None:
    result = run_tune(tmp_path, [candidate("no-such-pass")], CpuTimer())
    assert result.winner is None
    with pytest.raises(LoopoptError, match="none of the 1 candidates ran correctly"):
        _ = result.winner_pipeline


def test_rerun_is_served_from_the_cache(tmp_path: Path) -> None:
    schedules = tiles((2, 2), (4, 4), (8, 8))
    first = run_tune(tmp_path, schedules, CpuTimer())
    CALLS.clear()
    again = run_tune(tmp_path, schedules, CountingTimer())
    assert CALLS == []  # neither built nor timed
    assert all(m.cached for m in again.results)
    assert [(m.rank, m.ms, m.status) for m in again.results] == [
        (m.rank, m.ms, m.status) for m in first.results
    ]


def test_an_interrupted_search_resumes_where_it_stopped(tmp_path: Path) -> None:
    schedules = tiles((2, 2), (3, 3), (4, 4), (8, 8))
    CALLS.clear()
    with pytest.raises(KeyboardInterrupt):
        run_tune(tmp_path, schedules, CountingTimer(stop_after=2))
    CALLS.clear()
    result = run_tune(tmp_path, schedules, CountingTimer())
    assert [m.cached for m in sorted(result.results, key=lambda m: m.rank)] == [
        True, True, False, False
    ]  # fmt: skip
    timed = [c for c in CALLS if c.startswith("build loop-tile")]
    assert timed == ["build loop-tile{tile-sizes=4,4}", "build loop-tile{tile-sizes=8,8}"]


def test_only_the_first_budget_candidates_are_measured(tmp_path: Path) -> None:
    CALLS.clear()
    result = run_tune(tmp_path, tiles((2, 2), (4, 4), (8, 8), (3, 3)), CountingTimer(), budget=2)
    assert sorted(m.rank for m in result.results) == [0, 1]
    assert CALLS.count("time") == 2
    with pytest.raises(LoopoptError, match="budget must be at least 1"):
        run_tune(tmp_path, tiles((2, 2)), CpuTimer(), budget=0)


def test_the_winner_pipeline_replays_to_the_reference_result(tmp_path: Path) -> None:
    result = run_tune(tmp_path, tiles((4, 4), (8, 8, 4)), CpuTimer())
    after = transform(TEXT, result.winner_pipeline)  # what loopopt-opt -p prints
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((13, 9), (9, 11), (13, 11))]
    expected = [a.copy() for a in args]
    loopopt.compile(TEXT, FUNC, target="cpu")(*expected)
    loopopt.compile(after, FUNC, target="cpu")(*args)
    np.testing.assert_allclose(args[2], expected[2], rtol=1e-5)


def test_crashes_and_timeouts_restart_the_workers(tmp_path: Path) -> None:
    schedules = tiles((2, 2), (3, 3), (5, 5), (6, 6), (4, 4))
    result = run_tune(tmp_path, schedules, MisbehavingTimer(), jobs=2, isolate=True, timeout_s=1.0)
    status = {m.rank: (m.status, m.detail) for m in result.results}
    assert status[0][0] == "ok" and status[4][0] == "ok"
    assert status[1] == ("crash", "the compiler process died")
    assert status[2][0] == "crash" and "exit code 5" in status[2][1]
    assert status[3] == ("timeout", "over 1 s")


def test_the_reference_decides_poison_or_shared_initial_values() -> None:
    arrays = NumpyArrays()
    check = reference_check(SCALE, "scale")
    assert check.written == (1,)
    reference = loopopt.compile(SCALE, "scale", target="cpu")
    initial, expected = check.prepare(arrays, reference)
    assert np.isnan(initial[1]).all()  # B is fully overwritten: candidates start from NaN
    assert not np.isnan(expected[0][2]).any()
    check = reference_check(TEXT, FUNC)
    initial, expected = check.prepare(arrays, loopopt.compile(TEXT, FUNC, target="cpu"))
    assert not np.isnan(initial[2]).any()  # C accumulates: same random start for both
    assert not np.allclose(expected[0][2], initial[2])


def test_relative_error_is_normalized_by_the_reference_and_nan_is_infinite() -> None:
    arrays = NumpyArrays()
    ref = np.array([[100.0, -200.0], [1.0, 0.0]], dtype=np.float32)
    got = ref.copy()
    got[1, 1] = 0.02
    assert max_rel_error(arrays, got, ref) == pytest.approx(1e-4, rel=1e-3)
    got[1, 1] = np.nan
    assert max_rel_error(arrays, got, ref) == math.inf
    assert max_rel_error(arrays, ref, ref) == 0.0


def test_nests_without_static_memref_outputs_are_refused() -> None:
    text = SCALE.replace("%B: memref<37xf32>)", "%B: memref<37xf32>, %n: index)")
    with pytest.raises(LoopoptError, match="static f32/f64/i32/i64 memrefs only"):
        reference_check(text, "scale")


def test_the_cache_ignores_foreign_or_damaged_entries(tmp_path: Path) -> None:
    cache = TuneCache.open(tmp_path, TEXT, FUNC, "cpu", ("cpu",))
    m = Measurement(0, "k", "loop-tile{tile-sizes=2}", math.inf, "timeout", "over 3 s")
    cache.put(m)
    hit = cache.get(m.pipeline)
    assert hit is not None and (hit.ms, hit.status, hit.cached) == (math.inf, "timeout", True)
    cache._path(m.pipeline).write_text("{not json")
    assert cache.get(m.pipeline) is None
    other = TuneCache.open(tmp_path, TEXT, FUNC, "NVIDIA H200", ("cpu",))
    assert other.folder != cache.folder


def test_progress_bar_shows_count_best_and_eta() -> None:
    stream = io.StringIO()
    bar = Progress(4, True, stream)
    done = {0: Measurement(0, "tile n=4", "p", 0.5, "ok"), 1: Measurement(1, "x", "q", 9.0, "ok")}
    bar.update(done, measured=True)
    bar.close()
    line = stream.getvalue()
    assert line.startswith("\rtune [##########..........] 2/4  best 0.500 ms  tile n=4  ETA ")
    assert line.endswith("\n")
    quiet = io.StringIO()
    Progress(4, False, quiet).update(done)
    assert quiet.getvalue() == ""


def test_gpu_artifacts_build_without_a_gpu_and_travel_between_processes() -> None:
    artifact = GpuTimer("sm_90").build(TEXT, FUNC, "loop-tile{tile-sizes=8,8}")
    assert isinstance(artifact, GpuArtifact)
    ((_, info),) = artifact.kernels
    assert ".entry " + info.name in info.ptx and ".target sm_90" in info.ptx
    assert "gpu.launch_func" in artifact.host and "gpu.module" not in artifact.host
    kernel = GpuTimer().load(pickle.loads(pickle.dumps(artifact)))
    assert kernel.target == "gpu"  # launches bound, host JIT-compiled; nothing runs here
