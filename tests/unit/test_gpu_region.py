"""Whole functions on the GPU: how gpu-map-loops sorts host code (loops/gpu_host) and maps
the code outside every parallel band as single-block region kernels (loops/gpu_region),
checked by emulation against the original on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import run
from gpu_emulator import emulate
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from nestgen import nests
from xdsl.dialects import affine, func, gpu
from xdsl.dialects.builtin import ModuleOp, StringAttr

from loopopt.context import make_context, parse_module, verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import MAPPING
from loopopt.loops import gpu_grid, gpu_region
from loopopt.loops.gpu_host import Host, HostLoop, Kernel, Planner, Region
from loopopt.passes.gpu_map_loops import REDUCTIONS, GpuMapLoopsPass
from loopopt.runtime.cpu import run_function

LU_SHAPE = """
func.func @lu(%A: memref<12x12xf32>) {
  affine.for %i = 0 to 12 {
    affine.for %j = 0 to %i {
      %w0 = affine.load %A[%i, %j] : memref<12x12xf32>
      %w = affine.for %k = 0 to %j iter_args(%acc = %w0) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<12x12xf32>
        %b = affine.load %A[%k, %j] : memref<12x12xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.subf %acc, %p : f32
        affine.yield %s : f32
      } {loopopt.name = "k"}
      %d = affine.load %A[%j, %j] : memref<12x12xf32>
      %q = arith.divf %w, %d : f32
      affine.store %q, %A[%i, %j] : memref<12x12xf32>
    } {loopopt.name = "j"}
    affine.for %j2 = affine_map<(d0) -> (d0)>(%i) to 12 {
      %w0 = affine.load %A[%i, %j2] : memref<12x12xf32>
      %w = affine.for %k = 0 to %i iter_args(%acc = %w0) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<12x12xf32>
        %b = affine.load %A[%k, %j2] : memref<12x12xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.subf %acc, %p : f32
        affine.yield %s : f32
      } {loopopt.name = "k"}
      affine.store %w, %A[%i, %j2] : memref<12x12xf32>
    } {loopopt.name = "j2"}
  } {loopopt.name = "i"}
  return
}
"""

CROSSING = """
func.func @crossing(%X: memref<50xf32>, %Y: memref<50xf32>, %Z: memref<50xf32>) {
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 50 {
    %x = affine.load %X[%i] : memref<50xf32>
    %y = arith.mulf %x, %two : f32
    affine.store %y, %Z[%i] : memref<50xf32>
  } {loopopt.name = "i"}
  %m = affine.load %X[7] : memref<50xf32>
  %h = arith.mulf %two, %two : f32
  affine.store %h, %Y[0] : memref<50xf32>
  affine.for %j = 1 to 50 {
    %x = affine.load %X[%j] : memref<50xf32>
    %y = arith.addf %x, %m : f32
    affine.store %y, %Y[%j] : memref<50xf32>
  } {loopopt.name = "j"}
  return
}
"""


def parsed(text: str) -> ModuleOp:
    return parse_module(text, "test.mlir", make_context())


def the_function(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.walk() if isinstance(op, func.FuncOp))


def planned(text: str) -> list[Kernel | HostLoop | Host | Region] | None:
    fn = the_function(parsed(text))
    return Planner((), (), "gpu-map-loops").plan(fn.body.block)


def kinds(items: list[Kernel | HostLoop | Host | Region]) -> list[str]:
    return [type(item).__name__ for item in items]


def mapped(text: str, **options: object) -> ModuleOp:
    module = parsed(text)
    GpuMapLoopsPass(**options).apply(make_context(), module)  # type: ignore[arg-type]
    verify_ir(module, "after gpu-map-loops")
    return module


def mappings(module: ModuleOp) -> list[dict[str, str]]:
    return [
        {k: v.data for k, v in op.attributes[MAPPING].data.items()}  # type: ignore[attr-defined]
        for op in module.walk()
        if isinstance(op, gpu.FuncOp)
    ]


def assert_emulated_equal(text: str, name: str, arrays: list[np.ndarray], **options: object):
    expected = run(text, name, [a.copy() for a in arrays])
    for reverse in (False, True):
        module = mapped(text, **options)
        emulate(module, reverse=reverse)
        got = [a.copy() for a in arrays]
        run_function(module, name, got)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_a_sequential_loop_around_a_parallel_nest_stays_on_the_host() -> None:
    items = planned(LU_SHAPE)
    assert items is not None and kinds(items) == ["HostLoop"]
    (host,) = items
    assert isinstance(host, HostLoop)
    assert kinds(host.items) == ["Region", "Kernel"]


def test_values_a_region_defines_pull_their_users_into_it() -> None:
    # %m (a load) is used by the j loop: everything from the load to the j loop forms one
    # region (the pure %h between included); the constant stays on the host.
    items = planned(CROSSING)
    assert items is not None
    assert kinds(items) == ["Host", "Kernel", "Region"]
    region = items[-1]
    assert isinstance(region, Region)
    names = [op.name for op in region.ops]
    assert names == ["affine.load", "arith.mulf", "affine.store", "affine.for"]


def test_a_block_whose_terminator_uses_a_device_value_cannot_be_split() -> None:
    text = """
