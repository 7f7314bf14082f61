"""Diagnostics: the one error type that loopopt's passes, parser front and runtime raise.

A `LoopoptError` is a user-facing, one-line message with an optional source location. The CLI
prints it as ``LOCATION: error: MESSAGE`` and exits 1; library users catch it like any exception.
Any other exception is a bug: the CLIs report it with `internal_error`, in one line that names
the pass (noted by `in_stage`) and the location of the op it was working on. What a pass leaves
as it is and wants to say so is a `warning`: one line ``LOCATION: warning: MESSAGE`` on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TextIO

from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, NameLoc
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import DiagnosticException


def format_location(loc: Attribute | None) -> str | None:
    """`file:line:col` for a FileLineColLoc (looking through NameLoc), `file` for line 0 (the
    whole input: an implicit module), else None."""
    if isinstance(loc, NameLoc):
        loc = loc.child_loc
    if isinstance(loc, FileLineColLoc):
        if loc.line.data == 0:
            return loc.filename.data
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return None


def op_location(op: Operation | None) -> str | None:
    """The location of `op` or of its closest ancestor that has a file location."""
    while op is not None:
        loc = format_location(getattr(op, "location", None))
        if loc is not None:
            return loc
        op = op.parent_op()
    return None


class LoopoptError(DiagnosticException):
    """A diagnostic: what went wrong, where, and (for passes) which pass said so."""

    def __init__(self, message: str, *, op: Operation | None = None, location: str | None = None):
        self.message = message
        self.location = location if location is not None else op_location(op)
        super().__init__(self.one_line())

    def one_line(self) -> str:
        prefix = f"{self.location}: " if self.location else ""
        return f"{prefix}error: {self.message}"

    def locate(self, location: str | None) -> None:
        """Give the diagnostic `location` if it has none (a pass's complaint about its options
        names the input it was run on)."""
        if self.location is None and location is not None:
            self.location = location
            self.args = (self.one_line(),)


class IllegalTransformError(LoopoptError):
    """A transformation refused because it would reverse a dependence."""


Said = tuple[str, str | None, str]
"""A diagnostic other than an error: (severity, location or None, message)."""

_COLLECTORS: list[list[Said]] = []


@contextmanager
def collecting() -> Iterator[list[Said]]:
    """Warnings said inside go into the list yielded instead of stderr (`--verify-diagnostics`
    checks them against `expected-warning` annotations)."""
    said: list[Said] = []
    _COLLECTORS.append(said)
    try:
        yield said
    finally:
        _COLLECTORS.remove(said)


def warning(message: str, *, op: Operation | None = None, stream: TextIO | None = None) -> None:
    """Print `LOCATION: warning: MESSAGE` (stderr by default, or to the innermost `collecting`):
    not an error, the run goes on."""
    location = op_location(op)
    if stream is None and _COLLECTORS:
        _COLLECTORS[-1].append(("warning", location, message))
        return
    prefix = f"{location}: " if location else ""
    print(f"{prefix}warning: {message}", file=stream if stream is not None else sys.stderr)


STAGE_NOTE = "loopopt: raised in "
"""Prefix of the note `in_stage` adds to an exception."""


@contextmanager
def in_stage(stage: str) -> Iterator[None]:
    """Add a note naming `stage` (a pass, `parsing`, `--emit ptx`) to an exception raised inside
    that is not a diagnostic, so that `internal_error` can say where it came from. The innermost
    stage is noted first."""
    try:
        yield
    except DiagnosticException:
        raise
    except Exception as e:
        e.add_note(f"{STAGE_NOTE}{stage}")
        raise


def internal_error(e: BaseException, location: str | None = None) -> LoopoptError:
    """An unexpected exception as one diagnostic line:
    `LOC: error: internal error in PASS (KeyError): 'x'`. LOC is the location of the innermost op
    that the failing code was working on (an `Operation` among the locals of its traceback's
    frames, innermost first; `op` before the others), else `location`; PASS is the innermost
    stage `in_stage` noted."""
    notes = [n for n in getattr(e, "__notes__", []) if n.startswith(STAGE_NOTE)]
    stage = f" in {notes[0].removeprefix(STAGE_NOTE)}" if notes else ""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    detail = f": {lines[0]}" if lines else ""
    message = f"internal error{stage} ({type(e).__name__}){detail}"
    return LoopoptError(message, location=_traceback_location(e) or location)


def _traceback_location(e: BaseException) -> str | None:
    frames: list[FrameType] = []
    tb = e.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        values = frame.f_locals
        ops = [values["op"]] if isinstance(values.get("op"), Operation) else []
        ops += [v for v in values.values() if isinstance(v, Operation)]
        for op in ops:
            if not isinstance(op, ModuleOp):
                location = op_location(op)
                if location is not None:
                    return location
    return None
