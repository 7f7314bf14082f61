"""schedule/recipes.py and schedule/space.py: the benchmark schedules as recipes (same strings),
the mapping each schedule states, the classes, the candidate spaces (sizes, fit, fallbacks),
and that candidates run: every one of small nests, mapped with gpu-map-loops and emulated on
the CPU against the original nest; a sample through the whole GPU pipeline to PTX."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from equivalence import run, transform
from gpu_emulator import emulate
from kernels import wavefront
from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp

from loopopt.backend.ptx import module_to_ptx
from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.runtime.cpu import run_function
from loopopt.schedule import recipes
from loopopt.schedule.device import H100
from loopopt.schedule.occupancy import misfit
from loopopt.schedule.resources import shared_bytes
from loopopt.schedule.space import candidates, classify, why_none
from loopopt.schedule.summary import summarize_module
from loopopt.schedule.types import Device, NestSummary, Schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import schedules  # noqa: E402
import workloads  # noqa: E402

KIB = 1024
SM90 = replace(H100, name="test H100")
"""The built-in sm_90 table (renamed: the space must not depend on the name)."""

GEMM = (
    "loop-tile{{tile-sizes={bm},{bn},16}},promote{{arrays=A loop=k_t memory-space=shared pad=4"
    "{t}}},promote{{arrays=B loop=k_t memory-space=shared pad=4}},loop-tile{{loops=i,j "
    "tile-sizes=8,4}},gpu-map-loops{{block=16,{ty} max-registers=cap}},"
    "loop-unroll{{unroll-full loop=A_copy_in}},"
    "loop-unroll{{unroll-full loop=B_copy_in}},pipeline-copies{{loop=k_t}},loop-unroll{{unroll-full"
    " loop=k}},loop-unroll{{unroll-full loop=j}},loop-unroll{{unroll-full loop=i}},"
    "scalar-replace{{loop=k_t}}"
)
CONV2D = (
    "loop-tile{{tile-sizes={b},{b}}},loop-tile{{loops=i tile-sizes={r}}},"
    "loop-interchange{{loops=i,j permutation=1,0}},gpu-map-loops{{block={b},{t}}},"
    "loop-unroll{{unroll-full loop=q}},loop-unroll{{unroll-full loop=p}},"
    "loop-unroll{{unroll-full loop=i}}"
)
EXPECTED = {
    "SGEMM": GEMM.format(bm=128, bn=64, t=" transpose", ty=16),
    "SGEMM_ATB": GEMM.format(bm=128, bn=64, t="", ty=16),
    "SGEMM_64": GEMM.format(bm=64, bn=64, t=" transpose", ty=8),
    "CONV2D": CONV2D.format(b=64, r=8, t=8),
    "CONV2D_3X3": CONV2D.format(b=32, r=4, t=8),
    "CONV3D": "loop-tile{tile-sizes=0,32,32},loop-tile{loops=j tile-sizes=8},loop-interchange{"
    "loops=j,l permutation=1,0},gpu-map-loops{block=32,4,1},loop-unroll{unroll-full loop=r},"
    "loop-unroll{unroll-full loop=q},loop-unroll-jam{loop=j unroll-jam-factor=8},loop-unroll{"
    "unroll-full loop=j},scalar-replace{loop=p}",
    "JACOBI2D": "loop-tile{tile-sizes=32,64},loop-tile{loops=i tile-sizes=4},loop-interchange{"
    "loops=i,j permutation=1,0},gpu-map-loops{block=64,8},loop-unroll{unroll-factor=4 loop=i}",
}
"""The benchmark pipelines as issue 5 wrote them by hand (before recipes.py); conv3d's rows
since jammed into the filter loop p after its taps are unrolled (loop-unroll-jam) rather than
interchanged into it, so that an initialization of the outputs ahead of p stays outside."""


def _summary(text: str) -> NestSummary:
    return summarize_module(parse_module(text))


def _of(family: workloads.Family, sizes: tuple[int, ...]) -> NestSummary:
    return _summary(family.mlir(sizes))


def test_benchmark_pipelines_are_unchanged() -> None:
    """The recipes rebuild the hand-written pipelines (matmul's since with a register cap,
    gpu-map-loops{max-registers=cap}); the SGEMM schedules then moved to vector copies
    (gpu-map-loops{copy-vector=4}) and the benchmarks to the tiles measured fastest on the
    H200."""
    rebuilt = {
        "SGEMM": schedules.sgemm(128, 64, 16, 8, 4),
        "SGEMM_ATB": schedules.sgemm(128, 64, 16, 8, 4, a_transposed=True),
        "SGEMM_64": schedules.sgemm(64, 64, 16, 8, 4),
        "CONV2D": schedules.conv2d(64, 64, 8),
        "CONV2D_3X3": schedules.conv2d(32, 32, 4),
        "CONV3D": schedules.conv3d(32, 32, 8),
        "JACOBI2D": schedules.jacobi2d(32, 64, 4),
    }
    for name, pipeline in EXPECTED.items():
        assert rebuilt[name] == pipeline, name
    for name in ("SGEMM", "SGEMM_ATB", "SGEMM_64"):
        assert "copy-vector=4}" in getattr(schedules, name), name
    assert schedules.sgemm(64, 128, 32, 8, 4, copy_vector=4, stages=3) == schedules.SGEMM
    assert schedules.conv3d(16, 32, 16) == schedules.CONV3D
    assert schedules.SGEMM_2496 == schedules.SGEMM_8000 == schedules.SGEMM_64
    assert schedules.sgemm(64, 64, 32, 8, 4, copy_vector=4, stages=3) == schedules.SGEMM_1088
    assert schedules.sgemm(64, 64, 8, 4, 4, pipelined=False) == (
        EXPECTED["SGEMM_64"]
        .replace("16,8", "16,16")
        .replace("64,64,16", "64,64,8")
        .replace("8,4}", "4,4}")
        .replace("pipeline-copies{loop=k_t},", "")
    )
    mm = _of(workloads.SGEMM, (4096, 4096, 4096))
    assert recipes.matmul(mm, 128, 64, 16, 8, 4).pipeline == EXPECTED["SGEMM"]
    outer = recipes.matmul(mm, 64, 64, 16, 8, 4, min_blocks=2, outer_product=True).pipeline
    assert (
        "loop-interchange{loops=i,j,k permutation=1,2,0},"
        "gpu-map-loops{block=16,8 min-blocks-per-sm=2 max-registers=cap}," in outer
    )
    vector = recipes.matmul(mm, 64, 64, 16, 8, 4, copy_vector=4)
    assert "gpu-map-loops{block=16,8 max-registers=cap copy-vector=4}" in vector.pipeline
    assert vector.extra == (("copy_vector", 4),)


def test_schedules_state_their_mapping() -> None:
    mm = recipes.matmul(_of(workloads.SGEMM, (4096, 4096, 4096)), 128, 64, 16, 8, 4)
    assert mm.block_tile == (("i", 128), ("j", 64), ("k", 16))
    assert mm.thread_tile == (("i", 8), ("j", 4)) and mm.threads == (16, 16, 1)
    assert (mm.x_loop, mm.shared, mm.transposed, mm.pad) == ("j", ("A", "B"), ("A",), 4)
    assert (mm.unrolled, mm.registers, mm.pipelined) == (("k", "j", "i"), ("C",), True)
    assert mm.key() == "matmul bm=128 bn=64 bk=16 tm=8 tn=4 pipelined=1"
    atb = recipes.matmul(_of(workloads.SGEMM_ATB, (2048,) * 3), 128, 64, 16, 8, 4)
    assert atb.transposed == ()
    conv3d = recipes.conv(_of(workloads.CONV3D, (608,) * 3 + (8,) * 3), 32, 32, 8)
    assert (conv3d.block_tile, conv3d.thread_tile) == ((("j", 32), ("l", 32)), (("j", 8),))
    assert (conv3d.threads, conv3d.x_loop) == ((32, 4, 1), "l")
    assert (conv3d.unrolled, conv3d.registers) == (("r", "q", "j"), ("O",))
    jacobi = recipes.stencil(_of(workloads.JACOBI2D, (8192, 8192)), 32, 64, 4)
    assert (jacobi.block_tile, jacobi.threads, jacobi.unrolled) == (
        (("i", 32), ("j", 64)),
        (64, 8, 1),
        ("i",),
    )


RENAMED = """
func.func @mm(%P: memref<{m}x{k}xf32>, %Q: memref<{k}x{n}xf32>, %R: memref<{m}x{n}xf32>) {{
  affine.for %a = 0 to {m} {{
    affine.for %k = 0 to {k} {{
      affine.for %n = 0 to {n} {{
        %p = affine.load %P[%a, %k] : memref<{m}x{k}xf32>
        %q = affine.load %Q[%k, %n] : memref<{k}x{n}xf32>
        %r = affine.load %R[%a, %n] : memref<{m}x{n}xf32>
        %s = arith.mulf %p, %q : f32
        %t = arith.addf %r, %s : f32
        affine.store %t, %R[%a, %n] : memref<{m}x{n}xf32>
      }} {{loopopt.name = "n"}}
    }} {{loopopt.name = "k"}}
  }} {{loopopt.name = "k_t"}}
  return
}}
"""
"""R[k_t, n] += P[k_t, k] * Q[k, n] with the reduction in the middle and a loop named k_t."""

PERMUTE = """
func.func @permute(%A: memref<4x3x6xf32>, %B: memref<6x3x4xf32>) {
  affine.for %a = 0 to 4 {
    affine.for %b = 0 to 3 {
      affine.for %c = 0 to 6 {
        %v = affine.load %A[%a, %b, %c] : memref<4x3x6xf32>
        %w = arith.mulf %v, %v : f32
        affine.store %w, %B[%c, %b, %a] : memref<6x3x4xf32>
      } {loopopt.name = "c"}
    } {loopopt.name = "b"}
  } {loopopt.name = "a"}
  return
}
"""

ROWSUM = """
func.func @rowsum(%A: memref<40x10xf32>, %S: memref<40xf32>) {
  affine.for %i = 0 to 40 {
    affine.for %k = 0 to 10 {
      %a = affine.load %A[%i, %k] : memref<40x10xf32>
      %s = affine.load %S[%i] : memref<40xf32>
      %t = arith.addf %s, %a : f32
      affine.store %t, %S[%i] : memref<40xf32>
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  return
}
"""

TRANSPOSE4 = """
func.func @transpose4(%A: memref<3x2x4x5xf32>, %B: memref<5x4x2x3xf32>) {
  affine.for %a = 0 to 3 {
    affine.for %b = 0 to 2 {
      affine.for %c = 0 to 4 {
        affine.for %d = 0 to 5 {
          %v = affine.load %A[%a, %b, %c, %d] : memref<3x2x4x5xf32>
          affine.store %v, %B[%d, %c, %b, %a] : memref<5x4x2x3xf32>
        } {loopopt.name = "d"}
      } {loopopt.name = "c"}
    } {loopopt.name = "b"}
  } {loopopt.name = "a"}
  return
}
"""
"""Four parallel loops; the store is contiguous in a (threadIdx.x), the outermost."""

PREFIX = """
func.func @prefix(%A: memref<16xf32>) {
  affine.for %i = 1 to 16 {
    %a = affine.load %A[%i - 1] : memref<16xf32>
    %b = affine.load %A[%i] : memref<16xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %A[%i] : memref<16xf32>
  } {loopopt.name = "i"}
  return
}
"""

WAVEFRONT = wavefront(5, 40, np.random.default_rng(0))[0]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (workloads.sgemm_mlir((5, 7, 6)), "matmul"),
        (workloads.sgemm_atb_mlir((5, 7, 6)), "matmul"),
        (RENAMED.format(m=4, n=5, k=6), "matmul"),
        (workloads.conv_mlir((6, 7, 3, 2)), "conv"),
        (workloads.conv_mlir((4, 5, 3, 2, 3, 2)), "conv"),
        (workloads.jacobi2d_mlir((7, 9)), "stencil"),
        (PERMUTE, "map"),
        (ROWSUM, "map"),
        (WAVEFRONT, "map"),
    ],
    ids=["sgemm", "atb", "renamed", "conv2d", "conv3d", "jacobi2d", "permute", "rowsum", "wave"],
)
def test_classify(text: str, kind: str) -> None:
    assert classify(_summary(text)) == kind


BENCHMARKS = [
    (workloads.SGEMM, (4096,) * 3, "SGEMM", "matmul"),
    (workloads.SGEMM, (1088,) * 3, "SGEMM_64", "matmul"),
    (workloads.SGEMM_ATB, (2048,) * 3, "SGEMM_ATB", "matmul"),
    (workloads.CONV2D, (4096, 4096, 3, 3), "CONV2D_3X3", "conv"),
    (workloads.CONV2D, (4096, 4096, 8, 8), "CONV2D_8X8", "conv"),
    (workloads.CONV2D, (4096, 4096, 16, 16), "CONV2D", "conv"),
    (workloads.CONV3D, (608,) * 3 + (8,) * 3, "CONV3D", "conv"),
    (workloads.JACOBI2D, (8192, 8192), "JACOBI2D", "stencil"),
]


@pytest.mark.parametrize(
    ("family", "sizes", "hand", "kind"), BENCHMARKS, ids=[b[2] for b in BENCHMARKS]
)
def test_benchmark_spaces(
    family: workloads.Family, sizes: tuple[int, ...], hand: str, kind: str
) -> None:
    summary = _of(family, sizes)
    found = candidates(summary, SM90)
    assert len(found) >= 60
    assert getattr(schedules, hand) in [s.pipeline for s in found]
    assert {s.recipe for s in found} == {kind}


def test_conv_weights_in_constant_memory() -> None:
    """constant=True: gpu-constant-memory for the filter (the read-only array only filter loops
    index) after the unrolls; the space offers every conv tile both ways."""
    conv = _of(workloads.CONV2D, (4096, 4096, 16, 16))
    s = recipes.conv(conv, 16, 64, 8, constant=True)
    assert s.pipeline.endswith(",gpu-constant-memory{arrays=F}") and s.constant
    assert s.key() == "conv by=16 bx=64 rows=8 constant=1"
    assert s.pipeline.startswith(recipes.conv(conv, 16, 64, 8).pipeline)
    found = candidates(conv, SM90)
    assert sum(bool(c.constant) for c in found) * 2 == len(found)
    # 3-D: the first filter loop stays a loop, the weights' offsets are not constants
    assert not any(
        c.constant for c in candidates(_of(workloads.CONV3D, (64,) * 3 + (4,) * 3), SM90)
    )


def test_conv_column_tiles() -> None:
    """cols=2: a 16 x 2 register tile per thread (j tiled by 2 inside the block tile, its
    outer part on threadIdx.x, the 2 columns unrolled); the space offers 2 and 4 columns where
    the block tile divides the row and leaves 32 threads along it; 3-D convs have none."""
    conv = _of(workloads.CONV2D, (4096, 4096, 8, 8))
    s = recipes.conv(conv, 16, 64, 16, cols=2)
    assert s.key() == "conv by=16 bx=64 rows=16 cols=2"
    assert s.threads == (32, 1, 1) and dict(s.thread_tile) == {"i": 16, "j": 2}
    assert "loop-tile{loops=j tile-sizes=2},loop-interchange{loops=i,j_t2 permutation=1,0}" in (
        s.pipeline
    )
    assert "gpu-map-loops{block=32,1},loop-unroll{unroll-full loop=j}" in s.pipeline
    assert s.pipeline == schedules.CONV2D_8X8
    found = candidates(conv, SM90)
    tiles = {(dict(c.params)["bx"], dict(c.params).get("cols", 1)) for c in found}
    assert (64, 2) in tiles and (128, 4) in tiles and (256, 4) in tiles
    assert (32, 2) not in tiles and (64, 4) not in tiles  # 16 threads along j
    # 4000 = 32 · 125: only tiles of 16 and 32 divide the row, too narrow for 32 threads
    ragged = _of(workloads.CONV2D, (4096, 4000, 8, 8))
    assert not any("cols" in c.key() for c in candidates(ragged, SM90))
    # 16x16 filter: 2 columns of 4 rows at most (2048 FMAs; 8 x 2 took 255 registers, spilled)
    big = {
        (dict(c.params)["rows"], dict(c.params).get("cols", 1))
        for c in candidates(_of(workloads.CONV2D, (4096, 4096, 16, 16)), SM90)
    }
    assert (4, 2) in big and (8, 2) not in big and (2, 4) in big and (4, 4) not in big
    conv3d = _of(workloads.CONV3D, (64,) * 3 + (4,) * 3)
    assert not any("cols" in c.key() for c in candidates(conv3d, SM90))
    with pytest.raises(LoopoptError, match="column tiles"):
        recipes.conv(conv3d, 16, 64, 16, cols=2)
    with pytest.raises(LoopoptError, match="cols=3 must divide the block tile's 64 columns"):
        recipes.conv(conv, 16, 64, 16, cols=3)


def test_matmul_cp_async_ring() -> None:
    """stages=3: pipeline-copies{stages=3 async} instead of the register double buffer, A
    not transposed (16-byte cp.async moves rows as they are); the space offers rings only
    with vector copies and at least as many k steps as stages."""
    mm = _of(workloads.SGEMM, (4096, 4096, 4096))
    ring = recipes.matmul(mm, 64, 128, 32, 8, 4, copy_vector=4, stages=3)
    assert "pipeline-copies{loop=k_t stages=3 async}" in ring.pipeline
    assert "pipeline-copies{loop=k_t}" not in ring.pipeline and " transpose" not in ring.pipeline
    assert ring.key() == "matmul bm=64 bn=128 bk=32 tm=8 tn=4 pipelined=0 copy_vector=4 stages=3"
    assert (ring.stages, ring.pipelined, ring.transposed) == (3, False, ())
    rings = [s for s in candidates(mm, SM90) if s.stages > 1]
    assert ring in rings and all(dict(s.extra)["copy_vector"] == 4 for s in rings)
    few = _of(workloads.SGEMM, (64, 64, 32))
    assert all(s.stages == 1 or 32 // s.param("bk") >= 3 for s in candidates(few, SM90))


def test_candidates_fit_divide_and_are_unique_and_ordered() -> None:
    summary = _of(workloads.SGEMM, (1088, 1088, 1088))
    found = candidates(summary, SM90)
    assert found == candidates(summary, SM90)
    assert len({s.pipeline for s in found}) == len(found)
    for s in found:
        assert 32 <= s.threads_per_block <= 1024 and misfit(summary, s, SM90) is None
        assert all(1088 % size == 0 for _, size in s.block_tile)
    small = Device(
        **{
            **SM90.__dict__,
            "smem_per_block_optin": 16 * KIB,
            "max_threads_per_block": 256,
            "max_regs_per_thread": 96,
        }
    )
    fewer = candidates(summary, small)
    assert 0 < len(fewer) < len(found)
    assert all(shared_bytes(summary, s) <= 16 * KIB for s in fewer)
    assert all(s.threads_per_block <= 256 for s in fewer)


def test_fallbacks_and_refusal() -> None:
    padded = candidates(_of(workloads.SGEMM, (33, 20, 12)), SM90)
    assert padded and all(dict(s.params).get("padded") == 1 for s in padded)
    assert all("pad-tiles{loops=i_t2,j_t2,i,j,k}" in s.pipeline for s in padded)
    assert all("stages" not in s.pipeline for s in padded)  # k = 12: no 3 steps for a ring
    rings = candidates(_of(workloads.SGEMM, (100, 72, 48)), SM90)
    assert any("stages=3 async" in s.pipeline and "pad-tiles" in s.pipeline for s in rings)
    assert any("pipeline-copies{loop=k_t}" in s.pipeline for s in padded)
    mapped = candidates(_of(workloads.CONV2D, (7, 9, 3, 3)), SM90)
    assert mapped and {s.recipe for s in mapped} == {"map"}
    assert "loop-unroll{unroll-factor=2 loop=q}" in mapped[1].pipeline
    assert candidates(_summary(PREFIX), SM90) == []
    assert why_none(_summary(PREFIX), SM90) == "no loop is parallel"
    tiny = Device(**{**SM90.__dict__, "max_threads_per_block": 16})
    assert candidates(_summary(ROWSUM), tiny) == []
    assert why_none(_summary(ROWSUM), tiny).startswith("a 32x1x1 block has 32 threads")
    with pytest.raises(LoopoptError, match="matmul recipe: @prefix is not C"):
        recipes.matmul(_summary(PREFIX), 32, 32, 8, 1, 1)
    with pytest.raises(LoopoptError, match="map recipe: no loop of @wavefront runs inside"):
        recipes.map_nest(_summary(WAVEFRONT), (32,), unroll=2)


def test_map_maps_the_contiguous_loop_and_the_innermost_others() -> None:
    s = recipes.map_nest(_summary(TRANSPOSE4), (16, 2, 4))
    assert s.pipeline == (
        "loop-interchange{loops=a,b,c,d permutation=1,0,2,3},"
        "loop-tile{loops=a,c,d tile-sizes=16,4,2},gpu-map-loops{block=16,2,4}"
    )
    assert (s.x_loop, s.block_tile, s.threads) == ("a", (("a", 16), ("c", 4), ("d", 2)), (16, 2, 4))
    rowsum = recipes.map_nest(_summary(ROWSUM), (64,), unroll=4)
    assert rowsum.pipeline.endswith("gpu-map-loops{block=64},loop-unroll{unroll-factor=4 loop=k}")


def test_recipes_follow_the_nests_names_and_order() -> None:
    summary = _summary(RENAMED.format(m=64, n=64, k=32))
    s = recipes.matmul(summary, 32, 32, 8, 4, 4)
    assert s.pipeline.startswith(
        "loop-interchange{loops=k_t,k,n permutation=0,2,1},loop-tile{tile-sizes=32,32,8},"
        "promote{arrays=P loop=k_t2 memory-space=shared pad=4 transpose},"
        "promote{arrays=Q loop=k_t2 memory-space=shared pad=4}"
    )
    assert "loop-unroll{unroll-full loop=P_copy_in}" in s.pipeline
    assert (s.x_loop, s.registers, s.thread_tile) == ("n", ("R",), (("k_t", 4), ("n", 4)))


def _split(pipeline: str) -> list[str]:
    """The passes of a pipeline (commas inside options stay)."""
    parts, depth, current = [], 0, ""
    for char in pipeline:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        current += char
    return [*parts, current]


def _split_at_mapping(pipeline: str) -> tuple[str, str]:
    """(the passes before gpu-map-loops, gpu-map-loops itself)."""
    parts = _split(pipeline)
    end = next(n for n, p in enumerate(parts) if p.startswith("gpu-map-loops"))
    return ",".join(parts[:end]), parts[end]


def _check_mapping(module: ModuleOp, schedule: Schedule) -> None:
    """gpu-map-loops put the schedule's x loop on threadIdx.x, with its block shape."""
    kernels = [op for op in module.walk() if isinstance(op, gpu.FuncOp)]
    assert kernels, schedule.key()
    for kernel in kernels:
        mapping = kernel.attributes["loopopt.mapping"].data  # type: ignore[attr-defined]
        x = mapping["thread_x"].data
        assert x == schedule.x_loop or x.startswith(schedule.x_loop + "_t"), schedule.key()
        assert kernel.known_block_size is not None
        assert tuple(kernel.known_block_size.get_values()) == schedule.threads, schedule.key()


SMALL = [
    (RENAMED.format(m=32, n=32, k=8), "mm", "matmul"),
    (workloads.sgemm_mlir((17, 9, 5)), "sgemm", "matmul"),  # guarded tiles
    (workloads.conv_mlir((8, 12, 3, 2)), "conv2d", "conv"),
    (workloads.conv_mlir((4, 128, 3, 2)), "conv2d", "conv"),  # column tiles too
    (workloads.conv_mlir((4, 8, 12, 2, 3, 2)), "conv3d", "conv"),
    (workloads.conv_mlir((7, 9, 3, 3)), "conv2d", "map"),  # no tile divides 7
    (workloads.jacobi2d_mlir((6, 12)), "jacobi2d", "stencil"),
    (PERMUTE, "permute", "map"),
    (ROWSUM, "rowsum", "map"),
    (WAVEFRONT, "wavefront", "map"),
    (TRANSPOSE4, "transpose4", "map"),
]


@pytest.mark.parametrize(
    ("text", "func", "recipe"),
    SMALL,
    ids=[
        "matmul",
        "guarded",
        "conv2d",
        "conv2d-cols",
        "conv3d",
        "conv-map",
        "jacobi",
        "permute",
        "rowsum",
        "wave",
        "transpose4",
    ],
)
def test_every_candidate_runs_on_the_cpu(text: str, func: str, recipe: str) -> None:
    """Each candidate's loop-level passes (those before gpu-map-loops) keep the results;
    gpu-map-loops then maps the loop the schedule names onto threadIdx.x, with its block
    shape; the first candidate's kernel, emulated, computes the same."""
    module = parse_module(text)
    rng = np.random.default_rng(7)
    arrays = [
        rng.standard_normal(arg.type.get_shape()).astype(np.float32)  # type: ignore[attr-defined]
        for arg in next(op for op in module.walk() if op.name == "func.func").args
    ]
    expected = run(text, func, arrays)
    found = candidates(summarize_module(module), SM90)
    assert found and {s.recipe for s in found} == {recipe}
    firsts: dict[str, Schedule] = {}
    for schedule in found:
        firsts.setdefault(_split_at_mapping(schedule.pipeline)[0], schedule)
    for n, (loop_level, schedule) in enumerate(firsts.items()):
        after = transform(text, loop_level) if loop_level else text
        _compare(run(after, func, arrays), expected, schedule)
        mapped = parse_module(transform(after, _split_at_mapping(schedule.pipeline)[1]))
        _check_mapping(mapped, schedule)
        if n == 0:
            emulate(mapped, reverse=True)
            got = [a.copy() for a in arrays]
            run_function(mapped, func, got)
            _compare(got, expected, schedule)


def _compare(got: list[np.ndarray], expected: list[np.ndarray], schedule: Schedule) -> None:
    for index, (g, e) in enumerate(zip(got, expected, strict=True)):
        np.testing.assert_allclose(
            g, e, rtol=1e-5, atol=1e-5, err_msg=f"argument {index}, {schedule.key()}"
        )


def _ptx(text: str, schedule: Schedule) -> str:
    return module_to_ptx(parse_module(transform(text, schedule.pipeline)), "sm_90")


@pytest.mark.parametrize(
    ("text", "picks"),
    [
        (
            workloads.sgemm_mlir((64, 64, 16)),
            ["matmul bm=32 bn=32 bk=8 tm=2 tn=2 pipelined=1"],
        ),
        (
            workloads.sgemm_atb_mlir((64, 64, 16)),
            ["matmul bm=64 bn=32 bk=8 tm=2 tn=2 pipelined=0 copy_vector=4"],
        ),
        (workloads.sgemm_mlir((33, 20, 12)), [0]),
        (workloads.conv_mlir((32, 64, 3, 3)), ["conv by=32 bx=64 rows=4"]),
        (workloads.conv_mlir((4, 16, 32, 2, 2, 2)), [0]),
        (workloads.jacobi2d_mlir((34, 70)), [0, -1]),
        (ROWSUM, [-1]),
        (WAVEFRONT, [0]),
    ],
    ids=["sgemm", "atb", "guarded", "conv2d", "conv3d", "jacobi", "rowsum", "wave"],
)
def test_a_sample_compiles_to_ptx(text: str, picks: list[str | int]) -> None:
    found = candidates(_summary(text), SM90)
    by_key = {s.key(): s for s in found}
    for pick in picks:
        schedule = found[pick] if isinstance(pick, int) else by_key[pick]
        ptx = _ptx(text, schedule)
        assert ".entry" in ptx, schedule.key()
        x, y, z = schedule.threads
        assert f".maxntid {x}, {y}, {z}" in ptx, schedule.key()
