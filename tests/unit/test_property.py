"""Property: random affine nests × random pass pipelines are either refused with a diagnostic or
compute exactly what the original computes (CPU JIT, random inputs).

CI runs the `ci` profile (a few hundred examples); `pytest tests/unit/test_property.py
--hypothesis-profile=thorough` runs 10,000.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
from equivalence import run, transform
from hypothesis import event, given, note
from hypothesis import strategies as st
from nestgen import nests, pipelines

from loopopt.diagnostics import IllegalTransformError, LoopoptError

MLIR_OPT = shutil.which("mlir-opt-22") or (
    "/usr/lib/llvm-22/bin/mlir-opt" if os.path.exists("/usr/lib/llvm-22/bin/mlir-opt") else None
)


def upstream_check(text: str) -> None:
    """Upstream MLIR 22 must parse and verify what loopopt writes (skipped without mlir-opt)."""
    if MLIR_OPT is None:
        return
    proc = subprocess.run([MLIR_OPT], input=text, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"mlir-opt rejects the output: {proc.stderr.strip()[:500]}"


@given(st.data())
def test_random_pipeline_is_refused_or_equivalent(data: st.DataObject) -> None:
    nest = data.draw(nests(), label="nest")
    pipeline = data.draw(pipelines(nest), label="pipeline")
    text = nest.mlir()
    note(text)
    try:
        after = transform(text, pipeline)
    except IllegalTransformError:
        event("refused: illegal")
        return
    except LoopoptError as e:
        event(f"refused: {e.message.split(':')[0]}")
        return
    note(after)
    event("applied")
    upstream_check(after)
    arrays = nest.arrays(seed=len(text))
    expected = run(text, "nest", arrays)
    got = run(after, "nest", arrays)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
