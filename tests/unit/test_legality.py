"""Legality checks: accepted requests return, refused ones raise one line naming the dependence."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from kernels import conv2d, jacobi_1d, matmul, syrk, wavefront
from xdsl.dialects import affine
from xdsl.dialects.builtin import ModuleOp

from loopopt.analysis.dependence import dependences
from loopopt.analysis.legality import (
    require_fully_permutable,
    require_permutation_legal,
    require_unroll_jam_legal,
)
from loopopt.context import parse_module
from loopopt.diagnostics import IllegalTransformError, LoopoptError
from loopopt.loops.nest import find_loop


def loops(module: ModuleOp, names: str) -> list[affine.ForOp]:
    return [find_loop(module, name, "test") for name in names.split(",")]


def carried(band: list[affine.ForOp]) -> set[tuple[str, tuple[str, ...], tuple[int | None, ...]]]:
    """(kind, directions, distances) of the dependences carried inside the band: what an
    accepted request was checked against (none at all would make the acceptance vacuous)."""
    return {
        (dep.kind, dep.directions, dep.distances)
        for dep in dependences(band[0])
        if dep.carrier is not None
    }


REDUCTION = {  # C[i, j] += ... in the innermost loop k: carried by k only
    ("RAW", ("=", "=", "<"), (0, 0, None)),
    ("WAR", ("=", "=", "<"), (0, 0, None)),
    ("WAW", ("=", "=", "<"), (0, 0, None)),
}


def test_matmul_accepts_everything(rng: np.random.Generator) -> None:
    """Every request is checked against k's reduction dependences, and none reverses them."""
    module = parse_module(matmul(4, 5, 6, rng)[0])
    band = loops(module, "i,j,k")
    assert carried(band) == REDUCTION
    assert require_fully_permutable(band, "loop-tile") is None
    accepted = [p for p in itertools.permutations(range(3)) if not _refuses(band, p)]
    assert len(accepted) == 6
    assert all(require_unroll_jam_legal(loop, "loop-unroll-jam") is None for loop in band)


def _refuses(band: list[affine.ForOp], permutation: tuple[int, ...]) -> bool:
    try:
        require_permutation_legal(band, permutation, "loop-interchange")
    except IllegalTransformError:
        return True
    return False


def test_wavefront_refusals(rng: np.random.Generator) -> None:
    module = parse_module(wavefront(6, 7, rng)[0], name="wave.mlir")
    band = loops(module, "i,j")
    dep = "A[i, j] → A[i - 1, j + 1] (RAW)"
    with pytest.raises(IllegalTransformError) as refused:
        require_permutation_legal(band, [1, 0], "loop-interchange")
    assert refused.value.message == (
        f"loop-interchange: illegal: permuting loops (i, j) reverses {dep} with direction (<, >)"
    )
    assert refused.value.location == "wave.mlir:3:3"  # the outermost loop
    with pytest.raises(IllegalTransformError) as refused:
        require_fully_permutable(band, "loop-tile")
    assert refused.value.message == (
        f"loop-tile: illegal: band (i, j) is not fully permutable: {dep} has direction (<, >)"
    )
    with pytest.raises(IllegalTransformError) as refused:
        require_unroll_jam_legal(band[0], "loop-unroll-jam", 2)
    assert refused.value.message == (
        f"loop-unroll-jam: illegal: unroll-and-jam of loop i reverses {dep} with direction (<, >)"
    )
    require_permutation_legal(band, [0, 1], "loop-interchange")  # the identity is always legal
    require_fully_permutable(band[1:], "loop-tile")  # j alone carries nothing
    require_unroll_jam_legal(band[1], "loop-unroll-jam")


