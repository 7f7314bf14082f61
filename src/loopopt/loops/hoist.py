"""Hoist a partly invariant expression into an array computed before its nest.

    affine.for %i = 0 to 4 {                       %p_inv = memref.alloc() : memref<4x5xf32>
      affine.for %k = 0 to 5 {                     affine.for %i_1 = 0 to 4 {
        affine.for %j = 0 to 6 {                     affine.for %k_1 = 0 to 5 {
          %a = affine.load %A[%i, %k]                  %a = affine.load %A[%i_1, %k_1]
          %p = arith.mulf %alpha, %a      ==>          %p = arith.mulf %alpha, %a
          … %p …                                       affine.store %p, %p_inv[%i_1, %k_1] } }
    } } }                                          affine.for %i … %k … %j {
                                                     %p = affine.load %p_inv[%i, %k]
                                                     … %p … }
                                                   memref.dealloc %p_inv

The new nest runs the Invariant's loops (their bounds and steps; or, where their bounds use
other loops' IVs, their box: syr2k's j <= i becomes 0 <= j < N; named `<loop>_inv`, fresh in
the function) around a copy of its tree, and stores the value at (IV - lowest IV) / step of
each loop (the step only where the lower bound is a constant); the nest reads it there. The
buffer is freed after the nest. Not checked here: that the value is an `Invariant`
(analysis/invariants.py), which makes the reads exact.
"""

from __future__ import annotations

from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import IndexType, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.analysis.access import memref_name
from loopopt.analysis.invariants import Invariant, stride
from loopopt.analysis.nest import iv, loop_name, loops_in, step_of
from loopopt.dialects.loopopt import LOOP_NAME
from loopopt.loops.tile import fresh_name

SUFFIX = "_inv"
"""Loops and buffers that hoisting makes are named after what they come from, with this."""


def hoist(invariant: Invariant, nest: affine.ForOp) -> SSAValue:
    """Compute `invariant` into a new buffer before `nest` and read it there instead; the
    buffer (see the module docstring)."""
    op = invariant.op
    result = op.results[0]
    shape = [(hi - lo) // stride(loop) + 1 for loop, (lo, hi) in _pairs(invariant)]
    alloc = memref.AllocOp.get(result.type, shape=shape)
    loads = [t for t in invariant.tree if isinstance(t, affine.LoadOp)]
    base = (result.name_hint or memref_name(loads[0].memref)) + SUFFIX
    alloc.memref.name_hint = base
    block = nest.parent_block()
    assert block is not None
    block.insert_ops_before([alloc, _compute(invariant, alloc.memref, nest)], nest)
    block.insert_op_after(memref.DeallocOp.get(alloc.memref), nest)
    read = affine.LoadOp(
        alloc.memref, [iv(loop) for loop in invariant.loops], _index_map(invariant)
    )
    read.result.name_hint = result.name_hint
    parent = op.parent_block()
    assert parent is not None
    parent.insert_op_before(read, op)
    result.replace_all_uses_with(read.result)
    for dead in reversed(invariant.tree):
        if not any(r.uses for r in dead.results):
            dead.detach()
            dead.erase()
    return alloc.memref


def _pairs(invariant: Invariant) -> list[tuple[affine.ForOp, tuple[int, int]]]:
    return list(zip(invariant.loops, invariant.box, strict=True))


def _index_map(invariant: Invariant) -> affine.AffineMapAttr:
    """(IV - lowest) floordiv stride of each loop: the buffer's index."""
    exprs = []
    for d, (loop, (lo, _)) in enumerate(_pairs(invariant)):
        expr = AffineExpr.dimension(d) - lo
        every = stride(loop)
        exprs.append(expr if every == 1 else expr // every)
    return affine.AffineMapAttr(AffineMap(len(exprs), 0, tuple(exprs)))


def _compute(invariant: Invariant, buffer: SSAValue, nest: affine.ForOp) -> Operation:
    """The nest of the invariant's loops that stores its value into `buffer`."""
    top: Operation = nest
    while top.parent_op() is not None and not isinstance(top.parent_op(), ModuleOp):
        top = top.parent_op()  # type: ignore[assignment]
    taken: set[str | None] = {loop_name(loop) for loop in loops_in(top)}
    blocks = [Block(arg_types=[IndexType()]) for _ in invariant.loops]
    mapping: dict[SSAValue, SSAValue] = {
        iv(loop): b.args[0] for loop, b in zip(invariant.loops, blocks, strict=True)
    }
    body: list[Operation] = []
    for op in invariant.tree:
        copy = op.clone(value_mapper=mapping)
        for old, new in zip(op.results, copy.results, strict=True):
            mapping[old] = new
        body.append(copy)
    coords = [b.args[0] for b in blocks]
    body.append(
        affine.StoreOp(mapping[invariant.op.results[0]], buffer, coords, _index_map(invariant))
    )
    blocks[-1].add_ops(body)
    inner: affine.ForOp | None = None
    for d in reversed(range(len(blocks))):
        loop = invariant.loops[d]
        if inner is not None:
            blocks[d].add_op(inner)
        blocks[d].add_op(affine.YieldOp.get())
        if invariant.own_bounds:
            inner = affine.ForOp.from_region(
                [mapping[v] for v in loop.lowerBoundOperands],
                [mapping[v] for v in loop.upperBoundOperands],
                [],
                [],
                loop.lowerBoundMap,
                loop.upperBoundMap,
                Region(blocks[d]),
                step_of(loop),
            )
        else:
            lo, hi = invariant.box[d]
            region = Region(blocks[d])
            inner = affine.ForOp.from_region([], [], [], [], lo, hi + 1, region, stride(loop))
        name = fresh_name(taken, f"{loop_name(loop) or 'loop'}{SUFFIX}")
        taken.add(name)
        blocks[d].args[0].name_hint = name
        inner.attributes[LOOP_NAME] = StringAttr(name)
    assert inner is not None
    return inner
