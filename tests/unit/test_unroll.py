"""loop-unroll: the unrolling utility (loops/unroll.py), the pass, and execution equivalence."""

from __future__ import annotations

import kernels
import numpy as np
import pytest
from equivalence import assert_equivalent, transform
from kernels import REDUCTION
from upstream import assert_upstream_valid
from xdsl.dialects import affine
from xdsl.dialects.builtin import ModuleOp

from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.loops.guard import is_valid_symbol, materializable
from loopopt.loops.nest import constant_bounds, find_loop, find_loops, loop_name, loops_in, step_of
from loopopt.loops.unroll import unroll, unroll_full

SYMBOLIC = """
func.func @f(%A: memref<40xf32>, %n: index) {
  affine.for %i = 2 to %n {
    %x = arith.index_cast %i : index to i64
    %y = arith.sitofp %x : i64 to f32
    %v = affine.load %A[%i] : memref<40xf32>
    %s = arith.addf %v, %y : f32
    affine.store %s, %A[%i] : memref<40xf32>
  } {loopopt.name = "i"}
  return
}
"""

MIN_MAX = """
func.func @f(%A: memref<40xf32>, %n: index, %m: index) {
  affine.for %i = max affine_map<()[s0] -> (1, s0 - 20)>()[%n]
      to min affine_map<()[s0, s1] -> (s0, s1)>()[%n, %m] step 2 {
    %v = affine.load %A[%i] : memref<40xf32>
    %s = arith.addf %v, %v : f32
    affine.store %s, %A[%i] : memref<40xf32>
  } {loopopt.name = "i"}
  return
}
"""


def seeded() -> np.random.Generator:
    return np.random.default_rng(7)


def stores_in(loop: affine.ForOp) -> int:
    return sum(isinstance(op, affine.StoreOp) for op in loop.walk())


def module_of(text: str) -> ModuleOp:
    return parse_module(text, "test.mlir")


def test_divisible_factor_has_no_remainder() -> None:
    text, _, _ = kernels.matmul(4, 4, 8, seeded())
    module = module_of(text)
    k = find_loop(module, "k", "test")
    assert unroll(k, 4) is None
    assert step_of(k) == 4 and constant_bounds(k) == (0, 8)
    assert stores_in(k) == 4
    assert [loop_name(loop) for loop in loops_in(module)] == ["i", "j", "k"]


def test_remainder_loop_runs_the_leftover_iterations() -> None:
    text, _, _ = kernels.matmul(4, 4, 10, seeded())
    module = module_of(text)
    remainder = unroll(find_loop(module, "k", "test"), 4)
    assert remainder is not None and loop_name(remainder) == "k_rem"
    assert constant_bounds(find_loop(module, "k", "test")) == (0, 8)
    assert constant_bounds(remainder) == (8, 10) and step_of(remainder) == 1
    module.verify()


def test_copies_compose_the_offset_into_access_maps() -> None:
    text, _, _ = kernels.matmul(4, 4, 8, seeded())
    after = transform(text, "loop-unroll{unroll-factor=2}")
    assert "%A[%i, %k + 1]" in after and "%B[%k + 1, %j]" in after
    assert "affine.apply" not in after


def test_non_affine_use_of_the_iv_keeps_an_apply() -> None:
    after = transform(SYMBOLIC, "loop-unroll{unroll-factor=2}")
    assert "affine.apply" in after and "arith.index_cast %i " in after


def test_trip_count_up_to_the_factor_unrolls_fully() -> None:
    text, _, _ = kernels.matmul(4, 4, 3, seeded())
    module = module_of(text)
    unroll(find_loop(module, "k", "test"), 4)
    assert find_loops(module, "k") == [] and stores_in(find_loop(module, "j", "test")) == 3


def test_full_unroll_of_trip_counts_zero_and_one() -> None:
    text = """
func.func @f(%A: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  %r = affine.for %i = 3 to 3 iter_args(%acc = %z) -> (f32) {
    %v = affine.load %A[%i] : memref<4xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  } {loopopt.name = "empty"}
  affine.for %i = 2 to 3 {
    affine.store %r, %A[%i] : memref<4xf32>
  } {loopopt.name = "one"}
  return
}
"""
    module = module_of(text)
    unroll_full(find_loop(module, "empty", "test"))
    unroll_full(find_loop(module, "one", "test"))
    module.verify()
    assert list(loops_in(module)) == []
    assert "affine.store %z, %A[2]" in str(module)


