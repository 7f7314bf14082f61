"""`loopopt run`: the bundled example compiled, run and checked (CPU here; GPU where one exists)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _loopopt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopopt.tools.loopopt_cli", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_bundled_example_runs_and_matches_on_the_cpu() -> None:
    proc = _loopopt("run", "--target", "cpu", "--repeat", "2")
    assert proc.returncode == 0, proc.stderr
    assert "ran on cpu" in proc.stdout
    assert "matches the original" in proc.stdout


def test_user_file_and_pipeline(tmp_path: Path) -> None:
    src = tmp_path / "scale.mlir"
    src.write_text(
        "func.func @scale(%A: memref<37xf64>) {\n"
        "  %two = arith.constant 2.0 : f64\n"
        "  affine.for %i = 0 to 37 {\n"
        "    %a = affine.load %A[%i] : memref<37xf64>\n"
        "    %b = arith.mulf %a, %two : f64\n"
        "    affine.store %b, %A[%i] : memref<37xf64>\n"
        '  } {loopopt.name = "i"}\n'
        "  return\n}\n"
    )
    proc = _loopopt("run", str(src), "--target", "cpu", "-p", "loop-unroll{unroll-factor=4}")
    assert proc.returncode == 0, proc.stderr
    assert "@scale after 'loop-unroll{unroll-factor=4}'" in proc.stdout


def test_errors_are_one_line(tmp_path: Path) -> None:
    proc = _loopopt("run", str(tmp_path / "missing.mlir"))
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0
    assert "cannot read input" in proc.stderr
    proc = _loopopt("run", "--target", "cpu", "-p", "loop-tile{tile-sizes=8}", "--func", "nope")
    assert proc.returncode == 1
    assert "no function named 'nope'" in proc.stderr
