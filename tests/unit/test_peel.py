"""loop-peel: peeling and full-tile separation (loops/peel.py), the pass, and execution
equivalence. Tiled inputs are written by hand in loop-tile's shape, and also made by loop-tile."""

from __future__ import annotations

import kernels
import numpy as np
import pytest
from equivalence import assert_equivalent, transform
from upstream import assert_upstream_valid
from xdsl.dialects import affine

from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import (
    constant_bounds,
    constant_trip_count,
    find_loop,
    find_loops,
    loop_name,
    trip_count,
)
from loopopt.loops.peel import peel_back, peel_front, point_loops, separate_full_tiles
from loopopt.loops.unroll import unroll_full

TILED = """
func.func @mm(%A: memref<10x7xf32>, %B: memref<7x13xf32>, %C: memref<10x13xf32>) {
  affine.for %it = 0 to 10 step 4 {
    affine.for %jt = 0 to 13 step 5 {
      affine.for %i = affine_map<(d0) -> (d0)>(%it) to min affine_map<(d0) -> (d0 + 4, 10)>(%it) {
        affine.for %j = affine_map<(d0) -> (d0)>(%jt)
            to min affine_map<(d0) -> (d0 + 5, 13)>(%jt) {
          affine.for %k = 0 to 7 {
            %a = affine.load %A[%i, %k] : memref<10x7xf32>
            %b = affine.load %B[%k, %j] : memref<7x13xf32>
            %c = affine.load %C[%i, %j] : memref<10x13xf32>
            %p = arith.mulf %a, %b : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %C[%i, %j] : memref<10x13xf32>
          } {loopopt.name = "k"}
        } {loopopt.name = "j"}
      } {loopopt.name = "i"}
    } {loopopt.name = "jt"}
  } {loopopt.name = "it"}
  return
}
"""

SYMBOLIC_TILED = """
func.func @f(%A: memref<40xf32>, %n: index) {
  affine.for %it = 0 to %n step 8 {
    affine.for %i = affine_map<(d0) -> (d0)>(%it)
        to min affine_map<(d0)[s0] -> (d0 + 8, s0)>(%it)[%n] {
      %v = affine.load %A[%i] : memref<40xf32>
      %s = arith.addf %v, %v : f32
      affine.store %s, %A[%i] : memref<40xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "it"}
  return
}
"""

SYMBOLIC_SUM = """
func.func @f(%A: memref<40xf32>, %B: memref<1xf32>, %n: index) {
  %z = arith.constant 0.0 : f32
  %r = affine.for %i = 3 to %n step 2 iter_args(%acc = %z) -> (f32) {
    %v = affine.load %A[%i] : memref<40xf32>
    %s = arith.addf %acc, %v : f32
    affine.store %s, %A[%i] : memref<40xf32>
    affine.yield %s : f32
  } {loopopt.name = "i"}
  affine.store %r, %B[0] : memref<1xf32>
  return
}
"""


def seeded() -> np.random.Generator:
    return np.random.default_rng(5)


def tiled_arrays() -> list[np.ndarray]:
    return [seeded().standard_normal(s).astype(np.float32) for s in [(10, 7), (7, 13), (10, 13)]]


def test_peel_front_and_back_split_the_iterations() -> None:
    module = parse_module(kernels.matmul(4, 4, 10, seeded())[0])
    k = find_loop(module, "k", "test")
    [front] = peel_front(k, 2)
    [back] = peel_back(k, 3)
    module.verify()
    assert loop_name(front) == "k_peel" and loop_name(back) == "k_peel"
    assert [constant_bounds(x) for x in (front, k, back)] == [(0, 2), (2, 7), (7, 10)]
    assert front.next_op is k and k.next_op is back


def test_peel_back_with_a_step() -> None:
    text = kernels.matmul(4, 4, 10, seeded())[0].replace("0 to 10 {", "1 to 10 step 4 {")
    module = parse_module(text)
    k = find_loop(module, "k", "test")
    [back] = peel_back(k, 1)
    assert constant_bounds(k) == (1, 9) and constant_bounds(back) == (9, 10)


