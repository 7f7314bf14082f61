"""`--verify-diagnostics`: MLIR's `// expected-error {{...}}` annotations, checked.

Severities: `expected-error`, `expected-warning`, `expected-remark` and `expected-note`, as in
MLIR; each matches only a diagnostic of its own severity. loopopt's passes say errors and
warnings; nothing in loopopt emits remarks or notes today, so an `expected-remark` or
`expected-note` is reported as not produced (it is read, never ignored).

Locations: `{{msg}}` alone (same line), `@+N` / `@-N` (N lines below / above; MLIR's spelling
with a space before the `@` too), `@above`, `@below` and `@unknown` (no location). An emitted
diagnostic matches when its severity and line are the expected ones and its message contains
`msg`; every emitted diagnostic must be expected (an unexpected warning fails as an unexpected
error does, as in MLIR).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEVERITIES = ("error", "warning", "remark", "note")

_ANNOTATION = re.compile(
    r"//\s*expected-(?P<severity>error|warning|remark|note)"
    r"(?:\s*@(?P<where>[+-]\d+|above|below|unknown))?\s*\{\{(?P<msg>.*?)\}\}"
)


@dataclass(frozen=True)
class Expected:
    severity: str
    line: int | None
    """1-based line in the whole input; None for `@unknown`."""
    message: str


Emitted = tuple[str, str | None, str]
"""(severity, location or None, message)."""


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
            result.append(Expected(m.group("severity"), target, m.group("msg")))
    return result


def _line_of(location: str | None) -> int | None:
    if location is None:
        return None
    parts = location.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return int(parts[1])
    return None


def check_expected_diagnostics(
    expected: list[Expected], emitted: list[Emitted], name: str
) -> list[str]:
    """One message per mismatch (unexpected or missing diagnostic); empty when all match."""
    problems: list[str] = []
    remaining = list(expected)
    for severity, location, message in emitted:
        line = _line_of(location)
        match = next(
            (
                e
                for e in remaining
                if e.severity == severity and e.line == line and e.message in message
            ),
            None,
        )
        if match is None:
            where = location or name
            problems.append(f"{where}: error: unexpected {severity}: {message}")
        else:
            remaining.remove(match)
    for e in remaining:
        where = f"{name}:{e.line}" if e.line is not None else name
        problems.append(f'{where}: error: expected {e.severity} "{e.message}" was not produced')
    return problems
