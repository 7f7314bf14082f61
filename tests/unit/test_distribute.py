"""loop-distribute: the groups (analysis/distribution.py), their legality check, the mechanics
(loops/distribute.py), the pass on PolyBench bodies, and a property over random nests."""

from __future__ import annotations

import kernels
import numpy as np
import polybench_py as pb
import pytest
from equivalence import assert_equivalent, run, transform
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from nestgen import distribution_nests
from upstream import MLIR_OPT, assert_upstream_valid
from xdsl.dialects import affine

import loopopt
from loopopt.analysis.distribution import distribution_groups, statement_units
from loopopt.analysis.legality import require_distribution_legal
from loopopt.context import parse_module
from loopopt.diagnostics import IllegalTransformError, LoopoptError
from loopopt.loops.distribute import distribute
from loopopt.loops.nest import body_ops, find_loop, find_loops, loop_name

CYCLE = """
func.func @cycle(%A: memref<12xf32>, %B: memref<12xf32>, %C: memref<12xf32>) {
  affine.for %i = 1 to 11 {
    %b = affine.load %B[%i - 1] : memref<12xf32>
    affine.store %b, %A[%i] : memref<12xf32>
    %c = affine.load %C[%i + 1] : memref<12xf32>
    affine.store %c, %C[%i] : memref<12xf32>
    %a = affine.load %A[%i - 1] : memref<12xf32>
    affine.store %a, %B[%i] : memref<12xf32>
  } {loopopt.name = "i"}
  return
}
"""

BACKWARD = """
func.func @backward(%A: memref<12xf32>, %B: memref<12xf32>, %C: memref<12xf32>) {
  affine.for %i = 1 to 11 {
    %two = arith.constant 2.0 : f32
    %k = affine.apply affine_map<(d0) -> (d0 - 1)>(%i)
    %b = affine.load %B[%k] : memref<12xf32>
    %m = arith.mulf %b, %two : f32
    affine.store %m, %A[%i] : memref<12xf32>
    %c = affine.load %C[%i] : memref<12xf32>
    %n = arith.mulf %c, %two : f32
    affine.store %n, %B[%i] : memref<12xf32>
  } {loopopt.name = "i"}
  return
}
"""

REDUCTION = """
func.func @reduction(%X: memref<9xf32>, %Y: memref<9xf32>, %Z: memref<9xf32>, %out: memref<1xf32>) {
  %zero = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 9 iter_args(%acc = %zero) -> (f32) {
    %w = affine.load %Y[%i] : memref<9xf32>
    affine.store %w, %Z[%i] : memref<9xf32>
    %v = affine.load %X[%i] : memref<9xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  } {loopopt.name = "i"}
  affine.store %r, %out[0] : memref<1xf32>
  return
}
"""


def _loop(text: str, name: str = "i") -> affine.ForOp:
    return find_loop(parse_module(text), name, "test")


def _stores(group: list) -> list[str]:
    """The memrefs each store of a group writes, by argument name."""
    return [op.memref.name_hint for op in group if isinstance(op, affine.StoreOp)]


def test_cycle_stays_together_and_the_rest_follows() -> None:
    loop = _loop(CYCLE)
    assert [_stores(u) for u in statement_units(loop)] == [["A"], ["C"], ["B"]]
    assert [_stores(g) for g in distribution_groups(loop)] == [["A", "B"], ["C"]]


def test_backward_dependence_reorders_the_groups() -> None:
    loop = _loop(BACKWARD)
    groups = distribution_groups(loop)
    assert [_stores(g) for g in groups] == [["B"], ["A"]]
    assert all(op.name != "arith.constant" for g in groups for op in g)  # free: in no group


def test_scalar_values_and_iter_args_tie_statements() -> None:
    loop = _loop(REDUCTION)
    groups = distribution_groups(loop)
    assert [[op.name for op in g] for g in groups] == [
        ["affine.load", "affine.store"],
        ["affine.load", "arith.addf"],
    ]


def test_groups_of_atax_and_bicg(rng: np.random.Generator) -> None:
    text = loopopt.kernel(pb.atax, static_shapes=True).mlir(*pb.CASES["atax"][1](rng))
    module = parse_module(text)
    outer = [loop for loop in find_loops(module, "i") if len(body_ops(loop)) == 3][0]
    assert [len(g) for g in distribution_groups(outer)] == [1, 1, 1]
    for inner in find_loops(module, "j"):  # tmp[i] += …: one statement
        assert len(distribution_groups(inner)) == 1
    text = loopopt.kernel(pb.bicg, static_shapes=True).mlir(*pb.CASES["bicg"][1](rng))
    inner = find_loop(parse_module(text), "j", "test")
    assert [_stores(g) for g in distribution_groups(inner)] == [["s"], ["q"]]


def test_legality_refuses_a_group_order_that_reverses_a_dependence() -> None:
    module = parse_module(BACKWARD, name="backward.mlir")
    loop = find_loop(module, "i", "test")
    first, second = distribution_groups(loop)
    require_distribution_legal(loop, [first, second], "loop-distribute")
    with pytest.raises(IllegalTransformError) as refused:
        require_distribution_legal(loop, [second, first], "loop-distribute")
    assert refused.value.message == (
        "loop-distribute: illegal: distributing loop i reverses B[i] → B[i - 1] (RAW) "
        "with direction (<)"
    )
    assert refused.value.location == "backward.mlir:3:3"
    loop = _loop(CYCLE)
    a, c, b = statement_units(loop)
    with pytest.raises(IllegalTransformError, match=r"reverses B\[i\] → B\[i - 1\]"):
        require_distribution_legal(loop, [a, c, b], "loop-distribute")  # splits the cycle
    with pytest.raises(LoopoptError, match="affine.load in loop i is in no group"):
        require_distribution_legal(loop, [a, c], "loop-distribute")