def test_full_unroll_refuses_a_symbolic_trip_count() -> None:
    with pytest.raises(LoopoptError, match="trip count is not constant"):
        transform(SYMBOLIC, "loop-unroll{unroll-full loop=i}")
    assert transform(SYMBOLIC, "loop-unroll{unroll-full}").count("affine.for") == 1


def test_bad_factor_is_a_diagnostic() -> None:
    text, _, _ = kernels.matmul(4, 4, 4, seeded())
    with pytest.raises(LoopoptError, match="unroll-factor must be at least 1, got 0"):
        transform(text, "loop-unroll{unroll-factor=0}")


TRIPS_30 = """
func.func @f(%A: memref<40xf32>) {
  affine.for %i = 0 to 30 {
    %v = affine.load %A[%i] : memref<40xf32>
    %s = arith.addf %v, %v : f32
    affine.store %s, %A[%i] : memref<40xf32>
  } {loopopt.name = "i"}
  return
}
"""


@pytest.mark.parametrize(
    ("pipeline", "creates"),
    [("loop-unroll{unroll-full loop=i", 90), ("loop-unroll{unroll-factor=8 loop=i", 24)],
)
def test_max_ops_limits_what_an_unroll_creates(pipeline: str, creates: int) -> None:
    """Copies × ops of the body (the remainder loop counted as a copy): up to max-ops is done,
    one more is refused before the IR changes."""
    with pytest.raises(LoopoptError, match=f"would create {creates} ops .* max-ops={creates - 1} "):
        transform(TRIPS_30, f"{pipeline} max-ops={creates - 1}}}")
    after = transform(TRIPS_30, f"{pipeline} max-ops={creates}}}")
    assert after.count("affine.store") == (30 if "full" in pipeline else 8 + 1)


def test_unroll_jam_max_ops() -> None:
    text, _, _ = kernels.matmul(4, 4, 8, seeded())
    with pytest.raises(LoopoptError, match="loop-unroll-jam: unroll-and-jam by 2 of 'j' would"):
        transform(text, "loop-unroll-jam{loop=j unroll-jam-factor=2 max-ops=3}")
    assert "step 2" in transform(text, "loop-unroll-jam{loop=j unroll-jam-factor=2}")


def test_default_targets_are_the_innermost_loops() -> None:
    text, _, _ = kernels.jacobi_1d(2, 11, seeded())
    after = transform(text, "loop-unroll{unroll-factor=4}")
    assert after.count("step 4") == 2 and "i_rem" in after and "j_rem" in after


@pytest.mark.parametrize(
    "pipeline",
    [
        "loop-unroll{unroll-factor=3}",
        "loop-unroll{unroll-factor=4 loop=j}",
        "loop-unroll{unroll-factor=2 loop=i},loop-unroll{unroll-factor=3}",
        "loop-unroll{unroll-full loop=k}",
    ],
)
def test_matmul_with_sizes_the_factors_do_not_divide(pipeline: str) -> None:
    assert_equivalent(*kernels.matmul(5, 7, 11, seeded()), pipeline)


@pytest.mark.parametrize(
    "pipeline", ["loop-unroll{unroll-full}", "loop-unroll{unroll-factor=2 loop=p}"]
)
def test_conv2d(pipeline: str) -> None:
    assert_equivalent(*kernels.conv2d(5, 6, 3, 3, seeded()), pipeline)


@pytest.mark.parametrize("loop, factor", [("k", 4), ("j", 2), ("j", 3), ("i", 4)])
def test_syrk_triangular(loop: str, factor: int) -> None:
    after = assert_equivalent(
        *kernels.syrk(9, 6, seeded()), f"loop-unroll{{unroll-factor={factor} loop={loop}}}"
    )
    if loop == "j":
        assert "j_rem" in after and "floordiv" in after


