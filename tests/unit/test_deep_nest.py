"""A 60-deep loop nest through every registered pass: each one finishes, in seconds, and does
what it should.

Two nests: a perfect nest whose one statement reads and writes `A[i0, …, i59]` and reads
`B[i0, …, i59]` (every loop parallel, the band fully permutable) and one whose statement touches
`A[i59]` and `B[i59]` only (every loop but the innermost carries a dependence). Such nests took
minutes (loop-tile 60 s, loop-mark-parallel longer; gpu-map-loops 3 s and promote under i30
2.5 s on the second and first nest): the dependence analysis projected the iteration pairs onto
their distances once per loop level, every dependence's direction was worked out on every loop
where one or two were asked for, the interchange test built a union of one disjunct per loop
where the directions decide it, and a footprint asked isl for each dimension's bounds once per
access set (reads, writes, both) where the sets were equal. Each case prints its time and must
stay under `LIMIT_S` (30 s: well above the 2-6 s they take on a 2-core machine, 12 s under a
load of 4.5 (auto-schedule), so that a busy CI machine passes and a return of the old growth,
minutes, does not).
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
from loopopt.universe import PASSES

DEPTH = 60
LIMIT_S = 30.0


def deep_nest(depth: int, every_index: bool | None) -> str:
    """`A[i0, …, i<depth-1>] += B[…]` (every_index), `A[i<depth-1>] += B[i<depth-1>]` (not),
    or `A[i0 + … + i<depth-1>] += B[…]` (None: every loop carries a dependence) in a perfect
    nest of `depth` loops of 2 iterations."""
    shape = "x".join(["2"] * depth) if every_index else "4" if every_index is False else "121"
    memref = f"memref<{shape}xf32>"
    index = (
        ", ".join(f"%i{d}" for d in range(depth))
        if every_index
        else f"%i{depth - 1}"
        if every_index is False
        else " + ".join(f"%i{d}" for d in range(depth))
    )
    lines = [f"func.func @deep(%A: {memref}, %B: {memref}) {{"]
    lines += [f"{'  ' * (d + 1)}affine.for %i{d} = 0 to 2 {{" for d in range(depth)]
    body = "  " * (depth + 1)
    lines += [
        f"{body}%v = affine.load %A[{index}] : {memref}",
        f"{body}%b = affine.load %B[{index}] : {memref}",
        f"{body}%w = arith.addf %v, %b : f32",
        f"{body}affine.store %w, %A[{index}] : {memref}",
    ]
    lines += [f"{'  ' * (d + 1)}}}" for d in reversed(range(depth))]
    lines += ["  return", "}"]
    return "\n".join(lines) + "\n"


def _run(pipeline: str, every_index: bool | None) -> ModuleOp:
    ctx = make_context()
    module = parse_module(deep_nest(DEPTH, every_index), "deep.mlir", ctx)
    apply_passes(ctx, module, parse_pipeline("loop-name"))
    passes = parse_pipeline(pipeline)
    start = time.perf_counter()
    try:
        apply_passes(ctx, module, passes)
    finally:
        elapsed = time.perf_counter() - start
        print(f"{pipeline} on the {DEPTH}-deep nest: {elapsed:.2f} s")
        assert elapsed < LIMIT_S, f"{pipeline}: {elapsed:.1f} s on the {DEPTH}-deep nest"
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
    "promote{loop=i30 arrays=A}": None,
    "scalar-replace": DEPTH,
    "pad-tiles{loops=i0}": DEPTH,
    "gpu-map-loops": None,
    "auto-schedule": None,
    "loop-name": DEPTH,
    "raise-scf-to-affine": DEPTH,
    "loop-skew{loops=i0,i1 factor=auto wavefront}": DEPTH,
    "loop-distribute{loop=i0}": DEPTH,
    "loop-fuse": DEPTH,
    "loop-reschedule": DEPTH,
    "array-expand": DEPTH,
    "array-snapshot": DEPTH,
    "hoist-invariants": DEPTH,
    "version-guards{loop=i0}": DEPTH,
    "scalar-replace,reduction-to-memory{scratch}": DEPTH,
    "loopopt-lower-to-llvm": 0,
    "gpu-map-loops,loopopt-lower-gpu-to-nvvm": None,
    "gpu-mma": DEPTH,  # no matmul: left as it is (a warning)
}
# Passes whose every use is refused on the perfect nest (what they need is not there); they
# are timed on the other nest, where they apply.
DEPENDENT_ONLY = {
    "gpu-map-loops,gpu-constant-memory{arrays=B}": "need 4611686018427387904 bytes",
    "promote{loop=i58 arrays=B},loop-unroll{unroll-full loop=B_copy_in_0},"
    "pipeline-copies{loop=i58}": "no load of a read-only array directly in loop 'i58'",
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


def _last_pass(pipeline: str) -> str:
    return parse_pipeline(pipeline)[-1].name


def test_every_registered_pass_is_timed_on_the_deep_nests() -> None:
    timed = {_last_pass(p) for p in [*PERFECT, *DEPENDENT_ONLY]}
    assert timed == set(PASSES), set(PASSES) ^ timed


@pytest.mark.parametrize(
    "pipeline",
    [*PERFECT, *DEPENDENT_ONLY],
    ids=[f"{n}-{_last_pass(p)}" for n, p in enumerate([*PERFECT, *DEPENDENT_ONLY])],
)
@pytest.mark.parametrize("coupled", [False, None], ids=["tail", "sum"])
def test_every_pass_on_a_deep_nest_carrying_dependences(pipeline: str, coupled: bool) -> None:
    """Each pass finishes within the limit: applied, or refused with a diagnostic. `A[i59]`
    (tail): every loop but the innermost carries a dependence; `A[i0 + … + i59]` (sum): every
    loop does, and each dependence couples them all (gpu-map-loops took 47 s)."""
    try:
        _run(pipeline, every_index=coupled)
    except LoopoptError as e:
        assert "illegal" in e.message or "pipeline-copies" in e.message, e.message


@pytest.mark.parametrize("pipeline", DEPENDENT_ONLY)
def test_passes_refused_on_the_deep_perfect_nest(pipeline: str) -> None:
    with pytest.raises(LoopoptError) as error:
        _run(pipeline, every_index=True)
    assert DEPENDENT_ONLY[pipeline] in error.value.message
