"""raise-scf-to-affine: the utilities' verdicts, and the raised form computes what the scf form
does (CPU JIT, random inputs), alone and tiled by sizes that do not divide the loops."""

from __future__ import annotations

import subprocess
from importlib import resources

import numpy as np
import pytest
from equivalence import assert_equivalent, run, transform
from upstream import MLIR_OPT
from xdsl.dialects import affine, memref, scf

from loopopt.context import parse_module
from loopopt.loops.affine_maps import MapBuilder
from loopopt.loops.nest import loop_name, loops_in
from loopopt.loops.raise_affine import NotAffine, affine_bound, affine_expr, raise_for

SCF = """
func.func @f(%A: memref<37x29xf32>, %B: memref<37x29xf32>, %s: memref<37xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c29 = arith.constant 29 : index
  %z = arith.constant 0.0 : f32
  %n1 = arith.subi %n, %c1 : index
  scf.for %i = %c1 to %n1 step %c1 {
    %im = arith.subi %i, %c1 : index
    %lo = arith.muli %i, %c0 : index
    %hi = arith.minsi %c29, %n : index
    %sum = scf.for %j = %lo to %hi step %c2 iter_args(%acc = %z) -> (f32) {
      %a = memref.load %A[%im, %j] : memref<37x29xf32>
      %jj = affine.apply affine_map<(d0) -> (d0 + 1)>(%j)
      %b = memref.load %A[%i, %jj] : memref<37x29xf32>
      %p = arith.addf %a, %b : f32
      memref.store %p, %B[%i, %j] : memref<37x29xf32>
      %t = arith.addf %acc, %p : f32
      scf.yield %t : f32
    }
    memref.store %sum, %s[%i] : memref<37xf32>
  }
  return
}
"""

PARALLEL = """
func.func @p(%A: memref<37x29xf32>, %B: memref<37x29xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c29 = arith.constant 29 : index
  %c37 = arith.constant 37 : index
  "scf.parallel"(%c0, %c0, %c37, %c29, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %a = memref.load %A[%i, %j] : memref<37x29xf32>
    %d = arith.addf %a, %a : f32
    memref.store %d, %B[%i, %j] : memref<37x29xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  "affine.parallel"(%c37) <{lowerBoundsGroups = dense<1> : tensor<2xi32>, \
lowerBoundsMap = affine_map<() -> (0, 0)>, reductions = [], steps = [1, 2], \
upperBoundsGroups = dense<[1, 2]> : tensor<2xi32>, \
upperBoundsMap = affine_map<()[s0] -> (s0, 29, s0 - 10)>}> ({
  ^bb0(%x: index, %y: index):
    %b = affine.load %B[%x, %y] : memref<37x29xf32>
    %e = arith.mulf %b, %b : f32
    affine.store %e, %A[%x, %y] : memref<37x29xf32>
    affine.yield
  }) : (index) -> ()
  return
}
"""


def _arrays(rng: np.random.Generator) -> list:
    return [
        rng.random((37, 29), dtype=np.float32),
        rng.random((37, 29), dtype=np.float32),
        rng.random(37, dtype=np.float32),
        30,
    ]


@pytest.mark.parametrize(
    "pipeline", ["raise-scf-to-affine", "raise-scf-to-affine,loop-tile{tile-sizes=8}"]
)
def test_scf_loops_raised_compute_the_same(pipeline: str) -> None:
    after = assert_equivalent(SCF, "f", _arrays(np.random.default_rng(0)), pipeline)
    assert "scf.for" not in after and "memref.load" not in after and "memref.store" not in after
    assert "iter_args" in after and "min" in after


def test_parallel_loops_raised_compute_what_they_mean() -> None:
    """The CPU JIT does not run parallel loops: the reference is numpy."""
    rng = np.random.default_rng(1)
    a, b = rng.random((37, 29), dtype=np.float32), rng.random((37, 29), dtype=np.float32)
    expected_b = a + a
    expected_a = a.copy()
    expected_a[:, 0:27:2] = expected_b[:, 0:27:2] * expected_b[:, 0:27:2]
    for pipeline in ("raise-scf-to-affine", "raise-scf-to-affine,loop-tile{tile-sizes=16,16}"):
        after = transform(PARALLEL, pipeline)
        assert "scf.parallel" not in after and "affine.parallel" not in after
        got_a, got_b = run(after, "p", [a, b])
        np.testing.assert_allclose(got_b, expected_b, rtol=1e-6)
        np.testing.assert_allclose(got_a, expected_a, rtol=1e-6)
    module = parse_module(transform(PARALLEL, "raise-scf-to-affine"))
    loops = list(loops_in(module))
    assert [loop_name(loop) for loop in loops] == ["i", "j", "x", "y"]
    assert all("loopopt.parallel" in loop.attributes for loop in loops)