func.func @f(%X: memref<8xf32>) -> f32 {
  %v = affine.load %X[3] : memref<8xf32>
  return %v : f32
}
"""
    assert planned(text) is None
    with pytest.raises(LoopoptError, match="returns a value computed on the device"):
        mapped(text)


def test_lu_maps_to_a_host_loop_of_a_region_and_a_kernel(rng: np.random.Generator) -> None:
    module = mapped(LU_SHAPE)
    loop = next(op for op in module.walk() if isinstance(op, affine.ForOp))
    assert loop.attributes[MAPPING] == StringAttr("host")
    # the first j loop carries A[i, j] → A[i, k]: a region per step, whose k reduction the
    # block shares out; the second j loop is parallel, its bounds moved by the host loop and
    # too few iterations for a thread each: a block per iteration, its k reduction shared out
    assert mappings(module) == [
        {"region": "one block", "threads_x": "k"},
        {"region": "one block", "threads_x": "k", "block_x": "j2"},
    ]
    a = rng.standard_normal((12, 12)).astype(np.float32) + 12 * np.eye(12, dtype=np.float32)
    assert_emulated_equal(LU_SHAPE, "lu", [a])


def test_a_region_spreads_its_parallel_loops_over_the_block(rng: np.random.Generator) -> None:
    module = mapped(CROSSING, region_threads=16)
    assert mappings(module)[1] == {"region": "one block", "threads_x": "j"}
    arrays = [rng.standard_normal(50).astype(np.float32) for _ in range(3)]
    assert_emulated_equal(CROSSING, "crossing", arrays, region_threads=16)


def test_region_threads_1_runs_regions_on_one_thread() -> None:
    module = mapped(CROSSING, region_threads=1)
    assert mappings(module)[1] == {"region": "one thread"}
    launch = [op for op in module.walk() if isinstance(op, gpu.LaunchFuncOp)][1]
    assert launch.blockSizeX.owner.value.value.data == 1  # type: ignore[attr-defined]


def test_a_call_in_a_region_runs_it_on_one_thread() -> None:
    text = """
