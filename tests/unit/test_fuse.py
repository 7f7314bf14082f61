"""loop-fuse: the legality check (analysis/legality.py), the mechanics (loops/fuse.py), the pass
on PolyBench, and a property over random sibling loops."""

from __future__ import annotations

import kernels
import numpy as np
import polybench_py as pb
import pytest
from equivalence import assert_equivalent, run, transform
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from nestgen import sibling_loops
from upstream import MLIR_OPT, assert_upstream_valid
from xdsl.dialects import affine

import loopopt
from loopopt.analysis.legality import require_fusion_legal
from loopopt.context import parse_module
from loopopt.diagnostics import IllegalTransformError, LoopoptError
from loopopt.dialects.loopopt import PARALLEL
from loopopt.loops.fuse import fuse, fusion_obstacle
from loopopt.loops.nest import body_ops, find_loop, iv, loops_in

PAIR = """
func.func @pair(%a: memref<20xf32>, %x: memref<20xf32>, %y: memref<20xf32>, %n: index) {{
  affine.for %i = 2 to {upper} {{
    %v = affine.load %a[%i] : memref<20xf32>
    affine.store %v, %x[%i] : memref<20xf32>
  }} {{loopopt.name = "i", loopopt.parallel}}
  %c = arith.constant 1.5 : f32
  affine.for %j = 2 to {upper} {{
    {second}
  }} {{loopopt.name = "j"{parallel}}}
  return
}}
"""


def pair(second: str, upper: str = "17", parallel: bool = False) -> tuple[affine.ForOp, ...]:
    text = PAIR.format(second=second, upper=upper, parallel=", loopopt.parallel" * parallel)
    module = parse_module(text, name="pair.mlir")
    return find_loop(module, "i", "test"), find_loop(module, "j", "test")


READ = "%v = affine.load %x[{}] : memref<20xf32>\n    affine.store %v, %y[%j] : memref<20xf32>"
WRITE = "affine.store %c, %{}[{}] : memref<20xf32>"


@pytest.mark.parametrize("index", ["%j", "%j - 1", "%j - 2", "%j + 0"])
def test_forward_reads_are_legal(index: str) -> None:
    require_fusion_legal(*pair(READ.format(index)), "loop-fuse")


def test_reversed_read_names_the_dependence() -> None:
    with pytest.raises(IllegalTransformError) as refused:
        require_fusion_legal(*pair(READ.format("%j + 1")), "loop-fuse")
    assert refused.value.message == (
        "loop-fuse: illegal: fusing loops (i, j) reverses x[i] → x[j + 1] (RAW) at distance -1"
    )
    assert refused.value.location == "pair.mlir:3:3"
    with pytest.raises(IllegalTransformError, match=r"x\[i\] → x\[2\*j\] \(RAW\) at negative"):
        require_fusion_legal(*pair(READ.format("%j * 2")), "loop-fuse")


def test_anti_and_output_dependences() -> None:
    require_fusion_legal(*pair(WRITE.format("a", "%j - 1")), "loop-fuse")  # a[i] read first
    with pytest.raises(IllegalTransformError, match=r"a\[i\] → a\[j \+ 1\] \(WAR\) at distance -1"):
        require_fusion_legal(*pair(WRITE.format("a", "%j + 1")), "loop-fuse")
    require_fusion_legal(*pair(WRITE.format("x", "%j")), "loop-fuse")
    require_fusion_legal(*pair(WRITE.format("x", "%j - 3")), "loop-fuse")
    with pytest.raises(IllegalTransformError, match=r"x\[i\] → x\[j \+ 3\] \(WAW\) at distance -3"):
        require_fusion_legal(*pair(WRITE.format("x", "%j + 3")), "loop-fuse")
    require_fusion_legal(*pair(WRITE.format("y", "%j + 1")), "loop-fuse")  # y: only the second