def test_matmul_lowered_by_mlir_opt_raises_and_tiles_like_the_affine_form() -> None:
    if MLIR_OPT is None:
        pytest.skip("needs upstream mlir-opt 22")
    source = resources.files("loopopt.examples").joinpath("matmul.mlir").read_text()
    lowered = subprocess.run(
        [MLIR_OPT, "--lower-affine"], input=source, capture_output=True, text=True, check=True
    ).stdout
    rng = np.random.default_rng(2)
    arrays = [
        rng.random((100, 80), dtype=np.float32),
        rng.random((80, 120), dtype=np.float32),
        rng.random((100, 120), dtype=np.float32),
    ]
    assert_equivalent(source, "matmul", arrays, "loop-tile{tile-sizes=32,32,8}")
    after = assert_equivalent(
        lowered, "matmul", arrays, "raise-scf-to-affine,loop-tile{tile-sizes=32,32,8}"
    )
    assert after.count("affine.for") == 6 and "scf.for" not in after


def _expr(text: str) -> str:
    """The affine expression of the index of the one memref.load in `text`, or the reason."""
    module = parse_module(text)
    load = next(op for op in module.walk() if isinstance(op, memref.LoadOp))
    builder = MapBuilder()
    try:
        return str(builder.simplified(affine_expr(load.indices[0], builder)))
    except NotAffine as e:
        return f"not affine: {e}"


HEADER = "func.func @g(%A: memref<?xf32>, %n: index, %m: index) {\n"


def test_affine_expr_of_index_arithmetic() -> None:
    text = (
        HEADER
        + """
      %c3 = arith.constant 3 : index
      %t = arith.muli %n, %c3 : index
      %u = arith.subi %t, %m : index
      %v = memref.load %A[%u] : memref<?xf32>
      return
    }"""
    )
    assert _expr(text) == "((d0 * 3) + (d1 * -1))"


def test_affine_expr_refuses_products_and_loaded_indices() -> None:
    product = (
        HEADER
        + """
      %t = arith.muli %n, %m : index
      %v = memref.load %A[%t] : memref<?xf32>
      return
    }"""
    )
    assert _expr(product) == "not affine: %t is a product of two non-constants"
    loaded = """func.func @g(%A: memref<?xf32>, %I: memref<?xindex>, %n: index) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %k = memref.load %I[%i] : memref<?xindex>
        %v = memref.load %A[%k] : memref<?xf32>
      }
      return
    }"""
    module = parse_module(loaded)
    loads = [op for op in module.walk() if isinstance(op, memref.LoadOp)]
    builder = MapBuilder()
    with pytest.raises(NotAffine, match="IV of an scf.for"):
        affine_expr(loads[0].indices[0], builder)
    with pytest.raises(NotAffine, match="%k is computed by memref.load inside a loop"):
        affine_expr(loads[1].indices[0], builder)


def test_bounds_min_of_terms_and_steps() -> None:
    text = (
        HEADER
        + """
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %hi = arith.minsi %n, %m : index
      %lo = arith.maxsi %c0, %m : index
      scf.for %i = %lo to %hi step %c4 {
      }
      scf.for %j = %c0 to %n step %m {
      }
      return
    }"""
    )
    module = parse_module(text)
    first, second = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    assert str(affine_bound(first.ub, "min").map) == "()[s0, s1] -> (s0, s1)"
    assert str(affine_bound(first.lb, "max").map) == "()[s0] -> (0, s0)"
    raised = raise_for(first)
    assert isinstance(raised, affine.ForOp) and raised.step.value.data == 4
    with pytest.raises(NotAffine, match="the step %m is not a constant"):
        raise_for(second)
    assert isinstance(second.parent_op(), type(raised.parent_op()))  # still in place
