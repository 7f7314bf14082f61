"""Footprints under a loop, checked against hand-computed boxes and copy regions."""

from __future__ import annotations

import re

import numpy as np
import pytest
from kernels import conv2d, jacobi_1d, syrk
from xdsl.dialects import affine
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import PassPipeline

from loopopt.analysis.footprint import Footprint, Region, array_name, arrays_under, footprint
from loopopt.context import make_context, parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import find_loop
from loopopt.universe import all_passes


def tiled_matmul(m: int, n: int, k: int, ti: int = 32, tj: int = 32, tk: int = 8) -> str:
    """matmul tiled by hand: tile loops i_t, j_t, k_t; point loops clipped with min."""
    point = (
        "affine.for %{iv} = affine_map<(d0) -> (d0)>(%{t}) "
        "to min affine_map<(d0) -> (d0 + {s}, {n})>(%{t})"
    )
    return f"""
func.func @matmul(%A: memref<{m}x{k}xf32>, %B: memref<{k}x{n}xf32>, %C: memref<{m}x{n}xf32>) {{
  affine.for %it = 0 to {m} step {ti} {{
    affine.for %jt = 0 to {n} step {tj} {{
      affine.for %kt = 0 to {k} step {tk} {{
        {point.format(iv="i", t="it", s=ti, n=m)} {{
          {point.format(iv="j", t="jt", s=tj, n=n)} {{
            {point.format(iv="k", t="kt", s=tk, n=k)} {{
              %a = affine.load %A[%i, %k] : memref<{m}x{k}xf32>
              %b = affine.load %B[%k, %j] : memref<{k}x{n}xf32>
              %c = affine.load %C[%i, %j] : memref<{m}x{n}xf32>
              %p = arith.mulf %a, %b : f32
              %s = arith.addf %c, %p : f32
              affine.store %s, %C[%i, %j] : memref<{m}x{n}xf32>
            }} {{loopopt.name = "k"}}
          }} {{loopopt.name = "j"}}
        }} {{loopopt.name = "i"}}
      }} {{loopopt.name = "k_t"}}
    }} {{loopopt.name = "j_t"}}
  }} {{loopopt.name = "i_t"}}
  return
}}
"""


def of(module: ModuleOp, loop: str, array: str) -> Footprint:
    root = find_loop(module, loop, "test")
    memrefs = [m for m in arrays_under(root) if array_name(m) == array]
    assert len(memrefs) == 1
    return footprint(root, memrefs[0])


def _context(fp: Footprint, values: dict[str, int]) -> list[int]:
    return [values[_name(v)] for v in fp.context]


def _name(value: SSAValue) -> str:
    assert value.name_hint is not None
    return value.name_hint


def origin_at(fp: Footprint, **values: int) -> tuple[int, ...]:
    return tuple(e.eval(_context(fp, values), []) for e in fp.origin)


def region_at(
    fp: Footprint, region: Region | None, sizes: tuple[int, ...] = (), **values: int
) -> list[tuple[int, int]]:
    """[lower, upper) per dimension at the given context values (and dynamic sizes)."""
    assert region is not None
    dims = _context(fp, values)
    return [
        (max(t.eval(dims, sizes) for t in lows), min(t.eval(dims, sizes) for t in highs))
        for lows, highs in zip(region.lowers, region.uppers, strict=True)
    ]


def test_matmul_tile_boxes_under_k_t() -> None:
    module = parse_module(tiled_matmul(70, 70, 70))
    a, b, c = (of(module, "k_t", name) for name in "ABC")
    assert (a.extents, b.extents, c.extents) == ((32, 8), (8, 32), (32, 32))
    assert origin_at(a, it=32, jt=0, kt=16) == (32, 16)
    assert origin_at(b, it=32, jt=64, kt=16) == (16, 64)
    # A full tile, then the partial tile at the corner (70 = 2 * 32 + 6 = 8 * 8 + 6).
    assert region_at(a, a.copy_in, it=32, jt=0, kt=16) == [(32, 64), (16, 24)]
    assert region_at(a, a.copy_in, it=64, jt=0, kt=64) == [(64, 70), (64, 70)]
    assert a.copy_out is None and b.copy_out is None
    assert c.copy_out_exact
    assert region_at(c, c.copy_out, it=64, jt=32, kt=0) == [(64, 70), (32, 64)]


def test_matmul_c_under_j_t_and_point_loop() -> None:
    module = parse_module(tiled_matmul(70, 70, 70))
    c = of(module, "j_t", "C")
    assert c.extents == (32, 32) and origin_at(c, it=64, jt=32) == (64, 32)
    a = of(module, "j_t", "A")  # the whole k range of the i tile
    assert a.extents == (32, 70) and origin_at(a, it=32, jt=0) == (32, 0)
    single = of(module, "k", "C")  # one element per iteration of the innermost loop
    assert single.extents == (1, 1) and origin_at(single, i=5, j=7, k=3, it=0, jt=0, kt=0) == (5, 7)


