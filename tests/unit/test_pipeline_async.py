"""pipeline-copies{stages=N async} (loops/pipeline_async.py): cp.async copies into rings of
shared tiles, zero-filled ones for padded tiles (source sizes); upstream's nvgpu async-copy ops,
their lowering to PTX, and emulated runs (gpu_emulator) that a missing wait or barrier, or a missing
zero fill, breaks."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from equivalence import transform
from gpu_emulator import emulate
from upstream import assert_upstream_valid
from xdsl.dialects import affine, gpu
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from loopopt.analysis.alignment import residue, value_multiple
from loopopt.backend.ptx import ARCHS, assemble, find_ptxas, module_to_ptx
from loopopt.context import make_context, parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.nvgpu import DeviceAsyncCopyOp, DeviceAsyncWaitOp
from loopopt.loops.nest import find_loops
from loopopt.loops.pipeline_async import async_copies, group_copies
from loopopt.runtime.cpu import run_function

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import workloads  # noqa: E402

PTXAS = find_ptxas()
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not found")

SGEMM = {
    f"{bm}x{bn}": (
        f"loop-tile{{tile-sizes={bm},{bn},16}},"
        "promote{arrays=A loop=k_t memory-space=shared pad=4 transpose},"
        "promote{arrays=B loop=k_t memory-space=shared pad=4},loop-tile{loops=i,j tile-sizes=8,4},"
        f"gpu-map-loops{{block={bn // 4},{bm // 8} copy-vector=4}},"
        f"loop-unroll{{unroll-full loop={unrolled}_copy_in}},"
        "pipeline-copies{loop=k_t stages=STAGES async},"
        "loop-unroll{unroll-full loop=k},loop-unroll{unroll-full loop=j},"
        "loop-unroll{unroll-full loop=i},scalar-replace{loop=k_t}"
    )
    for bm, bn, unrolled in ((128, 64, "A"), (64, 128, "B"))
}
"""The SGEMM schedules of benchmarks/schedules.py (bm x bn x 16 block tiles, 8x4 register
tiles, copy-vector=4; the copy loop with two rounds unrolled) with a cp.async ring of STAGES
tiles in place of `pipeline-copies{loop=k_t}`."""


def _sgemm(tiles: str, stages: int, scalar_replace: bool = True) -> str:
    pipeline = SGEMM[tiles].replace("STAGES", str(stages))
    return pipeline if scalar_replace else pipeline.replace(",scalar-replace{loop=k_t}", "")


SMALL = (
    "loop-tile{tile-sizes=16,16,8},promote{arrays=A loop=k_t memory-space=shared},"
    "promote{arrays=B loop=k_t memory-space=shared},loop-tile{loops=i,j tile-sizes=4,4},"
    "gpu-map-loops{block=4,4 copy-vector=4},loop-unroll{unroll-full loop=A_copy_in},"
    "loop-unroll{unroll-full loop=B_copy_in},pipeline-copies{loop=k_t stages=3 async}"
)
"""16x16x8 tiles on 4x4 threads: every copy of A and B is a 16-byte cp.async."""


def _operands(m: int, n: int, k: int) -> list[np.ndarray]:
    rng = np.random.default_rng(m + 7 * n + 13 * k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return [a, b, np.zeros((m, n), np.float32)]


def _emulated(module: ModuleOp, sizes: tuple[int, int, int], reverse: bool) -> np.ndarray:
    """C of the SGEMM `module` (mapped) emulated on the CPU, minus the float64 reference."""
    a, b, c = _operands(*sizes)
    emulate(module, reverse=reverse)
    run_function(module, workloads.SGEMM.func, [a, b, c])
    return c - a.astype(np.float64) @ b.astype(np.float64)


def _module(pipeline: str, sizes: tuple[int, int, int]) -> ModuleOp:
    return parse_module(transform(workloads.sgemm_mlir(sizes), pipeline))


def _ops(module: ModuleOp, kind: type[Operation]) -> list[Operation]:
    return [op for op in module.walk() if isinstance(op, kind)]


@pytest.mark.parametrize(
    ("tiles", "stages", "sizes"),
    [
        ("128x64", 2, (128, 64, 48)),
        pytest.param("128x64", 4, (128, 64, 48), marks=pytest.mark.slow),  # 23 s; 2, 3 cover it
        ("64x128", 3, (64, 128, 64)),
    ],
)
def test_emulated_sgemm_schedules(tiles: str, stages: int, sizes: tuple[int, int, int]) -> None:
    """The benchmark schedules with rings of 2, 3, 4 tiles compute A @ B (3 k tiles: with 4
    stages the prologue issues them all); with 2 stages the whole schedule, scalar-replace's
    accumulators carried across the ring's barriers (the others without it: the emulated
    accumulators double their time)."""
    module = _module(_sgemm(tiles, stages, scalar_replace=stages == 2), sizes)
    error = _emulated(module, sizes, reverse=stages == 3)
    assert np.abs(error).max() < 1e-4


@pytest.mark.parametrize("sizes", [(32, 16, 8), (16, 32, 40)])
@pytest.mark.parametrize("reverse", [False, True])
def test_emulated_small_tiles(sizes: tuple[int, int, int], reverse: bool) -> None:
    """One k tile (fewer than the prologue's two: the last tile is copied again) and five."""
    error = _emulated(_module(SMALL, sizes), sizes, reverse)
    assert np.abs(error).max() < 1e-4


def _broken(mutate: str) -> ModuleOp:
    module = _module(SMALL, (16, 16, 40))
    [loop] = find_loops(module, "k_t")
    body = loop.body.block
    waits = [op for op in body.ops if isinstance(op, DeviceAsyncWaitOp)]
    barrier = next(op for op in body.ops if isinstance(op, gpu.BarrierOp))
    if mutate == "no wait":
        for wait in waits:
            body.erase_op(wait)
    elif mutate == "weak wait":
        waits[0].properties["numGroups"] = IntegerAttr(2, 32)  # tile t may not have landed
    elif mutate == "no barrier":
        body.erase_op(barrier)
    elif mutate == "issue early":  # the copies ahead go before the barrier: t - 1 is read
        ahead = [
            op
            for op in body.ops
            if body.get_operation_index(op) > body.get_operation_index(barrier)
        ]
        for op in ahead[: next(i for i, op in enumerate(ahead) if isinstance(op, affine.ForOp))]:
            op.detach()
            body.insert_op_before(op, barrier)
    return module


@pytest.mark.parametrize("mutate", ["no wait", "weak wait", "no barrier", "issue early"])
def test_emulation_catches_broken_synchronization(mutate: str) -> None:
    """Without the wait (or too weak a one), reads see copies that have not landed; without
    the barrier, other threads' copies; issuing before the barrier overwrites the stage other
    threads still read. In one thread order at least, the result is wrong."""
    wrong = [
        not np.all(np.abs(np.nan_to_num(_emulated(_broken(mutate), (16, 16, 40), r), nan=1)) < 1e-4)
        for r in (False, True)
    ]
    assert any(wrong)


def test_copy_vector_lanes_become_16_byte_copies() -> None:
    """B's 4 lanes per thread are contiguous and 16-byte aligned in B and in the ring: one
    cp.async.cg each; A's slice is stored transposed (k-major), its lanes 132 floats apart in
    shared memory: 4-byte copies. A k-major A (AᵀB) copies 16 bytes too."""
    module = _module(_sgemm("128x64", 3).split(",pipeline-copies")[0], (256, 256, 256))
    [loop] = find_loops(module, "k_t")
    groups = group_copies(async_copies(loop), loop)
    by_array = {(head.load.memref.name_hint, nbytes) for head, nbytes in groups}
    assert by_array == {("A", 4), ("B", 16)}
    assert sum(1 for head, _ in groups if head.load.memref.name_hint == "A") == 8
    atb = _sgemm("128x64", 3).replace(" transpose", "").split(",pipeline-copies")[0]
    module = parse_module(transform(workloads.SGEMM_ATB.mlir((256, 256, 256)), atb))
    [loop] = find_loops(module, "k_t")
    assert {nbytes for _, nbytes in group_copies(async_copies(loop), loop)} == {16}


def test_alignment_of_copy_indices() -> None:
    module = _module(_sgemm("128x64", 3).split(",pipeline-copies")[0], (256, 256, 256))
    named: dict[str, SSAValue] = {}  # the first value of each name: lane 0's
    for op in module.walk():
        if op.results and op.results[0].name_hint:
            named.setdefault(op.results[0].name_hint, op.results[0])
    assert value_multiple(named["j_t"]) == 64
    assert value_multiple(named["B_copy_in_e"]) == 4
    assert value_multiple(named["B_in1"]) == 4  # e mod 64 of a multiple of 4
    assert value_multiple(named["B_in0"]) == 1  # e floordiv 64
    [loop] = find_loops(module, "k_t")
    assert value_multiple(loop.body.block.args[0]) == 16


def test_the_pipeline_keeps_no_tile_in_registers() -> None:
    """No load of A or B is carried by the loop, no copy is left in the body but cp.async."""
    module = _module(_sgemm("128x64", 3), (256, 256, 256))
    [loop] = find_loops(module, "k_t")
    loads = [
        op
        for op in loop.walk()
        if isinstance(op, affine.LoadOp) and op.memref.name_hint in ("A", "B")
    ]
    assert not loads
    assert len(_ops(module, DeviceAsyncCopyOp)) == 3 * 9  # 8 A + 1 B: the prologue's 2 tiles, one
    assert len(loop.results) == 8 * 4  # only the accumulators of the 8x4 register tile


def test_stage_and_async_options() -> None:
    text = workloads.sgemm_mlir((256, 256, 256))
    with pytest.raises(LoopoptError, match="stages=1: at least 2 are needed"):
        transform(text, _sgemm("128x64", 1))
    with pytest.raises(LoopoptError, match="stages=3 needs async"):
        transform(text, _sgemm("128x64", 3).replace(" async}", "}"))


def test_every_known_architecture_has_cp_async() -> None:
    """cp.async needs sm_80; backend/ptx.py refuses architectures it does not list."""
    assert all(int(name.removeprefix("sm_")) >= 80 for name in ARCHS)


@needs_ptxas
@pytest.mark.parametrize(("tiles", "stages"), [("128x64", 3), ("128x64", 4), ("64x128", 3)])
def test_sgemm_ptx_has_16_byte_cp_async_and_no_spills(tiles: str, stages: int) -> None:
    """The whole schedule to PTX: 16-byte cp.async.cg for B, commit and wait groups; ptxas
    assembles it for sm_90 without spills (4 stages: 50 KB, dynamic shared memory)."""
    module = _module(_sgemm(tiles, stages), (256, 256, 256))
    ptx = module_to_ptx(module)
    assert re.search(
        r"cp\.async\.cg\.shared\.global \[%rd\d+(\+\d+)?\], \[%rd\d+(\+\d+)?\], 16;", ptx
    )
    assert "cp.async.commit_group;" in ptx
    assert re.search(rf"cp\.async\.wait_group\s+{stages - 2};", ptx)
    report = assemble(ptx, "sm_90", PTXAS)
    spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", report)
    assert spills and all(s == "0" for s in spills)


HAND = """builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @copy_k0(%A: memref<?x64xf32>, %B: memref<64x64xf32>) kernel
        attributes {known_block_size = array<i32: 16, 1, 1>, loopopt.pointer_align = 16 : i32} {
      %tx = gpu.thread_id x
      %buf = memref.alloca() : memref<2x64xf32, 3 : i64>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %j = affine.apply affine_map<(d0) -> (d0 * 4)> (%tx)
      %t0 = nvgpu.device_async_copy %A[%c1, %j], %buf[%c0, %j], 4 {bypassL1}
          : memref<?x64xf32> to memref<2x64xf32, 3 : i64>
      %t1 = nvgpu.device_async_copy %A[%c1, %j], %buf[%c1, %j], 2
          : memref<?x64xf32> to memref<2x64xf32, 3 : i64>
      %g = nvgpu.device_async_create_group %t0, %t1
      nvgpu.device_async_wait %g {numGroups = 0 : i32}
      gpu.barrier
      %v = affine.load %buf[0, %tx] : memref<2x64xf32, 3 : i64>
      affine.store %v, %B[0, %tx] : memref<64x64xf32>
      gpu.return
    }
  }
}
"""


def test_hand_written_copies_round_trip_and_lower() -> None:
    module = parse_module(HAND, "<test>", make_context())
    printed = str(module)
    assert "4 {bypassL1} : memref<?x64xf32> to memref<2x64xf32, 3 : i64>" in printed
    assert "nvgpu.device_async_wait %g {numGroups = 0 : i32}\n" in printed
    assert str(parse_module(printed, "<test>", make_context())) == printed
    ptx = module_to_ptx(module)
    assert "cp.async.cg.shared.global" in ptx and re.search(r"\], 16;", ptx)
    assert re.search(r"cp\.async\.ca\.shared\.global \[%rd\d+\+256\], \[%rd\d+\+256\], 8;", ptx)
    assert "cp.async.commit_group;" in ptx and re.search(r"cp\.async\.wait_group\s+0;", ptx)
    if PTXAS is not None:
        assemble(ptx, "sm_90", PTXAS)
    assert_upstream_valid(printed)  # upstream's nvgpu ops, as mlir-opt 22 reads them


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("], 2\n", "], 2 {bypassL1}\n"), "bypassL1 copies 16 bytes"),
        (("], 2\n", "], 3\n"), "copies 4, 8 or 16 bytes, not 12"),
        (("%buf[%c1, %j], 2", "%buf[%c1], 2"), "one index per dimension of each memref"),
        (("numGroups = 0", "numGroups = -1"), "the number of pending groups is >= 0"),
    ],
)
def test_invalid_copies_are_rejected(change: tuple[str, str], message: str) -> None:
    with pytest.raises(LoopoptError, match=re.escape(message)):
        parse_module(HAND.replace(*change), "<test>", make_context())


