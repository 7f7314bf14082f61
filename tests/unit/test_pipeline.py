"""pipeline-copies (loops/pipeline.py): the next iteration's copy-in loads issued one early."""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import assert_equivalent, transform
from kernels import conv2d, matmul
from xdsl.dialects import func

from loopopt.context import parse_module
from loopopt.loops.nest import find_loops
from loopopt.loops.pipeline import prefetchable, read_only

UNROLLED_COPIES = (
    "loop-unroll{unroll-full loop=A_copy_in_1},loop-unroll{unroll-full loop=A_copy_in_0},"
    "loop-unroll{unroll-full loop=B_copy_in_1},loop-unroll{unroll-full loop=B_copy_in_0}"
)


@pytest.mark.parametrize(
    ("m", "n", "k", "tiles"),
    [(16, 8, 12, "8,4,4"), (8, 8, 8, "4,4,8"), (12, 8, 20, "4,8,4")],
)
def test_matmul_with_pipelined_copies(
    m: int, n: int, k: int, tiles: str, rng: np.random.Generator
) -> None:
    text, fn, arrays = matmul(m, n, k, rng)
    pipeline = (
        f"loop-tile{{tile-sizes={tiles}}},promote{{loop=k_t arrays=A,B}},{UNROLLED_COPIES},"
        "pipeline-copies{loop=k_t}"
    )
    after = assert_equivalent(text, fn, arrays, pipeline)
    assert "affine.min" in after and "iter_args" in after


def test_conv2d_halo_copies(rng: np.random.Generator) -> None:
    # I's box under q (the innermost filter loop) is a row of the halo: its loads pipeline
    # across q; the filter F is promoted too.
    text, fn, arrays = conv2d(6, 5, 3, 4, rng)
    pipeline = (
        "promote{loop=p arrays=I},loop-unroll{unroll-full loop=I_copy_in_1},"
        "loop-unroll{unroll-full loop=I_copy_in_0},pipeline-copies{loop=p}"
    )
    assert_equivalent(text, fn, arrays, pipeline)


def _loop(text: str, name: str):
    module = parse_module(text)
    [loop] = find_loops(module, name)
    return module, loop


def test_prefetchable_needs_read_only_arrays_and_loads_in_the_body(
    rng: np.random.Generator,
) -> None:
    text, _, _ = matmul(8, 8, 8, rng)
    tiled = transform(text, "loop-tile{tile-sizes=4,4,4},promote{loop=k_t arrays=A,B}")
    _, loop = _loop(tiled, "k_t")
    assert prefetchable(loop) == []  # the copies are loops still
    unrolled = transform(tiled, UNROLLED_COPIES)
    module, loop = _loop(unrolled, "k_t")
    loads = prefetchable(loop)
    assert len(loads) == 32  # 4x4 of A and of B
    assert {load.memref.name_hint for load, _ in loads} == {"A", "B"}
    function = module.body.block.first_op
    assert isinstance(function, func.FuncOp)
    assert not read_only(function.args[2], module)  # C is stored to
    assert read_only(loads[0][0].memref, module)