@pytest.mark.parametrize("loop, factor", [("t", 2), ("i", 3), ("j", 4)])
def test_jacobi_imperfect_nest(loop: str, factor: int) -> None:
    assert_equivalent(
        *kernels.jacobi_1d(5, 12, seeded()), f"loop-unroll{{unroll-factor={factor} loop={loop}}}"
    )


@pytest.mark.parametrize("loop", ["i", "j"])
def test_wavefront_unroll_is_legal(loop: str) -> None:
    assert_equivalent(
        *kernels.wavefront(6, 7, seeded()), f"loop-unroll{{unroll-factor=3 loop={loop}}}"
    )


@pytest.mark.parametrize(
    "pipeline",
    [
        "loop-unroll{unroll-factor=3 loop=k}",
        "loop-unroll{unroll-full loop=k}",
        "loop-unroll{unroll-factor=2 loop=j}",
    ],
)
def test_iter_args_reduction(pipeline: str) -> None:
    arrays = [
        seeded().standard_normal(shape).astype(np.float32) for shape in [(5, 7), (7, 6), (5, 6)]
    ]
    after = assert_equivalent(REDUCTION, "mm", arrays, pipeline)
    if pipeline == "loop-unroll{unroll-factor=3 loop=k}":
        assert "k_rem" in after and "iter_args(%acc_1 = %r)" in after


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 9, 40])
def test_symbolic_trip_count(n: int) -> None:
    arrays = [seeded().standard_normal(40).astype(np.float32), np.int64(n)]
    assert_equivalent(SYMBOLIC, "f", arrays, "loop-unroll{unroll-factor=3}")


@pytest.mark.parametrize("n, m", [(0, 0), (5, 40), (30, 17), (37, 38), (40, 12)])
def test_max_lower_and_min_upper_bounds(n: int, m: int) -> None:
    arrays = [seeded().standard_normal(40).astype(np.float32), np.int64(n), np.int64(m)]
    after = assert_equivalent(MIN_MAX, "f", arrays, "loop-unroll{unroll-factor=3}")
    # A max/min of symbols is a valid symbol: materialized, it bounds main and remainder loops.
    assert "affine.max" in after and "affine.min" in after and "i_rem" in after
    assert_upstream_valid(after)


STRIPS = """
func.func @f(%A: memref<40xf32>, %out: memref<1xf32>, %n: index) {
  %z = arith.constant 0.0 : f32
  %r = affine.for %is = 0 to %n step 8 iter_args(%acc0 = %z) -> (f32) {
    %t = affine.for %i = affine_map<(d0) -> (d0)>(%is)
        to min affine_map<(d0)[s0] -> (d0 + 8, s0)>(%is)[%n] iter_args(%acc = %acc0) -> (f32) {
      %v = affine.load %A[%i] : memref<40xf32>
      %s = arith.addf %acc, %v : f32
      affine.store %s, %A[%i] : memref<40xf32>
      affine.yield %s : f32
    } {loopopt.name = "i"}
    affine.yield %t : f32
  } {loopopt.name = "is"}
  affine.store %r, %out[0] : memref<1xf32>
  return
}
"""


def guards_of(module: ModuleOp) -> list[int]:
    """The number of constraints of each affine.if, in order."""
    return [
        len(op.condition.data.constraints) for op in module.walk() if isinstance(op, affine.IfOp)
    ]


@pytest.mark.parametrize("factor, guards", [(3, [1, 2]), (4, [1, 1, 1]), (8, [1] * 7)])
def test_a_min_of_loop_ivs_guards_the_copies(factor: int, guards: list[int]) -> None:
    # i ends at min(is + 8, n): no SSA value upstream MLIR accepts as a dim can hold that end,
    # so there is no remainder loop: copy u runs under `i + u <= ub - 1` for each result ub.
    # A factor that divides the 8 iterations up to is + 8 needs no guard against it.
    module = module_of(STRIPS)
    i = find_loop(module, "i", "test")
    assert unroll(i, factor) is None
    module.verify()
    assert step_of(i) == factor and guards_of(module) == guards
    assert "affine.min" not in str(module) and find_loops(module, "i_rem") == []


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 30, 40])
@pytest.mark.parametrize("factor", [3, 4])
def test_guarded_copies_carry_iter_args(n: int, factor: int) -> None:
    arrays = [seeded().standard_normal(40).astype(np.float32), np.zeros(1, np.float32)]
    pipeline = f"loop-unroll{{unroll-factor={factor} loop=i}}"
    after = assert_equivalent(STRIPS, "f", [*arrays, np.int64(n)], pipeline)
    assert_upstream_valid(after)
    assert "-> (f32) {" in after and "} else {" in after


