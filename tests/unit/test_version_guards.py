"""version-guards: a padded triangle's diagonal guards copied away where they all hold.

Execution equivalence on the CPU for triangles whose reduction runs below (`k < i`, symm) or
above (`k > i`, trmm) the diagonal, with tile sizes that do not divide the trip counts, against
the same pipeline without versioning (bit-identical: the same ops run on the same values, or
none where every guard fails and only zero terms would be added) and against the plain loops;
the versioned runs, the version that runs nothing, and what is left alone; `_tightest`."""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import run, transform
from xdsl.dialects import affine, arith
from xdsl.ir.affine import AffineExpr

from loopopt.context import parse_module
from loopopt.loops.version_guards import _tightest, guard_select, version_guards


def triangle(m: int, n: int, below: bool) -> str:
    """T[i, j] += B[k, j] * A[i, k] over k < i (below) or k > i."""
    bounds = (
        "0 to affine_map<(d0) -> (d0)>(%i)" if below else f"affine_map<(d0) -> (d0 + 1)>(%i) to {m}"
    )
    return f"""
func.func @tri(%A: memref<{m}x{m}xf32>, %B: memref<{m}x{n}xf32>, %T: memref<{m}x{n}xf32>) {{
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = {bounds} {{
        %a = affine.load %A[%i, %k] : memref<{m}x{m}xf32>
        %b = affine.load %B[%k, %j] : memref<{m}x{n}xf32>
        %t = affine.load %T[%i, %j] : memref<{m}x{n}xf32>
        %p = arith.mulf %b, %a : f32
        %s = arith.addf %t, %p : f32
        affine.store %s, %T[%i, %j] : memref<{m}x{n}xf32>
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""


def _padded(tile: int, rows: int) -> str:
    """Tiles of i (rows) and k (tile), padded, unrolled, C kept in registers across k_t."""
    return (
        f"loop-tile{{loops=i,j,k tile-sizes={rows},1,{tile}}},"
        "pad-tiles{loops=i_t,k_t,i,k},"
        "loop-unroll{unroll-full loop=k},loop-unroll{unroll-full loop=j},"
        "loop-unroll{unroll-full loop=i},scalar-replace{loop=k_t}"
    )


@pytest.mark.parametrize("below", [True, False])
@pytest.mark.parametrize(("m", "n", "tile", "rows"), [(11, 5, 4, 2), (13, 3, 3, 4), (8, 4, 2, 2)])
def test_same_values_as_the_padded_and_the_plain_loops(
    below: bool, m: int, n: int, tile: int, rows: int
) -> None:
    text = triangle(m, n, below)
    padded = transform(text, _padded(tile, rows))
    versioned = transform(padded, "version-guards{loop=k_t}")
    assert versioned.count("affine.if") > padded.count("affine.if")
    rng = np.random.default_rng(m * 31 + n + tile)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((m, m), (m, n), (m, n))]
    plain, before, after = (run(t, "tri", arrays) for t in (text, padded, versioned))
    np.testing.assert_array_equal(after[2], before[2])
    np.testing.assert_allclose(after[2], plain[2], rtol=1e-5, atol=1e-5)


def test_infinite_factors_stay_out_of_the_diagonal() -> None:
    """An infinite element past the diagonal is zeroed by the selects of the diagonal's tiles,
    which the else-version keeps: no NaN appears."""
    m, n = 9, 3
    text = triangle(m, n, below=True)
    versioned = transform(transform(text, _padded(4, 2)), "version-guards{loop=k_t}")
    rng = np.random.default_rng(3)
    a, b, t = (rng.standard_normal(s).astype(np.float32) for s in ((m, m), (m, n), (m, n)))
    a[np.triu_indices(m)] = np.inf  # never read by the loops (k < i)
    plain, got = run(text, "tri", [a, b, t]), run(versioned, "tri", [a, b, t])
    assert np.isfinite(got[2]).all()
    np.testing.assert_allclose(got[2], plain[2], rtol=1e-5, atol=1e-5)


def test_one_run_per_barrier_free_stretch_and_none_without_guards() -> None:
    text = transform(triangle(10, 4, below=True), _padded(4, 2))
    module = parse_module(text)
    loop = next(
        op
        for op in module.walk()
        if isinstance(op, affine.ForOp) and "k_t" in str(op.attributes.get("loopopt.name"))
    )
    assert any(guard_select(op) for op in loop.body.block.ops)
    assert version_guards(loop) == 1
    assert not any(guard_select(op) for op in loop.body.block.ops)
    (outer,) = [op for op in loop.body.block.ops if isinstance(op, affine.IfOp)]
    (skip,) = [op for op in outer.else_region.block.ops if isinstance(op, affine.IfOp)]
    carried = set(loop.body.block.args[1:])
    assert set(skip.then_region.block.last_op.operands) <= carried  # runs nothing
    assert version_guards(loop) == 0  # the selects now sit inside the affine.if
    plain = parse_module(triangle(10, 4, below=True))
    assert not any(isinstance(op, arith.SelectOp) for op in plain.walk())


def test_tightest_keeps_one_condition_per_linear_form() -> None:
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    kept = _tightest([d1 - d0 - 1, d1 - d0 - 3, d1 - d0 - 2, d0 + 4], 2)
    assert [str(e) for e in kept] == [str(d1 - d0 - 3), str(d0 + 4)]
