"""Upstream MLIR 22 must parse and verify what loopopt writes: `mlir-opt` reads a module back.

`assert_upstream_valid` skips the test (after its other checks) where mlir-opt is not installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

MLIR_OPT = shutil.which("mlir-opt-22") or (
    "/usr/lib/llvm-22/bin/mlir-opt" if os.path.exists("/usr/lib/llvm-22/bin/mlir-opt") else None
)


def assert_upstream_valid(text: str) -> None:
    """`mlir-opt` parses and verifies `text` (the test is skipped without mlir-opt)."""
    if MLIR_OPT is None:
        pytest.skip("needs upstream mlir-opt 22")
    proc = subprocess.run([MLIR_OPT], input=text, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"mlir-opt rejects the output: {proc.stderr.strip()[:800]}"
