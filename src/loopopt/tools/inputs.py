"""The CLIs' input: a file or stdin, read as UTF-8; what cannot be read is a diagnostic.

read_file("in.mlir")   # LoopoptError "in.mlir:3:7: error: input is not valid UTF-8 (byte 0xff)"
"""

from __future__ import annotations

import os
import stat
import sys

from loopopt.diagnostics import LoopoptError

STDIN = "<stdin>"


def read_file(path: str) -> str:
    """The text of the file at `path`."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise LoopoptError(f"cannot read input: {e.strerror}", location=path) from None
    return decode(data, path)


def read_stdin() -> str:
    """The text on stdin (to its end)."""
    binary = getattr(sys.stdin, "buffer", None)
    if binary is None:  # a text stream without bytes underneath (a test's StringIO)
        return sys.stdin.read()
    try:
        data = binary.read()
    except OSError as e:
        raise LoopoptError(f"cannot read input: {e.strerror}", location=STDIN) from None
    return decode(data, STDIN)


def stdin_is_piped() -> bool:
    """Whether stdin is a pipe, a file or a socket: not a terminal, /dev/null or closed."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (AttributeError, OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)


def decode(data: bytes, name: str) -> str:
    """`data` as UTF-8; the error points at the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[: e.start].decode("utf-8")
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        byte = data[e.start]
        raise LoopoptError(
            f"input is not valid UTF-8 (byte 0x{byte:02x})", location=f"{name}:{line}:{column}"
        ) from None