BATCHED = """builtin.module attributes {gpu.container_module} {
  func.func @rows(%A: memref<2x4x64xf32>, %C: memref<2x4x64xf32>) {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @kernels::@rows_k0 blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%A : memref<2x4x64xf32>, %C : memref<2x4x64xf32>)
    func.return
  }
  gpu.module @kernels {
    gpu.func @rows_k0(%A: memref<2x4x64xf32>, %C: memref<2x4x64xf32>) kernel
        attributes {known_block_size = array<i32: 16, 1, 1>, loopopt.pointer_align = 16 : i32} {
      %tx = gpu.thread_id x
      %A_shared = memref.alloca() : memref<4x16xf32, 3>
      affine.for %b = 0 to 2 {
        affine.for %k_t = 0 to 64 step 16 {
          %e = affine.apply affine_map<(d0) -> (d0 * 4)> (%tx)
          %r = affine.apply affine_map<(d0) -> (d0 floordiv 16)> (%e)
LANES          gpu.barrier
          affine.for %i = 0 to 4 {
            %v = affine.load %A_shared[%i, %tx] : memref<4x16xf32, 3>
            affine.store %v, %C[%b, %i, %k_t + %tx] : memref<2x4x64xf32>
          }
          gpu.barrier
        } {loopopt.name = "k_t"}
      }
      gpu.return
    }
  }
}
""".replace(
    "LANES",
    "".join(
        f"""          %c{k} = affine.apply affine_map<(d0) -> (d0 mod 16 + {k})> (%e)
          %v{k} = affine.load %A[%b, %r, %k_t + %c{k}] : memref<2x4x64xf32>
          affine.store %v{k}, %A_shared[%r, %c{k}] : memref<4x16xf32, 3>
"""
        for k in range(4)
    ),
)
"""Each thread copies 4 consecutive floats of a 4x16 tile of A and writes a column of it to C
(C = A), for two batches b: the k_t loop runs twice."""


