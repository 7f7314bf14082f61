"""Upstream MLIR 22 must parse and verify what loopopt writes: `mlir-opt` reads a module back,
and its own GPU pipeline lowers loopopt's kernels to PTX.

`assert_upstream_valid` skips the test (after its other checks) where mlir-opt is not installed.
"""

from __future__ import annotations

import os
import re
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


UPSTREAM_GPU_PIPELINE = (
    "--gpu-lower-to-nvvm-pipeline=cubin-chip=sm_90 cubin-format=isa cubin-features=+ptx80 "
    "kernel-bare-ptr-calling-convention=1"
)
"""Upstream's own GPU lowering to PTX (`isa`: no ptxas), kernels taking one bare pointer per
memref of static shape, as loopopt's kernels do."""


def upstream_ptx(text: str) -> str:
    """The PTX that upstream MLIR's GPU pipeline makes of the gpu.module in `text` (affine
    lowered first; skips without mlir-opt)."""
    if MLIR_OPT is None:
        pytest.skip("needs upstream mlir-opt 22")
    proc = subprocess.run(
        [MLIR_OPT, "--lower-affine", UPSTREAM_GPU_PIPELINE],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"upstream's GPU pipeline fails: {proc.stderr.strip()[:800]}"
    found = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', proc.stdout)
    assert found is not None, "no PTX in the gpu.binary"
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), found.group(1))
