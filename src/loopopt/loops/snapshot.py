"""Snapshot: some reads of a nest read a copy of their array taken just before the nest.

    affine.for %i = 0 to 6 {                        %B_snap = memref.alloc() : memref<6x8xf64>
      affine.for %j = 0 to 8 {                      affine.for %B_snap0 = 0 to 6 {
        affine.for %k = %i + 1 to 6 {                 affine.for %B_snap1 = 0 to 8 {
          … B[k, j] …                       ==>         B_snap[.., ..] = B[.., ..] } }
    } }                                             affine.for %i … { … B_snap[k, j] … }
                                                    memref.dealloc %B_snap

The copy nest (`<array>_snap<d>` loops) copies the whole array; the reads keep their indices.
Not checked here: that the reads see no value written in the nest (analysis/snapshot.py), and
that the array has a static shape.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Operation, SSAValue

from loopopt.analysis.nest import loop_name, loops_in
from loopopt.loops.expand import copy_box


def snapshot(array: SSAValue, nest: affine.ForOp, reads: Sequence[affine.LoadOp]) -> SSAValue:
    """Copy `array` into a new buffer before `nest`, point `reads` at it, free it after `nest`;
    the buffer."""
    t = array.type
    assert isinstance(t, MemRefType)
    shape = t.get_shape()
    alloc = memref.AllocOp.get(t.element_type, shape=shape)
    base = array.name_hint or "array"
    alloc.memref.name_hint = f"{base}_snap"
    top: Operation = nest
    while top.parent_op() is not None and not isinstance(top.parent_op(), ModuleOp):
        top = top.parent_op()  # type: ignore[assignment]
    taken = {loop_name(loop) for loop in loops_in(top)}
    box = [(0, size) for size in shape]
    copy = copy_box(alloc.memref, array, box, [], f"{base}_snap", taken)
    block = nest.parent_block()
    assert block is not None
    block.insert_ops_before([alloc, *copy], nest)
    block.insert_op_after(memref.DeallocOp.get(alloc.memref), nest)
    for read in reads:
        assert read.memref is array
        read.operands[0] = alloc.memref
    return alloc.memref
