"""Diagnostics: the one error type that loopopt's passes, parser front and runtime raise.

A `LoopoptError` is a user-facing, one-line message with an optional source location. The CLI
prints it as ``LOCATION: error: MESSAGE`` and exits 1; library users catch it like any exception.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc, NameLoc
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import DiagnosticException


def format_location(loc: Attribute | None) -> str | None:
    """`file:line:col` for a FileLineColLoc (looking through NameLoc), else None."""
    if isinstance(loc, NameLoc):
        loc = loc.child_loc
    if isinstance(loc, FileLineColLoc):
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


class IllegalTransformError(LoopoptError):
    """A transformation refused because it would reverse a dependence."""
