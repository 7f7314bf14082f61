"""loop-strip-mine: the utility (loops/strip_mine.py), the pass, and execution equivalence."""

from __future__ import annotations

import kernels
import numpy as np
import pytest
from equivalence import assert_equivalent, transform
from test_tile import iteration_points, loop_names

from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import PARALLEL
from loopopt.loops.nest import find_loop, loop_name
from loopopt.loops.strip_mine import strip_mine

STEPPED = """
func.func @stepped(%A: memref<64xf32>, %n: index) {
  affine.for %i = 1 to %n step 3 {
    affine.for %j = affine_map<(d0) -> (d0 floordiv 2)>(%i) to 20 step 2 {
      %v = affine.load %A[%j] : memref<64xf32>
      affine.store %v, %A[%i] : memref<64xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i", loopopt.parallel}
  return
}
"""

REDUCTION = """
func.func @sum(%A: memref<23xf32>, %out: memref<1xf32>) {
  %zero = arith.constant 0.0 : f32
  %total = affine.for %i = 0 to 23 iter_args(%acc = %zero) -> (f32) {
    %a = affine.load %A[%i] : memref<23xf32>
    %s = arith.addf %acc, %a : f32
    affine.yield %s : f32
  } {loopopt.name = "i"}
  affine.store %total, %out[0] : memref<1xf32>
  return
}
"""


@pytest.mark.parametrize("loop", ["i", "j"])
@pytest.mark.parametrize("factor", [1, 2, 4, 7])
@pytest.mark.parametrize("n", [1, 2, 15, 31])
def test_order_is_unchanged(loop: str, factor: int, n: int) -> None:
    module = parse_module(STEPPED)
    outer, inner = strip_mine(find_loop(module, loop, "test"), factor)
    module.verify()
    assert outer.step.value.data == factor * inner.step.value.data
    names = loop_names(STEPPED)
    before = iteration_points(STEPPED, "stepped", names, {"n": n})
    assert before == iteration_points(module, "stepped", names, {"n": n})


def test_names_attributes_and_min_bounds() -> None:
    module = parse_module(STEPPED)
    outer, inner = strip_mine(find_loop(module, "i", "test"), 4)
    assert (loop_name(outer), loop_name(inner)) == ("i_s", "i")
    assert PARALLEL in outer.attributes and PARALLEL in inner.attributes
    assert len(inner.upperBoundMap.data.results) == 2  # symbolic bound: min
    outer, inner = strip_mine(find_loop(module, "i", "test"), 2)
    assert loop_name(outer) == "i_s2"


def test_divisible_constant_trip_count_has_no_min(rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(8, 12, 5, rng)
    module = parse_module(text)
    _, inner = strip_mine(find_loop(module, "j", "test"), 4)
    assert len(inner.upperBoundMap.data.results) == 1
    _, inner = strip_mine(find_loop(module, "k", "test"), 4)
    assert len(inner.upperBoundMap.data.results) == 2


def test_bad_factor_is_refused() -> None:
    module = parse_module(STEPPED)
    with pytest.raises(LoopoptError, match="factor must be a positive integer, got 0"):
        strip_mine(find_loop(module, "i", "test"), 0)


def test_iter_args_are_threaded_through(rng: np.random.Generator) -> None:
    arrays = [rng.standard_normal(23).astype(np.float32), np.zeros(1, np.float32)]
    after = assert_equivalent(REDUCTION, "sum", arrays, "loop-strip-mine{factor=5}")
    assert "iter_args" in after and 'loopopt.name = "i_s"' in after


def test_pass_on_matmul_inner_loop(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.matmul(13, 11, 9, rng)
    after = assert_equivalent(text, name, arrays, "loop-strip-mine{factor=4 loop=j}")
    assert "step 4" in after


def test_pass_default_strip_mines_top_level_loops(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.jacobi_1d(7, 19, rng)
    after = assert_equivalent(text, name, arrays, "loop-strip-mine{factor=3}")
    assert 'loopopt.name = "t_s"' in after and 'loopopt.name = "i_s"' not in after


def test_pass_on_imperfect_nest_and_wavefront(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.jacobi_1d(4, 21, rng)
    pipeline = "loop-strip-mine{factor=4 loop=i},loop-strip-mine{factor=6 loop=j}"
    assert_equivalent(text, name, arrays, pipeline)
    text, name, arrays = kernels.wavefront(9, 10, rng)  # (<, >) dependence: still legal
    assert_equivalent(text, name, arrays, "loop-strip-mine{factor=4 loop=j}")
    assert_equivalent(text, name, arrays, "loop-strip-mine{factor=2 loop=i}")


@pytest.mark.parametrize(
    "options, message",
    [
        ("", "factor must be a positive integer, got 0"),
        ("factor=-3 loop=i", "factor must be a positive integer, got -3"),
        ("factor=2 loop=x", "no loop named 'x'"),
        ("factor=2 func=nope", "no function named 'nope'"),
    ],
)
def test_pass_validates_options(options: str, message: str, rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(8, 8, 8, rng)
    with pytest.raises(LoopoptError) as info:
        transform(text, f"loop-strip-mine{{{options}}}")
    assert message in info.value.message
