"""array-expand: the exactness check (analysis/expansion.py), the transformation
(loops/expand.py), results equal to the unexpanded program on random inputs (CPU, the GPU
emulator after auto-schedule, and the GPU, where host-allocated device buffers are reused)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_emulator import emulate
from xdsl.dialects import affine, memref
from xdsl.passes import PassPipeline

from loopopt.analysis.expansion import Expansion, expandable
from loopopt.context import make_context, parse_module, verify_ir
from loopopt.frontend.kernel import Kernel
from loopopt.loops.nest import find_loop, functions
from loopopt.runtime.cpu import run_function
from loopopt.universe import all_passes


def doitgen(A, C4, total):  # noqa: ANN001, N803
    nr, nq, np_ = A.shape
    for r in range(nr):
        for q in range(nq):
            for p in range(np_):
                total[p] = 0.0
                for s in range(np_):
                    total[p] += A[r, q, s] * C4[s, p]
            for p in range(np_):
                A[r, q, p] = total[p]


def rows_reversed(A, t):  # noqa: ANN001, N803
    """Each row i (step 2) goes through the scratch row t, reversed; t keeps the last one."""
    n, m = A.shape
    for i in range(1, n, 2):
        for j in range(m):
            t[j] = A[i, j] * 2.0
        for k in range(m):
            A[i, k] = t[m - 1 - k]


def _inputs(rng: np.random.Generator, f: Any) -> list[np.ndarray]:
    if f is doitgen:
        return [rng.random((3, 5, 7)), rng.random((7, 7)), np.full(7, np.nan)]
    return [rng.random((9, 13)), np.full(13, np.nan)]


def _run(f: Any, pipeline: str, rng: np.random.Generator, gpu_emulated: bool = False) -> None:
    args = _inputs(rng, f)
    expected = [a.copy() for a in args]
    f(*expected)
    module = Kernel(f).module(*args)
    PassPipeline.parse_spec(all_passes(), pipeline).apply(make_context(), module)
    verify_ir(module, pipeline)
    assert any(isinstance(op, memref.AllocOp) for op in module.walk())
    if gpu_emulated:
        emulate(module, reverse=True)
    got = [a.copy() for a in args]
    run_function(module, f.__name__, got)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12)


@pytest.mark.parametrize(
    ("f", "tiles"), [(doitgen, "loops=r,q tile-sizes=2,2"), (rows_reversed, "loops=i tile-sizes=4")]
)
def test_expanded_programs_compute_the_same_on_the_cpu(
    f: Any, tiles: str, rng: np.random.Generator
) -> None:
    """The scratch array's final contents included (the copy-out of the last iteration); the
    expanded band tiles like any parallel band (tile sizes that do not divide the trips)."""
    _run(f, "array-expand", rng)
    _run(f, f"array-expand,loop-tile{{{tiles}}}", rng)


@pytest.mark.parametrize(
    ("f", "emulated"),
    [(doitgen, "array-expand,gpu-map-loops"), (rows_reversed, "auto-schedule{device=sm_90}")],
)
def test_auto_schedule_maps_the_expanded_loops(
    f: Any, emulated: str, rng: np.random.Generator
) -> None:
    """On the emulated GPU: the band runs as blocks, no longer as a host loop of launches.
    (doitgen's contraction then gets the batched matmul recipe, whose register accumulators
    across barriers the emulator cannot carry: its expanded band is emulated as gpu-map-loops
    maps it; test_imperfect_contractions emulates the batched recipe.)"""
    _run(f, emulated, rng, gpu_emulated=True)
    module = Kernel(f).module(*_inputs(rng, f))
    PassPipeline.parse_spec(all_passes(), "auto-schedule{device=sm_90}").apply(
        make_context(), module
    )
    assert not any(isinstance(op, affine.ForOp) for fn in functions(module) for op in fn.walk())


DOITGEN = """
func.func @d(%A: memref<4x5x6xf64>, %sum: memref<6xf64>, %t: memref<1xf64>) {
  affine.for %r = 0 to 4 {
    affine.for %q = 0 to 5 {
      affine.for %p = 0 to 6 {
        %a = affine.load %A[%r, %q, %p] : memref<4x5x6xf64>
        affine.store %a, %sum[%p] : memref<6xf64>
      } {loopopt.name = "p"}
      affine.for %p2 = 1 to 6 {
        %v = affine.load %sum[%p2] : memref<6xf64>
        %w = affine.load %t[0] : memref<1xf64>
        %s = arith.addf %v, %w : f64
        affine.store %s, %t[0] : memref<1xf64>
      } {loopopt.name = "p2"}
    } {loopopt.name = "q"}
  } {loopopt.name = "r"}
  func.return
}
"""


def test_expandable_says_what_it_found() -> None:
    (fn,) = functions(parse_module(DOITGEN))
    r, q, p = (find_loop(fn, name, "test") for name in "rqp")
    sum_, t = fn.args[1], fn.args[2]
    assert expandable(sum_, [r, q]) == Expansion(trips=(4, 5), written=((0, 6),))
    assert expandable(sum_, [r]) == Expansion(trips=(4,), written=((0, 6),))
    assert expandable(sum_, [r, q, p]) == "'sum' is accessed outside loop 'p'"
    assert expandable(t, [r, q]) == (
        "'t[0]' may read a value written in another iteration or before loop 'r'"
    )
    assert expandable(fn.args[0], [r, q]) == "'A' is not written there"
    assert expandable(sum_, [q]) == "loop 'q' is inside another loop"


def test_automatic_expansion_only_where_it_frees_a_loop() -> None:
    """`t` is a running sum (a true dependence carried by r and q): expanding `sum` would leave
    both loops sequential, so nothing changes; likewise when every iteration reads A[0, 0, 0].
    Summing into A[r, q, 0] instead, `sum` is expanded over (r, q)."""

    def allocs(text: str) -> list[str]:
        module = parse_module(text)
        PassPipeline.parse_spec(all_passes(), "array-expand").apply(make_context(), module)
        verify_ir(module, "expanded")
        return [str(op.memref.type) for op in module.walk() if isinstance(op, memref.AllocOp)]

    assert allocs(DOITGEN) == []
    alone = DOITGEN.replace("%t[0] : memref<1xf64>", "%A[%r, %q, 0] : memref<4x5x6xf64>")
    assert allocs(alone) == ["memref<4x5x6xf64>"]  # A[r, q, 0] += …: nothing carried through A
    sequential = DOITGEN.replace(
        "%w = affine.load %t[0] : memref<1xf64>", "%w = affine.load %A[0, 0, 0] : memref<4x5x6xf64>"
    ).replace(
        "affine.store %s, %t[0] : memref<1xf64>",
        "affine.store %s, %A[%r, %q, 0] : memref<4x5x6xf64>",
    )
    assert allocs(sequential) == []  # A[0, 0, 0] is read by every iteration after the first


@pytest.mark.gpu
def test_expanded_doitgen_on_the_gpu_reuses_its_buffer(rng: np.random.Generator) -> None:
    """The host allocates the expanded array on the device once; a second call gets it back."""
    import loopopt

    kernel = loopopt.kernel(doitgen)
    for _ in range(2):
        A, C4, total = (rng.random((21, 13, 37)), rng.random((37, 37)), np.zeros(37))
        expected = [A.copy(), C4.copy(), total.copy()]
        doitgen(*expected)
        kernel(A, C4, total, target="gpu")
        np.testing.assert_allclose(A, expected[0], rtol=1e-12)
        np.testing.assert_allclose(total, expected[2], rtol=1e-12)