def test_count_must_be_below_the_trip_count() -> None:
    module = parse_module(kernels.matmul(4, 4, 3, seeded())[0])
    with pytest.raises(LoopoptError, match="cannot peel 3 iterations off 'k': it runs only 3"):
        peel_front(find_loop(module, "k", "test"), 3)


@pytest.mark.parametrize(
    "pipeline, message",
    [
        ("loop-peel{loop=k}", "needs count=N"),
        ("loop-peel{count=1}", "count= needs loop=NAME"),
        ("loop-peel{loop=k count=1 full-tiles}", "give count= or full-tiles, not both"),
        ("loop-peel{loop=nope count=1}", "no loop named 'nope'"),
        ("loop-peel{loop=k full-tiles}", "'k' has no point loop bounded by min(k + size"),
    ],
)
def test_bad_options_are_diagnostics(pipeline: str, message: str) -> None:
    with pytest.raises(LoopoptError, match=message.replace("(", r"\(").replace("+", r"\+")):
        transform(kernels.matmul(4, 4, 4, seeded())[0], pipeline)


@pytest.mark.parametrize("count", [1, 2, -1, -3])
@pytest.mark.parametrize("loop", ["i", "k"])
def test_matmul(loop: str, count: int) -> None:
    pipeline = f"loop-peel{{loop={loop} count={count}}}"
    assert_equivalent(*kernels.matmul(5, 6, 7, seeded()), pipeline)


@pytest.mark.parametrize("count", [1, -1, -2])
def test_syrk_triangular(count: int) -> None:
    after = assert_equivalent(*kernels.syrk(7, 4, seeded()), f"loop-peel{{loop=j count={count}}}")
    assert ("min" if count > 0 else "max") in after


@pytest.mark.parametrize("pipeline", ["loop-peel{loop=t count=1}", "loop-peel{loop=i count=-2}"])
def test_jacobi_imperfect_nest(pipeline: str) -> None:
    assert_equivalent(*kernels.jacobi_1d(4, 10, seeded()), pipeline)


@pytest.mark.parametrize("n", [0, 3, 4, 5, 6, 7, 12, 40])
@pytest.mark.parametrize("count", [2, -2])
def test_symbolic_bounds_with_iter_args(n: int, count: int) -> None:
    arrays = [seeded().standard_normal(40).astype(np.float32), np.zeros(1, np.float32)]
    pipeline = f"loop-peel{{loop=i count={count}}}"
    assert_equivalent(SYMBOLIC_SUM, "f", [*arrays, np.int64(n)], pipeline)


@pytest.mark.parametrize("count", [1, 3, -1, -3])
def test_peel_a_point_loop_bounded_by_a_min(count: int) -> None:
    # The end of i is min(it + 4, 10): peeling it versions i on which of the two is smaller
    # (an affine.min of %it would be no valid dim for upstream MLIR).
    after = assert_equivalent(TILED, "mm", tiled_arrays(), f"loop-peel{{loop=i count={count}}}")
    assert_upstream_valid(after)
    assert "affine.min" not in after
    assert ("affine.if" in after) == (count < 0)


def test_versions_of_a_loop_bounded_by_a_min_of_ivs() -> None:
    module = parse_module(TILED)
    i = find_loop(module, "i", "test")
    peeled = peel_back(i, 1)
    module.verify()
    assert [loop_name(p) for p in peeled] == ["i_peel", "i_peel"]
    versions = find_loops(module, "i")
    assert len(versions) == 2 and all(len(v.upperBoundMap.data.results) == 1 for v in versions)
    [version_if] = [op for op in module.walk() if isinstance(op, affine.IfOp)]
    assert version_if.parent_op() is find_loop(module, "jt", "test")


