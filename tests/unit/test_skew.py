"""loop-skew: the utility (loops/skew.py), the wavefront analysis (analysis/legality.py), the
pass, execution equivalence on random inputs, and a property test over random 2-deep nests."""

from __future__ import annotations

from collections import Counter

import kernels
import numpy as np
import pytest
from equivalence import assert_equivalent, run, transform
from gpu_emulator import emulate
from hypothesis import given, note, settings
from hypothesis import strategies as st
from nestgen import nests
from test_tile import iteration_points

from loopopt.analysis.legality import require_wavefront, wavefront_blockers, wavefront_factor
from loopopt.analysis.parallel import is_parallel
from loopopt.context import make_context, parse_module
from loopopt.diagnostics import IllegalTransformError, LoopoptError
from loopopt.dialects.loopopt import PARALLEL
from loopopt.loops.nest import find_loop, iv, loop_name
from loopopt.loops.skew import check_wavefront, skew, wavefront
from loopopt.passes.loop_skew import LoopSkewPass

# A stepped, triangular pair with a symbolic bound and an order-sensitive body: out[0] is
# updated in every iteration, so any change of order shows in the result.
STEPPED = """
func.func @stepped(%A: memref<40x40xf32>, %out: memref<1xf32>, %n: index) {
  affine.for %i = 1 to %n step 2 {
    affine.for %j = affine_map<(d0) -> (d0 floordiv 2)>(%i)
        to min affine_map<(d0)[s0] -> (d0 + 7, s0)>(%i)[%n] step 3 {
      %a = affine.load %A[%i, %j] : memref<40x40xf32>
      %o = affine.load %out[0] : memref<1xf32>
      %h = arith.constant 0.5 : f32
      %p = arith.mulf %o, %h : f32
      %s = arith.addf %p, %a : f32
      affine.store %s, %out[0] : memref<1xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i", loopopt.parallel}
  return
}
"""