def test_conv2d_halo(rng: np.random.Generator) -> None:
    text, _, _ = conv2d(13, 11, 3, 3, rng)
    tiled = tiled_conv2d(text)
    image = of(tiled, "j_t", "I")
    assert image.extents == (6, 6)  # tile 4 + filter 3 - 1
    assert origin_at(image, i_t=4, j_t=8) == (4, 8)
    assert region_at(image, image.copy_in, i_t=12, j_t=8) == [(12, 15), (8, 13)]
    out = of(tiled, "j_t", "O")
    assert out.extents == (4, 4) and out.copy_out_exact


def tiled_conv2d(text: str) -> ModuleOp:
    ctx = make_context()
    module = parse_module(text, "conv.mlir", ctx)
    PassPipeline.parse_spec(all_passes(), "loop-tile{tile-sizes=4,4}").apply(ctx, module)
    return module


def test_jacobi_under_time_loop(rng: np.random.Generator) -> None:
    module = parse_module(jacobi_1d(5, 37, rng)[0])
    a, b = of(module, "t", "A"), of(module, "t", "B")
    assert (a.extents, b.extents) == ((37,), (35,))
    assert origin_at(a, t=0) == (0,) and origin_at(b, t=0) == (1,)
    assert region_at(a, a.copy_in, t=0) == [(0, 37)]
    assert region_at(a, a.copy_out, t=0) == [(1, 36)]  # only the interior is written
    assert a.copy_out_exact and b.copy_out_exact
    stencil = of(module, "i", "A")  # one point of the stencil: i - 1, i, i + 1
    assert stencil.extents == (3,) and origin_at(stencil, i=9, t=0) == (8,)


def test_syrk_triangle(rng: np.random.Generator) -> None:
    module = parse_module(syrk(13, 7, rng)[0])
    a = of(module, "i", "A")  # rows 0..i (the j loop runs to i)
    assert a.extents == (13, 7) and origin_at(a, i=4) == (0, 0)
    assert region_at(a, a.copy_in, i=4) == [(0, 5), (0, 7)]
    c = of(module, "i", "C")
    assert c.extents == (1, 13) and region_at(c, c.copy_out, i=4) == [(4, 5), (0, 5)]
    assert c.copy_out_exact


TRIANGLE = """
func.func @tri(%A: memref<9x9xf32>, %C: memref<9x9xf32>) {
  affine.for %t = 0 to 2 {
    affine.for %i = 0 to 9 {
      affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
        %a = affine.load %A[%i, %j] : memref<9x9xf32>
        affine.store %a, %C[%i, %j] : memref<9x9xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}
"""


def test_inexact_write_copies_the_whole_box_in() -> None:
    """C is only written, on a triangle: the box write-back needs the untouched half copied in."""
    c = of(parse_module(TRIANGLE), "t", "C")
    assert c.extents == (9, 9) and not c.copy_out_exact
    assert region_at(c, c.copy_in, t=0) == [(0, 9), (0, 9)]


TILED_TRIANGLE = """
func.func @tri(%A: memref<9x9xf32>, %C: memref<9x9xf32>) {
  affine.for %it = 0 to 9 step 4 {
    affine.for %i = affine_map<(d0) -> (d0)>(%it) to min affine_map<(d0) -> (d0 + 4, 9)>(%it) {
      affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
        %a = affine.load %A[%i, %j] : memref<9x9xf32>
        affine.store %a, %C[%i, %j] : memref<9x9xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  } {loopopt.name = "i_t"}
  return
}
"""


def test_whole_box_copies_stay_in_the_array() -> None:
    c = of(parse_module(TILED_TRIANGLE), "i_t", "C")
    assert c.extents == (4, 9) and not c.copy_out_exact
    assert region_at(c, c.copy_in, it=4) == [(4, 8), (0, 9)]
    assert region_at(c, c.copy_in, it=8) == [(8, 9), (0, 9)]  # the box would reach row 11
    assert region_at(c, c.copy_out, it=8) == [(8, 9), (0, 9)]


STRIDED = """
func.func @st(%A: memref<40xf32>, %B: memref<20xf32>, %n: index) {
  affine.for %it = 0 to 20 step 4 {
    affine.for %i = affine_map<(d0) -> (d0)>(%it) to affine_map<(d0) -> (d0 + 4)>(%it) {
      %q = affine.apply affine_map<(d0) -> (d0 floordiv 2)>(%i)
      %a = affine.load %A[%i * 2 + 1] : memref<40xf32>
      %b = affine.load %B[%q] : memref<20xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %B[%i] : memref<20xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "i_t"}
  return
}
"""