@pytest.mark.parametrize(
    "kernel, pipeline",
    [
        ("matmul", "loop-strip-mine{factor=8 loop=i},loop-unroll{unroll-factor=2 loop=i}"),
        ("matmul", "loop-tile{tile-sizes=8,8,4},loop-unroll{unroll-factor=3}"),
        (
            "matmul",
            "loop-tile{tile-sizes=4,5},loop-unroll{unroll-factor=2 loop=j},"
            "loop-unroll{unroll-factor=2 loop=i}",
        ),
        ("syrk", "loop-tile{tile-sizes=4,4,3},loop-unroll{unroll-factor=2 loop=j}"),
        ("syrk", "loop-strip-mine{factor=4 loop=j},loop-unroll{unroll-factor=3 loop=j}"),
        ("jacobi", "loop-strip-mine{factor=4 loop=j},loop-unroll{unroll-factor=3 loop=j}"),
    ],
)
def test_unrolled_point_loops_are_upstream_valid(kernel: str, pipeline: str) -> None:
    case = {
        "matmul": lambda: kernels.matmul(13, 11, 9, seeded()),
        "syrk": lambda: kernels.syrk(11, 5, seeded()),
        "jacobi": lambda: kernels.jacobi_1d(3, 15, seeded()),
    }[kernel]()
    after = assert_equivalent(*case, pipeline)
    assert_upstream_valid(after)
    assert "affine.if" in after


def test_guards_that_always_hold_are_left_out() -> None:
    # 8 divides 32: in every tile, i + 3 <= min(it + 8, 32) - 1 holds, so no copy needs a
    # guard and there is no remainder either.
    text, _, _ = kernels.matmul(32, 8, 4, seeded())
    after = transform(text, "loop-strip-mine{factor=8 loop=i},loop-unroll{unroll-factor=4 loop=i}")
    assert "affine.if" not in after and "i_rem" not in after and "step 4" in after
    assert_upstream_valid(after)


def test_valid_symbols_follow_upstream() -> None:
    module = module_of(MIN_MAX)
    i = find_loop(module, "i", "test")
    n, m = i.upperBoundOperands
    assert is_valid_symbol(n) and is_valid_symbol(m) and not is_valid_symbol(i.body.block.args[0])
    unroll(i, 3)
    minimum = next(op for op in module.walk() if isinstance(op, affine.MinOp))
    assert is_valid_symbol(minimum.result)  # a min of symbols, hoisted to the function
    module = module_of(STRIPS)
    inner = find_loop(module, "i", "test")
    assert not materializable(inner.upperBoundOperands)  # min(is + 8, n) uses the IV is


COUNT = """
func.func @count(%out: memref<1xf32>, %n: index) {
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %r = affine.for %is = 0 to %n step 8 iter_args(%acc0 = %z) -> (f32) {
    %t = affine.for %i = affine_map<(d0) -> (d0)>(%is)
        to min affine_map<(d0)[s0] -> (d0 + 8, s0)>(%is)[%n] iter_args(%acc = %acc0) -> (f32) {
      %s = arith.addf %acc, %one : f32
      affine.yield %s : f32
    } {loopopt.name = "i"}
    affine.yield %t : f32
  } {loopopt.name = "is"}
  affine.store %r, %out[0] : memref<1xf32>
  return
}
"""


@pytest.mark.parametrize("n", [1, 5, 13])
def test_a_guarded_off_copy_keeps_its_iter_args(n: int) -> None:
    # The update needs nothing computed under the guard, but it is carried: it must still come
    # out of the affine.if (else: the incoming value), or the count would include skipped copies.
    arrays = [np.zeros(1, np.float32), np.int64(n)]
    after = assert_equivalent(COUNT, "count", arrays, "loop-unroll{unroll-factor=3 loop=i}")
    assert "} else {" in after
