"""Tensor-core ops in the GPU emulator (gpu_emulator.py): nvgpu.ldmatrix and nvgpu.mma.sync
become exchanges through per-thread buffers between barriers, with PTX's fragment layouts
(dialects/nvgpu_mma.py), and the fragments (vectors) become their scalars.

    %a = nvgpu.ldmatrix %S[%r, %c] {numTiles = N, transpose = T}
→   rows[tid] = (%r, %c); gpu.barrier                      (every lane gives its row address)
    a(r, e) = %S[rows[warp base + source lane] + (0, column)]   (ldmatrix_source), per (r, e)
    gpu.barrier
    %d = nvgpu.mma.sync(%a, %b, %c)
→   frag[tid] = (A, B, C as f32; tf32: rounded like cvt.rna); gpu.barrier
    d(r, e) = c(r, e) + sum over k of A(m, k) * B(k, n), (m, n) = c_element(lane, r, e), each
              A(m, k) / B(k, n) read from the lane and register PTX puts it in;  gpu.barrier

Fragments are straight-line values here (gpu-mma makes them so): a vector carried by a loop
or a block argument is refused. Warps are the block's threads in linear order, 32 at a time;
a block of threads that is no multiple of 32 is refused (tensor-core ops need whole warps).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpu_shuffle_emulator import _Ops  # pyright: ignore[reportPrivateUsage]
from xdsl.dialects import arith, memref, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    VectorType,
    i32,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from loopopt.dialects import gpu_ext
from loopopt.dialects.nvgpu_mma import WARP, LdMatrixOp, MmaSyncOp

F32 = Float32Type()
SLOTS = 16
"""f32 slots per thread of the exchange buffer: A (8), B (4), C (4) of an m16n8k16."""


def _is_fragment_op(op: Operation) -> bool:
    return isinstance(op, LdMatrixOp | MmaSyncOp | vector.InsertOp | vector.ExtractOp) or (
        isinstance(op, arith.ConstantOp) and isinstance(op.result.type, VectorType)
    )


def emulate_mma(entry: Block, sizes: dict[str, int]) -> None:
    """Rewrite the tensor-core ops of the kernel body `entry`, launched on blocks of `sizes`
    threads per axis (module docstring)."""
    found = [op for op in entry.walk() if _is_fragment_op(op)]
    if not found:
        return
    x, y, z = sizes["x"], sizes["y"], sizes["z"]
    threads = x * y * z
    if threads % WARP:
        raise NotImplementedError("tensor-core ops need blocks of whole warps")
    for op in entry.walk():
        for region in op.regions:
            for block in region.blocks:
                if any(isinstance(a.type, VectorType) for a in block.args):
                    raise NotImplementedError("the emulator runs no fragment across a loop")
    top = _Ops()
    ids = [top.add(gpu_ext.ThreadIdOp(axis)) for axis in "xyz"]
    d = [AffineExpr.dimension(k) for k in range(3)]
    tid = top.apply(d[0] + x * (d[1] + y * d[2]), ids)
    lane = top.apply(AffineExpr.dimension(0) % WARP, [tid])
    base = top.apply((AffineExpr.dimension(0) // WARP) * WARP, [tid])
    rank = max((len(op.indices) for op in found if isinstance(op, LdMatrixOp)), default=1)
    rows = top.add(memref.AllocaOp.get(IndexType(), shape=[threads, rank]))
    frags = top.add(memref.AllocaOp.get(F32, shape=[threads, SLOTS]))
    assert entry.first_op is not None
    entry.insert_ops_before(top.ops, entry.first_op)
    state = _State(tid, lane, base, rows, frags)
    for op in found:
        state.rewrite(op)
    for op in reversed(found):  # users first
        op.detach()
        op.erase()


class _State:
    def __init__(
        self, tid: SSAValue, lane: SSAValue, base: SSAValue, rows: SSAValue, frags: SSAValue
    ) -> None:
        self.tid, self.lane, self.base, self.rows, self.frags = tid, lane, base, rows, frags
        self.scalars: dict[SSAValue, list[SSAValue]] = {}

    def rewrite(self, op: Operation) -> None:
        o = _Ops()
        if isinstance(op, arith.ConstantOp):
            t = op.result.type
            assert isinstance(t, VectorType) and isinstance(op.value, DenseIntOrFPElementsAttr)
            values = op.value.get_values()
            count = t.get_shape()[0] * t.get_shape()[1]
            if len(values) == 1:
                values = values * count
            self.scalars[op.result] = [
                o.add(arith.ConstantOp(FloatAttr(float(v), t.element_type))) for v in values
            ]
        elif isinstance(op, vector.InsertOp):
            position = self._position(op.dest.type, op.static_position.get_values())
            scalars = list(self.scalars[op.dest])
            scalars[position] = op.source
            self.scalars[op.result] = scalars
        elif isinstance(op, vector.ExtractOp):
            position = self._position(op.vector.type, op.static_position.get_values())
            op.result.replace_all_uses_with(self.scalars[op.vector][position])
        elif isinstance(op, LdMatrixOp):
            self.scalars[op.res] = self._ldmatrix(o, op)
        elif isinstance(op, MmaSyncOp):
            self.scalars[op.res] = self._mma(o, op)
        block = op.parent_block()
        assert block is not None
        block.insert_ops_before(o.ops, op)
        if not isinstance(op, vector.ExtractOp) and op.results[0].uses:
            for use in list(op.results[0].uses):
                if not _is_fragment_op(use.operation):
                    raise NotImplementedError(f"a fragment is used by {use.operation.name}")

    @staticmethod
    def _position(t: object, position: Sequence[int]) -> int:
        assert isinstance(t, VectorType)
        return position[0] * t.get_shape()[1] + position[1]

    def _lane_expr(self, o: _Ops, expr: AffineExpr) -> SSAValue:
        """`expr` of d0 = lane, plus the warp's first thread: a thread of the block."""
        return o.apply(
            AffineExpr.dimension(0) + expr.replace_dims_and_symbols([AffineExpr.dimension(1)], []),
            [self.base, self.lane],
        )

    def _ldmatrix(self, o: _Ops, op: LdMatrixOp) -> list[SSAValue]:
        for k, index in enumerate(op.indices):
            o.ops.append(memref.StoreOp.get(index, self.rows, [self.tid, o.index(k)]))
        o.ops.append(gpu_ext.BarrierOp())
        t = op.res.type
        assert isinstance(t, VectorType)
        tiles, per = t.get_shape()
        lane = AffineExpr.dimension(0)
        scalars: list[SSAValue] = []
        for r in range(tiles):
            for e in range(per):
                if op.transposed:
                    source, column = 8 * r + 2 * (lane % 4) + e, lane // 4
                else:
                    source, column = 8 * r + lane // 4, per * (lane % 4) + e
                src = self._lane_expr(o, source)
                indices = [
                    o.add(memref.LoadOp.get(self.rows, [src, o.index(k)]))
                    for k in range(len(op.indices))
                ]
                shift = o.apply(
                    AffineExpr.dimension(0)
                    + column.replace_dims_and_symbols(  # type: ignore[union-attr]
                        [AffineExpr.dimension(1)], []
                    )
                    if not isinstance(column, int)
                    else AffineExpr.dimension(0) + column,
                    [indices[-1], self.lane] if not isinstance(column, int) else [indices[-1]],
                )
                indices[-1] = shift
                scalars.append(o.add(memref.LoadOp.get(op.srcMemref, indices)))
        o.ops.append(gpu_ext.BarrierOp())
        return scalars

    def _mma(self, o: _Ops, op: MmaSyncOp) -> list[SSAValue]:
        tf32 = op.tf32Enabled is not None
        a, b, c = self.scalars[op.matrixA], self.scalars[op.matrixB], self.scalars[op.matrixC]
        for slot, value in enumerate([*a, *b, *c]):
            wide = value if isinstance(value.type, Float32Type) else o.add(arith.ExtFOp(value, F32))
            if tf32 and slot < len(a) + len(b):
                wide = _round_tf32(o, wide)
            o.ops.append(memref.StoreOp.get(wide, self.frags, [self.tid, o.index(slot)]))
        o.ops.append(gpu_ext.BarrierOp())
        lane = AffineExpr.dimension(0)
        g, t = lane // 4, lane % 4
        _, _, depth = op.shape
        result: list[SSAValue] = []
        for r in range(2):
            for e in range(2):
                total = o.add(
                    memref.LoadOp.get(self.frags, [self.tid, o.index(len(a) + len(b) + 2 * r + e)])
                )
                n = 2 * t + e  # the element's column; its row m = g + 8r
                for kk in range(depth):
                    if depth == 16:
                        a_lane, a_slot = 4 * g + (kk % 8) // 2, 2 * (r + 2 * (kk // 8)) + kk % 2
                        b_lane = 4 * n + (kk % 8) // 2
                        b_slot = len(a) + 2 * (kk // 8) + kk % 2
                    else:  # m16n8k8 tf32: one element per register
                        a_lane, a_slot = 4 * g + kk % 4, r + 2 * (kk // 4)
                        b_lane, b_slot = 4 * n + kk % 4, len(a) + kk // 4
                    x = o.add(
                        memref.LoadOp.get(self.frags, [self._lane_expr(o, a_lane), o.index(a_slot)])
                    )
                    y = o.add(
                        memref.LoadOp.get(self.frags, [self._lane_expr(o, b_lane), o.index(b_slot)])
                    )
                    total = o.add(arith.AddfOp(total, o.add(arith.MulfOp(x, y))))
                result.append(total)
        o.ops.append(gpu_ext.BarrierOp())
        return result


def _round_tf32(o: _Ops, value: SSAValue) -> SSAValue:
    """cvt.rna.tf32.f32: keep 10 mantissa bits, rounding to nearest, ties away from zero."""
    bits = o.add(arith.BitcastOp(value, i32))
    up = o.add(arith.AddiOp(bits, o.add(arith.ConstantOp(IntegerAttr(0x1000, i32)))))
    kept = o.add(arith.AndIOp(up, o.add(arith.ConstantOp(IntegerAttr(-0x2000, i32)))))
    return o.add(arith.BitcastOp(kept, F32))
