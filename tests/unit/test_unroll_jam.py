"""loop-unroll-jam: the jamming utility (loops/unroll_jam.py), the pass, and execution
equivalence; refusals for dependences (wavefront, jacobi) and for bounds that vary (syrk)."""

from __future__ import annotations

import kernels
import numpy as np
import pytest
from equivalence import assert_equivalent, run, transform
from kernels import REDUCTION
from upstream import assert_upstream_valid
from xdsl.dialects import affine

from loopopt.context import parse_module
from loopopt.diagnostics import IllegalTransformError, LoopoptError
from loopopt.loops.nest import constant_bounds, find_loop, find_loops, step_of
from loopopt.loops.unroll_jam import jammed_loops, unroll_jam, unroll_jam_obstacle
from loopopt.passes.loop_unroll_jam import jam_targets

SYMBOLIC_ROWS = """
func.func @mm(%A: memref<12x7xf32>, %B: memref<7x6xf32>, %C: memref<12x6xf32>, %n: index) {
  affine.for %i = 1 to %n {
    affine.for %j = 0 to 6 {
      affine.for %k = 0 to 7 {
        %a = affine.load %A[%i, %k] : memref<12x7xf32>
        %b = affine.load %B[%k, %j] : memref<7x6xf32>
        %c = affine.load %C[%i, %j] : memref<12x6xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<12x6xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


def seeded() -> np.random.Generator:
    return np.random.default_rng(11)


def reduction_arrays() -> list[np.ndarray]:
    return [seeded().standard_normal(s).astype(np.float32) for s in [(5, 7), (7, 6), (5, 6)]]


def test_copies_are_jammed_into_the_inner_loops() -> None:
    module = parse_module(kernels.matmul(5, 6, 7, seeded())[0])
    i = find_loop(module, "i", "test")
    remainder = unroll_jam(i, 2)
    module.verify()
    assert step_of(i) == 2 and constant_bounds(i) == (0, 4)
    assert remainder is not None and constant_bounds(remainder) == (4, 5)
    [j, k] = jammed_loops(i)
    stores = [op for op in k.body.block.ops if isinstance(op, affine.StoreOp)]
    assert len(stores) == 2 and "%C[%i + 1, %j]" in str(k)
    assert len(find_loops(module, "k")) == 2  # one jammed k, one in the remainder i_rem


def test_factor_is_lowered_to_a_small_trip_count() -> None:
    module = parse_module(kernels.matmul(3, 6, 7, seeded())[0])
    i = find_loop(module, "i", "test")
    assert unroll_jam(i, 8) is None
    assert step_of(i) == 3 and constant_bounds(i) == (0, 3)


def test_inner_iter_args_are_duplicated_per_copy() -> None:
    after = assert_equivalent(
        REDUCTION, "mm", reduction_arrays(), "loop-unroll-jam{unroll-jam-factor=2 loop=i}"
    )
    assert "iter_args(%acc = %c0, %acc_1 = %c0_1) -> (f32, f32)" in after
    assert "affine.yield %s, %s_1 : f32, f32" in after


@pytest.mark.parametrize(
    "pipeline",
    [
        "loop-unroll-jam{unroll-jam-factor=4 loop=j}",
        "loop-unroll-jam{unroll-jam-factor=2 loop=j},loop-unroll-jam{unroll-jam-factor=3 loop=i}",
    ],
)
def test_iter_args_reductions(pipeline: str) -> None:
    assert_equivalent(REDUCTION, "mm", reduction_arrays(), pipeline)


def test_innermost_loop_carrying_iter_args_is_unrolled() -> None:
    """Nothing to jam: unroll-and-jam of an innermost loop is its unroll (iter_args kept), as
    in MLIR (the differential fuzzer's reductions were refused before)."""
    module = parse_module(REDUCTION)
    obstacle = unroll_jam_obstacle(find_loop(module, "k", "test"))
    assert obstacle is not None and "carries iter_args" in obstacle[0]
    jammed = assert_equivalent(
        REDUCTION, "mm", reduction_arrays(), "loop-unroll-jam{unroll-jam-factor=2 loop=k}"
    )
    assert jammed == transform(REDUCTION, "loop-unroll{unroll-factor=2 loop=k}")


def test_loop_carrying_iter_args_around_a_loop_is_refused() -> None:
    text = """
func.func @f(%A: memref<4x4xf32>, %B: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 4 iter_args(%acc = %z) -> (f32) {
    affine.for %j = 0 to 4 {
      %v = affine.load %A[%i, %j] : memref<4x4xf32>
      affine.store %v, %A[%j, %i] : memref<4x4xf32>
    } {loopopt.name = "j"}
    %a = affine.load %B[%i] : memref<4xf32>
    %s = arith.addf %acc, %a : f32
    affine.yield %s : f32
  } {loopopt.name = "i"}
  affine.store %r, %B[0] : memref<4xf32>
  return
}
"""
    with pytest.raises(LoopoptError, match="cannot unroll-jam 'i': it carries iter_args"):
        transform(text, "loop-unroll-jam{unroll-jam-factor=2 loop=i}")


@pytest.mark.parametrize(
    "pipeline",
    [
        "loop-unroll-jam{unroll-jam-factor=2 loop=i}",
        "loop-unroll-jam{unroll-jam-factor=4 loop=j}",
        "loop-unroll-jam{unroll-jam-factor=4}",
        "loop-unroll-jam{unroll-jam-factor=4 loop=j},loop-unroll-jam{unroll-jam-factor=2 loop=i}",
    ],
)
def test_matmul_with_sizes_the_factors_do_not_divide(pipeline: str) -> None:
    assert_equivalent(*kernels.matmul(7, 6, 5, seeded()), pipeline)


@pytest.mark.parametrize(
    "pipeline",
    [
        "loop-tile{tile-sizes=4,5},loop-unroll{unroll-factor=2 loop=j},"
        "loop-unroll-jam{unroll-jam-factor=2 loop=i}",
        "loop-tile{tile-sizes=4,4},loop-peel{loop=j count=-1},"
        "loop-unroll-jam{unroll-jam-factor=3 loop=i}",
    ],
)
def test_register_tiling_of_partial_tiles(pipeline: str) -> None:
    # The point loops end at min(it + 4, 10): no affine.min of the tile IVs (no valid dim for
    # upstream MLIR) splits them; the unrolled copies run under affine.if guards instead.
    after = assert_equivalent(*kernels.matmul(10, 13, 7, seeded()), pipeline)
    assert_upstream_valid(after)
    assert "affine.min" not in after and "affine.if" in after


STRIPED_REDUCTION = """
func.func @mm(%A: memref<5x7xf32>, %B: memref<7x6xf32>, %C: memref<5x6xf32>) {
  affine.for %is = 0 to 5 step 4 {
    affine.for %i = affine_map<(d0) -> (d0)>(%is) to min affine_map<(d0) -> (d0 + 4, 5)>(%is) {
      affine.for %j = 0 to 6 {
        %c0 = affine.load %C[%i, %j] : memref<5x6xf32>
        %r = affine.for %k = 0 to 7 iter_args(%acc = %c0) -> (f32) {
          %a = affine.load %A[%i, %k] : memref<5x7xf32>
          %b = affine.load %B[%k, %j] : memref<7x6xf32>
          %p = arith.mulf %a, %b : f32
          %s = arith.addf %acc, %p : f32
          affine.yield %s : f32
        } {loopopt.name = "k"}
        affine.store %r, %C[%i, %j] : memref<5x6xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  } {loopopt.name = "is"}
  return
}
"""


@pytest.mark.parametrize("factor", [2, 3])
def test_guarded_copies_are_jammed_with_their_iter_args(factor: int) -> None:
    # i ends at min(is + 4, 5): the jammed statements of copy u run under `i + u <= 4`; the
    # load before k yields its value out of the guard (the first copy's in the else branch),
    # and inside k the guarded update yields the new sum (else: the copy's incoming sum).
    module = parse_module(STRIPED_REDUCTION)
    i = find_loop(module, "i", "test")
    assert unroll_jam(i, factor) is None
    module.verify()
    [k] = find_loops(module, "k")
    assert len(k.inits) == factor
    ifs = [op for op in module.walk() if isinstance(op, affine.IfOp)]
    assert len(ifs) == 3 * (factor - 1) and all(len(op.results) <= 1 for op in ifs)
    for op in ifs:
        if op.parent_op() is k and op.results:
            else_yield = op.else_region.block.last_op
            assert isinstance(else_yield, affine.YieldOp)
            assert else_yield.operands[0] in k.body.block.args
    text = str(module)
    arrays = reduction_arrays()
    np.testing.assert_allclose(
        run(text, "mm", arrays)[2], run(STRIPED_REDUCTION, "mm", arrays)[2], rtol=1e-5
    )
    assert_upstream_valid(text)


@pytest.mark.parametrize("loop, factor", [("i", 3), ("j", 2), ("j", 4)])
def test_conv2d(loop: str, factor: int) -> None:
    pipeline = f"loop-unroll-jam{{unroll-jam-factor={factor} loop={loop}}}"
    assert_equivalent(*kernels.conv2d(5, 7, 3, 2, seeded()), pipeline)


def test_conv2d_jam_of_the_reduction_loop_p_is_illegal() -> None:
    # Jamming p would interleave the O[i, j] updates of filter rows p and p + 1.
    with pytest.raises(IllegalTransformError, match="unroll-and-jam of loop p reverses O"):
        transform(kernels.conv2d(4, 4, 3, 3, seeded())[0], "loop-unroll-jam{unroll-jam-factor=2}")


def test_syrk_inner_bounds_varying_with_i_are_refused() -> None:
    text = kernels.syrk(6, 5, seeded())[0]
    with pytest.raises(LoopoptError, match="cannot jam 'i' into 'j': the bounds of 'j' vary"):
        transform(text, "loop-unroll-jam{unroll-jam-factor=2 loop=i}")


def test_syrk_jam_of_j_is_fine() -> None:
    after = assert_equivalent(*kernels.syrk(9, 5, seeded()), "loop-unroll-jam{unroll-jam-factor=2}")
    assert "j_rem" in after


def test_wavefront_jam_of_i_is_illegal() -> None:
    text = kernels.wavefront(6, 7, seeded())[0]
    with pytest.raises(IllegalTransformError, match=r"direction \(<, >\)"):
        transform(text, "loop-unroll-jam{unroll-jam-factor=2 loop=i}")
    assert_equivalent(*kernels.wavefront(6, 7, seeded()), "loop-unroll{unroll-factor=2 loop=i}")


def test_jacobi_jam_of_t_is_illegal() -> None:
    text = kernels.jacobi_1d(4, 10, seeded())[0]
    with pytest.raises(IllegalTransformError, match="unroll-and-jam of loop t"):
        transform(text, "loop-unroll-jam{unroll-jam-factor=2}")


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 9, 12])
def test_symbolic_trip_count(n: int) -> None:
    rng = seeded()
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(12, 7), (7, 6), (12, 6)]]
    after = assert_equivalent(
        SYMBOLIC_ROWS, "mm", [*arrays, np.int64(n)], "loop-unroll-jam{unroll-jam-factor=3 loop=i}"
    )
    assert "floordiv 3" in after and "i_rem" in after


