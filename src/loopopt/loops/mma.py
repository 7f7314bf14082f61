"""Rewrite a warp-tiled matmul nest onto tensor cores: the mechanics of `gpu-mma`.

A `MmaNest` (found and checked by passes/gpu_mma.py) is a warp tile, the loops `mw` and `nw`
stepping by wm and wn over a block tile, around the point loops m, n, k of
`C[m, n] += A_s[m, k] * B_s[k, n]` with A_s and B_s in shared memory. `rewrite_nest`:
  - gives nw the step wn / 32, so that it runs one iteration per lane (32 per warp tile:
    gpu-map-loops maps it onto threadIdx.x, the warp's lanes consecutive threads);
  - replaces the point loops by the warp's code for the lane
    lane = ((nw - nw_start) floordiv (wn / 32)) mod 32, warp tile at nw - lane * (wn / 32):
    for each 16 x 8 tile (mi, nj) of the warp tile, its C fragment (4 scalar loads, at the
    PTX layout of nvgpu_mma.c_element) into a vector; for each k step of 16 (8 for tf32), A's
    fragments by ldmatrix.x4 and B's by ldmatrix.x2 (.trans where the operand's contiguous
    dimension is not the one ldmatrix hands out: A k-major, B n-major) and the mma.syncs;
    then the fragments' elements stored back to C.
The C loads and stores are plain affine accesses, guarded as pad-tiles left them
(scalar-replace keeps them in registers across the k tile loop, as for the scalar register
tile). Not checked here: the nest's shape
and types (passes/gpu_mma.py), the 16-byte alignment of the rows ldmatrix reads (promote's
pad and tile origins).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from xdsl.dialects import affine, arith, vector
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseIntOrFPElementsAttr,
    Float32Type,
    IntegerAttr,
    MemRefType,
    VectorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.dialects.nvgpu_mma import (
    TF32_SHAPE,
    WARP,
    LdMatrixOp,
    MmaSyncOp,
    fragment_type,
)
from loopopt.loops.affine_maps import lower_bound
from loopopt.loops.nest import iv


@dataclass(frozen=True)
class Operand:
    """A shared operand: its load, and whether its contiguous (last) index follows k."""

    load: affine.LoadOp
    k_last: bool


@dataclass(frozen=True)
class MmaNest:
    mw: affine.ForOp
    nw: affine.ForOp
    m: affine.ForOp
    n: affine.ForOp
    k: affine.ForOp
    sizes: tuple[int, int, int]
    """Trip counts of m, n, k: the warp tile wm x wn and the k depth."""
    a: Operand
    b: Operand
    c_load: Operation
    """C's load, or the `affine.if {loopopt.padded}` around it (pad-tiles: 0.0 outside C)."""
    c_store: Operation
    """C's store, or the `affine.if {loopopt.padded}` around it (skipped outside C)."""
    c_sum: SSAValue
    """The value the store writes (C + A * B)."""
    tf32: bool


Point = Callable[[affine.ForOp, AffineExpr | int], SSAValue]
"""The value of a point loop's IV at an offset (a function of the lane) from its start."""


class _Builder:
    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def apply(self, expr: AffineExpr, operands: list[SSAValue]) -> SSAValue:
        amap = AffineMap(len(operands), 0, (expr,))
        return self.add(affine.ApplyOp(operands, AffineMapAttr(amap)))


def _at(
    b: _Builder,
    loop: affine.ForOp,
    offset: AffineExpr | int,
    lane: SSAValue,
    column: tuple[SSAValue, SSAValue],
) -> SSAValue:
    """The value of `loop`'s IV at its lower bound + `offset` (an expression of d0 = lane);
    column = (nw's IV, the warp tile's first column) replaces the first by the second."""
    bound = lower_bound(loop)
    assert len(bound.map.results) == 1
    dims = bound.map.num_dims
    if isinstance(offset, int):
        offset = AffineExpr.constant(offset)
    shifted = offset.replace_dims_and_symbols([AffineExpr.dimension(dims)], [])
    expr = bound.map.results[0] + shifted
    amap = AffineMap(dims + 1, bound.map.num_symbols, (expr,))
    operands = [column[1] if v is column[0] else v for v in bound.operands]
    operands = [*operands[:dims], lane, *operands[dims:]]
    return b.add(affine.ApplyOp(operands, AffineMapAttr(amap)))


