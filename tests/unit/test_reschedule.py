"""loop-reschedule: statement extraction (analysis/statements.py), isl AST → affine IR
(loops/isl_ast.py), and PolyBench nests written in place computing the same on the CPU after
rescheduling (with and without `force`), at the parallel depths isl's schedule gives."""

from __future__ import annotations

import math
from typing import Any

import islpy as isl
import numpy as np
import polybench_py as pb
import pytest
from gpu_emulator import emulate
from kernels import LU
from polybench_py import seidel_2d
from xdsl.dialects import affine
from xdsl.passes import PassPipeline

from loopopt.analysis.index_split import split_statements, surfaces
from loopopt.analysis.isl_schedule import CTX, dependences
from loopopt.analysis.nest import loop_name, outermost_loops
from loopopt.analysis.statements import nest_statements
from loopopt.context import make_context, parse_module, verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.frontend.kernel import Kernel
from loopopt.loops.isl_ast import generate
from loopopt.loops.reschedule import reschedule
from loopopt.runtime.cpu import run_function
from loopopt.universe import all_passes

# PolyBench kernels written in place (no scalar temporaries: each statement reads and writes
# memory only, as loop-reschedule needs).


def lu(A):  # noqa: ANN001, ANN201, N803
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[k, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            for k in range(i):
                A[i, j] -= A[i, k] * A[k, j]


def cholesky(A):  # noqa: ANN001, ANN201, N803
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[j, k]
            A[i, j] /= A[j, j]
        for k in range(i):
            A[i, i] -= A[i, k] * A[i, k]
        A[i, i] = math.sqrt(A[i, i])


def trisolv(L, x, b):  # noqa: ANN001, ANN201, N803
    n = x.shape[0]
    for i in range(n):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]


def ludcmp(A, b, x, y):  # noqa: ANN001, ANN201, N803
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[k, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            for k in range(i):
                A[i, j] -= A[i, k] * A[k, j]
    for i in range(n):
        y[i] = b[i]
        for j in range(i):
            y[i] -= A[i, j] * y[j]
    for i in range(n - 1, -1, -1):
        x[i] = y[i]
        for j in range(i + 1, n):
            x[i] -= A[i, j] * x[j]
        x[i] = x[i] / A[i, i]


def floyd_warshall(path):  # noqa: ANN001, ANN201
    n = path.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                path[i, j] = min(path[i, j], path[i, k] + path[k, j])


def jacobi_2d(tsteps, A, B):  # noqa: ANN001, ANN201, N803
    n = A.shape[0]
    for t in range(tsteps):  # noqa: B007 (the loop is named t)
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, 1 + j] + A[1 + i, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, 1 + j] + B[1 + i, j] + B[i - 1, j])


def nussinov(table):  # noqa: ANN001, ANN201
    n = table.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < n:
                table[i, j] = max(table[i, j], table[i + 1, j])
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])


N = 13


def _inputs(f: Any, rng: np.random.Generator) -> list[Any]:
    dominant = rng.random((N, N)) + N * np.eye(N)
    return {
        lu: lambda: [dominant],
        cholesky: lambda: [dominant @ dominant.T],
        trisolv: lambda: [dominant, np.zeros(N), rng.random(N)],
        ludcmp: lambda: [dominant, rng.random(N), np.zeros(N), np.zeros(N)],
        seidel_2d: lambda: [5, rng.random((N, N))],
        floyd_warshall: lambda: [rng.random((N, N))],
        jacobi_2d: lambda: [4, rng.random((11, 11)), rng.random((11, 11))],
        nussinov: lambda: [rng.random((N, N))],
    }[f]()


# Each kernel's outermost parallel loop depth per statement after loop-reschedule, nest by
# nest (None: no parallel loop; as written, none of these statements but lu's last and
# jacobi-2d's is under a parallel loop). jacobi-2d is left: it is parallel at depth 1 already.
DEPTHS: dict[Any, list[list[int | None]] | None] = {
    lu: [[1, 1, 1]],
    cholesky: [[1, 1, 1, None]],
    trisolv: [[0, 1, None]],
    ludcmp: [[1, 1, 1], [0, 1], [0, None, None]],
    seidel_2d: [[1]],
    floyd_warshall: [[2]],
    jacobi_2d: None,
    nussinov: [[1, 1, 1]],
}


def _run(f: Any, pipeline: str, rng: np.random.Generator) -> None:
    args = _inputs(f, rng)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    f(*expected)
    module = Kernel(f).module(*args)
    PassPipeline.parse_spec(all_passes(), pipeline).apply(make_context(), module)
    verify_ir(module, pipeline)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_function(module, f.__name__, got)
    for g, e in zip(got, expected, strict=True):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=1e-10)


