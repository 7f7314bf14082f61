"""Measured tuning: time the model's top candidates on the device, verified and cached.

    ranked = sorted(candidates(summary, device), key=lambda s: predict(summary, s, device).time_us)
    result = tune(text, "sgemm", ranked, budget=20, device="NVIDIA H200")
    result.winner.key, result.winner.ms      # the fastest candidate whose outputs were right
    result.winner_pipeline                   # replay: loopopt-opt FILE -p "<pipeline>"
    for m in result.results: ...             # sorted by time: rank, key, ms (inf), status, detail

The first `budget` candidates, in the order given, are built in a pool of `jobs` processes
(passes, NVVM, PTX: tune_timers.py) and measured one at a time in a worker process
(tune_worker.py) that checks each candidate's outputs against the reference before its time
counts (tune_check.py). Compile errors, wrong results, crashes and timeouts are +inf and the
search goes on. Each measurement is written to the cache (tune_cache.py) as soon as it is
taken: a rerun is instant and an interrupted search resumes where it stopped. A one-line
progress bar goes to stderr when it is a terminal. The processes are spawned, so a script
that calls `tune` keeps its own work under `if __name__ == "__main__":`.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import shutil
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from loopopt.diagnostics import LoopoptError
from loopopt.schedule.tune_cache import Measurement, TuneCache
from loopopt.schedule.tune_check import Check, reference_check
from loopopt.schedule.tune_timers import CpuTimer, GpuTimer, Timer
from loopopt.schedule.tune_worker import Built, TimingWorker, build
from loopopt.schedule.types import Schedule

__all__ = ["CpuTimer", "GpuTimer", "Measurement", "TuneResult", "tune"]


@dataclass(frozen=True)
class TuneResult:
    """The measured candidates, fastest first (inf last, then in the order given)."""

    results: tuple[Measurement, ...]
    device: str

    @property
    def winner(self) -> Measurement | None:
        return next((m for m in self.results if m.ok), None)

    @property
    def winner_pipeline(self) -> str:
        winner = self.winner
        if winner is None:
            raise LoopoptError(f"tune: none of the {len(self.results)} candidates ran correctly")
        return winner.pipeline


def tune(
    text: str,
    func: str,
    candidates: Sequence[Schedule],
    *,
    budget: int,
    device: str,
    timer: Timer | None = None,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    check: Check | None = None,
    jobs: int | None = None,
    isolate: bool = True,
    timeout_s: float = 120.0,
) -> TuneResult:
    """Measure the first `budget` of `candidates` (see the module docstring).

    `device` names what is measured (part of the cache key); `timer` defaults to the GPU one
    (for `device` sm_80/sm_89/sm_90, else sm_90). `check` defaults to the reference check;
    `jobs` build processes (0: build here), default one per core but one; `isolate=False`
    measures in this process (no timeouts). A candidate taking over `timeout_s` is a timeout.
    """
    if budget < 1:
        raise LoopoptError(f"tune: the budget must be at least 1, got {budget}")
    if timer is None:
        timer = GpuTimer(device) if device in ("sm_80", "sm_89", "sm_90") else GpuTimer()
    check = check if check is not None else reference_check(text, func)
    chosen: list[Schedule] = []
    for schedule in candidates:
        if len(chosen) == budget:
            break
        if all(s.pipeline != schedule.pipeline for s in chosen):
            chosen.append(schedule)
    cache = TuneCache.open(cache_dir, text, func, device, (timer.name, check.name))
    done: dict[int, Measurement] = {}
    for rank, schedule in enumerate(chosen):
        hit = cache.get(schedule.pipeline)
        if hit is not None:
            done[rank] = replace(hit, rank=rank, key=schedule.key())
    todo = [rank for rank in range(len(chosen)) if rank not in done]
    bar = Progress(len(chosen), progress and sys.stderr.isatty())
    bar.update(done)
    try:
        if todo:
            search = _Search(text, func, timer, check, cache, jobs, isolate, timeout_s)
            search.run(chosen, todo, done, bar)
    finally:
        bar.close()
    ordered = sorted(done.values(), key=lambda m: (m.ms, m.rank))
    return TuneResult(tuple(ordered), device)


@dataclass(frozen=True)
class _Search:
    """What `tune` measures with; `run` measures the candidates not in the cache."""

    text: str
    func: str
    timer: Timer
    check: Check
    cache: TuneCache
    jobs: int | None
    isolate: bool
    timeout_s: float

    def run(
        self, chosen: list[Schedule], todo: list[int], done: dict[int, Measurement], bar: Progress
    ) -> None:
        pipelines = [chosen[rank].pipeline for rank in todo]
        first = 1 if self.check.uses_reference else 0
        if first:
            pipelines.insert(0, self.timer.reference_pipeline)
        jobs = self.jobs
        if jobs is None:
            jobs = min(len(pipelines), max(1, (os.cpu_count() or 2) - 1))
        with Builder(self.timer, self.text, self.func, pipelines, jobs) as builder:
            reference = None
            if first:
                built = builder.get(0)
                if built.error:
                    raise LoopoptError(
                        f"tune: the reference (@{self.func}, no schedule): {built.error}"
                    )
                reference = built.artifact
            worker = TimingWorker(
                self.timer, self.check, reference, timeout_s=self.timeout_s, isolate=self.isolate
            )
            with worker:
                for index, rank in enumerate(todo, start=first):
                    built = builder.get(index)
                    if built.error:
                        status, ms, detail = built.status, math.inf, built.error
                    else:
                        outcome = worker.measure(built.artifact)
                        status, ms, detail = outcome.status, outcome.ms, outcome.detail
                    schedule = chosen[rank]
                    m = Measurement(rank, schedule.key(), schedule.pipeline, ms, status, detail)
                    self.cache.put(m)
                    done[rank] = m
                    bar.update(done, measured=True)


class Builder:
    """Builds candidates ahead of the timing in a pool of processes (here when jobs == 0).

    When a pool process dies, the candidate waited for is rebuilt alone in a fresh pool: if
    that dies too, it is the culprit (a crash); the others are resubmitted.
    """

    def __init__(self, timer: Timer, text: str, func: str, pipelines: list[str], jobs: int):
        self.args = (timer, text, func)
        self.pipelines = pipelines
        self.jobs = jobs
        self.pool: ProcessPoolExecutor | None = None
        self.futures: dict[int, Future[Built]] = {}
        if jobs > 0:
            self._submit(0)

    def __enter__(self) -> Builder:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self._shutdown(kill=exc_type is not None)

    def _shutdown(self, kill: bool = False) -> None:
        """Stop the pool; `kill`: its builds too (an error or Ctrl-C must not wait for them)."""
        if self.pool is None:
            return
        busy = list((self.pool._processes or {}).values()) if kill else []
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in busy:
            process.kill()
        self.pool = None

    def _submit(self, start: int, stop: int | None = None) -> None:
        self._shutdown()
        self.pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"))
        for index in range(start, len(self.pipelines) if stop is None else stop):
            self.futures[index] = self.pool.submit(build, *self.args, self.pipelines[index])

    def get(self, index: int) -> Built:
        if self.jobs == 0:
            return build(*self.args, self.pipelines[index])
        try:
            return self.futures.pop(index).result()
        except BrokenProcessPool:
            pass
        self._submit(index, index + 1)
        try:
            built = self.futures.pop(index).result()
        except BrokenProcessPool:
            built = Built(error="the compiler process died", status="crash")
        self._submit(index + 1)
        return built


class Progress:
    """`tune [####......] 12/50  best 0.412 ms  matmul bm=128 …  ETA 1:05` on one line."""

    def __init__(self, total: int, enabled: bool, stream: TextIO = sys.stderr):
        self.total = total
        self.enabled = enabled
        self.stream = stream
        self.start = time.monotonic()
        self.measured = 0
        self.shown = False

    def update(self, done: dict[int, Measurement], measured: bool = False) -> None:
        self.measured += measured
        if not self.enabled:
            return
        best = min((m for m in done.values() if m.ok), key=lambda m: m.ms, default=None)
        filled = 20 * len(done) // max(1, self.total)
        line = f"tune [{'#' * filled}{'.' * (20 - filled)}] {len(done)}/{self.total}"
        if best is not None:
            line += f"  best {best.ms:.3f} ms  {best.key}"
        left = self.total - len(done)
        if self.measured and left:
            eta = (time.monotonic() - self.start) / self.measured * left
            line += f"  ETA {int(eta) // 60}:{int(eta) % 60:02d}"
        width = shutil.get_terminal_size().columns - 1
        self.stream.write("\r" + line[:width].ljust(width))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
