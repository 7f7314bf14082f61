"""Lamport's hyperplane schedule (analysis/hyperplane.py, `loop-reschedule{wavefront}`), the
bounds it makes on a GPU grid (loops/box.hoist_outer_terms), and auto-schedule's choice of it."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_emulator import emulate
from polybench_py import seidel_2d
from xdsl.dialects import affine
from xdsl.passes import PassPipeline

from loopopt.analysis.hyperplane import hyperplane
from loopopt.analysis.nest import outermost_loops
from loopopt.analysis.statements import nest_statements
from loopopt.context import make_context, parse_module, verify_ir
from loopopt.frontend.kernel import Kernel
from loopopt.runtime.cpu import run_function
from loopopt.universe import all_passes

RECURRENCE = """
func.func @f(%A: memref<40x50xf64>) {
  affine.for %i = 1 to 40 {
    affine.for %j = 1 to 50 {
      %a = affine.load %A[%i - 1, %j] : memref<40x50xf64>
      %b = affine.load %A[%i, %j - 1] : memref<40x50xf64>
      %c = affine.load %A[%i - 1, %j + D] : memref<40x50xf64>
      %s = arith.addf %a, %b : f64
      %t = arith.addf %s, %c : f64
      affine.store %t, %A[%i, %j] : memref<40x50xf64>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


def _coefficients(text: str) -> tuple[int, ...] | None:
    module = parse_module(text, "test.mlir", make_context())
    plane = hyperplane(nest_statements(outermost_loops(module)[0]))
    return None if plane is None else plane.coefficients


def test_the_cheapest_hyperplane_carries_every_distance() -> None:
    # distances (1, 0), (0, 1) and, through A[i - 1, j + D], (1, -D): h = (D + 1, 1)
    assert _coefficients(RECURRENCE.replace("+ D", "+ 0")) == (1, 1)
    assert _coefficients(RECURRENCE.replace("+ D", "+ 1")) == (2, 1)
    assert _coefficients(RECURRENCE.replace("+ D", "+ 3")) == (4, 1)
    # (1, -4) needs h_i = 5: outside the searched box
    assert _coefficients(RECURRENCE.replace("+ D", "+ 4")) is None


def test_seidel_2d_gets_4_2_1() -> None:
    module = Kernel(seidel_2d).module(3, np.zeros((12, 12)))
    plane = hyperplane(nest_statements(outermost_loops(module)[0]))
    assert plane is not None and plane.coefficients == (4, 2, 1)


def test_a_row_read_whole_has_no_hyperplane_in_the_box() -> None:
    # every (i, j) reads A[i - 1, 49], written at (i - 1, 49): distances (1, j - 49), so h_i
    # would need 49 * h_j + 1
    text = RECURRENCE.replace("%A[%i - 1, %j + D]", "%A[%i - 1, 49]")
    assert _coefficients(text) is None


def _run(n: int, tsteps: int, pipeline: str) -> list[str]:
    a = np.random.default_rng(0).random((n, n))
    expected = a.copy()
    seidel_2d(tsteps, expected)
    module = Kernel(seidel_2d).module(tsteps, a)
    PassPipeline.parse_spec(all_passes(), pipeline).apply(make_context(), module)
    verify_ir(module, pipeline)
    mappings = [
        str(op.attributes.get("loopopt.mapping")) for op in module.walk() if op.name == "gpu.func"
    ]
    emulate(module, reverse=True)
    got: list[object] = [tsteps, a.copy()]
    run_function(module, "seidel_2d", got)
    np.testing.assert_allclose(got[1], expected, rtol=1e-12)
    return mappings


@pytest.mark.parametrize("n, tsteps", [(9, 2), (23, 3), (37, 5)])
def test_wavefront_on_a_2d_grid_computes_the_same(n: int, tsteps: int) -> None:
    # the t and i loops' bounds hold (c0 + 1) floordiv 4 and floordiv 2 of the host loop c0:
    # hoisted before the band, both loops spread over the grid
    [mapping] = _run(n, tsteps, "loop-reschedule{wavefront},gpu-map-loops")
    assert "thread_x" in mapping and "thread_y" in mapping


def test_auto_schedule_takes_the_hyperplane_where_wavefronts_are_wide() -> None:
    [wide] = _run(37, 5, "auto-schedule{device=sm_90}")
    assert "thread_y" in wide  # (t, i) on a 2-D grid, nothing sequential in a thread
    [narrow] = _run(9, 2, "auto-schedule{device=sm_90}")  # ~12 iterations a wavefront
    assert "thread_y" not in narrow


def test_hoisted_terms_are_computed_once_before_the_band() -> None:
    module = Kernel(seidel_2d).module(2, np.zeros((30, 30)))
    pipeline = "loop-reschedule{wavefront},gpu-map-loops"
    PassPipeline.parse_spec(all_passes(), pipeline).apply(make_context(), module)
    host = outermost_loops(module)[0]
    applies = [op for op in host.body.block.ops if isinstance(op, affine.ApplyOp)]
    maps = [(str(op.map), tuple(op.operands)) for op in applies]
    assert applies and len(maps) == len(set(maps))
    assert all(list(op.operands) == [host.body.block.args[0]] for op in applies)


def test_a_nest_without_dependences_gets_the_zero_hyperplane() -> None:
    text = RECURRENCE.replace("%A[%i - 1, %j + D]", "%A[%i, %j]").replace(
        "affine.store %t, %A", "affine.store %t, %B"
    )
    text = text.replace("(%A: memref<40x50xf64>)", "(%A: memref<40x50xf64>, %B: memref<40x50xf64>)")
    text = text.replace("%A[%i - 1, %j]", "%A[%i, %j]").replace("%A[%i, %j - 1]", "%A[%i, %j]")
    assert _coefficients(text) == (0, 0)
    module = parse_module(text, "test.mlir", make_context())
    PassPipeline.parse_spec(all_passes(), "loop-reschedule{wavefront force}").apply(
        make_context(), module
    )
    verify_ir(module, "loop-reschedule")