@pytest.mark.parametrize("f", list(DEPTHS), ids=[f.__name__ for f in DEPTHS])
def test_rescheduled_kernels_compute_the_same_on_the_cpu(f: Any, rng: np.random.Generator) -> None:
    _run(f, "loop-reschedule", rng)
    _run(f, "loop-reschedule{force=true}", rng)
    _run(f, "loop-reschedule{split}", rng)
    _run(f, "loop-reschedule{wavefront}", rng)


@pytest.mark.parametrize("f", list(DEPTHS), ids=[f.__name__ for f in DEPTHS])
def test_parallel_depths_after_rescheduling(f: Any, rng: np.random.Generator) -> None:
    module = Kernel(f).module(*_inputs(f, rng))
    outcomes = [reschedule(nest) for nest in outermost_loops(module)]
    expected = DEPTHS[f]
    if expected is None:
        assert not any(o.changed for o in outcomes)
        assert "no statement parallel at a shallower depth" in outcomes[0].reason
        return
    assert all(o.changed for o in outcomes)
    for outcome, depths in zip(outcomes, expected, strict=True):
        assert [outcome.new[name] for name in outcome.old] == depths


def _nest(text: str) -> affine.ForOp:
    module = parse_module(text, "test.mlir", make_context())
    return outermost_loops(module)[0]


def test_statements_of_a_nest() -> None:
    stmts = nest_statements(_nest(LU))
    s0, s1, s2 = stmts.statements
    assert [loop_name(loop) for loop in s0.loops] == ["i", "j", "k"]
    assert [loop_name(loop) for loop in s1.loops] == ["i", "j"]
    assert (len(s0.ops), len(s1.ops)) == (6, 4)
    assert (s0.positions, s1.positions, s2.positions) == ((0, 0, 0, 0), (0, 0, 1), (0, 1, 0, 0))
    assert len(s0.accesses) == 4 and sum(a.is_write for a in s1.accesses) == 1
    assert list(stmts.params) == ["p0"] and stmts.params["p0"].name_hint == "n"
    ctx = isl.Context()
    schedule = isl.Map(s1.schedule_text(list(stmts.params), stmts.width), context=ctx)
    assert stmts.width == 3
    assert schedule.is_equal(isl.Map("[p0] -> { S1[a, b] -> [0, a, 0, b, 1, 0, 0] }", context=ctx))
    domain = isl.Set(s1.domain_text(list(stmts.params)), context=ctx)
    assert domain.is_equal(isl.Set("[p0] -> { S1[a, b] : 0 <= b < a < p0 }", context=ctx))


def test_dependences_between_statement_instances() -> None:
    deps = dependences(nest_statements(_nest(LU)))
    # S1 divides A[i, j] that S0 (k < j) updates before it, in the same (i, j) only
    flow = isl.UnionMap("[p0] -> { S0[i, j, k] -> S1[i, j] : 0 <= k < j < i < p0 }", context=CTX)
    assert flow.is_subset(deps)
    assert deps.intersect(
        isl.UnionMap("{ S0[i, j, k] -> S1[i2, j2] : i2 != i }", context=CTX)
    ).is_empty()


def _with_module(text: str) -> tuple[Any, Any]:
    module = parse_module(text, "test.mlir", make_context())
    nest = outermost_loops(module)[0]
    return module, nest