USES = """
func.func @uses(%A: memref<40x40xi32>) {
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      affine.for %k = affine_map<(d0) -> (d0)>(%j) to 12 {
        %x = arith.index_cast %j : index to i32
        affine.if affine_set<(d0) : (d0 - 3 >= 0)>(%j) {
          affine.store %x, %A[%i, %k] : memref<40x40xi32>
        }
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""

# A[i, j] = A[i - 1, j + n]: the distance along j is -n, unbounded as j runs to m.
UNBOUNDED = """
func.func @unbounded(%A: memref<?x?xf32>, %n: index, %m: index) {
  affine.for %i = 1 to 9 {
    affine.for %j = 0 to %m {
      %u = affine.load %A[%i - 1, %j + %n] : memref<?x?xf32>
      affine.store %u, %A[%i, %j] : memref<?x?xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""

FIVE_POINT = """
func.func @five(%A: memref<9x8xf32>) {
  affine.for %i = 1 to 8 {
    affine.for %j = 1 to 7 {
      %n = affine.load %A[%i - 1, %j] : memref<9x8xf32>
      %w = affine.load %A[%i, %j - 1] : memref<9x8xf32>
      %e = affine.load %A[%i, %j + 1] : memref<9x8xf32>
      %s = affine.load %A[%i + 1, %j] : memref<9x8xf32>
      %a = arith.addf %n, %w : f32
      %b = arith.addf %e, %s : f32
      %c = arith.addf %a, %b : f32
      affine.store %c, %A[%i, %j] : memref<9x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""

REDUCTION_PAIR = """
func.func @red(%A: memref<9x8xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 9 {
    %r = affine.for %j = 0 to 8 iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %A[%i, %j] : memref<9x8xf32>
      %s = arith.addf %acc, %a : f32
      affine.yield %s : f32
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


def _pair(text: str, outer: str = "i", inner: str = "j"):
    module = parse_module(text)
    return module, find_loop(module, outer, "test"), find_loop(module, inner, "test")


# ---------------------------------------------------------------- the utility


@pytest.mark.parametrize("factor", [1, 2, 5])
@pytest.mark.parametrize("n", [1, 2, 14, 23])
def test_skew_keeps_every_iteration_in_its_place(factor: int, n: int) -> None:
    module, i, j = _pair(STEPPED)
    skewed = skew(i, j, factor)
    module.verify()
    assert loop_name(skewed) == "j_sk"
    before = iteration_points(STEPPED, "stepped", {"i", "j"}, {"n": n})
    after = iteration_points(module, "stepped", {"i", "j_sk"}, {"n": n})
    # the same stores in the same order, j_sk = j + factor * i
    renamed = []
    for store, values in after:
        named = dict(values)
        original = named["j_sk"] - factor * named["i"]
        renamed.append((store, (("i", named["i"]), ("j", original))))
    assert renamed == before


def test_skew_keeps_results_and_marks(rng: np.random.Generator) -> None:
    module, i, j = _pair(STEPPED)
    skewed = skew(i, j, 3)
    assert PARALLEL in find_loop(module, "i", "test").attributes
    assert PARALLEL not in skewed.attributes
    arrays = [rng.standard_normal((40, 40)).astype(np.float32), np.zeros(1, np.float32), 31]
    expected, got = run(STEPPED, "stepped", arrays), run(str(module), "stepped", arrays)
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_non_affine_uses_read_an_apply(rng: np.random.Generator) -> None:
    module, i, j = _pair(USES)
    skewed = skew(i, j, 2)
    module.verify()
    first = next(iter(skewed.body.block.ops))
    assert first.name == "affine.apply"  # index_cast and affine.if read the original j
    k = find_loop(module, "k", "test")
    assert skewed.body.block.args[0] in set(k.lowerBoundOperands)  # the map composes j_sk - 2i
    a = np.zeros((40, 40), np.int32)
    np.testing.assert_array_equal(run(USES, "uses", [a])[0], run(str(module), "uses", [a])[0])


def test_factor_zero_changes_nothing() -> None:
    module, i, j = _pair(STEPPED)
    before = str(module)
    assert skew(i, j, 0) is j
    assert str(module) == before


def test_skewed_names_are_unique_in_the_function() -> None:
    text = STEPPED.replace('loopopt.name = "i"', 'loopopt.name = "j_sk"')
    module, i, j = _pair(text, "j_sk", "j")
    assert loop_name(skew(i, j, 1)) == "j_sk2"


def test_wavefront_makes_the_outer_loop_parallel(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.seidel_2d(2, 11, 8, rng)
    module, i, j = _pair(text)
    outer, inner = wavefront(i, j, 2)
    module.verify()
    assert (loop_name(outer), loop_name(inner)) == ("j_sk", "i")
    assert is_parallel(inner) and not is_parallel(outer)
    np.testing.assert_array_equal(run(text, name, arrays)[0], run(str(module), name, arrays)[0])


def test_refused_wavefront_bounds_leave_the_ir_alone() -> None:
    text = kernels.wavefront(9, 8, np.random.default_rng(0))[0].replace("to 7 {", "to 7 step 2 {")
    module, i, j = _pair(text)
    before = str(module)
    with pytest.raises(LoopoptError, match="loop 'j_sk' has step 2"):
        check_wavefront(i, j, 2, "test")
    with pytest.raises(LoopoptError, match="loop 'j_sk' has step 2"):
        wavefront(i, j, 2, "test")
    assert str(module) == before
    module.verify()
    fresh, fresh_i, _ = _pair(text)  # the copy checked is gone: no extra uses of the IVs
    assert len(list(iv(i).uses)) == len(list(iv(fresh_i).uses))


# ---------------------------------------------------------------- the analysis


@pytest.mark.parametrize(
    ("text", "factor"),
    [
        (kernels.seidel_2d(2, 9, 7, np.random.default_rng(0))[0], 2),
        (kernels.wavefront(9, 8, np.random.default_rng(0))[0], 2),
        (FIVE_POINT, 1),
        (kernels.matmul(5, 4, 3, np.random.default_rng(0))[0], 1),  # i carries nothing
        (UNBOUNDED, None),
    ],
)
def test_wavefront_factor(text: str, factor: int | None) -> None:
    _, i, j = _pair(text)
    assert wavefront_factor([i, j]) == factor
    if factor is not None:
        assert wavefront_blockers([i, j], factor) == (None, None)
        require_wavefront([i, j], factor, "test")
    if factor is not None and factor > 1:
        reversed_dep, carried = wavefront_blockers([i, j], factor - 1)
        assert reversed_dep is not None or carried is not None


def test_require_wavefront_names_the_dependence() -> None:
    _, i, j = _pair(FIVE_POINT.replace("%A[%i - 1, %j]", "%A[%i - 1, %j + 2]"))
    with pytest.raises(
        IllegalTransformError,
        match=r"illegal: skewing \(i, j\) by 1 and interchanging reverses .*A\[i - 1, j \+ 2\]"
        r".*; factor=3 would make the wavefront legal",
    ):
        require_wavefront([i, j], 1, "test")
    _, i, j = _pair(UNBOUNDED)
    with pytest.raises(IllegalTransformError, match="no factor would make"):
        require_wavefront([i, j], 4, "test")
    _, i, j = _pair(REDUCTION_PAIR)
    with pytest.raises(IllegalTransformError, match="moves loop j, which carries iter_args"):
        require_wavefront([i, j], 1, "test")


# ---------------------------------------------------------------- the pass


@pytest.mark.parametrize(
    "pipeline",
    [
        "loop-skew{loops=i,j factor=1}",
        "loop-skew{loops=i,j factor=3}",
        "loop-skew{loops=t,i factor=2}",
        "loop-skew{loops=i,j factor=auto wavefront}",
        "loop-skew{loops=i,j factor=3 wavefront}",
        "loop-skew{loops=i,j factor=2},loop-interchange{loops=i,j_sk permutation=1,0}",
        "loop-skew{loops=i,j factor=auto wavefront},loop-tile{tile-sizes=4 loops=j_sk}",
    ],
)
@pytest.mark.parametrize("dynamic", [False, True])
def test_pass_on_seidel(pipeline: str, dynamic: bool, rng: np.random.Generator) -> None:
    text, name, arrays = kernels.seidel_2d(3, 13, 10, rng, dynamic=dynamic)
    assert_equivalent(text, name, arrays, pipeline)


def test_pass_on_other_nests(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.matmul(13, 11, 9, rng)
    assert_equivalent(text, name, arrays, "loop-skew{loops=i,j factor=2}")
    assert_equivalent(text, name, arrays, "loop-skew{loops=j,k factor=3 wavefront}")
    text, name, arrays = kernels.syrk(12, 5, rng)  # triangular
    assert_equivalent(text, name, arrays, "loop-skew{loops=i,j factor=auto wavefront}")
    text, name, arrays = kernels.wavefront(11, 7, rng)
    after = assert_equivalent(text, name, arrays, "loop-skew{loops=i,j factor=auto wavefront}")
    assert "step" not in after
    text = STEPPED.replace("%n step 2", "%n")
    arrays = [rng.standard_normal((40, 40)).astype(np.float32), np.zeros(1, np.float32), 29]
    assert_equivalent(text, "stepped", arrays, "loop-skew{loops=i,j factor=2}")


def test_pass_refusals_come_before_any_change(rng: np.random.Generator) -> None:
    # two pairs named i, j: the second is refused, so the first is not changed either
    text, _, _ = kernels.seidel_2d(2, 9, 7, rng)
    other = FIVE_POINT.replace("@five", "@other").replace("%A[%i - 1, %j]", "%A[%i - 1, %j + 2]")
    module_text = text.rstrip() + "\n" + other
    module = parse_module(module_text)
    before = str(module)
    with pytest.raises(IllegalTransformError, match="factor=3 would make it parallel"):
        LoopSkewPass(loops=("i", "j"), factor=2, wavefront=True).apply(make_context(), module)
    assert str(module) == before
    with pytest.raises(LoopoptError, match="no loop named 'j' directly in 't'"):
        transform(text, "loop-skew{loops=t,j}")
    with pytest.raises(LoopoptError, match="do not form a perfect nest"):
        transform(text, "loop-skew{loops=t,j factor=auto}")
    with pytest.raises(LoopoptError, match="no function named 'nope'"):
        transform(text, "loop-skew{loops=i,j func=nope}")
    after = transform(module_text, "loop-skew{loops=i,j factor=auto func=other}")
    assert after.count('"j_sk"') == 1


# ---------------------------------------------------------------- the wavefront on the GPU

WAVEFRONTS = [
    "loop-skew{loops=i,j factor=auto wavefront}",
    "loop-skew{loops=i,j factor=2},loop-interchange{loops=i,j_sk permutation=1,0}",
]


@pytest.mark.parametrize(
    ("pipeline", "dynamic", "options"),
    [
        (WAVEFRONTS[0], False, ""),
        (WAVEFRONTS[1], True, ""),
        (WAVEFRONTS[0], True, "{block=4}"),
        (WAVEFRONTS[1], False, "{block=4 grid=2}"),
    ],
)
def test_seidel_wavefront_maps_to_host_loops_around_kernels(
    pipeline: str, dynamic: bool, options: str, rng: np.random.Generator
) -> None:
    """seidel-2d skewed by 2 and interchanged: gpu-map-loops keeps t and j_sk on the host and
    launches a kernel over i per step; emulated on the CPU, threads in both orders, it
    computes what the original computes (13 x 10 and 17 x 11: no size a multiple of 4)."""
    m, n = (17, 11) if dynamic else (13, 10)
    text, name, arrays = kernels.seidel_2d(3, m, n, rng, dynamic=dynamic)
    marked = transform(text, pipeline + ",loop-mark-parallel")
    assert 'loopopt.name = "i", loopopt.parallel}' in marked
    assert 'loopopt.name = "j_sk"}' in marked
    mapped = transform(text, f"{pipeline},gpu-map-loops{options}")
    assert mapped.count('loopopt.mapping = "host"') == 2  # t and j_sk
    assert mapped.count("gpu.launch_func") == 1
    assert 'loopopt.mapping = {block_x = "i_t", thread_x = "i"}' in mapped
    expected = run(text, name, arrays)
    for reverse in (False, True):
        module = parse_module(mapped)
        emulate(module, reverse=reverse)
        got = run(str(module), name, arrays)
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)


def test_without_the_wavefront_seidel_runs_on_one_thread(rng: np.random.Generator) -> None:
    text, _, _ = kernels.seidel_2d(3, 13, 10, rng)
    mapped = transform(text, "gpu-map-loops")
    assert 'mapping = "host"' not in mapped
    assert 'loopopt.mapping = {region = "one thread"}' in mapped


# ---------------------------------------------------------------- the property


def test_random_perfect_pairs_skew_to_the_same_results() -> None:
    """Random 2-deep perfect nests (tests/unit/nestgen.py): a skew always applies and computes
    what the nest computes; a wavefront is refused with a diagnostic or computes it too."""
    outcomes: Counter[str] = Counter()
    pairs = nests().filter(lambda nest: len(nest.loops) == 2 and nest.perfect_depth == 2)

    @settings(max_examples=30, database=None, derandomize=True)
    @given(nest=pairs, factor=st.integers(1, 3))
    def check(nest, factor: int) -> None:
        text = nest.mlir()
        note(text)
        arrays = nest.arrays(seed=len(text))
        expected = run(text, "nest", arrays)
        for option in (f"factor={factor}", "factor=auto wavefront"):
            pipeline = f"loop-skew{{loops=l0,l1 {option}}}"
            try:
                after = transform(text, pipeline)
            except LoopoptError as e:
                assert "wavefront" in option, f"a plain skew was refused: {e.one_line()}"
                outcomes["refused"] += 1
                continue
            outcomes["wavefront" if "wavefront" in option else "skew"] += 1
            note(f"{pipeline}:\n{after}")
            for e, g in zip(expected, run(after, "nest", arrays), strict=True):
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=pipeline)

    check()
    assert outcomes["skew"] >= 25, outcomes  # every example's skew (30 unless cut short)
    assert outcomes["wavefront"] >= 12, outcomes  # refused: stepped inner loops


def test_an_imperfect_pair_is_skewed_with_a_numeric_factor(rng: np.random.Generator) -> None:
    """Skewing renames the inner loop's iterations alone: ops beside it need not move."""
    text = """
func.func @imperfect(%A: memref<12x12xf32>) {
  affine.for %i = 1 to 11 {
    %v = affine.load %A[%i - 1, 0] : memref<12x12xf32>
    affine.store %v, %A[%i, 11] : memref<12x12xf32>
    affine.for %j = 1 to 10 {
      %w = affine.load %A[%i - 1, %j + 1] : memref<12x12xf32>
      %x = affine.load %A[%i, %j - 1] : memref<12x12xf32>
      %s = arith.addf %w, %x : f32
      affine.store %s, %A[%i, %j] : memref<12x12xf32>
    } {loopopt.name = "j"}
    affine.store %v, %A[%i, 0] : memref<12x12xf32>
  } {loopopt.name = "i"}
  return
}
"""
    arrays = [rng.standard_normal((12, 12)).astype(np.float32)]
    after = assert_equivalent(text, "imperfect", arrays, "loop-skew{loops=i,j factor=3}")
    assert '"j_sk"' in after
    with pytest.raises(LoopoptError, match="do not form a perfect nest"):
        transform(text, "loop-skew{loops=i,j factor=1 wavefront}")
