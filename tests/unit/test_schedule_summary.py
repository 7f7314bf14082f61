"""schedule/summary.py: the facts of a perfect nest (loops, trips, parallel loops, accesses over
iteration numbers, flops) and the diagnostics for nests it cannot describe."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from kernels import REDUCTION, conv2d, jacobi_1d, matmul, syrk, wavefront

from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.schedule.summary import summarize, summarize_module
from loopopt.schedule.types import Access, Loop

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402


def _summary(text: str, func: str | None = None):
    return summarize_module(parse_module(text, "t.mlir"), func)


def _accesses(summary) -> dict[tuple[str, bool], list[Access]]:
    found: dict[tuple[str, bool], list[Access]] = {}
    for a in summary.accesses:
        found.setdefault((a.array, a.write), []).append(a)
    return found


def test_matmul(rng: np.random.Generator) -> None:
    text, _, _ = matmul(5, 6, 7, rng)
    s = _summary(text)
    assert s.func == "matmul" and s.flops == 2
    assert s.loops == (Loop("i", 5, True), Loop("j", 6, True), Loop("k", 7, False))
    assert s.iterations == 5 * 6 * 7
    found = _accesses(s)
    assert found["A", False] == [Access("A", False, ((1, 0, 0), (0, 0, 1)), (0, 0), (5, 7), 4)]
    assert found["B", False] == [Access("B", False, ((0, 0, 1), (0, 1, 0)), (0, 0), (7, 6), 4)]
    [c_read], [c_write] = found["C", False], found["C", True]
    assert c_read.coeffs == c_write.coeffs == ((1, 0, 0), (0, 1, 0))
    assert [a.array for a in s.accesses] == ["A", "B", "C", "C"]  # textual order


def test_atb_reads_a_transposed() -> None:
    s = _summary(workloads.sgemm_atb_mlir((3, 4, 5)))
    [a] = _accesses(s)["A", False]
    assert a.coeffs == ((0, 0, 1), (1, 0, 0)) and a.shape == (5, 3)


def test_conv2d_image_index_is_a_sum_of_loops(rng: np.random.Generator) -> None:
    text, _, _ = conv2d(6, 5, 3, 2, rng)
    s = _summary(text)
    assert [(loop.name, loop.trip, loop.parallel) for loop in s.loops] == [
        ("i", 6, True),
        ("j", 5, True),
        ("p", 3, False),
        ("q", 2, False),
    ]
    [image] = _accesses(s)["I", False]
    assert image.coeffs == ((1, 0, 1, 0), (0, 1, 0, 1)) and image.shape == (8, 6)
    [filt] = _accesses(s)["F", False]
    assert filt.coeffs == ((0, 0, 1, 0), (0, 0, 0, 1))


def test_conv3d() -> None:
    s = _summary(workloads.conv_mlir((4, 5, 3, 2, 3, 2)))
    assert [loop.name for loop in s.loops] == list("ijlpqr")
    assert [loop.parallel for loop in s.loops] == [True] * 3 + [False] * 3
    [image] = _accesses(s)["I", False]
    assert image.coeffs[2] == (0, 0, 1, 0, 0, 1)


def test_jacobi2d_offsets_count_from_the_lower_bound() -> None:
    s = _summary(workloads.jacobi2d_mlir((7, 9)))
    assert [(loop.trip, loop.parallel) for loop in s.loops] == [(5, True), (7, True)]
    reads = _accesses(s)["A", False]
    assert sorted(a.offset for a in reads) == [(0, 1), (1, 0), (1, 1), (1, 2), (2, 1)]
    assert all(a.coeffs == ((1, 0), (0, 1)) for a in reads)
    [out] = _accesses(s)["B", True]
    assert out.offset == (1, 1)
    assert s.flops == 5  # four addf, one mulf


def test_wavefront_has_a_sequential_outer_loop(rng: np.random.Generator) -> None:
    text, _, _ = wavefront(5, 6, rng)
    s = _summary(text)
    assert [loop.parallel for loop in s.loops] == [False, True]


STEPPED = """
func.func @f(%A: memref<40xf64>, %B: memref<40x3xf64>) {
  %c = arith.constant 2.0 : f64
  affine.for %i = 2 to 20 step 3 {
    affine.for %j = 0 to 3 {
      %a = affine.load %A[%i + 1] : memref<40xf64>
      %b = affine.load %B[2 * %i, %j] : memref<40x3xf64>
      %f = math.fma %a, %b, %c : f64
      %g = arith.subf %f, %a : f64
      %h = arith.divf %g, %c : f64
      %n = arith.negf %h : f64
      affine.store %n, %B[2 * %i, %j] : memref<40x3xf64>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


def test_steps_lower_bounds_fma_and_element_size() -> None:
    s = _summary(STEPPED)
    assert s.loops[0] == Loop("i", 6, True)
    [a] = _accesses(s)["A", False]
    assert a.coeffs == ((3, 0),) and a.offset == (3,) and a.elem_bytes == 8
    [b] = _accesses(s)["B", True]
    assert b.coeffs == ((6, 0), (0, 1)) and b.offset == (4, 0)
    assert s.flops == 2 + 1 + 1  # fma, subf, divf (negf is not counted)


def test_summarize_takes_a_function_and_picks_one_by_name(rng: np.random.Generator) -> None:
    text = matmul(2, 3, 4, rng)[0] + wavefront(3, 3, rng)[0]
    module = parse_module(text)
    assert _summary(text, "wavefront").func == "wavefront"
    fn = next(op for op in module.walk() if op.name == "func.func")
    assert summarize(fn).func == "matmul"
    with pytest.raises(LoopoptError, match="holds 2 functions; name one"):
        summarize_module(module)
    with pytest.raises(LoopoptError, match="no function named 'nope'"):
        summarize_module(module, "nope")


def _error(text: str) -> LoopoptError:
    with pytest.raises(LoopoptError) as info:
        _summary(text)
    return info.value


def _func(body: str, args: str = "%A: memref<8x8xf32>") -> str:
    return f"func.func @f({args}) {{\n{body}  return\n}}\n"


def _loop(name: str, body: str, bounds: str = "0 to 8") -> str:
    return f'affine.for %{name} = {bounds} {{\n{body}}} {{loopopt.name = "{name}"}}\n'


LOAD = (
    "%v = affine.load %A[%i, %j] : memref<8x8xf32>\naffine.store %v, %A[%j, %i] : memref<8x8xf32>\n"
)


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (_func("%c = arith.constant 1 : index\n"), r"@f has no loop nest", None),
        (
            _func(_loop("i", _loop("j", LOAD)) + _loop("k", _loop("j", LOAD.replace("%i", "%k")))),
            r"@f holds 2 loop nests; a schedule covers one",
            8,
        ),
        (
            _func(_loop("i", _loop("j", LOAD), "0 to %n"), "%A: memref<8x8xf32>, %n: index"),
            r"loop 'i' has bounds that are not affine in the nest's outer loops",
            2,
        ),
        (
            _func(
                _loop("i", _loop("j", LOAD.replace("%A[%i, %j]", "%A[%i, %n]"))),
                "%A: memref<8x8xf32>, %n: index",
            ),
            r"index 1 of 'A' is not an affine function of the loop IVs",
            4,
        ),
        (
            _func(_loop("i", _loop("j", LOAD.replace("%A[%i, %j]", "%A[%i floordiv 2, %j]")))),
            r"index 0 of 'A' is not an affine function",
            4,
        ),
        (
            _func(_loop("i", _loop("j", "%v = memref.load %A[%i, %j] : memref<8x8xf32>\n"))),
            r"'memref.load' is not an affine.load or affine.store",
            4,
        ),
        (
            _func(_loop("i", _loop("j", LOAD)).replace(' {loopopt.name = "j"}', "")),
            r"the loop at depth 1 has no loopopt.name \(run loop-name\)",
            3,
        ),
        (
            _func(_loop("i", _loop("i2", LOAD)).replace('"i2"', '"i"').replace("%i2", "%j")),
            r"two loops of the nest are named 'i'",
            3,
        ),
        (
            _func(_loop("i", _loop("j", LOAD.replace("8x8", "?x8"))), "%A: memref<?x8xf32>"),
            r"array 'A' has a dynamic shape",
            4,
        ),
        (
            _func(
                LOAD.split("\n")[0].replace("%i, %j", "0, 0").replace("%v", "%w")
                + "\n"
                + _loop("i", _loop("j", LOAD))
            ),
            r"'affine.load' in @f lies outside its loop nest",
            2,
        ),
    ],
    ids=[
        "no-loop",
        "two-nests",
        "symbolic-trip",
        "symbol-index",
        "floordiv-index",
        "memref-load",
        "unnamed",
        "same-names",
        "dynamic-shape",
        "outside-op",
    ],
)
def test_refused_nests(text: str, message: str, line: int | None) -> None:
    error = _error(text)
    assert error.one_line().count("\n") == 0
    assert re.search(message, error.message), error.message
    if line is not None:
        assert error.location is not None and error.location.startswith(f"t.mlir:{line}:")


def test_imperfect_nests_are_refused_at_the_inner_loop(rng: np.random.Generator) -> None:
    text, _, _ = jacobi_1d(3, 8, rng)
    error = _error(text)
    assert "imperfect nest: loop 't' holds 2 loops" in error.message
    error = _error(REDUCTION)
    assert "imperfect nest: loop 'j' holds loop 'k' beside other ops" in error.message
    assert error.location is not None and error.location.startswith("t.mlir:6:")


def test_a_triangular_nest_is_summarized_on_its_bounding_box(rng: np.random.Generator) -> None:
    text, _, _ = syrk(5, 4, rng)
    summary = summarize_module(parse_module(text))
    assert [(loop.name, loop.trip, loop.varies) for loop in summary.loops] == [
        ("i", 5, False),
        ("j", 5, True),
        ("k", 4, False),
    ]


def test_an_affine_if_in_the_body_is_refused() -> None:
    body = _loop(
        "i",
        _loop(
            "j",
            "affine.if affine_set<(d0) : (d0 - 2 >= 0)>(%i) {\n" + LOAD + "}\n",
        ),
    )
    assert "'affine.if' in the innermost body" in _error(_func(body)).message


def test_an_initialization_ahead_of_the_reduction_loops() -> None:
    """O[i, j] = 0 ahead of the filter loops (the benchmarks' convolutions): the band goes on
    into p, q and O is initialized; accesses are the innermost body's only."""
    s = _summary(workloads.conv_mlir((6, 7, 3, 2)))
    assert [loop.name for loop in s.loops] == list("ijpq")
    assert [loop.parallel for loop in s.loops] == [True, True, False, False]
    assert s.initialized == ("O",)
    assert len(s.accesses) == 4 and s.flops == 2
    assert _summary(workloads.sgemm_mlir((5, 7, 6))).initialized == ()


def test_an_initialization_of_other_elements_is_refused() -> None:
    """O[i, 0] = 0 ahead of loops that accumulate into O[i, j]: not the accumulated element."""
    text = workloads.conv_mlir((6, 7, 3, 2)).replace(
        "affine.store %zero, %O[%i, %j]", "affine.store %zero, %O[%i, 0]"
    )
    assert "'O' is initialized at other elements than the nest accumulates" in _error(text).message