COPY = """
func.func @copy(%A: memref<16xf32>, %B: memref<16xf32>, %C: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    %a = affine.load %A[%i] : memref<16xf32>
    affine.store %a, %B[%i] : memref<16xf32>
    affine.for %j = 0 to 1 {
      %c = affine.load %A[%i] : memref<16xf32>
      affine.store %c, %C[%i] : memref<16xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


def _generated_text(schedule: str) -> str:
    module, nest = _with_module(COPY)
    stmts = nest_statements(nest)
    build = isl.AstBuild.from_context(isl.Set("{ : }", context=CTX))
    generated = generate(stmts, build.node_from_schedule_map(isl.UnionMap(schedule, context=CTX)))
    block = nest.parent_block()
    for op in generated.ops:
        block.insert_op_before(op, nest)
    generated.fold()
    nest.detach()
    nest.erase()
    generated.name_loops()
    module.verify()
    return str(module)


def test_ast_strides_and_reversal_become_affine_loops() -> None:
    """Odd i backwards: a loop of step 2 over c0 = -i (not i itself: named c0), i read as
    -c0 in the access maps."""
    text = _generated_text(
        "{ S0[i] -> [-i, 0, 0] : 0 <= i < 16 and i mod 2 = 1; S1[i, j] -> [i, 1, j] : 0 > 1 }"
    )
    assert "affine.for %c0 = -15 to 1 step 2 {" in text
    assert "affine.load %A[%c0 * -1]" in text
    assert "affine.store %a, %B[%c0 * -1]" in text


def test_ast_conditions_become_affine_ifs() -> None:
    """S1 on every third i only (a mod condition), S0 on all; i and j keep their names."""
    text = _generated_text(
        "{ S0[i] -> [i, 0, 0] : 0 <= i < 16; S1[i, j] -> [i, 1, j] : 0 <= i < 16 and j = 0 "
        "and i mod 3 = 0 }"
    )
    assert "affine.for %i = 0 to 16 {" in text
    assert "affine.if affine_set<(d0) : ((d0 mod 3) == 0)>(%i) {" in text
    assert "affine.store %c, %C[%i]" in text


def test_ast_expressions_that_are_not_affine_are_refused() -> None:
    _, nest = _with_module(COPY)
    stmts = nest_statements(nest)
    c0 = isl.AstExpr.from_id(isl.Id("c0", context=CTX))
    call = isl.AstExpr.from_id(isl.Id("S0", context=CTX)).call(
        isl.AstExprList.from_ast_expr(c0.mul(c0))
    )
    with pytest.raises(LoopoptError, match="uses an unknown name 'c0'|multiplies two"):
        generate(stmts, isl.AstNode.user_from_expr(call))


def test_loops_named_after_the_original_iterator_or_fresh() -> None:
    module = parse_module(LU, "test.mlir", make_context())
    reschedule(outermost_loops(module)[0])
    names = [loop_name(op) for op in module.walk() if isinstance(op, affine.ForOp)]
    assert names == ["c0", "i", "i", "j", "i", "j"]  # the division, then each update nest


# Found by the differential fuzzer (tests/fuzz/differential.py, kinds demote and reschedule).

NO_SCHEDULE = """
func.func @nest(%A: memref<7x7x7xf32>, %B: memref<7xf32>) {
  affine.for %l0 = 0 to 4 step 3 {
    affine.for %l1 = 0 to 2 {
      affine.for %l2 = 1 to 5 {
        %v1 = arith.constant 1.5 : f32
        %v2 = affine.load %A[%l0 + 1, %l1 + 2, %l1] : memref<7x7x7xf32>
        %v3 = arith.addf %v2, %v1 : f32
        affine.store %v3, %B[%l0 + 1] : memref<7xf32>
        %v4 = arith.constant 1.5 : f32
        %v5 = affine.load %B[%l0 + 2] : memref<7xf32>
        %v6 = arith.addf %v5, %v4 : f32
        affine.store %v6, %B[%l2] : memref<7xf32>
      } {loopopt.name = "l2"}
    } {loopopt.name = "l1"}
  } {loopopt.name = "l0"}
  return
}
"""
"""isl's scheduler cannot carry these dependences with its bounded coefficients."""

TOP_LEVEL_APPLIES = """
func.func @nest(%A: memref<5xf32>, %B: memref<5xf32>) {
  affine.for %l0 = 0 to 1 step 2 {
    affine.if affine_set<(d0, d1) : (d0 - d1 + 1 >= 0)>(%l0, %l0) {
      %v1 = arith.constant 1.5 : f32
      %v2 = affine.load %A[%l0 + 2] : memref<5xf32>
      %v3 = arith.addf %v2, %v1 : f32
      affine.store %v3, %A[%l0] : memref<5xf32>
    }
    affine.for %l1 = max affine_map<(d0) -> (0, d0 - 2)>(%l0) to affine_map<(d0) -> (d0 + 3)>(%l0) {
      affine.for %l2 = 0 to affine_map<(d0) -> (d0 + 1)>(%l1) {
        affine.if affine_set<(d0, d1) : (d0 - d1 - 1 >= 0)>(%l2, %l0) {
          %v4 = arith.constant -0.75 : f32
          %v5 = affine.load %A[%l1 + 1] : memref<5xf32>
          %v6 = arith.mulf %v5, %v4 : f32
          affine.store %v6, %B[%l1 + 2] : memref<5xf32>
        }
        %v7 = arith.constant 0.5 : f32
        %v8 = affine.load %B[%l1 + 2] : memref<5xf32>
        %v9 = arith.mulf %v8, %v7 : f32
        affine.store %v9, %A[%l2] : memref<5xf32>
      } {loopopt.name = "l2"}
    } {loopopt.name = "l1"}
    affine.if affine_set<(d0, d1) : (d0 - 3 == 0)>(%l0, %l0) {
      %v10 = arith.constant 1.5 : f32
      %v11 = affine.load %B[%l0 + 2] : memref<5xf32>
      %v12 = arith.mulf %v11, %v10 : f32
      affine.store %v12, %B[%l0 + 1] : memref<5xf32>
    }
  } {loopopt.name = "l0"}
  return
}
"""
"""A nest left as it is whose generated code had top-level IV applies (folded away) and
values used by later generated ops."""