@pytest.mark.parametrize("barrier", [True, False])
def test_a_loop_around_the_pipeline_gets_a_barrier(barrier: bool) -> None:
    """The prologue of the next batch writes stages that the last iteration reads: a barrier
    after the loop keeps it waiting (the emulation shows the race without it)."""
    module = parse_module(transform(BATCHED, "pipeline-copies{loop=k_t stages=3 async}"))
    [loop] = find_loops(module, "k_t")
    after = loop.next_op
    assert isinstance(after, DeviceAsyncWaitOp) and isinstance(after.next_op, gpu.BarrierOp)
    sizes = [copy.nbytes for copy in _ops(module, DeviceAsyncCopyOp)]
    assert sizes == [16] * 3  # two prologue tiles and one in the loop, a vector per thread
    if not barrier:
        after.next_op.detach()
    a = np.random.default_rng(3).standard_normal((2, 4, 64)).astype(np.float32)
    results = []
    for reverse in (False, True):
        copy = parse_module(str(module))
        emulate(copy, reverse=reverse)
        c = np.zeros_like(a)
        run_function(copy, "rows", [a, c])
        results.append(np.array_equal(c, a))
    assert all(results) if barrier else not all(results)


PADDED = (
    "loop-tile{tile-sizes=64,128,16},loop-tile{loops=i,j tile-sizes=8,4},"
    "pad-tiles{loops=i_t2,j_t2,i,j,k},promote{arrays=A loop=k_t memory-space=shared pad=4},"
    "promote{arrays=B loop=k_t memory-space=shared pad=4},"
    "gpu-map-loops{block=32,8 max-registers=cap copy-vector=4},"
    "loop-unroll{unroll-full loop=B_copy_in},pipeline-copies{loop=k_t stages=STAGES async}"
)
"""Padded SGEMM (pad-tiles: 64x128x16 full tiles, 8x4 register tiles, copy-vector=4) with its
zero-filled copies in cp.async rings of STAGES tiles; `_padded` adds the unrolled compute."""