def test_mechanics_copies_free_ops_and_keeps_names() -> None:
    module = parse_module(BACKWARD)
    loop = find_loop(module, "i", "test")
    copies = distribute(loop, distribution_groups(loop))
    module.verify()
    assert [loop_name(c) for c in copies] == ["i", "i"]
    assert [op.name for op in body_ops(copies[0])] == [
        "arith.constant",
        "affine.load",
        "arith.mulf",
        "affine.store",
    ]
    assert [op.name for op in body_ops(copies[1])][:2] == ["arith.constant", "affine.apply"]


def test_mechanics_moves_the_iter_args_and_results() -> None:
    module = parse_module(REDUCTION)
    loop = find_loop(module, "i", "test")
    first, second = distribute(loop, distribution_groups(loop))
    module.verify()
    assert not first.inits and len(second.inits) == 1
    assert second.results[0].uses


def test_mechanics_refuses_groups_that_split_a_value() -> None:
    module = parse_module(REDUCTION)
    loop = find_loop(module, "i", "test")
    before = str(module)
    load, store, xload, add = body_ops(loop)
    with pytest.raises(LoopoptError, match="computed by affine.load in one group"):
        distribute(loop, [[load], [store, xload, add]])
    with pytest.raises(LoopoptError, match="in two groups"):
        distribute(loop, [[load, store], [load, xload, add]])
    with pytest.raises(LoopoptError, match="is in no group"):
        distribute(loop, [[load, store]])
    assert str(module) == before


POLYBENCH = {
    "atax": "loop-distribute{loop=i}",
    "bicg": "loop-distribute{loop=j},loop-distribute{loop=i}",
    "2mm": "loop-distribute{loop=j}",
    "gesummv": "loop-distribute{loop=j},loop-distribute{loop=i}",
    "doitgen": "loop-distribute{loop=p},loop-distribute{loop=q}",
    "correlation": "loop-distribute{loop=j},loop-distribute{loop=i}",
}


@pytest.mark.parametrize("name", list(POLYBENCH))
def test_pass_on_polybench(name: str, rng: np.random.Generator) -> None:
    function, inputs = pb.CASES[name]
    args = inputs(rng)
    text = loopopt.kernel(function, static_shapes=True).mlir(*args)
    func = text.split("func.func @")[1].split("(")[0]
    after = assert_equivalent(text, func, args, POLYBENCH[name], rtol=1e-12)
    assert after.count("affine.for") > text.count("affine.for")


@pytest.mark.parametrize("n", [7, 13])
def test_pass_on_kernels(n: int, rng: np.random.Generator) -> None:
    for text in (CYCLE, BACKWARD):
        sized = text.replace("12x", f"{n + 1}x").replace("memref<12", f"memref<{n + 1}")
        sized = sized.replace("to 11", f"to {n}")
        name = sized.split("@")[1].split("(")[0]
        arrays = [rng.standard_normal(n + 1).astype(np.float32) for _ in range(3)]
        after = assert_equivalent(sized, name, arrays, "loop-distribute{loop=i}")
        assert after.count("affine.for") == 2
    arrays = [rng.standard_normal(9).astype(np.float32) for _ in range(3)]
    assert_equivalent(
        REDUCTION, "reduction", [*arrays, np.zeros(1, np.float32)], "loop-distribute{loop=i}"
    )
    text, name, arrays = kernels.jacobi_1d(3, n, rng)  # i and j in a cycle through t
    assert_equivalent(text, name, arrays, "loop-distribute{loop=t}")


def test_pass_options_and_warning(rng: np.random.Generator, capsys: pytest.CaptureFixture) -> None:
    text, _, _ = kernels.jacobi_1d(3, 9, rng)
    with pytest.raises(LoopoptError, match="loop=NAME is required"):
        transform(text, "loop-distribute")
    with pytest.raises(LoopoptError, match="no loop named 'x'"):
        transform(text, "loop-distribute{loop=x}")
    with pytest.raises(LoopoptError, match="no function named 'f'"):
        transform(text, "loop-distribute{loop=t func=f}")
    assert transform(text, "loop-distribute{loop=t func=jacobi}").count("affine.for") == 3
    warned = capsys.readouterr().err
    assert (
        "warning: loop-distribute: loop t left as it is: its 2 statements are tied by a " in warned
    )
    assert "dependence cycle, e.g. B[j] → B[i] (WAR) has direction (<)" in warned


def _distributed(before: str, after: str, name: str) -> bool:
    return after.count(f'loopopt.name = "{name}"') > before.count(f'loopopt.name = "{name}"')


def test_random_nests_are_distributed_or_left_and_equivalent() -> None:
    """Random nests whose loop has 2–4 statements: the pass leaves it (one group) or splits it,
    and the results do not change; at least a quarter of the cases are split."""
    split: list[bool] = []

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: st.DataObject) -> None:
        nest, name = data.draw(distribution_nests(), label="nest")
        text = nest.mlir()
        note(text)
        after = transform(text, f"loop-distribute{{loop={name}}}")
        note(after)
        split.append(_distributed(text, after, name))
        arrays = nest.arrays(seed=len(text))
        for e, g in zip(run(text, "nest", arrays), run(after, "nest", arrays), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        if MLIR_OPT is not None and split[-1] and len(split) % 10 == 0:
            assert_upstream_valid(after)

    check()
    assert sum(split) >= len(split) // 4, f"split {sum(split)} of {len(split)}"
