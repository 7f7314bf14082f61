"""gpu-map-loops: which loops map where, guards, outlining, copies, barriers, refusals, and
execution of the mapped kernels on the CPU (gpu_emulator) against the original nests."""

from __future__ import annotations

import kernels
import numpy as np
import pytest
from equivalence import run
from gpu_emulator import emulate
from xdsl.dialects import affine, arith, func, gpu, memref, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import PassPipeline

from loopopt.analysis.divergence import Divergence, check_barriers, misplaced_barriers
from loopopt.context import make_context, parse_module, verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.dialects import affine_ext, gpu_ext
from loopopt.dialects.loopopt import COPY, MAPPING
from loopopt.loops.gpu_barrier import Requirement, place_barriers
from loopopt.loops.gpu_map import group_rows
from loopopt.loops.gpu_plan import (
    extent_bound,
    plan_kernel,
    point_loop_of,
    upper_always_holds,
)
from loopopt.loops.nest import find_loop, loop_name, outermost_loops
from loopopt.loops.outline import captured_values
from loopopt.passes.gpu_map_loops import GpuMapLoopsPass
from loopopt.runtime.cpu import run_function
from loopopt.universe import all_passes

VADD = """
func.func @vadd(%A: memref<1000xf32>, %B: memref<1000xf32>, %C: memref<1000xf32>) {
  affine.for %i = 0 to 1000 {
    %a = affine.load %A[%i] : memref<1000xf32>
    %b = affine.load %B[%i] : memref<1000xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %C[%i] : memref<1000xf32>
  } {loopopt.name = "i"}
  return
}
"""

