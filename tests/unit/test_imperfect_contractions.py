"""auto-schedule on contractions inside imperfect nests (issue 15): trmm (a snapshot makes i
parallel, the epilogue is split off, the k nest is a triangular AᵀB), symm (its k loop is
distributed, the scatter C[k, j] += … becomes its own nest, interchanged into a triangular
AᵀB) and doitgen (sum expanded, its fill split off: a batched matmul, a block per r). CPU
equivalence of the loop-level part at sizes no tile divides, the emulated mapping of the
scatter's and the batched contraction's padded matmul recipe, and the whole functions on the
GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import polybench_py as pb
import pytest
from equivalence import transform
from gpu_emulator import emulate
from xdsl.dialects import affine
from xdsl.passes import PassPipeline

from loopopt.context import make_context, parse_module, verify_ir
from loopopt.frontend.kernel import Kernel
from loopopt.loops.func_outline import fresh_function_name, outline_nest
from loopopt.loops.nest import functions, loop_name, perfect_band
from loopopt.runtime.cpu import run_function
from loopopt.schedule import recipes
from loopopt.schedule.nests import expose_nests
from loopopt.schedule.roles import matmul_roles
from loopopt.schedule.summary import summarize, summarize_module
from loopopt.universe import all_passes

M, N = 45, 37
"""Sizes no tile of the padded matmul recipe divides."""

INPUTS = {
    "symm": lambda g: [1.5, 1.2, pb._r(g, M, N), pb._r(g, M, M), pb._r(g, M, N)],
    "trmm": lambda g: [1.5, pb._r(g, M, M), pb._r(g, M, N)],
    "doitgen": lambda g: [pb._r(g, 7, 5, N), pb._r(g, N, N), pb._r(g, N)],
}


ALSO_ON_THE_CPU = {
    "covariance": lambda g: [float(N), pb._r(g, N, M), np.zeros((M, M)), np.zeros(M)],
    "correlation": lambda g: [float(N), pb._r(g, N, M), np.zeros((M, M)), np.zeros(M), np.zeros(M)],
}
"""Nests whose upper triangle (j from i) the padded matmul recipe now takes as well."""


def _copies(args: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _scheduled(name: str, args: list[Any], pipeline: str) -> Any:
    module = Kernel(pb.CASES[name][0]).module(*args)
    PassPipeline.parse_spec(all_passes(), pipeline).apply(make_context(), module)
    verify_ir(module, "scheduled")
    return module


def test_symm_is_split_into_its_epilogue_nest_and_a_matmul_scatter(
    rng: np.random.Generator,
) -> None:
    """expose_nests distributes symm's k loop first (the band's body is one group: the temp2
    reduction feeds C[i, j]'s statement), then j and i: the temp2 nest, then the scatter,
    whose summary has matmul roles with i (the outer loop) as the reduction."""
    module = Kernel(pb.symm).module(*INPUTS["symm"](rng))
    (fn,) = functions(module)
    nest = next(op for op in fn.body.block.ops if isinstance(op, affine.ForOp))
    parts, changed = expose_nests(nest, "test")
    assert changed and parts is not None and len(parts) == 2
    assert [len(perfect_band(p)) for p in parts] == [2, 3]
    callee, _ = outline_nest(parts[1], module, fresh_function_name(module, "scatter"))
    roles = matmul_roles(summarize(callee))
    assert roles is not None and (roles.c, roles.k) == ("C", "i")


@pytest.mark.parametrize("name", sorted([*INPUTS, *ALSO_ON_THE_CPU]))
def test_the_loop_level_schedules_compute_the_same_on_the_cpu(
    name: str, rng: np.random.Generator
) -> None:
    """What auto-schedule does on the GPU up to the mapping: the expansion and the snapshot,
    then the parts and their padded matmul tiles (gpu=false), on the CPU."""
    args = {**INPUTS, **ALSO_ON_THE_CPU}[name](rng)
    expected = _copies(args)
    pb.CASES[name][0](*expected)
    pipeline = "array-expand,array-snapshot,auto-schedule{device=sm_90 gpu=false}"
    module = _scheduled(name, args, pipeline)
    got = _copies(args)
    run_function(module, name, got)
    for g, e in zip(got, expected, strict=True):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-10)


SCATTER = f"""
func.func @scatter(%alpha: f32, %C: memref<{M}x{N}xf32>, %A: memref<{M}x{M}xf32>,
                   %B: memref<{M}x{N}xf32>) {{
  affine.for %i = 0 to {M} {{
    affine.for %j = 0 to {N} {{
      affine.for %k = 0 to affine_map<(d0) -> (d0)>(%i) {{
        %c = affine.load %C[%k, %j] : memref<{M}x{N}xf32>
        %b = affine.load %B[%i, %j] : memref<{M}x{N}xf32>
        %s = arith.mulf %alpha, %b : f32
        %a = affine.load %A[%i, %k] : memref<{M}x{M}xf32>
        %p = arith.mulf %s, %a : f32
        %t = arith.addf %c, %p : f32
        affine.store %t, %C[%k, %j] : memref<{M}x{N}xf32>
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  func.return
}}
"""
"""symm's scatter once distributed: C[k, j] += alpha B[i, j] A[i, k] over k < i."""


def test_emulated_padded_scatter() -> None:
    """The recipe interchanges i innermost (i = k + 1 to m: its lower bound varies) and pads
    every tile loop; mapped onto thread blocks (scalar-replace left out, as in test_pad)."""
    summary = summarize_module(parse_module(SCATTER, "scatter"))
    schedule = recipes.matmul(summary, 32, 32, 8, 4, 4, pipelined=False, padded=True)
    assert schedule.pipeline.startswith("loop-interchange{loops=i,j,k permutation=2,1,0}")
    pipeline = schedule.pipeline.replace(",scalar-replace{loop=i_t}", "")
    module = parse_module(transform(SCATTER, pipeline))
    rng = np.random.default_rng(6)
    c, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((M, N), (M, M), (M, N)))
    want = c.astype(np.float64) + 1.5 * np.tril(a.astype(np.float64), -1).T @ b.astype(np.float64)
    emulate(module, reverse=True)
    run_function(module, "scatter", [np.float32(1.5), c, a, b])
    assert np.abs(c - want).max() < 1e-4


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_the_contraction_gets_the_matmul_recipe_on_the_gpu(
    name: str, rng: np.random.Generator
) -> None:
    """One kernel with a register tile (its threads on the tile loops `*_t2`) and shared tiles,
    where the default mapping ran one block with a sequential loop (trmm's k from i + 1 too,
    its diagonal's guards versioned); symm's `temp2` product, split off its update of C and kept
    in memory (`temp2_mem_x[i, j]`), a second such kernel."""
    args = [a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in INPUTS[name](rng)]
    module = _scheduled(name, args, "auto-schedule{device=sm_90}")
    mappings = [
        str(op.attributes.get("loopopt.mapping")) for op in module.walk() if op.name == "gpu.func"
    ]
    tiles = {"symm": 2}.get(name, 1)
    assert sum('_t2"' in m for m in mappings) == tiles, mappings
    assert not any("one block" in m for m in mappings), mappings


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted([*INPUTS, *ALSO_ON_THE_CPU]))
def test_whole_functions_on_the_gpu(name: str, rng: np.random.Generator) -> None:
    """The default (auto) schedule on the GPU: the padded matmul recipe with its cp.async ring
    on the triangle (on the emulator: test_hoist_invariants' symm, covariance in
    test_auto_schedule_functions)."""
    import loopopt

    f = pb.CASES[name][0]
    made = {**INPUTS, **ALSO_ON_THE_CPU}[name](rng)
    args = [a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in made]
    expected = [a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args]
    f(*expected)
    loopopt.kernel(f)(*args, target="gpu")
    for g, e in zip(args, expected, strict=True):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-3)


BATCHED = """
func.func @bmm(%A: memref<7x5x19xf32>, %C4: memref<19x19xf32>, %X: memref<7x5x19xf32>) {
  affine.for %r = 0 to 7 {
    affine.for %q = 0 to 5 {
      affine.for %p = 0 to 19 {
        affine.for %s = 0 to 19 {
          %x = affine.load %X[%r, %q, %p] : memref<7x5x19xf32>
          %a = affine.load %A[%r, %q, %s] : memref<7x5x19xf32>
          %c = affine.load %C4[%s, %p] : memref<19x19xf32>
          %m = arith.mulf %a, %c : f32
          %n = arith.addf %x, %m : f32
          affine.store %n, %X[%r, %q, %p] : memref<7x5x19xf32>
        } {loopopt.name = "s"}
      } {loopopt.name = "p"}
    } {loopopt.name = "q"}
  } {loopopt.name = "r"}
  func.return
}
"""
"""doitgen's contraction once sum is expanded (X) and its fill split off."""


def test_batched_contraction_roles() -> None:
    """r indexes X ahead of q and p, and A too: a batch loop; a read indexed by a batch loop
    and a single other loop is no operand."""
    roles = matmul_roles(summarize_module(parse_module(BATCHED, "bmm")))
    assert roles is not None
    assert (roles.batch, roles.i, roles.j, roles.k, roles.c) == (("r",), "q", "p", "s", "X")
    assert [o.array for o in roles.operands] == ["A", "C4"]
    odd = BATCHED.replace("%C4[%s, %p] : memref<19x19xf32>", "%X[%r, %s, %p] : memref<7x5x19xf32>")
    assert matmul_roles(summarize_module(parse_module(odd, "bmm"))) is None
    inner = BATCHED.replace("%A[%r, %q, %s]", "%A[%q, %r, %s]").replace(
        "%X[%r, %q, %p] : memref<7x5x19xf32>", "%X[%q, %r, %p] : memref<7x5x19xf32>"
    )
    assert matmul_roles(summarize_module(parse_module(inner, "bmm"))) is None  # r not outermost


def test_emulated_padded_batched_contraction() -> None:
    """A block per batch iteration (grid z), the matmul's tiles on x and y."""
    summary = summarize_module(parse_module(BATCHED, "bmm"))
    schedule = recipes.matmul(summary, 32, 32, 8, 4, 4, pipelined=False, padded=True)
    assert schedule.pipeline.startswith("loop-tile{tile-sizes=1,32,32,8}")
    module = parse_module(
        transform(BATCHED, schedule.pipeline.replace(",scalar-replace{loop=s_t}", ""))
    )
    mapping = [
        str(op.attributes["loopopt.mapping"]) for op in module.walk() if op.name == "gpu.func"
    ]
    assert mapping == [
        '{block_x = "p_t", thread_x = "p_t2", block_y = "q_t", thread_y = "q_t2", '
        'block_z = "r_t", thread_z = "r"}'
    ]
    rng = np.random.default_rng(7)
    a, c, x = (
        rng.standard_normal(s).astype(np.float32) for s in ((7, 5, 19), (19, 19), (7, 5, 19))
    )
    want = x.astype(np.float64) + np.einsum("rqs,sp->rqp", a.astype(np.float64), c)
    emulate(module, reverse=True)
    run_function(module, "bmm", [a, c, x])
    assert np.abs(x - want).max() < 1e-4


UPPER = f"""
func.func @upper(%D: memref<{N}x{M}xf32>, %C: memref<{M}x{M}xf32>) {{
  affine.for %i = 0 to {M} {{
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to {M} {{
      affine.for %k = 0 to {N} {{
        %c = affine.load %C[%i, %j] : memref<{M}x{M}xf32>
        %a = affine.load %D[%k, %i] : memref<{N}x{M}xf32>
        %b = affine.load %D[%k, %j] : memref<{N}x{M}xf32>
        %m = arith.mulf %a, %b : f32
        %n = arith.addf %c, %m : f32
        affine.store %n, %C[%i, %j] : memref<{M}x{M}xf32>
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  func.return
}}
"""
"""covariance's upper triangle (j from i): the thread tile loop j_t2 starts at max(j_t, i)."""


def test_emulated_padded_upper_triangle() -> None:
    """j's tile loops run from their tile's start on their step's grid (the points keep
    j >= i as a guard): C's elements below the diagonal stay as they were. C's accumulators
    stay in registers across k_t although their guard holds j >= i (scalar-replace)."""
    summary = summarize_module(parse_module(UPPER, "upper"))
    schedule = recipes.matmul(summary, 32, 32, 8, 4, 4, pipelined=False, padded=True)
    assert schedule.pipeline.endswith("scalar-replace{loop=k_t},version-guards{loop=k_t}")
    module = parse_module(transform(UPPER, schedule.pipeline))
    kernel = next(op for op in module.walk() if op.name == "gpu.func")
    k_t = next(
        op for op in kernel.walk() if isinstance(op, affine.ForOp) and loop_name(op) == "k_t"
    )
    stores = [op for op in k_t.walk() if isinstance(op, affine.StoreOp)]
    assert not any(str(op.memref.type).startswith("memref<45x45") for op in stores)
    rng = np.random.default_rng(8)
    d, c = (rng.standard_normal(s).astype(np.float32) for s in ((N, M), (M, M)))
    full = c.astype(np.float64) + d.T.astype(np.float64) @ d.astype(np.float64)
    want = np.where(np.triu(np.ones((M, M), bool)), full, c)
    emulate(module, reverse=True)
    run_function(module, "upper", [d, c])
    assert np.abs(c - want).max() < 1e-4


def triangular_temp(alpha, beta, C, A, B):  # type: ignore[no-untyped-def]
    """symm's `temp2` nest on its own: the scalar accumulator's result is combined with C[i, j],
    so it has no element of C to live in."""
    m, n = C.shape
    for i in range(m):
        for j in range(n):
            t = 0.0
            for k in range(i):
                t += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * t


def test_scratch_accumulator_expanded_into_a_contraction() -> None:
    """auto-schedule keeps `t` in a scratch buffer expanded over (i, j) (`t_mem_x`): a fill, a
    triangular contraction that gets the register-tiled matmul recipe, and the epilogue; the
    emulated kernels compute what the loops do."""
    rng = np.random.default_rng(9)
    args = [
        1.5,
        1.2,
        *(rng.standard_normal(s).astype(np.float32) for s in ((M, N), (M, M), (M, N))),
    ]
    module = Kernel(triangular_temp).module(*args)
    PassPipeline.parse_spec(all_passes(), "auto-schedule{device=sm_90}").apply(
        make_context(), module
    )
    verify_ir(module, "scheduled")
    buffers = [op.memref.name_hint for op in module.walk() if op.name == "memref.alloc"]
    assert buffers == ["t_mem_x"], buffers
    assert not any(op.name == "memref.alloca" for op in module.walk())
    mappings = [
        str(op.attributes.get("loopopt.mapping")) for op in module.walk() if op.name == "gpu.func"
    ]
    assert sum('_t2"' in m for m in mappings) == 1, mappings
    expected = [a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args]
    triangular_temp(*expected)
    emulate(module, reverse=True)
    run_function(module, "triangular_temp", args)
    np.testing.assert_allclose(args[2], expected[2], rtol=1e-4, atol=1e-4)
