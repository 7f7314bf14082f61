"""Contractions with two read operands of one array and triangular nests (syrk, syr2k):
the roles per access, the bounding-box summary, and the padded matmul recipe on the CPU and
the GPU emulator at sizes no tile divides."""

from __future__ import annotations

import numpy as np
import polybench_py as pb
import pytest
from equivalence import transform
from gpu_emulator import emulate
from xdsl.dialects import affine
from xdsl.passes import PassPipeline

from loopopt.analysis.box import band_box
from loopopt.context import make_context, parse_module, verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.frontend.kernel import Kernel
from loopopt.loops.nest import functions, perfect_band
from loopopt.runtime.cpu import run_function
from loopopt.schedule import recipes
from loopopt.schedule.device import H100
from loopopt.schedule.resources import operands, shared_bytes
from loopopt.schedule.roles import matmul_roles
from loopopt.schedule.space import candidates, classify
from loopopt.schedule.summary import summarize_module
from loopopt.universe import all_passes

NEST = """
func.func @f(%alpha: f32, %C: memref<{n}x{n}xf32>, %A: memref<{n}x{m}xf32>,
             %B: memref<{n}x{m}xf32>) {{
  affine.for %i = 0 to {n} {{
    affine.for %k = 0 to {m} {{
      affine.for %j = 0 to {upper} {{
        %c = affine.load %C[%i, %j] : memref<{n}x{n}xf32>
        %x = affine.load %A[%i, %k] : memref<{n}x{m}xf32>
        %y = affine.load {second} : memref<{n}x{m}xf32>
        %p = arith.mulf %x, %y : f32
        %q = arith.mulf %alpha, %p : f32
        %s = arith.addf %c, %q : f32
        affine.store %s, %C[%i, %j] : memref<{n}x{n}xf32>
      }} {{loopopt.name = "j"}}
    }} {{loopopt.name = "k"}}
  }} {{loopopt.name = "i"}}
  func.return
}}
"""
TRIANGLE = "affine_map<(d0) -> (d0 + 1)>(%i)"


def _nest(n: int = 37, m: int = 21, upper: str = TRIANGLE, second: str = "%A[%j, %k]") -> str:
    return NEST.format(n=n, m=m, upper=upper, second=second)


def test_an_array_read_on_both_sides_is_two_operands() -> None:
    r = matmul_roles(summarize_module(parse_module(_nest(upper="37"))))
    assert r is not None and (r.i, r.j, r.k, r.c) == ("i", "j", "k", "C")
    assert [(o.array, o.key, o.loop, o.k_last) for o in r.operands] == [
        ("A", "A@i", "i", True),
        ("A", "A@j", "j", True),
    ]


def test_two_arrays_keep_their_names_as_keys() -> None:
    r = matmul_roles(summarize_module(parse_module(_nest(upper="37", second="%B[%j, %k]"))))
    assert r is not None and [o.key for o in r.operands] == ["A", "B"]


def _square(second: str) -> str:
    return _nest(n=37, m=37, upper="37", second=second)


@pytest.mark.parametrize("second", ["%A[%i, %k]", "%B[%k, %k]"])
def test_not_a_contraction_of_two_sides(second: str) -> None:
    """Both factors on the i side (no B-like operand); a factor not indexed by j."""
    assert matmul_roles(summarize_module(parse_module(_square(second)))) is None


def test_an_operand_transposed_on_one_side() -> None:
    r = matmul_roles(summarize_module(parse_module(_square("%A[%k, %j]"))))
    assert r is not None and [(o.key, o.k_last) for o in r.operands] == [
        ("A@i", True),
        ("A@j", False),
    ]


def test_a_side_read_at_two_indices_is_not_a_matmul() -> None:
    text = _nest(upper="37").replace(
        "%p = arith.mulf %x, %y : f32",
        "%z = affine.load %A[%i, %k + 0] : memref<37x21xf32>\n"
        "        %w = affine.load %B[%i, %k] : memref<37x21xf32>\n"
        "        %p0 = arith.mulf %x, %y : f32\n        %p = arith.mulf %p0, %w : f32",
    )
    r = matmul_roles(summarize_module(parse_module(text)))
    assert r is not None and [o.key for o in r.operands] == ["A@i", "B", "A@j"]
    shifted = _nest(upper="37").replace(
        "%y = affine.load %A[%j, %k]", "%y = affine.load %A[%i, %k + 1]"
    )
    assert matmul_roles(summarize_module(parse_module(shifted))) is None


