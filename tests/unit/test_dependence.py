"""Dependences and parallel loops, checked against hand-computed directions and distances."""

from __future__ import annotations

import islpy as isl
import numpy as np
from hypothesis import given, settings
from kernels import jacobi_1d, matmul, syrk, wavefront
from nestgen import Nest, nests
from xdsl.dialects import affine
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from loopopt.analysis.dependence import Dependence, carried_by, dependences
from loopopt.analysis.parallel import is_parallel, parallel_loops
from loopopt.context import parse_module
from loopopt.loops.nest import find_loop, loop_name


def summary(deps: list[Dependence]) -> set[tuple[str, str, str, tuple[str, ...]]]:
    """(source, sink, kind, directions) of each dependence."""
    return {(d.source.render(), d.sink.render(), d.kind, d.directions) for d in deps}


def parallel_names(module: ModuleOp) -> list[str | None]:
    return [loop_name(loop) for loop in parallel_loops(module)]


def test_matmul(rng: np.random.Generator) -> None:
    module = parse_module(matmul(4, 5, 6, rng)[0])
    deps = dependences(module)
    assert summary(deps) == {
        ("C[i, j]", "C[i, j]", "RAW", ("=", "=", "<")),
        ("C[i, j]", "C[i, j]", "WAR", ("=", "=", "<")),
        ("C[i, j]", "C[i, j]", "WAW", ("=", "=", "<")),
        ("C[i, j]", "C[i, j]", "WAR", ("=", "=", "=")),  # load before store, same iteration
    }
    k = find_loop(module, "k", "test")
    assert {d.kind for d in carried_by(deps, k)} == {"RAW", "WAR", "WAW"}
    assert all(d.distances[:2] == (0, 0) and d.exact for d in deps)
    assert parallel_names(module) == ["i", "j"]


def test_wavefront(rng: np.random.Generator) -> None:
    module = parse_module(wavefront(6, 7, rng)[0])
    carried = [d for d in dependences(module) if d.carrier is not None]
    assert len(carried) == 1
    (dep,) = carried
    assert dep.describe() == "A[i, j] → A[i - 1, j + 1] (RAW) has direction (<, >)"
    assert dep.distances == (1, -1)
    assert dep.carrier is find_loop(module, "i", "test")
    assert parallel_names(module) == ["j"]


def test_jacobi_time_loop_carries(rng: np.random.Generator) -> None:
    module = parse_module(jacobi_1d(3, 10, rng)[0])
    deps = dependences(module)
    t, i, j = (find_loop(module, name, "test") for name in "tij")
    assert carried_by(deps, i) == carried_by(deps, j) == []
    assert ("A[j]", "A[i - 1]", "RAW", ("<",)) in summary(carried_by(deps, t))
    # Within one time step, the i sweep writes B before the j sweep reads it.
    assert ("B[i]", "B[j]", "RAW", ("=",)) in summary(deps)
    assert parallel_names(module) == ["i", "j"]
    assert not is_parallel(t) and is_parallel(i)


def test_syrk_triangular(rng: np.random.Generator) -> None:
    module = parse_module(syrk(5, 4, rng)[0])
    deps = dependences(module)
    assert {d.directions for d in deps if d.carrier is not None} == {("=", "=", "<")}
    assert parallel_names(module) == ["i", "j"]


def loop_body(body: str, args: str = "%A: memref<64xf32>", extra: str = "") -> ModuleOp:
    return parse_module(f"func.func @f({args}) {{\n{body}\n  return\n}}\n{extra}")


def test_steps_keep_even_and_odd_apart() -> None:
    module = loop_body("""
  affine.for %i = 0 to 32 step 2 {
    %v = affine.load %A[%i + 1] : memref<64xf32>
    affine.store %v, %A[%i] : memref<64xf32>
  } {loopopt.name = "odd"}
  affine.for %i = 0 to 32 step 2 {
    %v = affine.load %A[%i + 2] : memref<64xf32>
    affine.store %v, %A[%i] : memref<64xf32>
  } {loopopt.name = "even"}""")
    odd, even = find_loop(module, "odd", "test"), find_loop(module, "even", "test")
    assert dependences(odd) == []
    (dep,) = dependences(even)
    assert (dep.kind, dep.directions, dep.distances) == ("WAR", ("<",), (2,))
    assert parallel_names(module) == ["odd"]


def test_disjoint_halves_with_a_symbol() -> None:
    module = loop_body(
        """
  affine.for %i = 0 to %N {
    %t = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%i)[%N]
    %v = affine.load %A[%t] : memref<?xf32>
    affine.store %v, %A[%i] : memref<?xf32>
  } {loopopt.name = "i"}""",
        "%A: memref<?xf32>, %N: index",
    )
    assert dependences(module) == []
    assert parallel_names(module) == ["i"]