TRAPEZOID = """
func.func @f(%A: memref<12x12xf32>, %B: memref<12xf32>, %n: index, %m: index) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to %n {
    %r = affine.for %j = max affine_map<(d0) -> (0, d0 - 2)>(%i)
        to min affine_map<(d0)[s0] -> (d0 + 3, s0)>(%i)[%m] iter_args(%acc = %z) -> (f32) {
      %v = affine.load %B[%j] : memref<12xf32>
      %s = arith.addf %acc, %v : f32
      affine.store %s, %A[%i, %j] : memref<12x12xf32>
      affine.yield %s : f32
    } {loopopt.name = "j"}
    affine.store %r, %B[%i] : memref<12xf32>
  } {loopopt.name = "i"}
  return
}
"""


@pytest.mark.parametrize("n, m", [(0, 0), (5, 12), (12, 7), (12, 1)])
@pytest.mark.parametrize(
    "pipeline",
    [
        "loop-peel{loop=j count=1}",
        "loop-peel{loop=j count=2}",
        "loop-peel{loop=j count=-1}",
        "loop-peel{loop=j count=-4}",
        "loop-strip-mine{factor=2 loop=j},loop-peel{loop=j count=-1}",
    ],
)
def test_bounds_of_loop_ivs_are_versioned(pipeline: str, n: int, m: int) -> None:
    # j runs from max(0, i - 2) to min(i + 3, m): the versions carry j's running sum out.
    rng = seeded()
    arrays = [rng.standard_normal((12, 12)).astype(np.float32), rng.standard_normal(12)]
    arrays = [arrays[0], arrays[1].astype(np.float32), np.int64(n), np.int64(m)]
    after = assert_equivalent(TRAPEZOID, "f", arrays, pipeline)
    assert_upstream_valid(after)
    assert "affine.if" in after and "-> (f32)" in after and "affine.max" not in after