def test_strided_and_floordiv_accesses() -> None:
    module = parse_module(STRIDED)
    a = of(module, "i_t", "A")  # 2i + 1 for 4 values of i: 7 elements, every other one used
    assert a.extents == (7,) and origin_at(a, it=8) == (17,)
    b = of(module, "i_t", "B")  # i // 2 and i: [it / 2, it + 4)
    assert b.extents == (12,) and origin_at(b, it=8) == (4,)
    assert region_at(b, b.copy_out, it=8) == [(8, 12)]


DYNAMIC = """
func.func @dyn(%A: memref<?xf32>, %n: index) {
  affine.for %it = 0 to %n step 8 {
    affine.for %i = affine_map<(d0) -> (d0)>(%it)
        to min affine_map<(d0)[s0] -> (d0 + 8, s0)>(%it)[%n] {
      %a = affine.load %A[%i] : memref<?xf32>
      affine.store %a, %A[%i] : memref<?xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "i_t"}
  return
}
"""


def test_dynamic_sizes_guard_the_copies() -> None:
    a = of(parse_module(DYNAMIC), "i_t", "A")
    assert a.extents == (8,)
    # The array's size (symbol 0) and %n both bound the copy of the last tile.
    assert region_at(a, a.copy_in, (21,), it=16, n=21) == [(16, 21)]
    assert region_at(a, a.copy_in, (19,), it=16, n=21) == [(16, 19)]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("%v = memref.load %X[%i] : memref<8xf32>", "accessed by 'memref.load'"),
        (
            "%j = arith.addi %i, %i : index\n    %v = affine.load %X[%j] : memref<8xf32>",
            "non-affine index (defined by arith.addi)",
        ),
    ],
)
def test_refuses_non_affine(body: str, message: str) -> None:
    text = f"""
func.func @f(%X: memref<8xf32>, %Y: memref<8xf32>) {{
  affine.for %i = 0 to 4 {{
    {body}
    affine.store %v, %Y[%i] : memref<8xf32>
  }} {{loopopt.name = "L"}}
  return
}}
"""
    with pytest.raises(LoopoptError, match=re.escape(message)):
        of(parse_module(text), "L", "X")


def test_refuses_extent_depending_on_a_symbol() -> None:
    text = """
func.func @f(%X: memref<?xf32>, %n: index) {
  affine.for %t = 0 to 3 {
    affine.for %i = 0 to %n {
      %v = affine.load %X[%i] : memref<?xf32>
      affine.store %v, %X[%i] : memref<?xf32>
    }
  } {loopopt.name = "L"}
  return
}
"""
    with pytest.raises(LoopoptError, match="extent in dimension 0 is not bounded by a constant"):
        of(parse_module(text), "L", "X")


def test_arrays_under_skips_local_buffers() -> None:
    text = """
func.func @f(%X: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %buf = memref.alloca() : memref<1xf32>
    %v = affine.load %X[%i] : memref<8xf32>
    affine.store %v, %buf[0] : memref<1xf32>
  } {loopopt.name = "L"}
  return
}
"""
    loop = find_loop(parse_module(text), "L", "test")
    assert isinstance(loop, affine.ForOp)
    assert [array_name(m) for m in arrays_under(loop)] == ["X"]


UNCLAMPED_MIN = """
func.func @f(%A: memref<7x7xf32>, %B: memref<7xf32>) {
  affine.for %i = 1 to 6 {
    affine.for %j = 1 to min affine_map<(d0) -> (5, d0 + 1)>(%i) {
      %a = affine.load %B[%i] : memref<7xf32>
      %b = affine.load %B[%j + 2] : memref<7xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %A[%i, %j] : memref<7x7xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""
"""Under j, B's least element is min(i, j + 2): neither piece bounds it everywhere (found by the
differential fuzzer, where promote refused it)."""


def test_a_minimum_of_no_single_piece_gets_a_constant_origin() -> None:
    b = of(parse_module(UNCLAMPED_MIN), "j", "B")
    assert b.extents == (6,) and origin_at(b, i=3, j=2) == (1,)  # B[1 .. 6]: i and j + 2
    assert region_at(b, b.copy_in, i=3, j=2) == [(1, 7)]  # the box: no affine bounds either


def test_loops_that_never_run_have_a_one_element_box() -> None:
    empty = UNCLAMPED_MIN.replace("(5, d0 + 1)", "(1, d0 + 1)")
    b = of(parse_module(empty), "j", "B")
    assert b.extents == (1,) and origin_at(b, i=3, j=2) == (0,)