TRANSPOSE = """
func.func @transpose(%A: memref<40x30xf32>, %B: memref<30x40xf32>) {
  affine.for %i = 0 to 40 {
    affine.for %j = 0 to 30 {
      %a = affine.load %A[%i, %j] : memref<40x30xf32>
      affine.store %a, %B[%j, %i] : memref<30x40xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""

COLUMNS = """
func.func @columns(%A: memref<30x40xf32>, %B: memref<30x40xf32>) {
  affine.for %i = 0 to 40 {
    affine.for %j = 0 to 30 {
      %a = affine.load %A[%j, %i] : memref<30x40xf32>
      affine.store %a, %B[%j, %i] : memref<30x40xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""

CUBE = """
func.func @cube(%A: memref<9x10x33xf32>) {
  %two = arith.constant 2.0 : f32
  affine.for %a = 0 to 9 {
    affine.for %b = 0 to 10 {
      affine.for %c = 0 to 33 {
        %v = affine.load %A[%a, %b, %c] : memref<9x10x33xf32>
        %w = arith.mulf %v, %two : f32
        affine.store %w, %A[%a, %b, %c] : memref<9x10x33xf32>
      } {loopopt.name = "c"}
    } {loopopt.name = "b"}
  } {loopopt.name = "a"}
  return
}
"""

DYNAMIC = """
func.func @scale(%A: memref<?x?xf32>, %n: index, %m: index) {
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %m {
      %a = affine.load %A[%i, %j] : memref<?x?xf32>
      %b = arith.mulf %a, %two : f32
      affine.store %b, %A[%i, %j] : memref<?x?xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""

JACOBI_2D = """
func.func @jacobi2d(%A: memref<34x34xf32>, %B: memref<34x34xf32>, %steps: index) {
  %fifth = arith.constant 0.2 : f32
  affine.for %t = 0 to %steps {
    affine.for %i = 1 to 33 {
      affine.for %j = 1 to 33 {
        %c = affine.load %A[%i, %j] : memref<34x34xf32>
        %n = affine.load %A[%i - 1, %j] : memref<34x34xf32>
        %s = affine.load %A[%i + 1, %j] : memref<34x34xf32>
        %w = affine.load %A[%i, %j - 1] : memref<34x34xf32>
        %e = affine.load %A[%i, %j + 1] : memref<34x34xf32>
        %s0 = arith.addf %c, %n : f32
        %s1 = arith.addf %s0, %s : f32
        %s2 = arith.addf %s1, %w : f32
        %s3 = arith.addf %s2, %e : f32
        %v = arith.mulf %s3, %fifth : f32
        affine.store %v, %B[%i, %j] : memref<34x34xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
    affine.for %i2 = 1 to 33 {
      affine.for %j2 = 1 to 33 {
        %v = affine.load %B[%i2, %j2] : memref<34x34xf32>
        affine.store %v, %A[%i2, %j2] : memref<34x34xf32>
      } {loopopt.name = "j2"}
    } {loopopt.name = "i2"}
  } {loopopt.name = "t"}
  return
}
"""

PREFIX_SUM = """
func.func @prefix(%A: memref<64xf32>) {
  affine.for %i = 1 to 64 {
    %p = affine.load %A[%i - 1] : memref<64xf32>
    %c = affine.load %A[%i] : memref<64xf32>
    %s = arith.addf %p, %c : f32
    affine.store %s, %A[%i] : memref<64xf32>
  } {loopopt.name = "i"}
  return
}
"""

BLOCK_STORE = """
func.func @rows(%A: memref<40x16xf32>, %S: memref<40xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %it = 0 to 40 step 8 {
    affine.store %zero, %S[%it] : memref<40xf32>
    affine.for %i = affine_map<(d0) -> (d0)>(%it) to affine_map<(d0) -> (d0 + 8)>(%it) {
      %s = affine.load %S[%it] : memref<40xf32>
      %a = affine.load %A[%i, 0] : memref<40x16xf32>
      %b = arith.addf %a, %s : f32
      affine.store %b, %A[%i, 1] : memref<40x16xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "i_t"}
  return
}
"""


def mapped(text: str, pre: str = "", **options: object) -> ModuleOp:
    """The module after `pre` (a pipeline) and gpu-map-loops with `options`, verified."""
    ctx = make_context()
    module = parse_module(text, "test.mlir", ctx)
    if pre:
        PassPipeline.parse_spec(all_passes(), pre).apply(ctx, module)
    GpuMapLoopsPass(**options).apply(ctx, module)  # type: ignore[arg-type]
    verify_ir(module, "after gpu-map-loops")
    return module


def kernels_of(module: ModuleOp) -> list[gpu.FuncOp]:
    return [op for op in module.walk() if isinstance(op, gpu.FuncOp)]


def mapping(kernel: gpu.FuncOp) -> dict[str, str]:
    attr = kernel.attributes[MAPPING]
    return {k: v.data for k, v in attr.data.items()}  # type: ignore[attr-defined]


def launches(module: ModuleOp) -> list[gpu.LaunchFuncOp]:
    return [op for op in module.walk() if isinstance(op, gpu.LaunchFuncOp)]


def constant(value: object) -> int:
    owner = value.owner  # type: ignore[attr-defined]
    assert isinstance(owner, arith.ConstantOp)
    return owner.value.value.data  # type: ignore[attr-defined]


def grid_and_block(launch: gpu.LaunchFuncOp) -> tuple[list[int], list[int]]:
    grid = [launch.gridSizeX, launch.gridSizeY, launch.gridSizeZ]
    block = [launch.blockSizeX, launch.blockSizeY, launch.blockSizeZ]
    return [constant(v) for v in grid], [constant(v) for v in block]


def marked(kernel: Operation, what: str) -> list[Operation]:
    attr = StringAttr(what)
    return [op for op in kernel.walk() if op.attributes.get(MAPPING) == attr]


# Which loops map where.


def plan_of(text: str, pre: str = "", block: tuple[int, ...] = ()) -> list[tuple[str, str]]:
    ctx = make_context()
    module = parse_module(text, "test.mlir", ctx)
    if pre:
        PassPipeline.parse_spec(all_passes(), pre).apply(ctx, module)
    root = outermost_loops(module)[0]
    plan = plan_kernel(root, block, (), "gpu-map-loops")
    assert plan is not None
    return [(c.tile and loop_name(c.tile) or "-", loop_name(c.point) or "?") for c in plan.chosen]


def test_vector_add_is_one_dimensional_with_256_threads() -> None:
    module = mapped(VADD)
    (kernel,) = kernels_of(module)
    assert mapping(kernel) == {"block_x": "i_t", "thread_x": "i"}
    assert grid_and_block(launches(module)[0]) == ([4, 1, 1], [256, 1, 1])


def test_matmul_maps_j_to_x_and_keeps_k_sequential(rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(40, 48, 20, rng)
    assert plan_of(text) == [("-", "j"), ("-", "i")]
    module = mapped(text)
    (kernel,) = kernels_of(module)
    assert mapping(kernel)["thread_x"] == "j" and mapping(kernel)["thread_y"] == "i"
    assert [loop_name(op) for op in marked(kernel, "sequential")] == ["k"]
    assert grid_and_block(launches(module)[0]) == ([3, 3, 1], [16, 16, 1])


def test_coalescing_prefers_the_loop_the_stores_are_contiguous_in() -> None:
    assert plan_of(TRANSPOSE)[0][1] == "i"  # B[j, i]: one load, one store: the store wins
    assert plan_of(COLUMNS)[0][1] == "i"  # both accesses contiguous in the outer loop


def test_three_parallel_loops_use_x_y_z() -> None:
    assert plan_of(CUBE) == [("-", "c"), ("-", "b"), ("-", "a")]
    module = mapped(CUBE)
    assert grid_and_block(launches(module)[0]) == ([3, 3, 3], [16, 4, 4])


def test_tiled_band_maps_tile_loops_to_blocks_and_point_loops_to_threads(
    rng: np.random.Generator,
) -> None:
    text, _, _ = kernels.matmul(40, 48, 20, rng)
    assert plan_of(text, "loop-tile{tile-sizes=16,8}") == [("j_t", "j"), ("i_t", "i")]
    module = mapped(text, "loop-tile{tile-sizes=16,8,4}")
    (kernel,) = kernels_of(module)
    assert mapping(kernel) == {
        "block_x": "j_t",
        "thread_x": "j",
        "block_y": "i_t",
        "thread_y": "i",
    }
    assert grid_and_block(launches(module)[0]) == ([6, 3, 1], [8, 16, 1])
    assert {loop_name(op) for op in marked(kernel, "sequential")} == {"k_t", "k"}


def test_partly_tiled_band_strip_mines_the_untiled_loop(rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(40, 48, 20, rng)
    assert plan_of(text, "loop-tile{tile-sizes=0,8}") == [("j_t", "j"), ("-", "i")]
    module = mapped(text, "loop-tile{tile-sizes=0,8}")
    (kernel,) = kernels_of(module)
    assert mapping(kernel)["block_y"] == "i_t"  # made by the mapping, by the default 16
    assert grid_and_block(launches(module)[0]) == ([6, 3, 1], [8, 16, 1])


def test_triangular_loops_map_the_rectangular_one(rng: np.random.Generator) -> None:
    text, _, _ = kernels.syrk(19, 7, rng)
    assert plan_of(text) == [("-", "i")]  # j's bounds depend on i: not on the host


def test_point_loop_and_extents_of_a_tiled_loop(rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(40, 48, 20, rng)
    ctx = make_context()
    module = parse_module(text, "t.mlir", ctx)
    PassPipeline.parse_spec(all_passes(), "loop-tile{tile-sizes=16,8}").apply(ctx, module)
    i_t, i = find_loop(module, "i_t", "t"), find_loop(module, "i", "t")
    j = find_loop(module, "j", "t")
    assert point_loop_of(i_t) is i and point_loop_of(i) is None
    assert extent_bound(i) == 16 and extent_bound(j) == 8  # min(t + 16, 40) - t <= 16
    assert not upper_always_holds(i, 1, 16)  # 40 may cut the last tile
    assert upper_always_holds(j, 0, 8) and not upper_always_holds(j, 0, 9)


# Guards and grids.


def test_guards_only_where_the_block_does_not_divide(rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(64, 48, 20, rng)
    (kernel,) = kernels_of(mapped(text))
    assert not [op for op in kernel.walk() if isinstance(op, affine.IfOp)]
    text, _, _ = kernels.matmul(60, 48, 20, rng)
    (kernel,) = kernels_of(mapped(text))
    guards = [op for op in kernel.walk() if isinstance(op, affine.IfOp)]
    assert [op.attributes[MAPPING] for op in guards] == [StringAttr("thread y")]
    assert str(guards[0].condition.data) == "(d0) : (((d0 * -1) + 59) >= 0)"


def test_grid_cap_makes_blocks_loop_over_tiles() -> None:
    module = mapped(VADD, grid=(3,))
    (kernel,) = kernels_of(module)
    (loop,) = marked(kernel, "block x")
    assert isinstance(loop, affine.ForOp) and loop.step.value.data == 768
    assert grid_and_block(launches(module)[0]) == ([3, 1, 1], [256, 1, 1])


def test_dynamic_sizes_compute_the_grid_on_the_host_and_skip_empty_grids() -> None:
    module = mapped(DYNAMIC)
    (launch,) = launches(module)
    guard = launch.parent_op()
    assert isinstance(guard, scf.IfOp)
    for size in (launch.gridSizeX, launch.gridSizeY):
        assert isinstance(size.owner, affine_ext.MaxOp)
    (kernel,) = kernels_of(module)
    assert {
        op.attributes[MAPPING].data for op in kernel.walk() if isinstance(op, affine.ForOp)
    } == {  # type: ignore[attr-defined]
        "block x",
        "block y",
    }


# Outlining.


def test_captured_values_become_arguments_and_constants_are_cloned() -> None:
    module = mapped(kernels.jacobi_1d(3, 20, np.random.default_rng(0))[0])
    host = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    t = find_loop(host, "t", "test")
    assert t.attributes[MAPPING] == StringAttr("host")
    names = [k.sym_name.data for k in kernels_of(module)]
    assert names == ["jacobi_k0", "jacobi_k1"]
    for launch in launches(module):
        assert launch.parent_op() is t
        assert [v.name_hint for v in launch.kernelOperands] == ["A", "B"]
    k0 = kernels_of(module)[0]
    assert [a.name_hint for a in k0.body.block.args] == ["A", "B"]
    assert any(
        isinstance(op, arith.ConstantOp) and op.result.name_hint == "third" for op in k0.walk()
    )
    assert "gpu.container_module" in module.attributes


def test_a_parallel_loop_moves_outside_the_loop_carrying_a_dependence() -> None:
    """t carries A[t - 1, i] → A[t, i] with direction (<, =): i may move outward, and the
    nest becomes one kernel (a thread per i, t sequential in it) instead of 7 launches."""
    text = """
func.func @steps(%A: memref<8x32xf32>) {
  affine.for %t = 1 to 8 {
    affine.for %i = 0 to 32 {
      %u = affine.apply affine_map<(d0) -> (d0 - 1)>(%t)
      %p = affine.load %A[%u, %i] : memref<8x32xf32>
      affine.store %p, %A[%t, %i] : memref<8x32xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}
"""
    module = mapped(text)
    (launch,) = launches(module)
    assert not any(isinstance(op, affine.ForOp) for op in the_host_ops(module))
    (kernel,) = kernels_of(module)
    assert mapping(kernel) == {"block_x": "i_t", "thread_x": "i"}
    t = find_loop(kernel, "t", "test")
    assert t.attributes[MAPPING] == StringAttr("sequential")


def the_host_ops(module: ModuleOp) -> list[Operation]:
    return [op for op in module.walk() if not any(k.is_ancestor(op) for k in kernels_of(module))]


def test_host_loop_iv_is_a_kernel_argument() -> None:
    # A[t - 1, i + 1] → A[t, i] has direction (<, >): i cannot move outside t.
    text = """
func.func @steps(%A: memref<8x32xf32>) {
  affine.for %t = 1 to 8 {
    affine.for %i = 0 to 31 {
      %u = affine.apply affine_map<(d0) -> (d0 - 1)>(%t)
      %p = affine.load %A[%u, %i + 1] : memref<8x32xf32>
      affine.store %p, %A[%t, %i] : memref<8x32xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}
"""
    inner = find_loop(parse_module(text), "i", "test")
    assert [v.name_hint for v in captured_values(inner)] == ["t", "A"]  # in order of first use
    module = mapped(text)
    (launch,) = launches(module)
    assert [v.name_hint for v in launch.kernelOperands] == ["A", "t"]  # function arguments first
    (kernel,) = kernels_of(module)
    assert [a.name_hint for a in kernel.body.block.args] == ["A", "t"]


# Copies spread over threads, barriers.


TILED_SHARED = "loop-tile{tile-sizes=8,16,4},promote{loop=k_t arrays=A,B memory-space=shared}"


def test_copies_are_spread_and_barriers_separate_them(rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(37, 29, 23, rng)
    (kernel,) = kernels_of(mapped(text, TILED_SHARED))
    assert not [op for op in kernel.walk() if isinstance(op, memref.AllocaOp)]
    shared = gpu_ext.workgroup_args(kernel)  # one buffer per block, as upstream means it
    assert [buffer.name_hint for buffer in shared] == ["A_shared", "B_shared"]
    copies = marked(kernel, "threads")
    assert [loop_name(op) for op in copies] == ["A_copy_in", "B_copy_in"]
    assert not [op for op in kernel.walk() if COPY in op.attributes]
    k_t = find_loop(kernel, "k_t", "test")
    body = list(k_t.body.block.ops)
    barriers = [i for i, op in enumerate(body) if isinstance(op, gpu.BarrierOp)]
    compute = next(
        i for i, op in enumerate(body) if op.attributes.get(MAPPING) == StringAttr("thread y")
    )
    last_copy = max(body.index(op) for op in copies)
    assert len(barriers) == 2
    assert last_copy < barriers[0] < compute < barriers[1] == len(body) - 2
    assert misplaced_barriers(kernel) == []


def test_linear_thread_index_is_coalesced(rng: np.random.Generator) -> None:
    """B's tile is 4x16 (innermost 16 contiguous): element l = tx + 16 * ty."""
    text, _, _ = kernels.matmul(37, 29, 23, rng)
    (kernel,) = kernels_of(mapped(text, TILED_SHARED))
    start = next(
        op
        for op in kernel.walk()
        if isinstance(op, affine.ApplyOp) and op.result.name_hint == "B_copy_in_l"
    )
    assert str(start.map.data) == "(d0, d1) -> ((d0 + (d1 * 16)))"
    assert [v.name_hint for v in start.mapOperands] == ["tx", "ty"]


def test_block_level_store_runs_on_one_thread_then_a_barrier() -> None:
    (kernel,) = kernels_of(mapped(BLOCK_STORE))
    (guard,) = marked(kernel, "one thread")
    assert isinstance(guard, affine.IfOp)
    assert str(guard.condition.data) == "(d0) : (d0 == 0)"
    ops = list(kernel.body.block.ops)
    (barrier,) = [i for i, op in enumerate(ops) if isinstance(op, gpu.BarrierOp)]
    (read,) = [
        i
        for i, op in enumerate(ops)
        if isinstance(op, affine.LoadOp) and op.memref.name_hint == "S"
    ]
    assert ops.index(guard) < barrier < read  # the point loop needs no guard: 40 = 5 * 8


# The barrier checker.


def _kernel(body: str) -> gpu.FuncOp:
    text = f"""
"gpu.module"() <{{sym_name = "kernels"}}> ({{
  "gpu.func"() <{{function_type = (memref<64xf32>) -> (), kernel}}> ({{
  ^bb0(%A: memref<64xf32>):
    %tx = "gpu.thread_id"() <{{dimension = #gpu<dim x>}}> : () -> index
    %bx = "gpu.block_id"() <{{dimension = #gpu<dim x>}}> : () -> index
    {body}
    "gpu.return"() : () -> ()
  }}) {{sym_name = "k"}} : () -> ()
}}) : () -> ()
"""
    return kernels_of(parse_module(text))[0]


@pytest.mark.parametrize(
    "body",
    [
        '"gpu.barrier"() : () -> ()',
        'affine.for %k = 0 to 8 { "gpu.barrier"() : () -> () }',
        'affine.for %k = 0 to %bx { "gpu.barrier"() : () -> () }',
        'affine.if affine_set<(d0) : (d0 - 2 >= 0)>(%bx) { "gpu.barrier"() : () -> () }',
    ],
)
def test_checker_accepts_barriers_every_thread_reaches(body: str) -> None:
    kernel = _kernel(body)
    assert misplaced_barriers(kernel) == []
    check_barriers(kernel, "test")


@pytest.mark.parametrize(
    ("body", "culprit"),
    [
        (
            'affine.if affine_set<(d0) : (d0 - 2 >= 0)>(%tx) { "gpu.barrier"() : () -> () }',
            "affine.if",
        ),
        ('affine.for %k = 0 to %tx { "gpu.barrier"() : () -> () }', "affine.for"),
        (
            "%i = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1)>(%bx, %tx)\n"
            "affine.for %k = 0 to 4 { affine.if affine_set<(d0) : (63 - d0 >= 0)>(%i) "
            '{ "gpu.barrier"() : () -> () } }',
            "affine.if",
        ),
        (
            "%v = memref.load %A[%tx] : memref<64xf32>\n"
            "%z = arith.constant 0.0 : f32\n"
            "%p = arith.cmpf ogt, %v, %z : f32\n"
            'scf.if %p { "gpu.barrier"() : () -> () }',
            "scf.if",
        ),
    ],
)
def test_checker_refuses_barriers_under_thread_dependent_control(body: str, culprit: str) -> None:
    kernel = _kernel(body)
    ((barrier, parent),) = misplaced_barriers(kernel)
    assert isinstance(barrier, gpu.BarrierOp) and parent.name == culprit
    with pytest.raises(LoopoptError, match=f"gpu.barrier under a thread-dependent {culprit}"):
        check_barriers(kernel, "test")


@pytest.mark.parametrize(
    "pre",
    [
        TILED_SHARED,
        "loop-tile{tile-sizes=8,8,4},promote{loop=k_t memory-space=shared}",
        "loop-tile{tile-sizes=8,8,4},promote{loop=j_t arrays=C memory-space=shared},"
        "promote{loop=k_t arrays=A,B memory-space=shared}",
    ],
)
def test_every_barrier_is_reached_by_every_thread(pre: str, rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(37, 29, 23, rng)
    for options in ({}, {"block": (4, 2)}, {"grid": (2, 2)}):
        mapped_kernels = kernels_of(mapped(text, pre, **options))
        assert mapped_kernels, options
        for kernel in mapped_kernels:
            assert [op for op in kernel.walk() if isinstance(op, gpu.BarrierOp)]
            assert misplaced_barriers(kernel) == []


def test_a_barrier_needed_in_thread_dependent_code_is_refused() -> None:
    kernel = _kernel(
        "%z = arith.constant 0.0 : f32\n"
        "affine.if affine_set<(d0) : (d0 - 2 >= 0)>(%tx) {\n"
        "  affine.store %z, %A[%tx] : memref<64xf32>\n"
        "  %v = affine.load %A[0] : memref<64xf32>\n"
        "}"
    )
    store, load = (op for op in kernel.walk() if isinstance(op, affine.StoreOp | affine.LoadOp))
    requirement = Requirement(store, load, None, "A[tx] → A[0]")
    with pytest.raises(LoopoptError, match="inside a thread-dependent affine.if"):
        place_barriers(kernel, [requirement], "test")


def test_divergence_of_values() -> None:
    kernel = _kernel(
        "%i = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1)>(%bx, %tx)\n"
        "%j = affine.apply affine_map<(d0) -> (d0 * 16)>(%bx)"
    )
    div = Divergence(kernel)
    values = {op.results[0].name_hint: op.results[0] for op in kernel.walk() if op.results}
    assert div.is_divergent(values["tx"]) and div.is_divergent(values["i"])
    assert not div.is_divergent(values["bx"]) and not div.is_divergent(values["j"])


# Refusals.


def test_block_of_more_than_1024_threads_is_refused(rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(40, 48, 20, rng)
    with pytest.raises(LoopoptError, match="2048 threads, more than 1024; pass block="):
        mapped(text, "loop-tile{tile-sizes=32,64}")
    with pytest.raises(LoopoptError, match="block size 65 along z"):
        mapped(CUBE, block=(1, 1, 65))
    with pytest.raises(LoopoptError, match="3 sizes but 2 loop"):
        mapped(text, block=(8, 8, 8))
    with pytest.raises(LoopoptError, match="grid size 70000 along y"):
        mapped(text, grid=(4, 70000))


def test_nest_without_parallel_loop_runs_as_a_one_thread_region(
    rng: np.random.Generator,
) -> None:
    module = mapped(PREFIX_SUM)
    (kernel,) = kernels_of(module)
    assert mapping(kernel) == {"region": "one thread"}
    (launch,) = launches(module)
    assert _constant(launch.blockSizeX) == 1 and _constant(launch.gridSizeX) == 1
    a = rng.standard_normal(64).astype(np.float32)
    (expected,) = run(PREFIX_SUM, "prefix", [a.copy()])
    emulate(module)
    got = [a.copy()]
    run_function(module, "prefix", got)
    np.testing.assert_allclose(got[0], expected, rtol=1e-5)


HOST_STORE = """
func.func @f(%A: memref<8x32xf32>) {
  affine.for %t = 1 to 8 {
    %z = affine.load %A[%t - 1, 1] : memref<8x32xf32>
    affine.store %z, %A[%t, 0] : memref<8x32xf32>
    affine.for %i = 1 to 32 {
      %p = affine.load %A[%t - 1, %i - 1] : memref<8x32xf32>
      affine.store %p, %A[%t, %i] : memref<8x32xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}
"""
"""The t loop's two statements feed each other (column 0 from column 1, and back), so it
cannot be split: it stays a host loop around a one-thread region and a kernel."""


def test_memory_access_around_launches_runs_in_a_region_kernel(rng: np.random.Generator) -> None:
    module = mapped(HOST_STORE)
    (t,) = [op for op in module.walk() if isinstance(op, affine.ForOp)][:1]
    assert t.attributes[MAPPING] == StringAttr("host")
    store_kernel, nest_kernel = kernels_of(module)
    assert mapping(store_kernel) == {"region": "one thread"}
    assert mapping(nest_kernel) == {"block_x": "i_t", "thread_x": "i"}
    a = rng.standard_normal((8, 32)).astype(np.float32)
    (expected,) = run(HOST_STORE, "f", [a.copy()])
    emulate(module)
    got = [a.copy()]
    run_function(module, "f", got)
    np.testing.assert_array_equal(got[0], expected)


def _constant(value: object) -> int:
    owner = getattr(value, "owner", None)
    assert isinstance(owner, arith.ConstantOp)
    attr = owner.value
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def test_thread_shared_buffer_must_be_in_workgroup_memory(rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(37, 29, 23, rng)
    with pytest.raises(LoopoptError, match="A_local is allocated outside the thread-mapped"):
        mapped(text, "loop-tile{tile-sizes=8,8,4},promote{loop=k_t arrays=A}")
    with pytest.raises(LoopoptError, match="A_shared is allocated inside the thread-mapped loop"):
        mapped(text, "loop-tile{tile-sizes=8,8,4},promote{loop=k arrays=A memory-space=shared}")


def test_thread_private_buffers_stay_sequential_in_each_thread(rng: np.random.Generator) -> None:
    """A local buffer under the thread-mapped loops belongs to one thread: its copies are not
    spread and need no barrier."""
    text, fn, arrays = kernels.matmul(37, 29, 23, rng)
    pre = "loop-tile{tile-sizes=8,8,4},promote{loop=k arrays=C}"
    (kernel,) = kernels_of(mapped(text, pre))
    assert not marked(kernel, "threads")
    assert not [op for op in kernel.walk() if isinstance(op, gpu.BarrierOp)]
    _check(text, fn, arrays, pre)


# Execution on the CPU: the emulated kernels compute what the nests did.


def _check(text: str, fn: str, arrays: list[np.ndarray], pre: str = "", **options: object) -> None:
    """Emulated kernels compute what the nest did; threads run in both orders where barriers
    order them (without barriers, any order gives the same result)."""
    expected = run(text, fn, arrays)
    after = str(mapped(text, pre, **options))
    orders = (False, True) if "gpu.barrier" in after else (False,)
    for reverse in orders:
        module = parse_module(after)
        emulate(module, reverse=reverse)
        got = [a.copy() for a in arrays]
        run_function(module, fn, got)
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("pre", "options"),
    [
        ("", {}),
        ("", {"block": (8, 4)}),
        (TILED_SHARED, {}),
        (TILED_SHARED, {"block": (4, 2), "grid": (2, 3)}),
        ("loop-tile{tile-sizes=8,8,4},promote{loop=k_t memory-space=shared}", {}),
        ("loop-tile{tile-sizes=0,8}", {}),
    ],
)
def test_matmul_runs(pre: str, options: dict[str, object], rng: np.random.Generator) -> None:
    _check(*kernels.matmul(37, 29, 23, rng), pre, **options)


@pytest.mark.parametrize("sizes", [(37, 29, 23), (64, 64, 32)])
@pytest.mark.parametrize("block", [(8, 8), (4, 2)])
def test_vector_copies_run(
    sizes: tuple[int, int, int], block: tuple[int, int], rng: np.random.Generator
) -> None:
    """copy-vector=4: each thread copies 4 consecutive elements (one round or several, whole
    or partial tiles); the emulated kernels still compute the nest."""
    pre = "loop-tile{tile-sizes=16,16,8},promote{loop=k_t arrays=A,B memory-space=shared}"
    _check(*kernels.matmul(*sizes, rng), pre, block=block, copy_vector=4)


def _named(kernel: Operation, name: str) -> list[Operation]:
    return [op for op in kernel.walk() if op.results and op.results[0].name_hint == name]


def test_vector_copies_take_consecutive_elements() -> None:
    """The 4 lanes of a thread share one first element (the row) and differ in the column;
    the kernel asks for 16-byte aligned arrays. A copy whose rows 4 does not divide (a k tile
    of 6) keeps scalar elements."""
    pre = "loop-tile{tile-sizes=16,16,8},promote{loop=k_t arrays=A,B memory-space=shared}"
    text = kernels.matmul(64, 64, 32, np.random.default_rng(0))[0]
    (kernel,) = kernels_of(mapped(text, pre, block=(8, 8), copy_vector=4))
    assert kernel.attributes["loopopt.pointer_align"] == IntegerAttr(16, 32)
    assert len(_named(kernel, "A_copy_in_e")) == 1
    a_loads = [
        op for op in kernel.walk() if isinstance(op, affine.LoadOp) and op.memref.name_hint == "A"
    ]
    assert len(a_loads) == 4  # 16x8 elements, 32 vectors over 64 threads: one each, guarded
    (odd,) = kernels_of(
        mapped(text, pre.replace("16,16,8", "16,16,6"), block=(8, 8), copy_vector=4)
    )
    assert not _named(odd, "A_copy_in_e") and _named(odd, "B_copy_in_e")


def test_stencils_and_triangles_run(rng: np.random.Generator) -> None:
    _check(*kernels.jacobi_1d(4, 40, rng), block=(7,))
    _check(*kernels.wavefront(9, 11, rng), block=(4,))
    _check(*kernels.syrk(19, 7, rng), block=(4,))
    conv = "loop-tile{tile-sizes=4,4},promote{loop=j_t arrays=I memory-space=shared}"
    _check(*kernels.conv2d(13, 11, 3, 3, rng), conv)


def test_transpose_cube_and_block_store_run(rng: np.random.Generator) -> None:
    _check(
        TRANSPOSE,
        "transpose",
        [rng.standard_normal((40, 30)).astype(np.float32), np.zeros((30, 40), np.float32)],
    )
    _check(CUBE, "cube", [rng.standard_normal((9, 10, 33)).astype(np.float32)])
    _check(
        BLOCK_STORE,
        "rows",
        [
            rng.standard_normal((40, 16)).astype(np.float32),
            rng.standard_normal(40).astype(np.float32),
        ],
    )


def test_jacobi_2d_time_loop_on_the_host_runs(rng: np.random.Generator) -> None:
    """Launches in the host's time loop; the stencil's tile and halo in shared memory."""
    arrays = [rng.standard_normal((34, 34)).astype(np.float32) for _ in range(2)]
    expected = run(JACOBI_2D, "jacobi2d", [*arrays, np.int64(3)])[:2]
    shared = "loop-tile{tile-sizes=16,8 loops=i,j},promote{loop=j_t arrays=A memory-space=shared}"
    for pre in ("", shared):
        module = mapped(JACOBI_2D, pre)
        assert len(launches(module)) == 2
        emulate(module, reverse=True)
        got = [a.copy() for a in arrays]
        run_function(module, "jacobi2d", [*got, 3])
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_dynamic_sizes_run(rng: np.random.Generator) -> None:
    arrays = [rng.standard_normal((37, 21)).astype(np.float32), 37, 21]
    expected = [arrays[0] * 2]
    for options in ({}, {"grid": (2, 2)}):
        module = mapped(DYNAMIC, **options)
        emulate(module)
        got = arrays[0].copy()
        run_function(module, "scale", [got, 37, 21])
        np.testing.assert_allclose(got, expected[0])


def test_emulation_catches_a_missing_barrier(rng: np.random.Generator) -> None:
    """Without the barrier between the copies and the compute, threads read stale tiles."""
    text, fn, arrays = kernels.matmul(37, 29, 23, rng)
    module = mapped(text, TILED_SHARED)
    first = next(op for op in module.walk() if isinstance(op, gpu.BarrierOp))
    first.detach()
    first.erase()
    emulate(module)
    got = [a.copy() for a in arrays]
    run_function(module, fn, got)
    assert not np.allclose(got[2], run(text, fn, arrays)[2], atol=1e-3)


# Grouped block order (block-group=).


def test_group_rows_is_the_largest_divisor_of_the_rows_within_the_group() -> None:
    assert [group_rows(rows, 8) for rows in (32, 6, 7, 1, 12)] == [8, 6, 7, 1, 6]
    assert group_rows(24, 5) == 4 and group_rows(13, 4) == 1


@pytest.mark.parametrize(("m", "n", "group", "rows"), [(96, 80, 4, 3), (100, 72, 8, 7)])
def test_block_group_renumbers_blocks_by_row_groups_and_computes_the_same(
    rng: np.random.Generator, m: int, n: int, group: int, rows: int
) -> None:
    text, name, args = kernels.matmul(m, n, 20, rng)
    module = mapped(text, "loop-tile{tile-sizes=16,16,8}", block_group=group)
    (kernel,) = kernels_of(module)
    assert mapping(kernel)["block_group"] == f"{rows} rows"
    applies = [op for op in kernel.body.block.ops if isinstance(op, affine.ApplyOp)]
    assert [op.results[0].name_hint for op in applies[:2]] == ["bx_group", "by_group"]
    blocks_x, blocks_y = -(-n // 16), -(-m // 16)
    seen = set()
    for by in range(blocks_y):
        for bx in range(blocks_x):
            seen.add(tuple(op.map.data.eval([bx, by], []) for op in applies[:2]))
    assert seen == {((x,), (y,)) for x in range(blocks_x) for y in range(blocks_y)}
    (expected,) = run(text, name, [a.copy() for a in args])[2:]
    emulate(module)
    got = [a.copy() for a in args]
    run_function(module, name, got)
    np.testing.assert_allclose(got[2], expected, rtol=1e-5)


def test_block_group_leaves_one_dimensional_grids_and_block_loops_alone(
    rng: np.random.Generator,
) -> None:
    (kernel,) = kernels_of(mapped(VADD, block_group=8))
    assert "block_group" not in mapping(kernel)
    text, _, _ = kernels.matmul(64, 64, 8, rng)
    (kernel,) = kernels_of(mapped(text, "loop-tile{tile-sizes=8,8}", block_group=4, grid=(2, 8)))
    assert "block_group" not in mapping(kernel)  # x loops over tiles: no renumbering


def test_block_group_must_be_positive() -> None:
    with pytest.raises(LoopoptError, match="block-group=0 must be at least 1"):
        mapped(VADD, block_group=0)


TRIANGLE = """
func.func @tri(%A: memref<37x37xf32>, %B: memref<37x37xf32>, %c: index) {
  affine.for %i = affine_map<()[s0] -> (s0 + 1)>()[%c] to 37 {
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to 37 {
      %a = affine.load %A[%i, %j] : memref<37x37xf32>
      %b = affine.load %A[%j, %i] : memref<37x37xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %B[%i, %j] : memref<37x37xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""
"""A parallel triangle (j from i) whose start the host knows only at run time (%c)."""


def test_a_triangle_runs_on_its_bounding_box_over_a_2d_grid(rng: np.random.Generator) -> None:
    module = mapped(TRIANGLE)
    (kernel,) = kernels_of(module)
    assert mapping(kernel) == {
        "block_x": "j_t",
        "thread_x": "j",
        "block_y": "i_t",
        "thread_y": "i",
    }
    guards = [op for op in kernel.walk() if isinstance(op, affine.IfOp)]
    assert any(
        "d1 + (d0 * -1)" in str(g.condition.data) or "d0 + (d1 * -1)" in str(g.condition.data)
        for g in guards
    )  # j >= i, on the box
    a = rng.standard_normal((37, 37)).astype(np.float32)
    for c in (0, 5, 36):
        b = np.full((37, 37), np.nan, np.float32)
        expected = b.copy()
        for i in range(c + 1, 37):
            expected[i, i:] = a[i, i:] + a[i:, i]
        emulated = module.clone()
        emulate(emulated)
        run_function(emulated, "tri", [a, b, c])
        np.testing.assert_array_equal(b, expected)