NEST = """
func.func @f(%A: memref<64x64xf32>) {{
  affine.for %i = 4 to 60 {{
    affine.for %j = 4 to 60 {{
      %u = affine.load %A[{read}] : memref<64x64xf32>
      affine.store %u, %A[%i, %j] : memref<64x64xf32>
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""


def nest(read: str) -> tuple[ModuleOp, list[affine.ForOp]]:
    module = parse_module(NEST.format(read=read))
    return module, loops(module, "i,j")


def test_diagonal_dependence_is_fully_permutable() -> None:
    _, band = nest("%i - 1, %j - 1")
    assert carried(band) == {("RAW", ("<", "<"), (1, 1))}
    assert require_fully_permutable(band, "loop-tile") is None
    assert not _refuses(band, (1, 0))
    assert require_unroll_jam_legal(band[0], "loop-unroll-jam") is None
    _, reversed_band = nest("%i - 1, %j + 1")  # the same checks see (<, >)
    assert carried(reversed_band) == {("RAW", ("<", ">"), (1, -1))}
    assert _refuses(reversed_band, (1, 0))


def test_unroll_jam_exact_with_factor() -> None:
    _, band = nest("%i - 4, %j + 1")  # distance (4, -1)
    require_unroll_jam_legal(band[0], "loop-unroll-jam", 2)
    require_unroll_jam_legal(band[0], "loop-unroll-jam", 4)
    with pytest.raises(IllegalTransformError):
        require_unroll_jam_legal(band[0], "loop-unroll-jam", 5)
    with pytest.raises(IllegalTransformError):
        require_unroll_jam_legal(band[0], "loop-unroll-jam")  # conservative without a factor


def test_unroll_jam_same_statement_group_is_fine() -> None:
    """(<, =): the copy of i + 1 reads what copy i just stored, in the same statement group."""
    _, band = nest("%i - 1, %j")
    assert carried(band) == {("RAW", ("<", "="), (1, 0))}
    assert require_unroll_jam_legal(band[0], "loop-unroll-jam", 4) is None


def test_unroll_jam_across_sibling_loops(rng: np.random.Generator) -> None:
    module = parse_module(jacobi_1d(4, 12, rng)[0])
    with pytest.raises(IllegalTransformError, match=r"unroll-and-jam of loop t reverses .*\(<\)"):
        require_unroll_jam_legal(find_loop(module, "t", "test"), "loop-unroll-jam", 2)
    require_unroll_jam_legal(find_loop(module, "i", "test"), "loop-unroll-jam", 2)


def test_triangular_band_is_fully_permutable(rng: np.random.Generator) -> None:
    module = parse_module(syrk(6, 5, rng)[0])
    band = loops(module, "i,j,k")
    assert carried(band) == REDUCTION
    assert require_fully_permutable(band, "loop-tile") is None


def test_reduction_band_only_as_far_as_its_components_allow(rng: np.random.Generator) -> None:
    module = parse_module(conv2d(6, 6, 3, 3, rng)[0])
    require_fully_permutable(loops(module, "i,j,p"), "loop-tile")
    with pytest.raises(IllegalTransformError, match=r"\(i, j, p, q\).*direction \(=, =, <, \*\)"):
        require_fully_permutable(loops(module, "i,j,p,q"), "loop-tile")
    band = loops(module, "i,j,p,q")
    require_permutation_legal(band, [1, 0, 2, 3], "loop-interchange")
    with pytest.raises(IllegalTransformError):
        require_permutation_legal(band, [0, 1, 3, 2], "loop-interchange")


ITER_ARGS = """
func.func @f(%A: memref<8x8xf32>, %S: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 8 {
    %r = affine.for %k = 0 to 8 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %A[%i, %k] : memref<8x8xf32>
      %n = arith.addf %acc, %v : f32
      affine.yield %n : f32
    } {loopopt.name = "k"}
    affine.store %r, %S[%i] : memref<8xf32>
  } {loopopt.name = "i"}
  return
}
"""


def test_iter_args_loops_do_not_move() -> None:
    module = parse_module(ITER_ARGS)
    i, k = loops(module, "i,k")
    with pytest.raises(IllegalTransformError, match="moves loop k, which carries iter_args"):
        require_permutation_legal([i, k], [1, 0], "loop-interchange")
    with pytest.raises(IllegalTransformError, match="loop k at depth 1 carries iter_args"):
        require_fully_permutable([i, k], "loop-tile")
    with pytest.raises(IllegalTransformError, match="loop k carries iter_args"):
        require_unroll_jam_legal(k, "loop-unroll-jam")
    require_unroll_jam_legal(i, "loop-unroll-jam", 2)
    require_fully_permutable([k], "loop-tile")


def test_invalid_permutation_is_a_plain_error(rng: np.random.Generator) -> None:
    module = parse_module(matmul(4, 4, 4, rng)[0])
    with pytest.raises(LoopoptError) as error:
        require_permutation_legal(loops(module, "i,j"), [0, 0], "loop-interchange")
    assert not isinstance(error.value, IllegalTransformError)
    assert "permutation=0,0 is not a permutation of 0..1" in error.value.message