func.func private @g(f32) -> f32
func.func @f(%X: memref<8xf32>) {
  affine.for %i = 1 to 8 {
    %v = affine.load %X[%i - 1] : memref<8xf32>
    %w = func.call @g(%v) : (f32) -> f32
    affine.store %w, %X[%i] : memref<8xf32>
  } {loopopt.name = "i"}
  affine.for %j = 0 to 8 {
    %v = affine.load %X[%j] : memref<8xf32>
    affine.store %v, %X[%j] : memref<8xf32>
  } {loopopt.name = "j"}
  return
}
"""
    module = parsed(text)
    fn = [op for op in module.walk() if isinstance(op, func.FuncOp)][1]
    loop = next(op for op in fn.walk() if isinstance(op, affine.ForOp))
    assert gpu_region.plan_spread(gpu_region.wrap([loop])) is None


def test_barriers_that_cannot_be_placed_leave_the_region_on_one_thread(
    monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator
) -> None:
    def refuse(*_: object) -> None:
        raise LoopoptError("gpu-map-loops: a barrier under a thread-dependent branch")

    monkeypatch.setattr(gpu_region, "place_barriers", refuse)
    module = mapped(CROSSING)
    assert mappings(module)[1] == {"region": "one thread"}
    kernel = [op for op in module.walk() if isinstance(op, gpu.FuncOp)][1]
    assert not any(isinstance(op, gpu.ThreadIdOp | gpu.BarrierOp) for op in kernel.walk())
    arrays = [rng.standard_normal(50).astype(np.float32) for _ in range(3)]
    expected = run(CROSSING, "crossing", [a.copy() for a in arrays])
    emulate(module)
    got = [a.copy() for a in arrays]
    run_function(module, "crossing", got)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5)


SWEEPS = """
func.func @f(%A: memref<16x16xf32>) {
  affine.for %t = 0 to 4 {
    affine.for %i = LOWER to 16 {
      affine.for %k = 1 to 16 {
        %v = affine.load %A[%i, %k - 1] : memref<16x16xf32>
        affine.store %v, %A[%i, %k] : memref<16x16xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}
"""


@pytest.mark.parametrize(("lower", "local"), [("0", True), ("affine_map<(d0) -> (d0)>(%t)", False)])
def test_a_spread_loop_keeps_its_iterations_on_their_threads(lower: str, local: bool) -> None:
    """Dependences inside one iteration of the spread loop i are thread-local; so are those
    between steps of t at the same i, when i's bounds do not change with t (thread tx always
    runs i = tx, tx + T, …), but not when they do."""
    from loopopt.analysis.dependence import dependences

    module = parsed(SWEEPS.replace("LOWER", lower))
    t, i = [op for op in module.walk() if isinstance(op, affine.ForOp)][:2]
    deps = dependences(t)
    across = [d for d in deps if d.carrier is t]
    inside = [d for d in deps if d.carrier is not t]
    assert across and inside
    assert all(gpu_region.thread_local(d, [i]) for d in inside)
    assert all(gpu_region.thread_local(d, [i]) == local for d in across)


ROW_SUMS = """
func.func @rowsums(%A: memref<37x53xf32>, %out: memref<37xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 37 {
    affine.store %zero, %out[%i] : memref<37xf32>
    affine.for %j = 0 to 53 {
      %a = affine.load %A[%i, %j] : memref<37x53xf32>
      %o = affine.load %out[%i] : memref<37xf32>
      %n = arith.addf %o, %a : f32
      affine.store %n, %out[%i] : memref<37xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


@pytest.mark.parametrize("threads", [1, 16, 24])
def test_a_block_per_row_shares_out_the_row(threads: int, rng: np.random.Generator) -> None:
    """out[i] += A[i, j] over j: out[i] is kept in registers, the j loop becomes a reduction
    that each block (one per row) shares out over its threads (sizes no block size divides;
    24 threads: a tree over a count that is no power of two); one thread: a sequential loop."""
    module = mapped(ROW_SUMS, region_threads=threads)
    (summary,) = mappings(module)
    if threads == 1:
        assert summary == {"region": "one thread", "block_x": "i"}
    else:
        assert summary == {"region": "one block", "threads_x": "j", "block_x": "i"}
    arrays = [rng.standard_normal((37, 53)).astype(np.float32), np.zeros(37, np.float32)]
    assert_emulated_equal(ROW_SUMS, "rowsums", arrays, region_threads=threads)


def test_reductions_thread_keeps_a_thread_per_row() -> None:
    (summary,) = mappings(mapped(ROW_SUMS, reductions="thread"))
    assert summary == {"block_x": "i_t", "thread_x": "i"}


CONV1D = """
func.func @conv1d(%x: memref<20004xf32>, %w: memref<5xf32>, %y: memref<20000xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 20000 {
    %s = affine.for %k = 0 to 5 iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %x[%i + %k] : memref<20004xf32>
      %b = affine.load %w[%k] : memref<5xf32>
      %p = arith.mulf %a, %b : f32
      %n = arith.addf %acc, %p : f32
      affine.yield %n : f32
    } {loopopt.name = "k"}
    affine.store %s, %y[%i] : memref<20000xf32>
  } {loopopt.name = "i"}
  return
}
"""


def test_a_row_shorter_than_a_warp_keeps_a_thread_per_output(rng: np.random.Generator) -> None:
    """conv1d's 5 taps read x contiguously along k, but a block of 256 threads per output
    would leave 251 idle: a thread per output (whose neighbours read x contiguously too), or,
    where too few outputs keep the GPU busy, 32 outputs per block with 8 threads each (5 taps;
    uncapped, 16).
    40 taps still take a block per output."""
    wide = CONV1D.replace("to 5 ", "to 40 ").replace("5xf32", "40xf32").replace("20004", "20039")
    (summary,) = mappings(mapped(wide))
    assert summary == {"region": "one block", "threads_x": "k", "block_x": "i"}
    many = CONV1D.replace("20004", "140004").replace("20000", "140000")
    (summary,) = mappings(mapped(many))
    assert summary == {"block_x": "i_t", "thread_x": "i"}
    module = mapped(CONV1D)
    (kernel,) = [op for op in module.walk() if isinstance(op, gpu.FuncOp)]
    assert mappings(module) == [
        {"region": "one block", "threads_y": "k", "block_x": "i", "thread_x": "i"}
    ]
    assert kernel.known_block_size is not None
    assert tuple(kernel.known_block_size.get_values()) == (32, 8, 1)
    arrays = [rng.standard_normal(n).astype(np.float32) for n in (20004, 5)]
    assert_emulated_equal(CONV1D, "conv1d", [*arrays, np.zeros(20000, np.float32)])


COLUMN_SUMS = """
func.func @colsums(%A: memref<53x45xf32>, %out: memref<45xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %j = 0 to 45 {
    %s = affine.for %i = 0 to 53 iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %A[%i, %j] : memref<53x45xf32>
      %n = arith.addf %acc, %a : f32
      affine.yield %n : f32
    } {loopopt.name = "i"}
    affine.store %s, %out[%j] : memref<45xf32>
  } {loopopt.name = "j"}
  return
}
"""


def test_lanes_share_out_each_column(rng: np.random.Generator) -> None:
    """45 columns: too few for a thread each; a block runs 32 of them side by side (thread x),
    each shared out over 32 threads along y. 45 is no multiple of 32: the lanes past it
    compute column 44 again and store nothing."""
    module = mapped(COLUMN_SUMS)
    (summary,) = mappings(module)
    assert summary == {"region": "one block", "threads_y": "i", "block_x": "j", "thread_x": "j"}
    (launch,) = [op for op in module.walk() if isinstance(op, gpu.LaunchFuncOp)]
    dims = (launch.gridSizeX, launch.blockSizeX, launch.blockSizeY)
    sizes = [v.owner.value.value.data for v in dims]  # type: ignore[attr-defined]
    assert sizes == [2, 32, 32]
    arrays = [rng.standard_normal((53, 45)).astype(np.float32), np.zeros(45, np.float32)]
    assert_emulated_equal(COLUMN_SUMS, "colsums", arrays)


def test_lanes_only_where_a_thread_per_column_leaves_the_gpu_idle() -> None:
    wide = COLUMN_SUMS.replace("53x45", "3x300000").replace("45xf32", "300000xf32")
    wide = wide.replace("to 45", "to 300000").replace("to 53", "to 3")
    (summary,) = mappings(mapped(wide))
    assert summary == {"block_x": "j_t", "thread_x": "j"}


TOTAL = """
func.func @total(%X: memref<70001xf32>, %out: memref<2xf32>) {
  %one = arith.constant 1.0 : f32
  %big = arith.constant -1.0e30 : f32
  %s, %m = affine.for %i = 0 to 70001 iter_args(%acc = %one, %top = %big) -> (f32, f32) {
    %x = affine.load %X[%i] : memref<70001xf32>
    %a = arith.addf %acc, %x : f32
    %t = arith.maximumf %top, %x : f32
    affine.yield %a, %t : f32, f32
  } {loopopt.name = "i"}
  affine.store %s, %out[0] : memref<2xf32>
  affine.store %m, %out[1] : memref<2xf32>
  return
}
"""


def test_a_large_reduction_is_shared_out_over_a_grid(rng: np.random.Generator) -> None:
    """A sum (from 1.0) and a max of 70001 elements: a grid kernel writes one partial result
    per block to global-memory arrays of the module; the region combines them in order."""
    module = mapped(TOTAL, region_threads=32)
    grid, region = mappings(module)
    assert grid == {"grid_reduction": "i", "blocks": "partials"}
    assert region == {"region": "one block", "threads_x": "i_blocks"}
    globals_ = [op for op in module.walk() if op.name == "memref.global"]
    names = [g.sym_name.data for g in globals_]  # type: ignore[attr-defined]
    assert sorted(names) == ["__partials_0", "__partials_1"]
    arrays = [rng.standard_normal(70001).astype(np.float32), np.zeros(2, np.float32)]
    expected = [arrays[0].astype(np.float64).sum() + 1.0, arrays[0].max()]
    for reverse in (False, True):
        module = mapped(TOTAL, region_threads=32)
        emulate(module, reverse=reverse)
        got = [a.copy() for a in arrays]
        run_function(module, "total", got)
        np.testing.assert_allclose(got[1], expected, rtol=1e-5)


INTO_MEMORY = """
func.func @into(%X: memref<70001xf64>, %out: memref<1xf64>) {
  affine.for %i = 0 to 70001 {
    %x = affine.load %X[%i] : memref<70001xf64>
    %o = affine.load %out[0] : memref<1xf64>
    %a = arith.addf %o, %x : f64
    affine.store %a, %out[0] : memref<1xf64>
  } {loopopt.name = "i"}
  return
}
"""


def test_a_large_reduction_into_memory_is_shared_out_over_a_grid(
    rng: np.random.Generator,
) -> None:
    """`out[0] += X[i]`: out[0] is kept in a register around the loop (loaded before it,
    stored after it), then the loop is a reduction after a load, shared out over a grid (it
    ran on one block). In float64: float32 sums of 70001 terms differ by more than
    the tolerance between orders."""
    grid, region = mappings(mapped(INTO_MEMORY, region_threads=32))
    assert grid == {"grid_reduction": "i", "blocks": "partials"}
    assert region == {"region": "one block", "threads_x": "i_blocks"}
    arrays = [rng.standard_normal(70001).astype(np.float64), np.array([2.5])]
    assert_emulated_equal(INTO_MEMORY, "into", arrays, region_threads=32)


def test_small_or_dependent_reductions_stay_in_the_region() -> None:
    small = TOTAL.replace("70001", "1000")
    assert "grid_reduction" not in mappings(mapped(small))[0]
    assert gpu_grid.grid_reducible(parsed(TOTAL).body.block.first_op) is None  # a func, no loop


@settings(max_examples=80)
@given(st.data())
def test_random_nests_map_whole_and_compute_what_they_did(data: st.DataObject) -> None:
    """Property: any random affine nest (imperfect, triangular, carrying dependences or not)
    maps onto the GPU whole, whatever the strategy and the threads per region, and the
    emulated kernels, with their threads in either order, compute what the nest computes."""
    nest = data.draw(nests(), label="nest")
    threads = data.draw(st.sampled_from([1, 3, 32]), label="region_threads")
    strategy = data.draw(st.sampled_from(REDUCTIONS), label="reductions")
    reverse = data.draw(st.booleans(), label="reverse")
    text = nest.mlir()
    note(text)
    module = mapped(text, region_threads=threads, reductions=strategy)
    kinds = {k for summary in mappings(module) for k in summary}
    event("region" if "region" in kinds else "kernels only")
    arrays = nest.arrays(seed=len(text))
    expected = run(text, "nest", [a.copy() for a in arrays])
    emulate(module, reverse=reverse)
    got = [a.copy() for a in arrays]
    run_function(module, "nest", got)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_a_parallel_loop_around_several_nests_is_distributed(rng: np.random.Generator) -> None:
    """PolyBench's gemm: `for i { for j: C *= beta }; { for k: for j: C += … }`. i carries
    nothing, so it is distributed over its two nests; in the second, j moves outside k
    (legal), so each nest is a 2-D kernel (a thread per C[i, j])."""
    import polybench_py as pb

    from loopopt.frontend.kernel import Kernel

    args = [1.5, 1.2, *(rng.standard_normal(s) for s in ((9, 11), (9, 6), (6, 11)))]
    module = Kernel(pb.gemm).module(*args)
    GpuMapLoopsPass().apply(make_context(), module)
    verify_ir(module, "after gpu-map-loops")
    assert mappings(module) == [
        {"block_x": "j_t", "thread_x": "j", "block_y": "i_t", "thread_y": "i"},
        {"block_x": "j_t", "thread_x": "j", "block_y": "i_t", "thread_y": "i"},
    ]
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    pb.gemm(*expected)
    emulate(module, reverse=True)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_function(module, "gemm", got)
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-12)


def test_a_block_reduction_lowers_in_memory(rng: np.random.Generator) -> None:
    """conv2d's filter loops as a block per output: no detached copy of the region (the spread's
    backup, the spread test's copy) keeps uses of the kernel's arguments, which the lowering
    would then visit ("memref operand of unknown origin"), on the module as mapped in memory."""
    import kernels

    from loopopt.backend.ptx import gpu_module_to_ptx, gpu_modules
    from loopopt.pass_pipeline import apply_passes, parse_pipeline

    text, _, _ = kernels.conv2d(40, 33, 3, 5, rng)
    module = parse_module(text)
    apply_passes(make_context(), module, parse_pipeline("gpu-map-loops,loopopt-lower-gpu-to-nvvm"))
    assert all(".entry" in gpu_module_to_ptx(g, "sm_90") for g in gpu_modules(module))
