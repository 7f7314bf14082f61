"""`loopopt tune` end to end with the CPU stand-in timer: the table, the cache, the replayable
winner; bad input gives one line and exit 1, and no output file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from kernels import matmul

TEXT, _, _ = matmul(32, 32, 16, np.random.default_rng(0))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopopt.tools.loopopt_cli", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_tune_measures_the_model_top_and_writes_a_replayable_winner(tmp_path: Path) -> None:
    src, out, cache = tmp_path / "mm.mlir", tmp_path / "winner.txt", tmp_path / "cache"
    src.write_text(TEXT)
    args = ["tune", str(src), "--func", "matmul", "--budget", "2", "--target", "cpu"]
    args += ["--cache", str(cache), "--output", str(out)]
    proc = _run(*args)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{src}: @matmul: loops i=32 j=32 k=16 (parallel: i,j)")
    assert "measuring the model's top 2 on cpu" in lines[1]
    assert lines[2].split() == ["rank", "predicted", "ms", "measured", "ms", "status", "schedule"]
    rows = [line.split() for line in lines[3:5]]
    assert sorted(row[0] for row in rows) == ["1", "2"]
    assert all(row[3] == "ok" and row[4] == "matmul" for row in rows)
    assert "0 of 2 measurements from the cache" in proc.stdout
    assert "winner: matmul bm=" in proc.stdout
    pipeline = out.read_text().strip()
    assert pipeline.startswith("loop-tile{") and "gpu-map-loops" in pipeline
    replay = subprocess.run(
        [sys.executable, "-m", "loopopt.tools.loopopt_opt", str(src), "-p", pipeline],
        capture_output=True,
        text=True,
        check=False,
    )
    assert replay.returncode == 0, replay.stderr
    assert "gpu.launch_func" in replay.stdout
    again = _run(*args)
    assert again.returncode == 0, again.stderr
    assert "2 of 2 measurements from the cache" in again.stdout
    assert out.read_text().strip() == pipeline


def test_bad_input_is_one_line_and_exit_1(tmp_path: Path) -> None:
    out = tmp_path / "winner.txt"
    common = ["--budget", "2", "--target", "cpu", "--cache", str(tmp_path), "--output", str(out)]
    proc = _run("tune", str(tmp_path / "missing.mlir"), "--func", "matmul", *common)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "cannot read input" in proc.stderr
    src = tmp_path / "mm.mlir"
    src.write_text(TEXT)
    proc = _run("tune", str(src), "--func", "nope", *common)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"{src}: error: no function named 'nope'"  # names the input
    src.write_text("func.func @f(%A: memref<4xf32>) {\n  return\n}\n")
    proc = _run("tune", str(src), "--func", "f", *common)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "has no loop nest" in proc.stderr
    assert not out.exists()
