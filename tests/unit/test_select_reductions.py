"""Python's float `m = max(m, x)` / `min(m, x)` (a compare and a select, frontend/operators.py)
is a reduction (analysis/reduction.py): block and grid reductions instead of one thread, with
Python's NaN rules (a NaN element never wins, a NaN initial value stays), checked by emulation
against plain Python on inputs with NaNs; `max(x, m)`, where a NaN element wins, is not one."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from gpu_emulator import emulate
from unseen_programs import global_min_max, row_max
from xdsl.dialects import affine, gpu
from xdsl.passes import PassPipeline

from loopopt.analysis.reduction import reductions
from loopopt.context import make_context, verify_ir
from loopopt.dialects.loopopt import MAPPING
from loopopt.frontend.kernel import Kernel
from loopopt.runtime.cpu import run_function
from loopopt.universe import all_passes


def largest(x, out):
    m = -math.inf
    for i in range(x.shape[0]):
        m = max(m, x[i])
    out[0] = m


def scaled_largest(x, out):
    c = x[1]
    m = -math.inf
    for i in range(x.shape[0]):
        m = max(m, x[i] * c)
    out[0] = m


def stored_first(x, out):
    out[1] = 1.0
    m = x[0]
    for i in range(x.shape[0]):
        m = max(m, x[i])
    out[0] = m


def nan_wins(x, out):
    m = x[0]
    for i in range(x.shape[0]):
        m = max(x[i], m)
    out[0] = m


def _mapped(function: Callable[..., None], args: list[np.ndarray], pipeline: str) -> list[str]:
    """`function` through `pipeline`, emulated: what each argument holds after, compared with
    Python's; the kernels' mappings."""
    expected = [a.copy() for a in args]
    function(*expected)
    module = Kernel(function).module(*args)
    PassPipeline.parse_spec(all_passes(), pipeline).apply(make_context(), module)
    verify_ir(module, pipeline)
    mappings = [str(op.attributes[MAPPING]) for op in module.walk() if isinstance(op, gpu.FuncOp)]
    emulate(module, reverse=True)
    got = [a.copy() for a in args]
    run_function(module, function.__name__, got)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)
    return mappings


def _with_nans(rng: np.random.Generator, n: int, at: list[int], dtype: type) -> np.ndarray:
    x = rng.standard_normal(n).astype(dtype)
    x[at] = np.nan
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nans", [[], [5, 77], [0]], ids=["none", "inside", "first"])
def test_min_max_of_a_vector_is_a_block_reduction(
    dtype: type, nans: list[int], rng: np.random.Generator
) -> None:
    """It ran on one thread: the block's threads now share it out (256 of them over 300
    elements), exactly as Python computes it: NaNs inside are skipped, a NaN first is kept."""
    x = _with_nans(rng, 300, nans, dtype)
    mappings = _mapped(global_min_max, [x, np.zeros(2, dtype)], "gpu-map-loops")
    assert mappings == ['{region = "one block", threads_x = "i"}']


def test_a_large_max_is_a_grid_reduction(rng: np.random.Generator) -> None:
    """gpu_grid.GRID_MIN_TRIP iterations or more: a grid of blocks, also after the loads that
    start the region (`lo = x[0]`: the grid runs ahead of them)."""
    x = _with_nans(rng, 70_001, [3, 4000], np.float32)
    mappings = _mapped(largest, [x, np.zeros(1, np.float32)], "auto-schedule{device=sm_90}")
    assert mappings[0] == '{grid_reduction = "i", blocks = "partials"}'
    x[0] = np.nan  # the initial value: kept
    mappings = _mapped(global_min_max, [x, np.zeros(2, np.float32)], "auto-schedule{device=sm_90}")
    assert mappings[0] == '{grid_reduction = "i", blocks = "partials"}'


@pytest.mark.parametrize("function", [scaled_largest, stored_first], ids=lambda f: f.__name__)
def test_the_grid_runs_ahead_of_the_region_only_where_it_may(
    function: Callable[..., None], rng: np.random.Generator
) -> None:
    """A loop that reads a value the region computes first (c = x[1]), or that follows a
    store, stays in the region (one block)."""
    x = rng.standard_normal(70_001).astype(np.float32)
    mappings = _mapped(function, [x, np.zeros(2, np.float32)], "auto-schedule{device=sm_90}")
    assert mappings == ['{region = "one block", threads_x = "i"}']


def test_row_maxima_share_a_block_per_row(rng: np.random.Generator) -> None:
    a = rng.standard_normal((5, 301)).astype(np.float32)
    a[1, 7] = a[3, 0] = np.nan
    mappings = _mapped(row_max, [a, np.zeros(5, np.float32)], "gpu-map-loops")
    assert mappings == ['{region = "one block", threads_x = "j", block_x = "i"}']


def test_a_select_where_the_element_wins_on_nan_is_no_reduction(
    rng: np.random.Generator,
) -> None:
    """`max(x[i], m)`: a NaN element replaces m, and the next element replaces the NaN: the
    order matters, the loop stays sequential."""
    x = _with_nans(rng, 50, [20], np.float32)
    module = Kernel(nan_wins).module(x, np.zeros(1, np.float32))
    (loop,) = [op for op in module.walk() if isinstance(op, affine.ForOp)]
    assert reductions(loop) is None
    (mapping,) = _mapped(nan_wins, [x, np.zeros(1, np.float32)], "gpu-map-loops")
    assert mapping == '{region = "one thread"}'