def test_affine_apply_indices() -> None:
    module = loop_body("""
  affine.for %i = 0 to 16 {
    %t = affine.apply affine_map<(d0) -> (d0 * 2 + 1)>(%i)
    %u = affine.apply affine_map<(d0) -> (d0 - 1)>(%t)
    %v = affine.load %A[%u] : memref<64xf32>
    affine.store %v, %A[%t] : memref<64xf32>
  } {loopopt.name = "parity"}
  affine.for %i = 0 to 16 {
    %t = affine.apply affine_map<(d0) -> (d0 + 3)>(%i)
    %v = affine.load %A[%i] : memref<64xf32>
    affine.store %v, %A[%t] : memref<64xf32>
  } {loopopt.name = "shift"}""")
    shift = find_loop(module, "shift", "test")
    assert dependences(find_loop(module, "parity", "test")) == []
    assert summary(dependences(shift)) == {("A[shift + 3]", "A[shift]", "RAW", ("<",))}
    assert dependences(shift)[0].distances == (3,)


def test_affine_if_condition_separates() -> None:
    module = loop_body("""
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<64xf32>
    affine.if affine_set<(d0) : (d0 - 5 >= 0)>(%i) {
      affine.store %v, %A[%i + 5] : memref<64xf32>
    }
  } {loopopt.name = "i"}""")
    assert dependences(module) == []


def test_non_affine_index_is_conservative() -> None:
    module = loop_body(
        """
  affine.for %i = 0 to 16 {
    %x = affine.load %Idx[%i] : memref<16xindex>
    %v = affine.load %A[%i] : memref<64xf32>
    memref.store %v, %A[%x] : memref<64xf32>
  } {loopopt.name = "scatter"}
  affine.for %i = 0 to 16 {
    %x = affine.load %Idx[%i] : memref<16xindex>
    %v = memref.load %A[%x] : memref<64xf32>
    affine.store %v, %B[%i] : memref<64xf32>
  } {loopopt.name = "gather"}""",
        "%A: memref<64xf32>, %B: memref<64xf32>, %Idx: memref<16xindex>",
    )
    scatter = find_loop(module, "scatter", "test")
    deps = carried_by(dependences(scatter), scatter)
    assert deps and all(not d.exact for d in deps)
    assert summary(deps) == {
        ("A[scatter]", "A[?]", "WAR", ("<",)),
        ("A[?]", "A[scatter]", "RAW", ("<",)),
        ("A[?]", "A[?]", "WAW", ("<",)),
    }
    assert parallel_names(module) == ["gather"]


def test_iter_args_reduction_is_not_parallel() -> None:
    module = loop_body(
        """
  %zero = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 64 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %A[%i] : memref<64xf32>
    %n = arith.addf %acc, %v : f32
    affine.yield %n : f32
  } {loopopt.name = "sum"}
  affine.store %r, %S[] : memref<f32>""",
        "%A: memref<64xf32>, %S: memref<f32>",
    )
    assert dependences(module) == []
    assert parallel_names(module) == []


def test_aliasing_rules() -> None:
    module = loop_body(
        """
  %V = memref.subview %A[0] [32] [1] : memref<64xf32> to memref<32xf32>
  affine.for %i = 0 to 32 {
    %v = affine.load %A[%i] : memref<64xf32>
    affine.store %v, %B[%i + 1] : memref<64xf32>
  } {loopopt.name = "distinct"}
  affine.for %i = 0 to 32 {
    %v = affine.load %A[%i] : memref<64xf32>
    affine.store %v, %V[%i] : memref<32xf32>
  } {loopopt.name = "view"}
  affine.for %i = 0 to 32 {
    func.call @g() : () -> ()
  } {loopopt.name = "call"}""",
        "%A: memref<64xf32>, %B: memref<64xf32>",
        "func.func private @g()",
    )
    assert dependences(find_loop(module, "distinct", "test")) == []
    view = find_loop(module, "view", "test")
    assert carried_by(dependences(view), view)  # A and a view of A may overlap
    assert parallel_names(module) == ["distinct"]


