"""promote{swizzle}: the XOR-swizzled layout (loops/promote.py's swizzle_params,
swizzled_column), its lowering to physical indices (lowering/swizzle.py) run on the CPU on
random inputs (non-dividing sizes, copies guarded) and emulated as GPU kernels with cp.async
rings, and its PTX (the same 128-bit shared loads as the padded layout)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import kernels
import numpy as np
import pytest
from equivalence import assert_equivalent, run, transform
from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type

import loopopt.lowering.swizzle as lowering_swizzle
from loopopt.backend.ptx import module_to_ptx
from loopopt.context import parse_module
from loopopt.dialects.nvgpu import DeviceAsyncCopyOp
from loopopt.loops.promote import swizzle_params, swizzled_column
from loopopt.lowering.llvm_common import element_bytes
from loopopt.lowering.swizzle import unswizzle

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import workloads  # noqa: E402
from test_warp_tiles import _emulated_error  # noqa: E402


@pytest.mark.parametrize(
    ("row", "element", "params"),
    [
        (8, Float32Type(), (4, 2)),
        (16, Float32Type(), (4, 4)),
        (32, Float32Type(), (4, 8)),
        (128, Float32Type(), (4, 8)),
        (24, Float32Type(), (4, 2)),
        (32, Float16Type(), (8, 4)),  # rows of 64 bytes (ldmatrix's f16 tiles)
        (64, Float16Type(), (8, 8)),  # rows of 128 bytes
        (16, Float64Type(), (2, 8)),
        (4, Float32Type(), None),  # one chunk
        (6, Float32Type(), None),  # no whole chunks
    ],
)
def test_swizzle_params_are_element_size_aware(
    row: int, element: object, params: tuple[int, int] | None
) -> None:
    assert swizzle_params(row, element_bytes(element)) == params  # type: ignore[arg-type]


@pytest.mark.parametrize(("row", "elem"), [(32, 4), (8, 4), (64, 2), (16, 4)])
def test_swizzled_rows_are_permutations_and_columns_spread_over_banks(row: int, elem: int) -> None:
    """Each row's columns are permuted, chunk offsets kept; down one column, `period`
    consecutive rows fall in `period` different 16-byte chunks of the row."""
    params = swizzle_params(row, elem)
    assert params is not None
    chunk, period = params
    rows = np.arange(64)[:, None]
    columns = np.arange(row)[None, :]
    swizzled = swizzled_column(rows, columns, chunk, period)
    assert all(sorted(line) == list(range(row)) for line in swizzled.tolist())
    assert (swizzled % chunk == columns % chunk).all()
    for start in range(0, 64, period):
        for c in range(0, row, chunk):
            pieces = swizzled[start : start + period, c] // chunk
            assert len(set(pieces.tolist())) == period


def test_promote_swizzle_runs_on_the_cpu(rng: np.random.Generator) -> None:
    """Partial tiles (37 x 29 x 23 by 16 x 16 x 8), local buffers with swizzled rows: the
    lowering gives every access its physical column, and the results agree."""
    text, fn, arrays = kernels.matmul(37, 29, 23, rng)
    pipeline = "loop-tile{tile-sizes=16,16,8},promote{loop=k_t arrays=A,B swizzle}"
    after = assert_equivalent(text, fn, arrays, pipeline)
    assert "#loopopt.swizzle<4, 2>" in after and "#loopopt.swizzle<4, 4>" in after


def test_a_store_left_unswizzled_breaks_the_results(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPU runs are a real test of the lowering: copies stored at logical columns, read
    at swizzled ones, give wrong products (other sizes than above: compiled engines are
    cached by their text)."""
    text, fn, arrays = kernels.matmul(35, 27, 21, rng)
    after = transform(text, "loop-tile{tile-sizes=16,16,8},promote{loop=k_t arrays=A,B swizzle}")
    rewrite = lowering_swizzle._rewrite_access

    def stores_plain(op: affine.LoadOp | affine.StoreOp, chunk: int, period: int) -> None:
        rewrite(op, chunk, 1 if isinstance(op, affine.StoreOp) else period)

    monkeypatch.setattr(lowering_swizzle, "_rewrite_access", stores_plain)
    assert not np.allclose(run(after, fn, arrays)[2], run(text, fn, arrays)[2], atol=1e-3)


