"""The measuring side of the tuner: builds, verified runs, and the worker process that times.

    timer = CpuTimer()                                  # or GpuTimer("sm_90")
    artifact = build(timer, text, "matmul", pipeline)   # CPU-bound: may run in a pool process
    with TimingWorker(timer, check, reference, timeout_s=60) as worker:
        worker.measure(artifact)    # Outcome("ok", 0.41, "") | ("wrong", inf, "max rel error …")

A timer builds a picklable artifact from (text, func, pipeline) — on the GPU the passes, the
NVVM lowering and the PTX, the slow part, so that a pool of processes can build in parallel —
loads it into a callable and times it. The worker runs the reference once (`check.prepare`),
then for each artifact: a run on fresh copies of the initial arguments, the comparison with
the expected outputs (max |got − ref| / max |ref| in float64 < tolerance), and only then the
timing. A crash or a timeout kills the worker process (a crashed kernel can poison the CUDA
context); the next `measure` starts a fresh one.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from loopopt.diagnostics import LoopoptError
from loopopt.schedule.tune_check import Check, Expected, max_rel_error
from loopopt.schedule.tune_timers import Timer

INF = math.inf


@dataclass(frozen=True)
class Outcome:
    """What measuring one candidate gave: status ok / wrong / compile-error / crash / timeout."""

    status: str
    ms: float = INF
    detail: str = ""


@dataclass(frozen=True)
class Built:
    """A candidate after the build step: an artifact, or the compile error."""

    artifact: Any = None
    error: str = ""
    status: str = "compile-error"
    """The status when `error` is set (a compiler process that died: crash)."""


def build(timer: Timer, text: str, func: str, pipeline: str) -> Built:
    """`timer.build` with every failure turned into a compile error (pool entry point)."""
    try:
        return Built(timer.build(text, func, pipeline))
    except LoopoptError as e:
        return Built(error=e.message)
    except Exception as e:  # a pass or backend bug is this candidate's compile error
        return Built(error=_one_line(e))


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


class Session:
    """The measuring state inside a worker: initial arguments and expected outputs."""

    def __init__(self, timer: Timer, check: Check, reference: Any):
        self.timer = timer
        self.check = check
        self.arrays = timer.arrays()
        kernel = timer.load(reference) if reference is not None else None
        self.initial, self.expected = check.prepare(self.arrays, kernel)

    def measure(self, artifact: Any) -> Outcome:
        try:
            kernel = self.timer.load(artifact)
        except LoopoptError as e:
            return Outcome("compile-error", detail=e.message)
        except Exception as e:
            return Outcome("compile-error", detail=_one_line(e))
        arrays = self.arrays
        try:
            args = arrays.copies(self.initial)
            kernel(*args)
            error = _error(arrays, args, self.expected)
            if not error < self.check.tolerance:
                return Outcome("wrong", detail=f"max rel error {error:.1e}")
            ms = self.timer.time(kernel, arrays.copies(self.initial))
        except LoopoptError as e:
            return Outcome("crash", detail=e.message)
        except Exception as e:
            return Outcome("crash", detail=_one_line(e))
        return Outcome("ok", ms)


def _error(arrays: Any, args: Sequence[Any], expected: Sequence[Expected]) -> float:
    worst = 0.0
    for index, region, value in expected:
        got = args[index][region] if region else args[index]
        worst = max(worst, max_rel_error(arrays, got, value))
    return worst


def _serve(conn: Connection, timer: Timer, check: Check, reference: Any) -> None:
    """The worker process: set up a Session, then measure each artifact received."""
    try:
        session = Session(timer, check, reference)
    except LoopoptError as e:
        conn.send(("error", e.message))
        return
    except Exception as e:
        conn.send(("error", _one_line(e)))
        return
    conn.send(("ready", ""))
    while True:
        artifact = conn.recv()
        if artifact is None:
            return
        conn.send(session.measure(artifact))


class TimingWorker:
    """Measures artifacts in a worker process (spawned), restarted after a crash or a timeout.

    With `isolate=False` it measures in this process instead (no timeouts; for tests and
    stand-in timers): a crash then is an exception, a hang hangs.
    """

    def __init__(
        self,
        timer: Timer,
        check: Check,
        reference: Any,
        *,
        timeout_s: float,
        setup_timeout_s: float = 900.0,
        isolate: bool = True,
    ):
        self.setup = (timer, check, reference)
        self.timeout_s = timeout_s
        self.setup_timeout_s = setup_timeout_s
        self.isolate = isolate
        self.session: Session | None = None
        self.process: Any = None
        self.conn: Connection | None = None

    def __enter__(self) -> TimingWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def measure(self, artifact: Any) -> Outcome:
        if not self.isolate:
            if self.session is None:
                self.session = _setup_here(*self.setup)
            return self.session.measure(artifact)
        conn = self._connection()
        try:
            conn.send(artifact)
        except OSError:  # it died since the last candidate
            code = self._stop()
            return Outcome("crash", detail=f"worker died (exit code {code})")
        if not conn.poll(self.timeout_s):
            self._stop()
            return Outcome("timeout", detail=f"over {self.timeout_s:g} s")
        try:
            outcome: Outcome = conn.recv()
        except (EOFError, OSError):
            code = self._stop()
            return Outcome("crash", detail=f"worker died (exit code {code})")
        if outcome.status == "crash":
            self._stop()  # the CUDA context may be unusable now
        return outcome

    def _connection(self) -> Connection:
        if self.conn is not None and self.process.is_alive():
            return self.conn
        self._stop()
        spawn = multiprocessing.get_context("spawn")
        parent, child = spawn.Pipe()
        self.process = spawn.Process(target=_serve, args=(child, *self.setup), daemon=True)
        self.process.start()
        child.close()
        self.conn = parent
        if not parent.poll(self.setup_timeout_s):
            self._stop()
            raise LoopoptError(f"tune: the reference run took over {self.setup_timeout_s:g} s")
        try:
            status, message = parent.recv()
        except (EOFError, OSError):
            code = self._stop()
            raise LoopoptError(f"tune: the reference run crashed (exit code {code})") from None
        if status != "ready":
            self._stop()
            raise LoopoptError(f"tune: the reference run failed: {message}")
        return parent

    def _stop(self) -> int | None:
        """End the worker process (asked nicely if it is idle, killed if not); its exit code."""
        if self.process is None:
            return None
        process, conn = self.process, self.conn
        self.process = self.conn = None
        if conn is not None and process.is_alive():
            with contextlib.suppress(OSError):
                conn.send(None)
        process.join(1.0)
        if process.is_alive():
            process.kill()
            process.join()
        if conn is not None:
            conn.close()
        return process.exitcode

    def close(self) -> None:
        self._stop()
        self.session = None


def _setup_here(timer: Timer, check: Check, reference: Any) -> Session:
    try:
        return Session(timer, check, reference)
    except LoopoptError as e:
        raise LoopoptError(f"tune: the reference run failed: {e.message}") from None