def test_a_nest_isl_cannot_schedule_is_refused_with_isls_reason() -> None:
    module = parse_module(NO_SCHEDULE, "test.mlir", make_context())
    with pytest.raises(LoopoptError, match=r"isl's scheduler found no schedule \(unable to carry"):
        reschedule(outermost_loops(module)[0], force=True)


def test_a_nest_left_as_it_is_drops_every_generated_op() -> None:
    module = parse_module(TOP_LEVEL_APPLIES, "test.mlir", make_context())
    before = str(module)
    outcome = reschedule(outermost_loops(module)[0])
    assert not outcome.changed and str(module) == before
    verify_ir(module, "after loop-reschedule")


# index-set splitting (analysis/index_split.py, loop-reschedule{split})


def test_floyd_warshall_surfaces_are_j_minus_k_and_i_minus_k() -> None:
    module = Kernel(floyd_warshall).module(np.zeros((6, 6)))
    [stmt] = nest_statements(outermost_loops(module)[0]).statements
    assert [form.pretty(["k", "i", "j"]) for form in surfaces(stmt)] == ["k - j", "k - i"]


def test_splitting_cuts_each_statement_in_three_per_surface() -> None:
    module = Kernel(floyd_warshall).module(np.zeros((6, 6)))
    nest = nest_statements(outermost_loops(module)[0])
    cut = split_statements(nest)
    assert cut is not None
    pieces, origin = cut
    assert len(pieces.statements) == 9 and set(origin.values()) == {"S0"}
    assert all(p.ops == nest.statements[0].ops for p in pieces.statements)


def test_uniform_dependences_have_no_surface() -> None:
    module = Kernel(seidel_2d).module(2, np.zeros((6, 6)))
    nest = nest_statements(outermost_loops(module)[0])
    assert split_statements(nest) is None
    [outcome] = [reschedule(n, split=True) for n in outermost_loops(module)]
    assert not outcome.changed and "no statement has a surface" in outcome.reason


def test_split_floyd_warshall_is_parallel_under_one_loop(rng: np.random.Generator) -> None:
    module = Kernel(floyd_warshall).module(*_inputs(floyd_warshall, rng))
    [outcome] = [reschedule(n, split=True) for n in outermost_loops(module)]
    assert outcome.changed and outcome.old == {"S0": None} and outcome.new == {"S0": 1}
    _run(floyd_warshall, "loop-reschedule{split}", rng)


def test_auto_schedule_splits_floyd_warshall_on_the_gpu(rng: np.random.Generator) -> None:
    path = rng.random((N, N))
    expected = path.copy()
    floyd_warshall(expected)
    module = Kernel(floyd_warshall).module(path)
    PassPipeline.parse_spec(all_passes(), "auto-schedule{device=sm_90}").apply(
        make_context(), module
    )
    kernels = [op for op in module.walk() if op.name == "gpu.func"]
    assert len(kernels) == 9  # a launch per piece, under the host loop k
    emulate(module, reverse=True)
    got = [path.copy()]
    run_function(module, "floyd_warshall", got)
    np.testing.assert_allclose(got[0], expected, rtol=1e-12)


def test_else_regions_of_one_inequality_are_statements_of_their_own(
    rng: np.random.Generator,
) -> None:
    # polybench's nussinov: `if i < j - 1: … else: …` inside the j loop
    f, inputs = pb.CASES["nussinov"]
    module = Kernel(f).module(*inputs(rng))
    nest = nest_statements(outermost_loops(module)[0])
    texts = [s.domain_text(list(nest.params)) for s in nest.statements]
    # i runs downwards: s0 = 11 - i; then-region: j - i - 2 >= 0, else-region: its negation
    assert any("1*(s0) + 1*(s1) + -13 >= 0" in t for t in texts)
    assert any("-1*(s0) + -1*(s1) + 12 >= 0" in t for t in texts)
    args = inputs(rng)
    expected = [a.copy() for a in args]
    f(*expected)
    module = Kernel(f).module(*args)
    PassPipeline.parse_spec(all_passes(), "auto-schedule{device=sm_90}").apply(
        make_context(), module
    )
    assert not any(
        "one thread" in str(op.attributes.get("loopopt.mapping"))
        for op in module.walk()
        if op.name == "gpu.func"
    )
    emulate(module, reverse=True)
    got = [a.copy() for a in args]
    run_function(module, f.__name__, got)
    np.testing.assert_array_equal(got[1], expected[1])
