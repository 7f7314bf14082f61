"""Progress of slow compile steps: quiet when fast, one line per phase on stderr when slow.

    with phase("auto-schedule"):
        ...          # after 2 s:  "loopopt: auto-schedule ..."
                     # at the end: "loopopt: auto-schedule done in 10.8 s"

A phase that ends within `THRESHOLD_S` prints nothing. Lines are printed where stderr is a
terminal; LOOPOPT_PROGRESS=1 prints them anywhere, LOOPOPT_PROGRESS=0 silences every phase
(as does `quiet()`). The lines go to the stream under a `cache.StderrRecorder` (a cache hit
does not repeat them).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO

THRESHOLD_S = 2.0
"""A phase longer than this is announced."""

_quiet: ContextVar[bool] = ContextVar("loopopt_progress_quiet", default=False)


def enabled() -> bool:
    """LOOPOPT_PROGRESS=1 or 0 says; unset, only where stderr is a terminal (a pipe, a log or
    FileCheck reading a tool's stderr gets no lines whose place depends on timing)."""
    if _quiet.get():
        return False
    setting = os.environ.get("LOOPOPT_PROGRESS", "").strip().lower()
    if not setting:
        isatty = getattr(_stream(), "isatty", None)
        return bool(isatty and isatty())
    return setting not in ("0", "false", "no", "off")


@contextmanager
def quiet() -> Iterator[None]:
    """No progress lines within the block."""
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


def _stream() -> TextIO:
    stream = sys.stderr
    return getattr(stream, "inner", stream)


@contextmanager
def phase(name: str, threshold_s: float = THRESHOLD_S) -> Iterator[None]:
    """Announce `name` on stderr if it runs longer than `threshold_s`, and its time at the end."""
    if not enabled():
        yield
        return
    stream = _stream()
    start = time.perf_counter()
    announced = threading.Event()
    lock = threading.Lock()

    def announce() -> None:
        with lock:
            if not finished:
                stream.write(f"loopopt: {name} ...\n")
                stream.flush()
                announced.set()

    finished = False
    timer = threading.Timer(threshold_s, announce)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            finished = True
        if announced.is_set():
            stream.write(f"loopopt: {name} done in {time.perf_counter() - start:.1f} s\n")
            stream.flush()