def _padded(stages: int, compute: bool = False) -> str:
    pipeline = PADDED.replace("STAGES", str(stages))
    if compute:
        pipeline += (
            ",loop-unroll{unroll-full loop=k},loop-unroll{unroll-full loop=j},"
            "loop-unroll{unroll-full loop=i},scalar-replace{loop=k_t}"
        )
    return pipeline


@pytest.mark.parametrize("sizes", [(100, 70, 44), (50, 37, 21)])
@pytest.mark.parametrize("stages", [2, 3])
def test_emulated_padded_sgemm(sizes: tuple[int, int, int], stages: int) -> None:
    """Odd sizes: partial tiles run as full ones whose copies read zeros outside A and B
    (cp.async source sizes of 0); 21 has 2 k tiles (the ring of 3 copies the last one again),
    44 has 3. The compute loops stay rolled here (the emulator is slow on unrolled code)."""
    module = _module(_padded(stages), sizes)
    copies = _ops(module, DeviceAsyncCopyOp)
    assert copies and all(op.srcElements is not None for op in copies)
    error = _emulated(module, sizes, reverse=stages == 3)
    assert np.abs(error).max() < 1e-4


@pytest.mark.parametrize(
    ("sizes", "widths"),
    [
        ((1000, 1000, 1000), {"A": 16, "B": 16}),  # rows of 1000: 16-byte aligned, and the
        ((100, 70, 44), {"A": 16, "B": 8}),  # lanes' conditions agree (K, N multiples of 4)
        ((999, 999, 999), {"A": 4, "B": 4}),  # or of 2 (70: 8 bytes); 999: 4 bytes
    ],
)
def test_zero_filled_copy_widths(sizes: tuple[int, int, int], widths: dict[str, int]) -> None:
    module = _module(PADDED.split(",pipeline-copies")[0], sizes)
    [loop] = find_loops(module, "k_t")
    copies = async_copies(loop)
    assert copies and all(copy.guard is not None for copy in copies)
    groups = group_copies(copies, loop)
    assert {head.load.memref.name_hint: nbytes for head, nbytes in groups} == widths


