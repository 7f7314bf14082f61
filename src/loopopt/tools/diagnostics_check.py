"""`--verify-diagnostics`: MLIR's `// expected-error {{...}}` annotations, checked.

Supported forms: `expected-error {{msg}}` (same line), `expected-error@+N` (or MLIR's
`expected-error @+N`, with a space), `expected-error@-N`,
`expected-error@above`, `expected-error@below` and `expected-error@unknown` (no location). An
emitted diagnostic matches when its line is the expected line and its message contains `msg`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANNOTATION = re.compile(
    r"//\s*expected-error(?:\s*@(?P<where>[+-]\d+|above|below|unknown))?\s*\{\{(?P<msg>.*?)\}\}"
)


@dataclass(frozen=True)
class Expected:
    line: int | None
    """1-based line in the whole input; None for `@unknown`."""
    message: str


def expected_diagnostics(chunk: str, line_offset: int) -> list[Expected]:
    result: list[Expected] = []
    for index, text in enumerate(chunk.splitlines()):
        for m in _ANNOTATION.finditer(text):
            line = line_offset + index + 1
            where = m.group("where")
            if where == "unknown":
                target: int | None = None
            elif where == "above":
                target = line - 1
            elif where == "below":
                target = line + 1
            elif where:
                target = line + int(where)
            else:
                target = line
            result.append(Expected(target, m.group("msg")))
    return result


def _line_of(location: str | None) -> int | None:
    if location is None:
        return None
    parts = location.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return int(parts[1])
    return None


def check_expected_diagnostics(
    expected: list[Expected], emitted: list[tuple[str | None, str]], name: str
) -> list[str]:
    """One message per mismatch (unexpected or missing diagnostic); empty when all match."""
    problems: list[str] = []
    remaining = list(expected)
    for location, message in emitted:
        line = _line_of(location)
        match = next((e for e in remaining if e.line == line and e.message in message), None)
        if match is None:
            where = location or name
            problems.append(f"{where}: error: unexpected error: {message}")
        else:
            remaining.remove(match)
    for e in remaining:
        where = f"{name}:{e.line}" if e.line is not None else name
        problems.append(f'{where}: error: expected error "{e.message}" was not produced')
    return problems