def _indices(b: _Builder, load: affine.LoadOp, values: dict[SSAValue, SSAValue]) -> list[SSAValue]:
    """The indices of `load` with the loop IVs of `values` replaced."""
    operands = [values.get(v, v) for v in load.indices]
    amap = load.map.data
    return [
        b.apply(
            expr.replace_dims_and_symbols(
                [AffineExpr.dimension(d) for d in range(amap.num_dims)],
                [AffineExpr.dimension(amap.num_dims + s) for s in range(amap.num_symbols)],
            ),
            operands,
        )
        for expr in amap.results
    ]


def rewrite_nest(nest: MmaNest) -> affine.ForOp:
    """Rewrite `nest` in place (module docstring); the lane loop (nw) is returned."""
    wm, wn, depth = nest.sizes
    shape = TF32_SHAPE if nest.tf32 else (16, 8, 16)
    _, _, kstep = shape
    per_lane = wn // WARP
    nw = nest.nw
    nw.properties["step"] = IntegerAttr.from_index_int_value(per_lane)
    b = _Builder()
    d0 = AffineExpr.dimension(0)
    start = lower_bound(nw)  # (its operands are defined outside nw)
    assert len(start.map.results) == 1
    # lane = ((nw - start) floordiv per_lane) mod 32, from nw's IV and its lower bound's operands
    dims = start.map.num_dims
    nw_expr = AffineExpr.dimension(dims)
    lane_expr = ((nw_expr - start.map.results[0]) // per_lane) % WARP
    lane_map = AffineMap(dims + 1, start.map.num_symbols, (lane_expr,))
    lane = b.add(
        affine.ApplyOp(
            [*start.operands[:dims], iv(nw), *start.operands[dims:]], AffineMapAttr(lane_map)
        )
    )
    # The point loops' lower bounds use the warp tile's IVs: nw's IV must mean the warp's
    # first column there, so the lane's own offset is taken off.
    base_nw = b.apply(AffineExpr.dimension(0) - AffineExpr.dimension(1) * per_lane, [iv(nw), lane])
    g, t = d0 // 4, d0 % 4

    def point(loop: affine.ForOp, offset: AffineExpr | int) -> SSAValue:
        return _at(b, loop, offset, lane, (iv(nw), base_nw))

    c_type = fragment_type(shape, "c", Float32Type())
    zero = b.add(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(c_type, [0.0] * 4)))
    accumulators: dict[tuple[int, int], SSAValue] = {}
    positions: dict[tuple[int, int, int, int], tuple[SSAValue, SSAValue]] = {}
    for mi in range(wm // 16):
        for nj in range(wn // 8):
            fragment = zero
            for r in range(2):
                for e in range(2):
                    i = point(nest.m, g + 8 * r + 16 * mi)
                    j = point(nest.n, 2 * t + e + 8 * nj)
                    positions[mi, nj, r, e] = (i, j)
                    value = b.add(nest.c_load.clone({iv(nest.m): i, iv(nest.n): j}))
                    fragment = b.add(vector.InsertOp(value, fragment, [r, e]))
            accumulators[mi, nj] = fragment
    for kk in range(0, depth, kstep):
        a_fragments = [_load_a(b, nest, mi, kk, kstep, point) for mi in range(wm // 16)]
        b_fragments = [_load_b(b, nest, nj, kk, kstep, point) for nj in range(wn // 8)]
        for mi, a in enumerate(a_fragments):
            for nj, bf in enumerate(b_fragments):
                mma = MmaSyncOp(a, bf, accumulators[mi, nj], shape, nest.tf32)
                accumulators[mi, nj] = b.add(mma)
    for (mi, nj, r, e), (i, j) in positions.items():
        value = b.add(vector.ExtractOp(accumulators[mi, nj], [r, e], Float32Type()))
        b.ops.append(nest.c_store.clone({iv(nest.m): i, iv(nest.n): j, nest.c_sum: value}))
    # the lane's code replaces the point loops
    outer = _outermost_point(nest)
    body = outer.parent_block()
    assert body is not None
    body.insert_ops_before(b.ops, outer)
    outer.detach()
    outer.erase()
    return nw


def _outermost_point(nest: MmaNest) -> affine.ForOp:
    loops = [nest.m, nest.n, nest.k]
    for loop in loops:
        parent = loop.parent_op()
        if parent not in loops:
            return loop
    raise AssertionError("the point loops form a chain")


def _reindexed_load(load: affine.LoadOp, values: dict[SSAValue, SSAValue]) -> affine.LoadOp:
    operands = [values.get(v, v) for v in load.indices]
    return affine.LoadOp(load.memref, operands, load.map, load.result.type)


def _load_a(b: _Builder, nest: MmaNest, mi: int, kk: int, kstep: int, point: Point) -> SSAValue:
    """A's fragment of the 16 x kstep tile (mi, kk): ldmatrix.x4, matrix r = rows 8(r%2),
    columns (kstep/2)(r//2) of it; lane l gives matrix l//8's row l%8."""
    d0 = AffineExpr.dimension(0)
    half = kstep // 2
    row, quarter = d0 % 8, d0 // 8
    m_off = 16 * mi + 8 * (quarter % 2)
    k_off = kk + half * (quarter // 2)
    if nest.tf32 and not nest.a.k_last:  # 32-bit elements: no transposing ldmatrix
        g, t = d0 // 4, d0 % 4
        places = [(16 * mi + g + 8 * (r % 2), kk + t + 4 * (r // 2)) for r in range(4)]
        return _gathered(b, nest.a, ([(nest.m, m), (nest.k, k)] for m, k in places), point)
    if nest.a.k_last:  # rows are m: the lane gives row m, ldmatrix hands out k
        m = point(nest.m, m_off + row)
        k = point(nest.k, k_off)
        transpose = False
    else:  # rows are k (A stored k-major): the transposed load hands out m
        m = point(nest.m, m_off)
        k = point(nest.k, k_off + row)
        transpose = True
    indices = _indices(b, nest.a.load, {iv(nest.m): m, iv(nest.k): k})
    return b.add(LdMatrixOp(nest.a.load.memref, indices, 4, transpose))


def _load_b(b: _Builder, nest: MmaNest, nj: int, kk: int, kstep: int, point: Point) -> SSAValue:
    """B's fragment of the kstep x 8 tile (kk, nj): ldmatrix.x2, matrix r = k rows
    (kstep/2) r of it; lanes 0..15 give the rows (16..31 repeat them: unused by .x2)."""
    d0 = AffineExpr.dimension(0)
    half = kstep // 2
    row, matrix = d0 % 8, (d0 // 8) % 2
    if nest.tf32 and not nest.b.k_last:  # 32-bit elements: no transposing ldmatrix
        g, t = d0 // 4, d0 % 4
        places = [(kk + t + 4 * r, 8 * nj + g) for r in range(2)]
        return _gathered(b, nest.b, ([(nest.k, k), (nest.n, n)] for k, n in places), point)
    if nest.b.k_last:  # rows are n (B stored n-major): ldmatrix hands out k
        n = point(nest.n, 8 * nj + row)
        k = point(nest.k, kk + half * matrix)
        transpose = False
    else:  # rows are k: the transposed load hands out n
        n = point(nest.n, 8 * nj)
        k = point(nest.k, kk + half * matrix + row)
        transpose = True
    indices = _indices(b, nest.b.load, {iv(nest.n): n, iv(nest.k): k})
    return b.add(LdMatrixOp(nest.b.load.memref, indices, 2, transpose))


def _gathered(
    b: _Builder,
    operand: Operand,
    places: Iterable[list[tuple[affine.ForOp, AffineExpr]]],
    point: Point,
) -> SSAValue:
    """A tf32 fragment from one shared load per element (`places`: the loops' offsets of each
    register's element), for operands whose layout only a transposing ldmatrix would fit."""
    registers = [
        b.add(
            _reindexed_load(operand.load, {iv(loop): point(loop, offset) for loop, offset in place})
        )
        for place in places
    ]
    fragment = b.add(
        arith.ConstantOp(
            DenseIntOrFPElementsAttr.from_list(
                VectorType(Float32Type(), [len(registers), 1]), [0.0] * len(registers)
            )
        )
    )
    for r, value in enumerate(registers):
        fragment = b.add(vector.InsertOp(value, fragment, [r, 0]))
    return fragment


def shared_row_bytes(load: affine.LoadOp) -> int:
    """Bytes of one row (the last dimension) of the shared buffer `load` reads."""
    t = load.memref.type
    assert isinstance(t, MemRefType)
    return t.get_shape()[-1] * t.element_type.bitwidth // 8  # type: ignore[attr-defined]
