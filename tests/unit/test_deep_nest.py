"""A 60-deep loop nest through every loop pass: each one finishes and does what it should.

Two nests: a perfect nest whose one statement reads and writes `A[i0, …, i59]` (every loop
parallel, the band fully permutable) and one whose statement touches `A[i59]` only (every loop but
the innermost carries a dependence). Such nests took minutes (loop-tile 60 s, loop-mark-parallel
longer): the dependence analysis projected the iteration pairs onto their distances once per
loop level and tested three signs and a distance per loop of every dependence. No timing is
asserted (the suite runs on machines of any speed); each case prints its time.
"""

from __future__ import annotations

import time

import pytest
from xdsl.dialects import affine
from xdsl.dialects.builtin import ModuleOp

from loopopt.context import make_context, parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import loop_name, loops_in
from loopopt.pass_pipeline import apply_passes, parse_pipeline

DEPTH = 60


def deep_nest(depth: int, every_index: bool) -> str:
    """`A[i0, …, i<depth-1>] += A[…]` (every_index) or `A[i<depth-1>] += A[i<depth-1>]` in a
    perfect nest of `depth` loops of 2 iterations."""
    shape = "x".join(["2"] * depth) if every_index else "4"
    memref = f"memref<{shape}xf32>"
    index = ", ".join(f"%i{d}" for d in range(depth)) if every_index else f"%i{depth - 1}"
    lines = [f"func.func @deep(%A: {memref}) {{"]
    lines += [f"{'  ' * (d + 1)}affine.for %i{d} = 0 to 2 {{" for d in range(depth)]
    body = "  " * (depth + 1)
    lines += [
        f"{body}%v = affine.load %A[{index}] : {memref}",
        f"{body}%w = arith.addf %v, %v : f32",
        f"{body}affine.store %w, %A[{index}] : {memref}",
    ]
    lines += [f"{'  ' * (d + 1)}}}" for d in reversed(range(depth))]
    lines += ["  return", "}"]
    return "\n".join(lines) + "\n"


def _run(pipeline: str, every_index: bool) -> ModuleOp:
    ctx = make_context()
    module = parse_module(deep_nest(DEPTH, every_index), "deep.mlir", ctx)
    start = time.perf_counter()
    try:
        apply_passes(ctx, module, parse_pipeline(f"loop-name,{pipeline}"))
    finally:
        print(f"{pipeline} on the {DEPTH}-deep nest: {time.perf_counter() - start:.2f} s")
    module.verify()
    return module


def _loops(module: ModuleOp) -> list[affine.ForOp]:
    return list(loops_in(module))


def _parallel(module: ModuleOp) -> list[str]:
    return [
        loop_name(loop) or "?" for loop in _loops(module) if "loopopt.parallel" in loop.attributes
    ]


SIZES = ",".join(["2"] * DEPTH)
REVERSED = ",".join(str(DEPTH - 1 - d) for d in range(DEPTH))

# pipeline -> (the number of affine.for ops after it on the perfect nest, or None: not checked)
PERFECT = {
    "loop-mark-parallel": DEPTH,
    f"loop-tile{{tile-sizes={SIZES}}}": 2 * DEPTH,
    f"loop-interchange{{permutation={REVERSED}}}": DEPTH,
    "loop-strip-mine{factor=2 loop=i30}": DEPTH + 1,
    "loop-unroll{unroll-factor=2}": DEPTH - 1,
    "loop-unroll{unroll-full}": DEPTH - 1,
    "loop-unroll-jam{unroll-jam-factor=2}": DEPTH,
    "loop-peel{full-tiles}": DEPTH,
    "promote{loop=i0}": None,
    "scalar-replace": DEPTH,
    "pad-tiles{loops=i0}": DEPTH,
    "gpu-map-loops": None,
    "auto-schedule": None,
}


@pytest.mark.parametrize("pipeline", PERFECT, ids=[p.split("{")[0] for p in PERFECT])
def test_every_loop_pass_on_a_deep_perfect_nest(pipeline: str) -> None:
    module = _run(pipeline, every_index=True)
    loops = _loops(module)
    if PERFECT[pipeline] is not None:
        assert len(loops) == PERFECT[pipeline], pipeline
    if pipeline == "loop-mark-parallel":
        assert _parallel(module) == [f"i{d}" for d in range(DEPTH)]
    if pipeline.startswith("loop-interchange"):
        assert [loop_name(loop) for loop in loops[:2]] == [f"i{DEPTH - 1}", f"i{DEPTH - 2}"]


def test_deep_nest_with_a_dependence_on_every_loop() -> None:
    """Only the innermost loop is parallel; tiling and interchange are refused, naming it."""
    module = _run("loop-mark-parallel", every_index=False)
    assert _parallel(module) == [f"i{DEPTH - 1}"]
    for pipeline, says in (
        ("loop-tile{tile-sizes=2,2}", "loop-tile: illegal: band (i0, i1) is not fully permutable"),
        (
            "loop-interchange{permutation=1,0}",
            "loop-interchange: illegal: permuting loops (i0, i1)",
        ),
    ):
        with pytest.raises(LoopoptError) as error:
            _run(pipeline, every_index=False)
        assert error.value.message.startswith(says), error.value.message
        assert f"A[i{DEPTH - 1}] → A[i{DEPTH - 1}]" in error.value.message
    jammed = _run("loop-unroll-jam{unroll-jam-factor=2}", every_index=False)
    assert len(_loops(jammed)) == DEPTH
    mapped = _run("gpu-map-loops", every_index=False)
    assert any(op.name == "gpu.launch_func" for op in mapped.walk())