def test_triangular_summary_takes_the_bounding_box() -> None:
    s = summarize_module(parse_module(_nest()))
    assert [(loop.name, loop.trip, loop.parallel, loop.varies) for loop in s.loops] == [
        ("i", 37, True, False),
        ("k", 21, False, False),
        ("j", 37, True, True),
    ]
    assert classify(s) == "matmul"
    found = candidates(s, H100)
    assert found and all(dict(c.params).get("padded") for c in found if c.recipe == "matmul")


def test_band_box() -> None:
    module = parse_module(_nest(upper="affine_map<(d0) -> (d0 + 3)>(%i)"))
    band = perfect_band(next(op for op in module.walk() if isinstance(op, affine.ForOp)))
    assert band_box(band) == [(0, 36), (0, 20), (0, 38)]


def test_a_step_with_a_varying_lower_bound_is_refused() -> None:
    text = _nest(upper="37").replace(
        "affine.for %j = 0 to 37", "affine.for %j = affine_map<(d0) -> (d0)>(%i) to 37 step 2"
    )
    with pytest.raises(LoopoptError, match="loop 'j' has a step and a lower bound that varies"):
        summarize_module(parse_module(text))


def test_the_model_stages_each_operand() -> None:
    s = summarize_module(parse_module(_nest()))
    schedule = recipes.matmul(s, 32, 32, 8, 4, 4, padded=True)
    assert schedule.shared == ("A@i", "A@j")
    groups = operands(s, schedule)
    assert [len(groups[k]) for k in ("A@i", "A@j")] == [1, 1]
    rect = summarize_module(parse_module(_nest(upper="37", second="%B[%j, %k]")))
    one = recipes.matmul(rect, 32, 32, 8, 4, 4, padded=True)
    assert shared_bytes(s, schedule) == shared_bytes(rect, one) > 0
    with pytest.raises(LoopoptError, match="loop 'j' of @f has bounds that vary"):
        recipes.matmul(s, 32, 32, 8, 4, 4)


@pytest.mark.parametrize(("second", "upper"), [("%A[%j, %k]", TRIANGLE), ("%B[%j, %k]", "37")])
def test_emulated_padded_recipe(second: str, upper: str) -> None:
    """The whole padded matmul recipe (register tiles unrolled, zero-filled shared tiles
    double-buffered through registers, the triangle on its bounding box, scalar-replace's
    accumulators, the diagonal's guards versioned) on the emulator."""
    text = _nest(second=second, upper=upper)
    schedule = recipes.matmul(
        summarize_module(parse_module(text)), 32, 32, 8, 4, 4, pipelined=True, padded=True
    )
    last = "version-guards{loop=k_t}" if upper == TRIANGLE else "scalar-replace{loop=k_t}"
    assert schedule.pipeline.endswith(last)  # a triangle's selects versioned away
    module = parse_module(transform(text, schedule.pipeline))
    rng = np.random.default_rng(3)
    c, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((37, 37), (37, 21), (37, 21)))
    expected = c.astype(np.float64)
    other = a if second.startswith("%A") else b
    product = 1.5 * a.astype(np.float64) @ other.astype(np.float64).T
    mask = np.tril(np.ones((37, 37), bool)) if upper == TRIANGLE else np.ones((37, 37), bool)
    expected[mask] += product[mask]
    emulate(module, reverse=True)
    run_function(module, "f", [1.5, c, a, b])
    assert np.abs(c - expected).max() < 1e-4


@pytest.mark.parametrize("name", ["syrk", "syr2k"])
def test_polybench_on_the_cpu(name: str) -> None:
    """The whole function: the beta nest a map on its bounding box, the k nest the padded
    matmul recipe (loop-level part, gpu=false), sizes no tile divides."""
    f = pb.CASES[name][0]
    g = np.random.default_rng(0)
    n, m = 71, 45
    arrays = [pb._r(g, n, n, dtype=np.float32), pb._r(g, n, m, dtype=np.float32)]
    args = [1.5, 1.2, *arrays, *([pb._r(g, n, m, dtype=np.float32)] if name == "syr2k" else [])]
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    f(*expected)
    module = Kernel(f).module(*args)
    PassPipeline.parse_spec(all_passes(), "auto-schedule{device=sm_90 gpu=false}").apply(
        make_context(), module
    )
    verify_ir(module, "scheduled")
    assert "pad-tiles" not in str(module)
    assert len(functions(module)) == 1
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_function(module, name, got)
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-4, atol=1e-4)