def test_symbolic_bounds_are_parameters() -> None:
    require_fusion_legal(*pair(READ.format("%j - 1"), upper="%n"), "loop-fuse")
    with pytest.raises(IllegalTransformError, match=r"x\[j \+ 1\] \(RAW\) at distance -1"):
        require_fusion_legal(*pair(READ.format("%j + 1"), upper="%n"), "loop-fuse")


OUTER = """
func.func @outer(%A: memref<9x9xf32>, %B: memref<9x9xf32>) {{
  affine.for %o = 1 to 8 {{
    affine.for %i = 0 to 8 {{
      %v = affine.load %B[%o, %i] : memref<9x9xf32>
      affine.store %v, %A[%o, %i] : memref<9x9xf32>
    }} {{loopopt.name = "i"}}
    affine.for %j = 0 to 8 {{
      %v = affine.load %A[{index}] : memref<9x9xf32>
      affine.store %v, %B[%o, %j] : memref<9x9xf32>
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "o"}}
  return
}}
"""


def test_dependences_carried_by_an_outer_loop_do_not_matter() -> None:
    for index, legal in [("%o - 1, %j + 1", True), ("%o, %j", True), ("%o, %j + 1", False)]:
        module = parse_module(OUTER.format(index=index))
        loops = find_loop(module, "i", "test"), find_loop(module, "j", "test")
        if legal:
            require_fusion_legal(*loops, "loop-fuse")
        else:
            with pytest.raises(IllegalTransformError, match=r"A\[o, i\] → A\[o, j \+ 1\]"):
                require_fusion_legal(*loops, "loop-fuse")


def test_obstacles() -> None:
    first, second = pair(READ.format("%j"))
    assert fusion_obstacle(first, second) is None
    assert fusion_obstacle(second, first) == "loops (j, i) are not adjacent siblings"
    first, second = pair(READ.format("%j"), upper="%n")
    assert fusion_obstacle(first, second) is None
    text = PAIR.format(second=READ.format("%j"), upper="17", parallel="")
    module = parse_module(text.replace("%j = 2 to 17", "%j = 2 to 17 step 3"))
    first, second = find_loop(module, "i", "test"), find_loop(module, "j", "test")
    assert fusion_obstacle(first, second) == (
        "loops (i, j) have different bounds or steps: 2 to 17 and 2 to 17 step 3"
    )
    module = parse_module(kernels.REDUCTION)
    k = find_loop(module, "k", "test")
    assert fusion_obstacle(k, k) == "loops (k, k) are not adjacent siblings"


def test_mechanics_moves_the_body_and_the_ops_between() -> None:
    first, second = pair(READ.format("%j - 1"), parallel=True)
    module = first.parent_op().parent_op()
    fuse(first, second)
    module.verify()
    ops = body_ops(first)
    assert [op.name for op in ops] == ["affine.load", "affine.store"] * 2
    assert ops[2].indices[0] is iv(first)
    assert first.prev_op.name == "arith.constant"  # moved before the fused loop
    assert PARALLEL in first.attributes  # both were marked: the caller checks again
    assert len(list(loops_in(module))) == 1
    first, second = pair(READ.format("%j"))
    fuse(first, second)
    assert PARALLEL not in first.attributes  # the second was not marked


def test_mechanics_refuses_before_any_change() -> None:
    first, second = pair(READ.format("%j"), upper="%n")
    module = first.parent_op().parent_op()
    before = str(module)
    with pytest.raises(LoopoptError, match="loops \\(j, i\\) are not adjacent siblings"):
        fuse(second, first)
    assert str(module) == before


def test_pass_drops_the_parallel_mark_of_a_loop_that_now_carries(rng) -> None:
    text = PAIR.format(second=READ.format("%j - 1"), upper="17", parallel=", loopopt.parallel")
    after = transform(text, "loop-fuse{loops=i,j}")
    assert "loopopt.parallel" not in after
    text = PAIR.format(second=READ.format("%j"), upper="17", parallel=", loopopt.parallel")
    assert "loopopt.parallel" in transform(text, "loop-fuse{loops=i,j}")


