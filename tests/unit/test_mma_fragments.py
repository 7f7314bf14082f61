"""The fragment layouts of dialects/nvgpu_mma.py against the PTX ISA's tables ("Matrix fragments
for mma.m16n8k16 with floating point type", "... mma.m16n8k8 .tf32", "ldmatrix"), written here
as the ISA writes them: per register index i of a0..a7 / b0..b3 / c0..c3."""

from __future__ import annotations

import itertools

import pytest

from loopopt.dialects.nvgpu_mma import (
    TF32_SHAPE,
    a_element,
    b_element,
    c_element,
    ldmatrix_source,
)

K16 = (16, 8, 16)


def _ptx_a_k16(lane: int, i: int) -> tuple[int, int]:
    group, tig = lane >> 2, lane % 4
    row = group if i in (0, 1, 4, 5) else group + 8
    col = tig * 2 + (i & 1) if i < 4 else tig * 2 + (i & 1) + 8
    return row, col


def _ptx_b_k16(lane: int, i: int) -> tuple[int, int]:
    group, tig = lane >> 2, lane % 4
    row = tig * 2 + (i & 1) if i < 2 else tig * 2 + (i & 1) + 8
    return row, group


def _ptx_c(lane: int, i: int) -> tuple[int, int]:
    group, tig = lane >> 2, lane % 4
    row = group if i < 2 else group + 8
    return row, tig * 2 + (i & 1)


def _ptx_a_tf32(lane: int, i: int) -> tuple[int, int]:
    group, tig = lane >> 2, lane % 4
    row = group if i in (0, 2) else group + 8
    col = tig if i < 2 else tig + 4
    return row, col


def _ptx_b_tf32(lane: int, i: int) -> tuple[int, int]:
    group, tig = lane >> 2, lane % 4
    return (tig if i == 0 else tig + 4), group


def test_m16n8k16_fragments_match_the_ptx_tables() -> None:
    for lane in range(32):
        for i in range(8):  # a_i is element (i // 2, i % 2) of the vector<4x2> fragment
            assert a_element(K16, lane, i // 2, i % 2) == _ptx_a_k16(lane, i)
        for i in range(4):
            assert b_element(K16, lane, i // 2, i % 2) == _ptx_b_k16(lane, i)
            assert c_element(lane, i // 2, i % 2) == _ptx_c(lane, i)


def test_m16n8k8_tf32_fragments_match_the_ptx_tables() -> None:
    for lane in range(32):
        for i in range(4):
            assert a_element(TF32_SHAPE, lane, i, 0) == _ptx_a_tf32(lane, i)
        for i in range(2):
            assert b_element(TF32_SHAPE, lane, i, 0) == _ptx_b_tf32(lane, i)


@pytest.mark.parametrize(
    ("function", "rows", "per", "shape"),
    [
        (lambda lane, r, e: a_element(K16, lane, r, e), 4, 2, (16, 16)),
        (lambda lane, r, e: b_element(K16, lane, r, e), 2, 2, (16, 8)),
        (c_element, 2, 2, (16, 8)),
        (lambda lane, r, e: a_element(TF32_SHAPE, lane, r, e), 4, 1, (16, 8)),
        (lambda lane, r, e: b_element(TF32_SHAPE, lane, r, e), 2, 1, (8, 8)),
    ],
)
def test_each_element_is_held_by_exactly_one_lane(function, rows, per, shape) -> None:  # type: ignore[no-untyped-def]
    held = [function(lane, r, e) for lane in range(32) for r in range(rows) for e in range(per)]
    assert sorted(held) == sorted(itertools.product(range(shape[0]), range(shape[1])))


def test_ldmatrix_gives_lane_l_row_l_over_4() -> None:
    # PTX: "each thread receives ... row (laneid / 4), elements 2 * (laneid % 4) and +1" of
    # each 8x8 matrix, whose rows are the addresses of threads 8i..8i+7; .trans: the transpose.
    assert ldmatrix_source(0, 0, 0, 2, False) == (0, 0)
    assert ldmatrix_source(5, 1, 1, 2, False) == (9, 3)
    assert ldmatrix_source(31, 3, 1, 2, False) == (31, 7)
    assert ldmatrix_source(5, 1, 1, 2, True) == (11, 1)
    assert ldmatrix_source(6, 0, 0, 1, False) == (1, 2)


def test_ldmatrix_x4_of_a_row_major_tile_is_the_a_fragment() -> None:
    # Lane l gives the address of A[l % 16][8 * (l // 16)]: the four 8x8 quarters in a0..a7 order.
    def row_address(lane: int) -> tuple[int, int]:
        return lane % 16, 8 * (lane // 16)

    for lane, r, e in itertools.product(range(32), range(4), range(2)):
        source, column = ldmatrix_source(lane, r, e, 2, False)
        row, start = row_address(source)
        assert (row, start + column) == a_element(K16, lane, r, e)


def test_ldmatrix_x2_trans_of_a_k_major_tile_is_the_b_fragment() -> None:
    # B stored [k][n]: lane l (of 0..15) gives the address of B[l][0]; .trans hands out columns.
    for lane, r, e in itertools.product(range(32), range(2), range(2)):
        source, column = ldmatrix_source(lane, r, e, 2, True)
        assert (source, column) == b_element(K16, lane, r, e)