def test_default_targets_are_the_loops_just_outside_the_innermost() -> None:
    module = parse_module(kernels.jacobi_1d(2, 8, seeded())[0])
    assert [t.attributes["loopopt.name"] for t in jam_targets(module)] == [
        find_loop(module, "t", "test").attributes["loopopt.name"]
    ]
    module = parse_module(kernels.conv2d(4, 4, 2, 2, seeded())[0])
    assert jam_targets(module) == [find_loop(module, "p", "test")]


def test_a_lone_loop_is_a_default_target_and_is_unrolled() -> None:
    """Nothing around it to unroll, nothing inside to jam: MLIR's affine-loop-unroll-jam unrolls
    a function's lone loop, and so does loop-unroll-jam (it left it alone before)."""
    text = """
func.func @lone(%A: memref<9xf32>) {
  affine.for %i = 0 to 9 {
    %v = affine.load %A[%i] : memref<9xf32>
    %s = arith.addf %v, %v : f32
    affine.store %s, %A[%i] : memref<9xf32>
  } {loopopt.name = "i"}
  return
}
"""
    module = parse_module(text)
    assert jam_targets(module) == [find_loop(module, "i", "test")]
    arrays = [seeded().standard_normal(9).astype(np.float32)]
    after = assert_equivalent(text, "lone", arrays, "loop-unroll-jam{unroll-jam-factor=2}")
    assert after == transform(text, "loop-unroll{unroll-factor=2}")


def test_bad_factor_is_a_diagnostic() -> None:
    with pytest.raises(LoopoptError, match="unroll-jam-factor must be at least 1, got 0"):
        transform(kernels.matmul(4, 4, 4, seeded())[0], "loop-unroll-jam{unroll-jam-factor=0}")


def test_guarded_copies_allocate_outside_their_guard() -> None:
    # promote puts a local buffer (memref.alloca) and copy loops in each strip of i; a guarded
    # copy allocates its buffer (and makes its constants) before the affine.if, so no memref
    # flows out of an if.
    pipeline = (
        "loop-strip-mine{factor=3 loop=i},promote{loop=i arrays=C},"
        "loop-unroll-jam{unroll-jam-factor=2 loop=i}"
    )
    after = assert_equivalent(*kernels.matmul(7, 6, 5, seeded()), pipeline)
    assert_upstream_valid(after)
    assert "affine.if" in after and after.count("memref.alloca") == 2 and "-> (memref" not in after