def test_buffer_allocated_in_a_loop_is_private_to_its_iterations() -> None:
    module = loop_body("""
  affine.for %i = 0 to 8 {
    %T = memref.alloca() : memref<4xf32>
    affine.for %j = 0 to 4 {
      %v = affine.load %A[%i * 4 + %j] : memref<64xf32>
      affine.store %v, %T[%j] : memref<4xf32>
    } {loopopt.name = "copy"}
    affine.for %j = 1 to 4 {
      %v = affine.load %T[%j - 1] : memref<4xf32>
      affine.store %v, %A[%i * 4 + %j] : memref<64xf32>
    } {loopopt.name = "use"}
  } {loopopt.name = "i"}""")
    deps = dependences(module)
    assert carried_by(deps, find_loop(module, "i", "test")) == []
    assert ("T[copy]", "T[use - 1]", "RAW", ("=",)) in summary(deps)
    assert parallel_names(module) == ["i", "copy", "use"]


def test_arith_index_computations_are_affine() -> None:
    module = loop_body("""
  %c2 = arith.constant 2 : index
  affine.for %i = 0 to 16 {
    %t = arith.muli %i, %c2 : index
    %u = arith.addi %t, %c2 : index
    %v = memref.load %A[%t] : memref<64xf32>
    memref.store %v, %A[%u] : memref<64xf32>
  } {loopopt.name = "i"}""")
    (dep,) = dependences(module)
    assert (dep.describe(), dep.distances, dep.exact) == (
        "A[2*i + 2] → A[2*i] (RAW) has direction (<)",
        (1,),
        True,
    )


Instance = tuple[Operation, list[affine.ForOp], list[int], SSAValue, tuple[int, ...]]
Found = dict[tuple[int, int, int], set[tuple[int, ...]]]


def run_nest(block: Block, loops: list[affine.ForOp], env: dict[SSAValue, int]) -> list[Instance]:
    """Execute the affine loads/stores of `block` in order (an interpreter independent of isl)."""
    trace: list[Instance] = []
    for op in block.ops:
        if isinstance(op, affine.ForOp):
            lbm, ubm = op.lowerBoundMap.data, op.upperBoundMap.data
            lbs = [env[v] for v in op.lowerBoundOperands]
            ubs = [env[v] for v in op.upperBoundOperands]
            lb = max(lbm.eval(lbs[: lbm.num_dims], lbs[lbm.num_dims :]))
            ub = min(ubm.eval(ubs[: ubm.num_dims], ubs[ubm.num_dims :]))
            for value in range(lb, ub, op.step.value.data):
                env[op.body.block.args[0]] = value
                trace += run_nest(op.body.block, [*loops, op], env)
        elif isinstance(op, affine.LoadOp | affine.StoreOp):
            amap, values = op.map.data, [env[v] for v in op.indices]
            element = amap.eval(values[: amap.num_dims], values[amap.num_dims :])
            ivs = [env[loop.body.block.args[0]] for loop in loops]
            trace.append((op, loops, ivs, op.memref, element))
    return trace


def brute_force(module: ModuleOp) -> Found:
    """(source op, sink op, level) -> distance vectors, from every pair of executed accesses."""
    order = {op: n for n, op in enumerate(module.walk())}
    fn = module.body.block.first_op
    assert fn is not None
    trace = run_nest(fn.regions[0].block, [], {})
    found: Found = {}
    for n, (src, src_loops, src_ivs, mem, element) in enumerate(trace):
        for snk, snk_loops, snk_ivs, other, other_element in trace[n + 1 :]:
            if mem is not other or element != other_element:
                continue
            if isinstance(src, affine.LoadOp) and isinstance(snk, affine.LoadOp):
                continue
            common = 0
            while common < min(len(src_loops), len(snk_loops)) and (
                src_loops[common] is snk_loops[common]
            ):
                common += 1
            distance = tuple(snk_ivs[k] - src_ivs[k] for k in range(common))
            level = next((k for k, d in enumerate(distance) if d), common)
            found.setdefault((order[src], order[snk], level), set()).add(distance)
    return found


def analysed(module: ModuleOp) -> Found:
    order = {op: n for n, op in enumerate(module.walk())}
    found: Found = {}
    for dep in dependences(module):
        points: list[tuple[int, ...]] = []
        common = len(dep.loops)

        def add(point: isl.Point, common: int = common, points: list = points) -> None:
            coords = range(common)
            points.append(
                tuple(point.get_coordinate_val(isl.dim_type.set, k).to_python() for k in coords)
            )

        dep.deltas.foreach_point(add)
        key = (order[dep.source.op], order[dep.sink.op], dep.level)
        found.setdefault(key, set()).update(points)
    return found


@settings(max_examples=60)
@given(nests())
def test_exact_on_random_nests(nest: Nest) -> None:
    """On constant and triangular nests with steps, the analysis finds exactly the dependences
    (pairs, levels and distance vectors) that executing the nest shows."""
    module = parse_module(nest.mlir())
    assert analysed(module) == brute_force(module)
