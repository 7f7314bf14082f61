"""reduction-to-memory: the exact check (analysis/demotion.py), the mechanics (loops/demote.py),
the pass on the PolyBench kernels whose front-end IR has iter_args (against plain Python), and
the round trip with scalar-replace."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polybench_py as pb
import pytest
from equivalence import assert_equivalent, run, transform

import loopopt
from loopopt.analysis.demotion import Home, home
from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import find_loop

Inputs = Callable[[np.random.Generator], list[Any]]

# The kernels whose front-end IR has iter_args, at sizes that are not powers of two.
KERNELS: dict[str, tuple[Callable[..., None], Inputs]] = {
    "symm": (pb.symm, lambda g: [1.5, 1.2, pb._r(g, 5, 7), pb._r(g, 5, 5), pb._r(g, 5, 7)]),
    "lu": (pb.lu, lambda g: [pb._spd(g, 7)]),
    "ludcmp": (pb.ludcmp, lambda g: [pb._spd(g, 7), pb._r(g, 7), np.zeros(7), np.zeros(7)]),
    "durbin": (pb.durbin, lambda g: [g.uniform(0.05, 0.2, 11), np.zeros(11), np.zeros(11)]),
    "gramschmidt": (
        pb.gramschmidt,
        lambda g: [pb._r(g, 7, 5), np.zeros((5, 5)), np.zeros((7, 5))],
    ),
    "deriche": (
        pb.deriche,
        lambda g: [0.25, pb._r(g, 5, 7), np.zeros((5, 7)), np.zeros((5, 7)), np.zeros((5, 7))],
    ),
}

IN_PLACE = {"lu", "ludcmp", "gramschmidt"}
"""Kernels whose every iter_arg has an element to live in (no scratch buffer needed)."""


def test_every_kernel_with_iter_args_is_covered(rng: np.random.Generator) -> None:
    for name, (function, inputs) in pb.CASES.items():
        text = loopopt.kernel(function, static_shapes=True).mlir(*inputs(rng))
        assert ("iter_args" in text) == (function.__name__ in KERNELS), name


@pytest.mark.parametrize("scratch", [False, True], ids=["in-place", "scratch"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_polybench_matches_python(name: str, scratch: bool, rng: np.random.Generator) -> None:
    function, inputs = KERNELS[name]
    args = inputs(rng)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    function(*expected)
    text = loopopt.kernel(function, static_shapes=True).mlir(*args)
    after = transform(text, "reduction-to-memory{scratch}" if scratch else "reduction-to-memory")
    assert ("iter_args" in after) == (not scratch and name not in IN_PLACE), after
    assert ("memref.alloca" in after) == (scratch and name not in IN_PLACE), after
    got = run(after, name, args)
    for index, (g, e) in enumerate(zip(got, expected, strict=True)):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, err_msg=f"argument {index}")


def test_then_scalar_replace_gives_back_an_equivalent_loop(rng: np.random.Generator) -> None:
    """lu: demoted, then scalar-replace keeps A[i, j] in registers across k again."""
    args = KERNELS["lu"][1](rng)
    text = loopopt.kernel(pb.lu, static_shapes=True).mlir(*args)
    after = assert_equivalent(
        text, "lu", args, "reduction-to-memory,scalar-replace{loop=k}", rtol=1e-12
    )
    assert text.count("iter_args") == after.count("iter_args") == 2
    assert transform(text, "reduction-to-memory").count("iter_args") == 0


ROW = """
func.func @row(%C: memref<9x9xf32>, %A: memref<9x9xf32>) {{
  affine.for %i = 0 to 9 {{
    %c = affine.load %C[%i, %i] : memref<9x9xf32>
    {between}
    %r = affine.for %k = 0 to affine_map<(d0) -> ({upper})>(%i) iter_args(%acc = %c) -> (f32) {{
      %a = affine.load %A[%i, %k] : memref<9x9xf32>
      %s = arith.addf %acc, %a : f32
      affine.store %s, %C[%k, %i] : memref<9x9xf32>
      affine.yield %s : f32
    }} {{loopopt.name = "k"}}
    affine.store %r, %C[%i, %i] : memref<9x9xf32>
  }} {{loopopt.name = "i"}}
  func.return
}}
"""
"""The loop writes C[k, i] for k below `upper`: C[i, i] exactly when upper > i."""


def _home(text: str, loop: str = "k", position: int = 0) -> Home | str:
    return home(find_loop(parse_module(text), loop, "test"), position)


def test_home_is_exact_about_the_elements_the_loop_touches() -> None:
    found = _home(ROW.format(upper="d0", between=""))
    assert isinstance(found, Home) and found.init_load is not None
    assert str(found.store.memref.name_hint) == "C"
    assert _home(ROW.format(upper="d0 + 1", between="")) == (
        "'C[k, i]' written in the loop may be 'C[i, i]', where its result is stored"
    )


def test_home_needs_an_init_store_when_the_element_changes_before_the_loop() -> None:
    store = "affine.store %c, %C[%i, %i] : memref<9x9xf32>"
    found = _home(ROW.format(upper="d0", between=store))
    assert isinstance(found, Home) and found.init_load is None
    other = "affine.store %c, %C[%i + 1, %i] : memref<9x9xf32>"  # another element
    found = _home(ROW.format(upper="d0", between=other))
    assert isinstance(found, Home) and found.init_load is not None


@pytest.mark.parametrize("between", ["", "affine.store %c, %C[%i, %i] : memref<9x9xf32>"])
def test_row_demoted_computes_the_same(between: str, rng: np.random.Generator) -> None:
    text = ROW.format(upper="d0", between=between)
    arrays = [rng.standard_normal((9, 9)).astype(np.float32) for _ in range(2)]
    after = assert_equivalent(text, "row", arrays, "reduction-to-memory")
    assert "iter_args" not in after


def test_a_view_of_the_array_may_touch_the_element() -> None:
    text = """
    func.func @view(%x: memref<8xf64>) {
      %v = memref.subview %x[0] [4] [1] : memref<8xf64> to memref<4xf64, strided<[1]>>
      affine.for %i = 0 to 4 {
        %0 = arith.constant 0.0 : f64
        %r = affine.for %k = 0 to 3 iter_args(%a = %0) -> (f64) {
          %t = affine.load %v[%k] : memref<4xf64, strided<[1]>>
          %s = arith.addf %a, %t : f64
          affine.yield %s : f64
        } {loopopt.name = "k"}
        affine.store %r, %x[%i + 4] : memref<8xf64>
      } {loopopt.name = "i"}
      func.return
    }
    """
    assert _home(text) == "'v[k]' read in the loop may be 'x[i + 4]', where its result is stored"


TWO = """
func.func @two(%x: memref<7xf64>, %y: memref<7xf64>) {
  affine.for %i = 0 to 7 {
    %0 = arith.constant 0.0 : f64
    %r:2 = affine.for %k = 0 to 5 iter_args(%a = %0, %b = %0) -> (f64, f64) {
      %t = affine.load %y[%k] : memref<7xf64>
      %s = arith.addf %a, %t : f64
      %u = arith.mulf %b, %t : f64
      affine.yield %s, %u : f64, f64
    } {loopopt.name = "k"}
    %q = arith.addf %r#0, %r#1 : f64
    affine.store %q, %x[%i] : memref<7xf64>
  } {loopopt.name = "i"}
  func.return
}
"""


def test_two_iter_args_never_share_an_element(rng: np.random.Generator) -> None:
    """Both results reach the one store to x[i]: only the first may live there."""
    arrays = [rng.standard_normal(7) for _ in range(2)]
    with pytest.raises(LoopoptError, match="iter_arg %b: its result is stored where another"):
        transform(TWO, "reduction-to-memory{loop=k}")
    after = assert_equivalent(TWO, "two", arrays, "reduction-to-memory{scratch}", rtol=1e-12)
    assert after.count("memref.alloca") == 1 and "iter_args" not in after


def test_pass_options(rng: np.random.Generator, capsys: pytest.CaptureFixture[str]) -> None:
    text = ROW.format(upper="d0 + 1", between="")
    with pytest.raises(LoopoptError, match="reduction-to-memory: loop k left as it is"):
        transform(text, "reduction-to-memory{loop=k}")
    with pytest.raises(LoopoptError, match="no loop named 'i' has iter_args"):
        transform(text, "reduction-to-memory{loop=i}")
    with pytest.raises(LoopoptError, match="no function named 'g'"):
        transform(text, "reduction-to-memory{func=g}")
    assert "iter_args" in transform(text, "reduction-to-memory{func=row}")
    assert "warning: reduction-to-memory: loop k left as it is" in capsys.readouterr().err
    assert "iter_args" not in transform(text, "reduction-to-memory{loop=k scratch}")