def _mutated(mutate: str, sizes: tuple[int, int, int]) -> ModuleOp:
    module = _module(_padded(2), sizes)
    for op in _ops(module, DeviceAsyncCopyOp):
        assert isinstance(op, DeviceAsyncCopyOp)
        if mutate == "no zero fill":  # the whole cp-size from the (safe) source address
            copy = DeviceAsyncCopyOp(op.src, op.srcIndices, op.dst, op.dstIndices, op.elements)
            block = op.parent_block()
            assert block is not None
            block.insert_op_before(copy, op)
            op.asyncToken.replace_all_uses_with(copy.asyncToken)
            block.erase_op(op)
        else:  # "unsafe source": the element's own address where the condition fails
            sized = op.srcIndices[0].owner
            assert isinstance(sized, affine.IfOp)
            then = sized.then_region.block.last_op
            assert then is not None
            indices = list(then.operands[: len(op.srcIndices)])
            operands = list(op.operands)
            first = 2 + len(op.dstIndices)  # dst, its indices, src, then the source indices
            operands[first : first + len(indices)] = indices
            op.operands = tuple(operands)
    return module


@pytest.mark.parametrize("mutate", ["no zero fill", "unsafe source"])
def test_emulation_catches_broken_zero_fill(mutate: str) -> None:
    """Without the source size the padding reads A's and B's first elements instead of zeros
    (wrong products along k); with the out-of-bounds source address the emulator gives NaN."""
    sizes = (100, 70, 44)
    error = _emulated(_mutated(mutate, sizes), sizes, reverse=False)
    if mutate == "unsafe source":
        assert np.isnan(error).any()
    else:
        assert not np.isnan(error).any() and np.abs(error).max() > 1e-2


