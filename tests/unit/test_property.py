"""Property: random affine nests × random pass pipelines are either refused with a diagnostic or
compute exactly what the original computes (CPU JIT, random inputs), and what they write upstream
MLIR 22 reads.

A pipeline that is refused proves nothing, so each property also asserts that enough of the
pipelines applied (`APPLIED_FLOOR`; about 70% do): a pass that refused everything used to pass.
CI runs the `ci` profile (a few hundred examples); `pytest tests/unit/test_property.py
--hypothesis-profile=thorough` runs 10,000.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from equivalence import run, transform
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from nestgen import Nest, nests, pipelines
from upstream import MLIR_OPT

from loopopt.diagnostics import IllegalTransformError, LoopoptError

APPLIED_FLOOR = 0.4
"""The least fraction of examples whose pipeline must apply (not be refused)."""

UPSTREAM_EXAMPLES = 150
"""Examples of the upstream property (each applied one is read by mlir-opt, all in one run)."""


def explore(
    check: Callable[[Nest, str, str], None], max_examples: int | None = None
) -> Counter[str]:
    """Run `check(nest, text, transformed)` on random nests whose random pipeline applies; the
    outcomes (`applied`, `refused`) of all examples, for the caller to judge."""
    outcomes: Counter[str] = Counter()

    @given(st.data())
    def example(data: st.DataObject) -> None:
        nest = data.draw(nests(), label="nest")
        pipeline = data.draw(pipelines(nest), label="pipeline")
        text = nest.mlir()
        note(text)
        try:
            after = transform(text, pipeline)
        except IllegalTransformError:
            event("refused: illegal")
            outcomes["refused"] += 1
            return
        except LoopoptError as e:
            event(f"refused: {e.message.split(':')[0]}")
            outcomes["refused"] += 1
            return
        note(after)
        event("applied")
        outcomes["applied"] += 1
        check(nest, text, after)

    (settings(max_examples=max_examples)(example) if max_examples else example)()
    return outcomes


def assert_enough_applied(outcomes: Counter[str]) -> None:
    total = sum(outcomes.values())
    assert total > 0
    applied = outcomes["applied"] / total
    assert applied >= APPLIED_FLOOR, (
        f"only {applied:.0%} of {total} random pipelines applied (floor {APPLIED_FLOOR:.0%}): "
        f"{dict(outcomes)}"
    )


def test_random_pipeline_is_refused_or_equivalent() -> None:
    def equivalent(nest: Nest, text: str, after: str) -> None:
        arrays = nest.arrays(seed=len(text))
        expected = run(text, "nest", arrays)
        got = run(after, "nest", arrays)
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)

    assert_enough_applied(explore(equivalent))


@pytest.mark.skipif(MLIR_OPT is None, reason="needs upstream mlir-opt 22")
def test_random_pipeline_output_is_upstream_valid() -> None:
    """Upstream MLIR 22 parses and verifies what every applied pipeline writes."""
    assert MLIR_OPT is not None
    written: list[str] = []
    assert_enough_applied(
        explore(lambda nest, text, after: written.append(after), UPSTREAM_EXAMPLES)
    )
    chunks = "\n// -----\n".join(written)
    command = [MLIR_OPT, "--split-input-file", "-o", "/dev/null"]
    proc = subprocess.run(command, input=chunks, capture_output=True, text=True, check=False)
    if proc.returncode != 0:  # name the first output mlir-opt rejects
        for text in written:
            one = subprocess.run(
                [MLIR_OPT, "-o", "/dev/null"], input=text, capture_output=True, text=True
            )
            assert one.returncode == 0, f"mlir-opt rejects:\n{text}\n{one.stderr[:800]}"
        raise AssertionError(f"mlir-opt rejects the outputs: {proc.stderr[:800]}")
