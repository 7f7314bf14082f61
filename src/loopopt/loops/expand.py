"""Array expansion: an array that each iteration of a band only reuses gets one copy per iteration.

    affine.for %r = 0 to 4 {                        %x = memref.alloc() : memref<4x5x6xf64>
      affine.for %q = 0 to 5 {                      affine.for %r = 0 to 4 {
        … sum[p] = 0.0 …                              affine.for %q = 0 to 5 {
        … sum[p] += A[r, q, s] * C4[s, p] …   ==>       … x[r, q, p] = 0.0 …
        … A[r, q, p] = sum[p] …                         … x[r, q, p] += A[r, q, s] * C4[s, p] …
    } }                                                 … A[r, q, p] = x[r, q, p] … } }
                                                    affine.for %sum_out0 = 0 to 6 {
                                                      sum[sum_out0] = x[3, 4, sum_out0] }
                                                    memref.dealloc %x

The band's loops carried only false dependences through `sum` (analysis/expansion.py proves
it); on `x` they carry none, so they can run in parallel. Every access of the array inside the
band indexes the new buffer by the band's iteration numbers ((iv - lower) / step) in front of its
own indices. After the band, a copy nest (`<array>_out<d>` loops) puts back what the last
iteration wrote, the array's final contents, and the buffer is freed. Not checked here:
`expandable`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.rewriter import Rewriter

from loopopt.analysis.expansion import Expansion
from loopopt.analysis.nest import constant_bounds, iv, loop_name, loops_in, step_of
from loopopt.dialects.loopopt import LOOP_NAME
from loopopt.loops.affine_maps import BoundBuilder
from loopopt.loops.tile import fresh_name


def expand(array: SSAValue, band: Sequence[affine.ForOp], plan: Expansion) -> SSAValue:
    """Expand `array` over `band` as `plan` says (see the module docstring); the new buffer."""
    t = array.type
    assert isinstance(t, MemRefType)
    shape = [*plan.trips, *t.get_shape()]
    alloc = memref.AllocOp.get(t.element_type, shape=shape)
    alloc.memref.name_hint = f"{array.name_hint or 'array'}_x"
    outer = band[0]
    block = outer.parent_block()
    assert block is not None
    block.insert_op_before(alloc, outer)
    accesses = [
        op
        for op in outer.walk()
        if isinstance(op, affine.LoadOp | affine.StoreOp) and op.memref is array
    ]
    for op in accesses:
        _retarget(op, alloc.memref, band)
    top: Operation = outer
    while top.parent_op() is not None and not isinstance(top.parent_op(), ModuleOp):
        top = top.parent_op()  # type: ignore[assignment]
    taken = {loop_name(loop) for loop in loops_in(top)}
    copy = _copy_out(array, alloc.memref, plan, taken)
    block.insert_ops_after([*copy, memref.DeallocOp.get(alloc.memref)], outer)
    return alloc.memref


def _iteration(loop: affine.ForOp, builder: BoundBuilder) -> AffineExpr:
    bounds = constant_bounds(loop)
    assert bounds is not None
    expr = builder.dim(iv(loop)) - bounds[0]
    step = step_of(loop)
    return expr if step == 1 else expr // step


def _retarget(
    op: affine.LoadOp | affine.StoreOp, buffer: SSAValue, band: Sequence[affine.ForOp]
) -> None:
    """Point `op` at `buffer`: the band's iteration numbers, then its own indices (every
    operand becomes a dimension of the new map)."""
    builder = BoundBuilder()
    front = [_iteration(loop, builder) for loop in band]
    old = op.map.data
    operands = list(op.indices)
    exprs = [builder.dim(v) for v in operands]
    rest = [
        r.replace_dims_and_symbols(exprs[: old.num_dims], exprs[old.num_dims :])
        for r in old.results
    ]
    amap = AffineMap(len(builder.dims), 0, tuple(front + rest))
    operands = list(builder.dims)
    new: Operation
    if isinstance(op, affine.LoadOp):
        new = affine.LoadOp(
            buffer, operands, affine.AffineMapAttr(amap), result_type=op.result.type
        )
    else:
        new = affine.StoreOp(op.value, buffer, operands, affine.AffineMapAttr(amap))
    new.attributes.update(op.attributes)
    Rewriter.replace_op(op, new)


def _copy_out(
    array: SSAValue, buffer: SSAValue, plan: Expansion, taken: set[str | None]
) -> list[Operation]:
    """The nest array[e] = buffer[last iteration, e] over the box the iterations write."""
    last = [AffineExpr.constant(trip - 1) for trip in plan.trips]
    return copy_box(array, buffer, plan.written, last, f"{array.name_hint or 'array'}_out", taken)


def copy_box(
    target: SSAValue,
    source: SSAValue,
    box: Sequence[tuple[int, int]],
    front: Sequence[AffineExpr],
    base: str,
    taken: set[str | None],
) -> list[Operation]:
    """The nest target[e] = source[*front, e] over `box` ([lo, hi) per dimension), its loops
    named `<base><d>` (fresh among `taken`, which gets them)."""
    rank = len(box)
    blocks = [Block(arg_types=[IndexType()]) for _ in range(rank)]
    coords: list[SSAValue] = [b.args[0] for b in blocks]
    dims = [AffineExpr.dimension(d) for d in range(rank)]
    load = affine.LoadOp(source, coords, affine.AffineMapAttr(AffineMap(rank, 0, (*front, *dims))))
    store = affine.StoreOp(load.result, target, coords)
    if not blocks:
        return [load, store]
    blocks[-1].add_ops([load, store])
    nest: affine.ForOp | None = None
    for d in reversed(range(rank)):
        if nest is not None:
            blocks[d].add_op(nest)
        blocks[d].add_op(affine.YieldOp.get())
        lo, hi = box[d]
        nest = affine.ForOp.from_region(
            [], [], [], [], _const_map(lo), _const_map(hi), Region(blocks[d])
        )
        name = fresh_name(taken, f"{base}{d}")
        taken.add(name)
        coords[d].name_hint = name
        nest.attributes[LOOP_NAME] = StringAttr(name)
    assert nest is not None
    return [nest]


def _const_map(value: int) -> affine.AffineMapAttr:
    return affine.AffineMapAttr(AffineMap(0, 0, (AffineExpr.constant(value),)))
