"""MLIR's pipeline anchors (pass_nesting.py): what `split` reads, what `func.func(...)` runs,
and that xDSL's passes run inside loopopt's pipelines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

import loopopt
from loopopt.context import make_context, parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.pass_nesting import Anchored, Flat, OnEachFunction, split
from loopopt.pass_pipeline import apply_passes, parse_pipeline, pipeline_text
from loopopt.passes.loop_name import LoopNamePass
from loopopt.passes.loop_tile import LoopTilePass
from loopopt.tools import loopopt_opt

THREE = """func.func @f(%A: memref<10xf32>) {
  %one = arith.constant 1.0 : f32
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<10xf32>
    %w = arith.addf %v, %one : f32
    %x = arith.addf %v, %one : f32
    %y = arith.mulf %w, %x : f32
    affine.store %y, %A[%i] : memref<10xf32>
  } {loopopt.name = "i"}
  return
}
func.func private @declared(memref<10xf32>)
func.func @g(%A: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<10xf32>
    affine.store %v, %A[%i] : memref<10xf32>
  } {loopopt.name = "i"}
  return
}
"""


def _after(pipeline: str) -> str:
    ctx = make_context()
    module = parse_module(THREE, "three.mlir", ctx)
    apply_passes(ctx, module, parse_pipeline(pipeline))
    module.verify()
    return str(module)


def test_split_reads_anchors_and_leaves_flat_text() -> None:
    spec = "builtin.module(func.func(loop-tile{tile-sizes=32}), canonicalize)"
    assert split(spec) == (
        Anchored(
            "builtin.module",
            0,
            (Anchored("func.func", 15, (Flat(25, 49),)), Flat(52, 64)),
        ),
    )
    assert spec[25:49] == "loop-tile{tile-sizes=32}" and spec[52:64] == "canonicalize"
    assert split('a,b{s="x)"}') == (Flat(0, 11),)  # a `)` in a quoted value is no anchor
    assert split("a,func.func(b),c") == (
        Flat(0, 1),
        Anchored("func.func", 2, (Flat(12, 13),)),
        Flat(15, 16),
    )
    assert split("func.func()") == (Anchored("func.func", 0, ()),)


def test_nested_pipelines_parse_to_passes_on_each_function() -> None:
    [module_level] = parse_pipeline("builtin.module(loop-tile{tile-sizes=4})")
    assert module_level == LoopTilePass(tile_sizes=(4,))
    passes = parse_pipeline("builtin.module(func.func(loop-tile{tile-sizes=4}, cse), cse)")
    assert [p.name for p in passes] == ["func.func", "cse"]
    assert isinstance(passes[0], OnEachFunction)
    assert passes[0].passes[0] == LoopTilePass(tile_sizes=(4,))
    text = pipeline_text(passes)
    assert text == "func.func(loop-tile{tile-sizes=4},cse),cse"
    assert parse_pipeline(text) == passes


def test_a_loopopt_pass_on_each_function_is_the_pass_on_all() -> None:
    """func.func(P) runs P{func=NAME} on each function with a body: the same as P here."""
    assert _after("func.func(loop-tile{tile-sizes=4})") == _after("loop-tile{tile-sizes=4}")
    assert _after("builtin.module(loop-tile{tile-sizes=4})") == _after("loop-tile{tile-sizes=4}")
    only_g = _after("func.func(loop-tile{tile-sizes=4 func=g})")
    assert only_g == _after("loop-tile{tile-sizes=4 func=g}")
    assert only_g.count("step 4") == 1


def test_xdsl_passes_run_on_each_function_alone_and_in_place() -> None:
    """cse, moved with its function into a module of its own and back: the functions keep
    their order, the declaration stays, and the two equal additions of @f become one."""
    after = _after("func.func(cse)")
    order = [after.index(name) for name in ("@f", "@declared", "@g")]
    assert order == sorted(order)
    assert after.count("arith.addf") == 1
    assert after == _after("cse")


def test_xdsl_passes_between_loopopt_passes() -> None:
    after = _after("canonicalize,loop-tile{tile-sizes=4},cse")
    assert after.count("step 4") == 2 and after.count("arith.addf") == 1


@loopopt.kernel
def double(A, B):
    for i in range(A.shape[0]):
        B[i] = A[i] + A[i]


def test_a_nested_schedule_in_python() -> None:
    A, B = np.arange(10, dtype=np.float32), np.zeros(10, np.float32)
    double(A, B, schedule="builtin.module(func.func(loop-tile{tile-sizes=4}),cse)", target="cpu")
    np.testing.assert_array_equal(B, 2 * A)
    with pytest.raises(LoopoptError, match="anchor 'gpu.module"):
        double(A, B, schedule="gpu.module(cse)", target="cpu")


def test_an_internal_error_under_an_anchor_names_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def crash(self: LoopNamePass, ctx: Context, module: ModuleOp) -> None:
        raise KeyError("missing")

    monkeypatch.setattr(LoopNamePass, "apply", crash)
    (tmp_path / "in.mlir").write_text(THREE)
    code = loopopt_opt.run([str(tmp_path / "in.mlir"), "-p", "func.func(loop-name)"])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert "error: internal error in loop-name (KeyError): 'missing'" in line, line
