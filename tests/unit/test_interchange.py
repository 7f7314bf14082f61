"""loop-interchange: the utility (loops/interchange.py, bounds.py), the pass, and equivalence."""

from __future__ import annotations

import itertools

import kernels
import numpy as np
import pytest
from equivalence import assert_equivalent, transform
from test_tile import TRAPEZOID, assert_same_points

from loopopt.context import parse_module
from loopopt.diagnostics import IllegalTransformError, LoopoptError
from loopopt.dialects.loopopt import PARALLEL
from loopopt.loops.interchange import permute_band
from loopopt.loops.nest import find_loop, loop_name, perfect_band

SKEWED = """
func.func @skewed(%A: memref<64xf32>, %n: index) {
  affine.for %i = 0 to %n {
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to affine_map<(d0) -> (2 * d0 + 3)>(%i) {
      affine.for %k = affine_map<(d0, d1) -> (d1 - d0)>(%i, %j) to 5 {
        %v = affine.load %A[%k] : memref<64xf32>
        affine.store %v, %A[%j] : memref<64xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


def _permuted(text: str, permutation: list[int]) -> list[str | None]:
    module = parse_module(text)
    order = permute_band(perfect_band(find_loop(module, "i", "test")), permutation)
    module.verify()
    return [loop_name(loop) for loop in order]


@pytest.mark.parametrize("permutation", list(itertools.permutations(range(3))))
def test_rectangular_band_keeps_its_bounds(permutation: tuple[int, ...], rng) -> None:
    text, name, _ = kernels.matmul(5, 4, 3, rng)
    module = parse_module(text)
    band = perfect_band(find_loop(module, "i", "test"))
    bounds = {loop_name(loop): (loop.lowerBoundMap, loop.upperBoundMap) for loop in band}
    order = permute_band(band, permutation)
    for depth, loop in enumerate(band):
        assert order[permutation[depth]] is loop  # the same ops, moved
    assert bounds == {loop_name(loop): (loop.lowerBoundMap, loop.upperBoundMap) for loop in order}
    module.verify()
    assert_same_points(text, module, name)


@pytest.mark.parametrize("permutation", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("n", [0, 1, 6])
def test_triangular_bounds_are_recomputed_exactly(permutation: tuple[int, ...], n: int) -> None:
    module = parse_module(SKEWED)
    permute_band(perfect_band(find_loop(module, "i", "test")), permutation)
    module.verify()
    assert_same_points(SKEWED, module, "skewed", {"n": n})


@pytest.mark.parametrize("permutation", [[1, 0], [1, 0, 2], [2, 1, 0], [1, 2, 0]])
def test_symbolic_trapezoid(permutation: list[int]) -> None:
    text = TRAPEZOID.replace("step 3", "")
    module = parse_module(text)
    band = perfect_band(find_loop(module, "i", "test"))[: len(permutation)]
    permute_band(band, permutation)
    module.verify()
    for n, m in [(20, 30), (9, 4)]:
        assert_same_points(text, module, "trap", {"n": n, "m": m})


def test_empty_triangular_band() -> None:
    text = SKEWED.replace("(2 * d0 + 3)", "(d0)")
    module = parse_module(text)
    order = permute_band(perfect_band(find_loop(module, "i", "test")), [1, 0, 2])
    assert [str(loop.upperBoundMap.data) for loop in order[:2]] == ["() -> (0)"] * 2
    module.verify()
    assert_same_points(text, module, "skewed", {"n": 4})


STEPPED = """
func.func @trap(%A: memref<64xf32>, %n: index, %m: index) {{
  affine.for %i = 2 to %n step {0} {{
    affine.for %j = affine_map<(d0) -> (d0 - 4)>(%i)
        to min affine_map<(d0)[s0] -> (d0 + 5, s0)>(%i)[%m] step {1} {{
      affine.for %k = affine_map<(d0, d1) -> (d1 - d0 + 6)>(%i, %j) to 9 step {2} {{
        %v = affine.load %A[%k] : memref<64xf32>
        affine.store %v, %A[%j + 4] : memref<64xf32>
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""


@pytest.mark.parametrize("permutation", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("steps", [(3, 1, 1), (2, 3, 1), (1, 1, 2), (2, 2, 3)])
def test_strides_in_a_non_rectangular_band(
    permutation: tuple[int, ...], steps: tuple[int, ...]
) -> None:
    text = STEPPED.format(*steps)
    module = parse_module(text)
    band = perfect_band(find_loop(module, "i", "test"))
    i, j, k = permutation
    if (steps[1] != 1 and i > j) or (steps[2] != 1 and (i > k or j > k)):
        with pytest.raises(LoopoptError, match="has step .* uses a loop that would be inside"):
            permute_band(band, permutation)
        return
    permute_band(band, permutation)
    module.verify()
    for n, m in [(20, 30), (9, 4), (2, 6)]:
        assert_same_points(text, module, "trap", {"n": n, "m": m})


def test_unsupported_reorderings_are_refused_before_any_change() -> None:
    text = TRAPEZOID.replace("to 9 {", "to 9 step 2 {")  # k: step 2, lb uses i and j
    module = parse_module(text)
    before = str(module)
    band = perfect_band(find_loop(module, "i", "test"))
    with pytest.raises(LoopoptError, match="loop 'k' has step 2 and a lower bound that is a max"):
        permute_band(band, [1, 2, 0])
    with pytest.raises(LoopoptError, match="not a permutation of 0..2"):
        permute_band(band, [0, 0, 1])
    assert str(module) == before
    assert _permuted(text, [1, 0, 2]) == ["j", "i", "k"]  # k stays innermost


def test_parallel_marks_survive_only_where_still_valid() -> None:
    text = TRAPEZOID.replace('{loopopt.name = "j"}', '{loopopt.name = "j", loopopt.parallel}')
    module = parse_module(text.replace("step 3", ""))
    band = perfect_band(find_loop(module, "i", "test"))
    i, j, k = band
    permute_band(band, [2, 0, 1])  # order (j, k, i): j moves out past i, i moves in
    assert PARALLEL not in j.attributes  # j may now carry what i carried
    assert PARALLEL in find_loop(module, "i", "test").attributes


def test_pass_on_matmul(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.matmul(13, 11, 9, rng)
    for permutation in ("2,0,1", "1,0", "0,2,1"):
        assert_equivalent(text, name, arrays, f"loop-interchange{{permutation={permutation}}}")


def test_pass_on_syrk_and_conv2d(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.syrk(12, 5, rng)
    after = assert_equivalent(text, name, arrays, "loop-interchange{permutation=1,0,2}")
    assert "to 12" in after
    assert_equivalent(text, name, arrays, "loop-interchange{permutation=1,2,0}")
    text, name, arrays = kernels.conv2d(7, 6, 3, 2, rng)
    assert_equivalent(text, name, arrays, "loop-interchange{permutation=2,3,0,1}")
    assert_equivalent(text, name, arrays, "loop-interchange{permutation=1,0 loops=i,j}")


def test_pass_refuses_wavefront(rng: np.random.Generator) -> None:
    text, _, _ = kernels.wavefront(9, 8, rng)
    with pytest.raises(IllegalTransformError, match=r"reverses .* \(<, >\)"):
        transform(text, "loop-interchange{permutation=1,0}")
    assert transform(text, "loop-interchange{permutation=0,1}")  # identity: nothing to do


@pytest.mark.parametrize(
    "options, message",
    [
        ("", "permutation is required"),
        ("permutation=0,2", "is not a permutation of 0..1"),
        ("permutation=1,1,0", "is not a permutation of 0..2"),
        ("permutation=3,2,1,0", "permutation has 4 entries but the band (i, j, k) has 3 loops"),
        ("permutation=1,0 loops=i,j,k", "permutation has 2 entries for 3 loops"),
        ("permutation=1,0 loops=i,x", "no loop named 'x'"),
        ("permutation=1,0 loops=i,k", "do not form a perfect nest"),
    ],
)
def test_pass_validates_options(options: str, message: str, rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(8, 8, 8, rng)
    with pytest.raises(LoopoptError) as info:
        transform(text, f"loop-interchange{{{options}}}")
    assert message in info.value.message


def test_pass_refuses_reordering_a_reduction(rng: np.random.Generator) -> None:
    text, _, _ = kernels.conv2d(7, 6, 3, 2, rng)
    with pytest.raises(IllegalTransformError, match=r"permuting loops \(p, q\)"):
        transform(text, "loop-interchange{permutation=1,0 loops=p,q}")


NESTED = """
func.func @nested(%A: memref<16xf32>) {
  affine.for %t = 0 to 4 {
    affine.for %i = 0 to 6 {
      affine.for %j = affine_map<(d0, d1) -> (d0 + d1)>(%i, %t) to 9 {
        %v = affine.load %A[%j] : memref<16xf32>
        affine.store %v, %A[%i] : memref<16xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}
"""


def test_band_inside_a_loop_uses_its_iv_as_a_parameter() -> None:
    module = parse_module(NESTED)
    band = perfect_band(find_loop(module, "i", "test"))
    j, i = permute_band(band, [1, 0])
    assert (loop_name(j), loop_name(i)) == ("j", "i")
    assert len(j.lowerBoundOperands) == 1  # j from t: the outer IV is a dim operand
    module.verify()
    assert_same_points(NESTED, module, "nested")
