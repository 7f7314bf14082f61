"""--verify-diagnostics' annotations: every severity and location form MLIR has, matched by
severity, line and message."""

from __future__ import annotations

from loopopt.tools.diagnostics_check import (
    Expected,
    check_expected_diagnostics,
    expected_diagnostics,
)

TEXT = """func.func @f() {
  // expected-error {{same line}}
  // expected-warning@+2 {{two below}}
  // expected-remark @-1 {{one above}}
  // expected-note @above {{the line above}}
  // expected-error @below {{the line below}}
  // expected-warning@unknown {{anywhere}}
  return // expected-error {{a}} expected-note {{not an annotation without //}}
}
"""


def test_every_severity_and_location_form() -> None:
    assert expected_diagnostics(TEXT, 10) == [
        Expected("error", 12, "same line"),
        Expected("warning", 15, "two below"),
        Expected("remark", 13, "one above"),
        Expected("note", 14, "the line above"),
        Expected("error", 17, "the line below"),
        Expected("warning", None, "anywhere"),
        Expected("error", 18, "a"),
    ]


def test_matching_is_by_severity_line_and_message() -> None:
    expected = [Expected("warning", 3, "tied"), Expected("note", 4, "here")]
    emitted = [
        ("warning", "in.mlir:3:5", "loop i: tied by a cycle"),
        ("error", "in.mlir:4:1", "here"),
    ]
    assert check_expected_diagnostics(expected, emitted, "in.mlir") == [
        "in.mlir:4:1: error: unexpected error: here",
        'in.mlir:4: error: expected note "here" was not produced',
    ]
    assert check_expected_diagnostics(expected[:1], emitted[:1], "in.mlir") == []
    assert check_expected_diagnostics([], emitted[:1], "in.mlir") == [
        "in.mlir:3:5: error: unexpected warning: loop i: tied by a cycle"
    ]
