"""loopopt-opt on bad input: a one-line diagnostic with a location, exit 1, no -o file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loopopt.tools.loopopt_opt import run

GOOD = """func.func @f(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %A[%i] : memref<8xf32>
  }
  return
}
"""


def _run(tmp_path: Path, text: str, *args: str) -> tuple[int, str, str, Path]:
    src = tmp_path / "in.mlir"
    src.write_text(text)
    out = tmp_path / "out.mlir"
    proc = subprocess.run(
        [sys.executable, "-m", "loopopt.tools.loopopt_opt", str(src), "-o", str(out), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr, out


def _assert_one_line_error(rc: int, stderr: str, out: Path, needle: str) -> None:
    assert rc == 1
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert "error:" in lines[0] and needle in lines[0], lines[0]
    assert not out.exists()


def test_good_input_writes_output(tmp_path: Path) -> None:
    rc, _, stderr, out = _run(tmp_path, GOOD, "-p", "loop-name")
    assert rc == 0, stderr
    assert 'loopopt.name = "i0"' in out.read_text()


@pytest.mark.parametrize(
    ("text", "args", "needle"),
    [
        ("func.func @f( {\n", (), "in.mlir:1:"),
        ("func.func @f() {\n  foo.bar\n}\n", (), "foo.bar is not registered"),
        (GOOD, ("-p", "no-such-pass"), "no-such-pass"),
        (GOOD, ("-p", "loop-name{bogus=1}"), "bogus"),
        (GOOD, ("-p", "loop-name{func=g}"), "no function named 'g'"),
    ],
    ids=["malformed", "unknown-op", "unknown-pass", "bad-option", "missing-func"],
)
def test_bad_input(tmp_path: Path, text: str, args: tuple[str, ...], needle: str) -> None:
    rc, _, stderr, out = _run(tmp_path, text, *args)
    _assert_one_line_error(rc, stderr, out, needle)


def test_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run([str(tmp_path / "missing.mlir")]) == 1
    err = capsys.readouterr().err
    assert "missing.mlir: error: cannot read input" in err


def test_default_runs_bundled_example() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "loopopt.tools.loopopt_opt", "-p", "loop-name"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "func.func @matmul" in proc.stdout


def test_help_lists_every_pass(capsys: pytest.CaptureFixture[str]) -> None:
    from loopopt.universe import all_passes

    with pytest.raises(SystemExit):
        run(["--help"])
    text = capsys.readouterr().out
    for name in all_passes():
        assert name in text


def test_split_input_file_and_verify_diagnostics(tmp_path: Path) -> None:
    text = (
        GOOD
        + "// -----\n"
        + "// expected-error@+2 {{Operation foo.bar is not registered}}\n"
        + "func.func @g() {\n  foo.bar\n}\n"
    )
    rc, stdout, stderr, out = _run(tmp_path, text, "--split-input-file", "--verify-diagnostics")
    assert rc == 0, stderr
    assert "func.func @f" in out.read_text()


def test_verify_diagnostics_reports_mismatch(tmp_path: Path) -> None:
    text = "// expected-error@+1 {{something else}}\nfoo.bar\n"
    rc, _, stderr, _ = _run(tmp_path, text, "--verify-diagnostics")
    assert rc == 1
    assert "unexpected error: Operation foo.bar is not registered" in stderr
    assert 'expected error "something else" was not produced' in stderr


def test_comment_only_chunks_are_empty_modules(tmp_path: Path) -> None:
    rc, _, stderr, out = _run(
        tmp_path, GOOD + "// -----\n// only a comment\n", "--split-input-file"
    )
    assert rc == 0, stderr
    assert out.read_text().count("builtin.module") == 2
