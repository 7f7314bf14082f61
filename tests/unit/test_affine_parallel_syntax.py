"""`affine.parallel` in MLIR 22's custom syntax (loopopt.dialects.affine_ext.ParallelOp): read,
printed back the same, its bounds and groups as MLIR builds them; malformed text is a located
diagnostic."""

from __future__ import annotations

from io import StringIO

import pytest
from xdsl.dialects import affine
from xdsl.printer import Printer

from loopopt.context import make_context, parse_chunk
from loopopt.diagnostics import LoopoptError

TEXT = """\
func.func @f(%A: memref<8x8xf32>, %N: index) -> f32 {
  affine.parallel (%i, %j) = (0, max(0, %N - 8, symbol(%N) floordiv 2)) to (%N, 8) step (1, 2) {
    %v = affine.load %A[%i, %j] : memref<8x8xf32>
    affine.store %v, %A[%j, %i] : memref<8x8xf32>
  }
  %s = affine.parallel (%k) = (1) to (min(%N, 7)) reduce ("addf") -> (f32) {
    %w = affine.load %A[%k, %k] : memref<8x8xf32>
    affine.yield %w : f32
  }
  return %s : f32
}
"""


def _print(text: str) -> str:
    out = StringIO()
    Printer(stream=out).print_op(parse_chunk(make_context(), text, "t.mlir"))
    return out.getvalue()


def test_bounds_groups_steps_and_reductions_are_read_as_mlir_builds_them() -> None:
    module = parse_chunk(make_context(), TEXT, "t.mlir")
    first, second = [op for op in module.walk() if isinstance(op, affine.ParallelOp)]
    assert str(first.lowerBoundsMap.data) == "(d0) -> (0, 0, (d0 + -8), (d0 floordiv 2))"
    assert list(first.lowerBoundsGroups.get_values()) == [1, 3]
    assert list(first.upperBoundsGroups.get_values()) == [1, 1]
    assert [s.value.data for s in first.steps] == [1, 2]
    assert [r.data for r in second.reductions] == ["addf"]
    assert list(second.upperBoundsGroups.get_values()) == [2]
    assert len(second.map_operands) == 1  # %N once, though named twice in the first loop's text


def test_printed_text_reads_back_the_same() -> None:
    once = _print(TEXT)
    assert "max(0, %N + -8, %N floordiv 2)) to (%N, 8) step (1, 2) {" in once
    assert 'reduce ("addf") -> (f32)' in once
    assert _print(once) == once


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        ("(0) to (8, 8)", "expected 2 lower bounds, got 1"),
        ("(0, 0) to (8)", "expected 2 upper bounds, got 1"),
        ("(0, 0) to (8, 8) step (1)", "expected 2 steps, got 1"),
    ],
)
def test_malformed_bounds_are_a_located_diagnostic(bounds: str, message: str) -> None:
    text = f"func.func @f() {{\n  affine.parallel (%i, %j) = {bounds} {{\n  }}\n  return\n}}\n"
    with pytest.raises(LoopoptError, match=message) as e:
        parse_chunk(make_context(), text, "t.mlir")
    assert e.value.location is not None and e.value.location.startswith("t.mlir:2:")