@pytest.mark.parametrize(
    "name", ["gemver", "mvt", "atax", "bicg", "2mm", "gesummv", "covariance", "fdtd_2d", "adi"]
)
def test_default_pass_on_polybench(name: str, rng: np.random.Generator) -> None:
    function, inputs = pb.CASES[name]
    args = inputs(rng)
    text = loopopt.kernel(function, static_shapes=True).mlir(*args)
    func = text.split("func.func @")[1].split("(")[0]
    assert_equivalent(text, func, args, "loop-fuse", rtol=1e-12)


def test_gemver_and_mvt_fuse(rng: np.random.Generator) -> None:
    for name, loops_after in [("gemver", 6), ("mvt", 2)]:
        function, inputs = pb.CASES[name]
        text = loopopt.kernel(function, static_shapes=True).mlir(*inputs(rng))
        after = transform(text, "loop-fuse")
        assert after.count("affine.for") == loops_after, after


@pytest.mark.parametrize("n", [7, 12])
def test_named_pass_on_kernels(n: int, rng: np.random.Generator) -> None:
    text, name, arrays = kernels.jacobi_1d(3, n, rng)  # B[i] = f(A[i - 1 .. i + 1]); A[j] = B[j]
    with pytest.raises(IllegalTransformError, match=r"A\[i - 1\] → A\[j\] \(WAR\) at distance -1"):
        transform(text, "loop-fuse{loops=i,j}")
    text = PAIR.format(second=READ.format("%j - 2"), upper=str(n + 2), parallel="")
    arrays = [rng.standard_normal(20).astype(np.float32) for _ in range(3)]
    after = assert_equivalent(text, "pair", [*arrays, n + 2], "loop-fuse{loops=i,j}")
    assert after.count("affine.for") == 1


@pytest.mark.parametrize(
    "options, message",
    [
        ("loops=i", "loops= takes two loop names (A,B), got 1: i"),
        ("loops=i,j,k", "loops= takes two loop names (A,B), got 3: i,j,k"),
        ("loops=i,x", "no loop named 'x'"),
        ("loops=j,i", "no loop named 'i' follows a loop named 'j' in the same block"),
        ("loops=i,j func=f", "no function named 'f'"),
    ],
)
def test_pass_validates_options(options: str, message: str, rng: np.random.Generator) -> None:
    text, _, _ = kernels.jacobi_1d(3, 9, rng)
    with pytest.raises(LoopoptError) as info:
        transform(text, f"loop-fuse{{{options}}}")
    assert message in info.value.message


def test_default_pass_warns_and_leaves_illegal_pairs(
    rng: np.random.Generator, capsys: pytest.CaptureFixture
) -> None:
    text, _, _ = kernels.jacobi_1d(3, 9, rng)
    assert transform(text, "loop-fuse{func=jacobi}").count("affine.for") == 3
    assert "reverses A[i - 1] → A[j] (WAR) at distance -1; left apart" in capsys.readouterr().err


def test_random_sibling_loops_are_refused_or_fused_and_equivalent() -> None:
    """Random sibling loops: loop-fuse{loops=a,b} refuses (a reversed dependence, different
    bounds) or the results do not change; at least a quarter of the cases are fused."""
    fused: list[bool] = []

    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: st.DataObject) -> None:
        siblings = data.draw(sibling_loops(), label="siblings")
        text = siblings.mlir()
        note(text)
        try:
            after = transform(text, "loop-fuse{loops=a,b}")
        except IllegalTransformError:
            fused.append(False)
            return
        except LoopoptError as e:
            assert siblings.upper_b is not None, e.message
            assert "different bounds" in e.message
            fused.append(False)
            return
        note(after)
        fused.append(True)
        assert 'loopopt.name = "b"' not in after
        arrays = siblings.arrays(seed=len(text))
        for e, g in zip(run(text, "siblings", arrays), run(after, "siblings", arrays), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        if MLIR_OPT is not None and len(fused) % 10 == 0:
            assert_upstream_valid(after)

    check()
    assert sum(fused) >= len(fused) // 4, f"fused {sum(fused)} of {len(fused)}"
