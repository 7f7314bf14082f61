"""Execution equivalence: run a function before and after a pipeline on the same random inputs."""

from __future__ import annotations

import numpy as np
from xdsl.passes import PassPipeline

from loopopt.context import make_context, parse_module, verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.runtime.cpu import run_function
from loopopt.universe import all_passes


def transform(text: str, pipeline: str) -> str:
    """The module text after `pipeline` (raises LoopoptError when a pass refuses)."""
    ctx = make_context()
    module = parse_module(text, "test.mlir", ctx)
    PassPipeline.parse_spec(all_passes(), pipeline).apply(ctx, module)
    try:
        verify_ir(module, f"after '{pipeline}'")
    except LoopoptError as e:  # a pass that produces invalid IR is a bug, not a refusal
        raise AssertionError(e.one_line()) from None
    return str(module)


def run(text: str, func: str, arrays: list) -> list:
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
    run_function(text, func, copies)
    return copies


def assert_equivalent(
    text: str, func: str, arrays: list[np.ndarray], pipeline: str, rtol: float = 1e-5
) -> str:
    """Transform, run both versions, compare every array; returns the transformed text."""
    after = transform(text, pipeline)
    expected = run(text, func, arrays)
    got = run(after, func, arrays)
    for index, (e, g) in enumerate(zip(expected, got, strict=True)):
        np.testing.assert_allclose(
            g, e, rtol=rtol, atol=1e-5, err_msg=f"argument {index} after '{pipeline}'"
        )
    return after