def test_residue_of_conditions() -> None:
    """d0 a multiple of 16, d1 of 4: what each expression is, modulo what."""
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    multiples = [16, 4]
    cases = [
        (AffineExpr.constant(999) - d0 - d1, (4, 3)),
        (AffineExpr.constant(998) - d0 - d1 - 3, (4, 3)),
        ((d1 + 2) // 2, (2, 1)),
        ((d0 + 5) % 8, (8, 5)),
        ((d1 + 1) // 3, (1, 0)),
        (d0 * 3 + 7, (48, 7)),
        (AffineExpr.constant(5) // 2, (0, 2)),
    ]
    for expr, expected in cases:
        assert residue(expr, multiples, 2) == expected, expr


@needs_ptxas
@pytest.mark.parametrize(
    ("n", "copy"),
    [
        (1000, r"cp\.async\.cg\.shared\.global \[%rd\d+(\+\d+)?\], \[%rd\d+\], 16, %r\d+;"),
        (999, r"cp\.async\.ca\.shared\.global \[%rd\d+(\+\d+)?\], \[%rd\d+\], 4, %r\d+;"),
    ],
)
def test_padded_sgemm_ptx_has_zero_fill_copies(n: int, copy: str) -> None:
    """The whole padded schedule with a ring of 3 (scalar-replace included) to PTX: every
    cp.async has a source size; ptxas assembles it for sm_90 without spills."""
    ptx = module_to_ptx(_module(_padded(3, compute=True), (n, n, n)))
    copies = re.findall(r"cp\.async\.c[ag]\.shared\.global [^;]*;", ptx)
    assert copies and all(re.fullmatch(copy, c) for c in copies)
    report = assemble(ptx, "sm_90", PTXAS)
    spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", report)
    assert spills and all(s == "0" for s in spills)


def test_hand_written_zero_fill_copy_round_trips_and_lowers() -> None:
    text = HAND.replace(
        "      %g = nvgpu.device_async_create_group %t0, %t1\n",
        "      %n = arith.constant 2 : index\n"
        "      %t2 = nvgpu.device_async_copy %A[%c0, %j], %buf[%c0, %j], 4, %n {bypassL1}\n"
        "          : memref<?x64xf32> to memref<2x64xf32, 3 : i64>\n"
        "      %g = nvgpu.device_async_create_group %t0, %t1, %t2\n",
    )
    module = parse_module(text, "<test>", make_context())
    printed = str(module)
    assert "4, %n {bypassL1} : memref<?x64xf32> to memref<2x64xf32, 3 : i64>" in printed
    assert str(parse_module(printed, "<test>", make_context())) == printed
    ptx = module_to_ptx(module)
    assert re.search(r"cp\.async\.cg\.shared\.global \[%rd\d+\], \[%rd\d+\], 16, (8|%r\d+);", ptx)
    if PTXAS is not None:
        assemble(ptx, "sm_90", PTXAS)