def test_lowering_swizzles_cp_async_destinations_and_keeps_fragment_offsets() -> None:
    """A ring of swizzled tiles: each 16-byte cp.async gets column ^ (row mod 8) * 4; the
    loads of a thread's 4-wide fragment XOR their common base and add 0..3 after it; no
    swizzled type is left."""
    pipeline = (
        "loop-tile{tile-sizes=32,128,8},"
        "promote{arrays=A,B loop=k_t memory-space=shared swizzle},"
        "loop-tile{loops=i,j tile-sizes=4,4},gpu-map-loops{block=16,4 copy-vector=4},"
        "loop-unroll{unroll-full loop=B_copy_in},pipeline-copies{loop=k_t stages=3 async},"
        "loop-unroll{unroll-full loop=j}"
    )
    module = parse_module(transform(workloads.sgemm_mlir((64, 256, 48)), pipeline))
    unswizzle(module)
    assert "#loopopt.swizzle" not in str(module)
    copies = [op for op in module.walk() if isinstance(op, DeviceAsyncCopyOp)]
    assert copies
    for copy in copies:
        xor = copy.dstIndices[-1].owner
        assert isinstance(xor, arith.XOrIOp)
        mask = xor.rhs.owner
        assert isinstance(mask, affine.ApplyOp)
        assert str(mask.map.data) in ("(d0) -> (((d0 mod 8) * 4))", "(d0) -> (((d0 mod 2) * 4))")
    offsets = [
        op.rhs.owner.value.value.data  # type: ignore[attr-defined]
        for op in module.walk()
        if isinstance(op, arith.AddiOp)
        and isinstance(op.lhs.owner, arith.XOrIOp)
        and isinstance(op.rhs.owner, arith.ConstantOp)
    ]
    assert sorted(set(offsets)) == [1, 2, 3]


@pytest.mark.parametrize(
    ("pipeline", "sizes", "reverse"),
    [
        (
            "loop-tile{tile-sizes=32,128,8},promote{arrays=A,B loop=k_t memory-space=shared "
            "swizzle},loop-tile{loops=i,j tile-sizes=4,4},gpu-map-loops{block=16,4 copy-vector=4 "
            "warp-lanes=8,4},loop-unroll{unroll-full loop=B_copy_in},"
            "pipeline-copies{loop=k_t stages=3 async}",
            (64, 256, 48),
            True,
        ),
        (
            "loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=4,4},"
            "pad-tiles{loops=i_t2,j_t2,i,j,k},promote{arrays=A,B loop=k_t memory-space=shared "
            "swizzle},gpu-map-loops{block=8,8}",
            (50, 37, 21),
            False,
        ),
    ],
)
def test_emulated_swizzled_sgemm(pipeline: str, sizes: tuple[int, int, int], reverse: bool) -> None:
    """Swizzled tiles in a cp.async ring with warp tiles and strided fragments, and padded
    odd sizes (zero-filled partial tiles), emulated: the CPU lowering swizzles the copies'
    stores and the fragments' loads alike."""
    assert _emulated_error(pipeline, sizes, reverse) < 1e-4


@pytest.mark.slow  # 48 s: two 16 x 8 tile SGEMMs to PTX; swizzle is not in the default space
def test_swizzled_sgemm_keeps_its_128_bit_loads() -> None:
    """The benchmark's 16 x 8 tile (128 x 256 x 8, strided fragments, cp.async ring): with
    swizzled tiles, the same ld.shared.v4 as with padded ones, XORs, no local memory."""
    from loopopt.schedule import recipes
    from loopopt.schedule.summary import summarize_module

    text = workloads.sgemm_mlir((512, 512, 64))
    summary = summarize_module(parse_module(text), "sgemm")
    counts, xors = [], []
    for swizzle in (False, True):
        schedule = recipes.matmul(
            summary, 128, 256, 8, 16, 8, copy_vector=4, stages=3, fragment=4, swizzle=swizzle
        )
        ptx = module_to_ptx(parse_module(transform(text, schedule.pipeline)))
        assert not re.search(r"ld\.shared\.[bf]32|\.local\b", ptx)
        counts.append(len(re.findall(r"\bld\.shared\.v4\.[bf]32\b", ptx)))
        xors.append(len(re.findall(r"\bxor\.b(?:32|64)\b", ptx)))
    assert counts == [48, 48] and xors[1] > xors[0]