TRAPEZOID_NEST = """
func.func @f(%A: memref<12x12xf32>, %B: memref<12xf32>, %n: index, %m: index) {
  affine.for %i = 0 to %n {
    affine.for %j = max affine_map<(d0) -> (0, d0 - 2)>(%i)
        to min affine_map<(d0)[s0] -> (d0 + 3, s0)>(%i)[%m] {
      %v = affine.load %B[%j] : memref<12xf32>
      %s = arith.addf %v, %v : f32
      affine.store %s, %A[%i, %j] : memref<12x12xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


@pytest.mark.parametrize("n, m", [(0, 0), (5, 12), (12, 7), (12, 10)])
@pytest.mark.parametrize(
    "pipeline", ["loop-strip-mine{factor=2 loop=j}", "loop-tile{tile-sizes=0,4}"]
)
def test_full_tiles_whose_end_uses_loop_ivs(pipeline: str, n: int, m: int) -> None:
    # The strips of j end at min(j_s + 2, i + 3, m): whether a strip is full depends on i, so
    # the body of j_s is versioned on it (guard_full_tiles) instead of splitting j_s.
    rng = seeded()
    arrays = [rng.standard_normal((12, 12)).astype(np.float32)]
    arrays += [rng.standard_normal(12).astype(np.float32), np.int64(n), np.int64(m)]
    after = assert_equivalent(TRAPEZOID_NEST, "f", arrays, f"{pipeline},loop-peel{{full-tiles}}")
    assert_upstream_valid(after)
    assert "} else {" in after


@pytest.mark.parametrize("n", [0, 5, 8, 13])
@pytest.mark.parametrize("count", [2, -2])
def test_peel_a_symbolic_point_loop(n: int, count: int) -> None:
    arrays = [seeded().standard_normal(40).astype(np.float32), np.int64(n)]
    assert_equivalent(SYMBOLIC_TILED, "f", arrays, f"loop-peel{{loop=i count={count}}}")


def test_full_tiles_drop_the_min() -> None:
    module = parse_module(TILED)
    it = find_loop(module, "it", "test")
    [point] = point_loops(it)
    assert loop_name(point.loop) == "i" and point.size == 4
    partial = separate_full_tiles(it)
    module.verify()
    assert constant_bounds(it) == (0, 8) and constant_bounds(partial) == (8, 10)
    assert loop_name(partial) == "it_peel"
    assert len(point.loop.upperBoundMap.data.results) == 1
    assert "min" not in str(point.loop.upperBoundMap)
    assert "to min" in str(partial)


def test_full_tile_point_loops_have_a_constant_trip_count() -> None:
    module = parse_module(TILED)
    it = find_loop(module, "it", "test")
    [point] = point_loops(it)
    separate_full_tiles(it)
    assert trip_count(point.loop) == 4
    unroll_full(point.loop)
    module.verify()
    after = assert_equivalent(str(module), "mm", tiled_arrays(), "loop-name")
    assert "%C[%it + 3, %j_3]" in after


@pytest.mark.parametrize(
    "pipeline",
    [
        "loop-peel{full-tiles loop=it}",
        "loop-peel{full-tiles loop=jt}",
        "loop-peel{full-tiles}",
        "loop-peel{full-tiles},loop-unroll{unroll-factor=2}",
    ],
)
def test_full_tiles_equivalence(pipeline: str) -> None:
    assert_equivalent(TILED, "mm", tiled_arrays(), pipeline)


def test_full_tiles_of_every_tile_loop() -> None:
    after = transform(TILED, "loop-peel{full-tiles}")
    # it splits into full and partial tiles; jt splits inside both: four regions.
    assert after.count('loopopt.name = "jt"') == 2 and after.count('loopopt.name = "jt_peel"') == 2
    assert after.count("to min") == 4  # i: in the partial it; j: in the two partial jt


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 16, 23, 40])
def test_full_tiles_symbolic(n: int) -> None:
    arrays = [seeded().standard_normal(40).astype(np.float32), np.int64(n)]
    after = assert_equivalent(SYMBOLIC_TILED, "f", arrays, "loop-peel{full-tiles}")
    assert "ceildiv 8" in after


@pytest.mark.parametrize("sizes", ["4,5", "3,4,2", "8"])
def test_full_tiles_after_loop_tile(sizes: str) -> None:
    pipeline = f"loop-tile{{tile-sizes={sizes}}},loop-peel{{full-tiles}}"
    assert_equivalent(*kernels.matmul(10, 13, 7, seeded()), pipeline)


def test_full_tiles_after_strip_mine_of_a_triangular_loop() -> None:
    after = assert_equivalent(
        *kernels.syrk(9, 6, seeded()), "loop-strip-mine{factor=4 loop=k},loop-peel{full-tiles}"
    )
    module = parse_module(after)
    assert constant_trip_count(find_loop(module, "k_s", "test")) == 1


def strip_mined(n: int, size: int) -> str:
    return f"""
func.func @f(%A: memref<{n}xf32>) {{
  affine.for %it = 0 to {n} step {size} {{
    affine.for %i = affine_map<(d0) -> (d0)>(%it)
        to min affine_map<(d0) -> (d0 + {size}, {n})>(%it) {{
      %v = affine.load %A[%i] : memref<{n}xf32>
      %s = arith.addf %v, %v : f32
      affine.store %s, %A[%i] : memref<{n}xf32>
    }} {{loopopt.name = "i"}}
  }} {{loopopt.name = "it"}}
  return
}}
"""


def test_full_tiles_when_every_tile_or_no_tile_is_full() -> None:
    module = parse_module(strip_mined(12, 4))
    assert separate_full_tiles(find_loop(module, "it", "test")) is None
    assert "min" not in str(module) and str(module).count("affine.for") == 2
    module = parse_module(strip_mined(3, 4))
    before = str(module)
    assert separate_full_tiles(find_loop(module, "it", "test")) is None
    assert str(module) == before
