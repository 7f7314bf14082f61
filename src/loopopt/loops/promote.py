"""Promotion: copy an array's footprint under a loop into a local buffer and use the buffer.

Before (L = %kt, A's footprint: origin (%it, %kt), extents (32, 8)):
    affine.for %kt = ... {
      affine.for %i = ... { affine.for %k = ... { %a = affine.load %A[%i, %k] ... } }
    }
After:
    affine.for %kt = ... {
      %A_local = memref.alloca() : memref<32x8xf32>
      affine.for %c0 = 0 to min(32, 37 - %it) {               // A_copy_in_0, loopopt.copy
        affine.for %c1 = 0 to min(8, 23 - %kt) {              // A_copy_in_1, loopopt.copy
          %v = affine.load %A[%it + %c0, %kt + %c1]
          affine.store %v, %A_local[%c0, %c1]
      } }
      affine.for %i = ... { affine.for %k = ... {
        %a = affine.load %A_local[%i - %it, %k - %kt] ... } }
    }

A copy-out nest (`A_copy_out_<d>`) follows the body when the array is written. The copy loops
run over buffer coordinates from max(region lowers) - origin to min(region uppers) - origin,
so they start at 0 and stop at the extent where no guard is needed. `pad` elements are added
to the innermost buffer dimension (against shared-memory bank conflicts); they are never
touched. Or the buffer is swizzled (`swizzle`, `#loopopt.swizzle`): element (r, c) stored at
column `swizzled_column(r, c)`, 16-byte chunks of a row permuted by XOR with r mod 8, so that
rows read at one column, and 16-byte copies of consecutive chunks, fall in different banks
without padding; the accesses keep their logical indices (the lowering swizzles them).
With `transpose` the buffer holds the box with its dimensions reversed (a thread's
register tile of `A[i, k]`, rows i..i+7 at one k, becomes contiguous: vector loads).
Dynamic array sizes used by a guard are read with memref.dim. The buffer is one per
iteration of the loop; the MLIR text loopopt writes has it at the entry of the function instead
(`loopopt.iteration_buffers`: upstream's lowering would grow the stack in every iteration).

Not checked here (the footprint analysis does it): that the footprint covers every access and
that no other memref aliases the array.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects import affine, arith, memref
from xdsl.dialects.builtin import (
    AffineMapAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.ir.affine.affine_expr import AffineSymExpr

from loopopt.analysis.footprint import Footprint, array_name
from loopopt.analysis.footprint import Region as CopyRegion
from loopopt.dialects.layout import SwizzleLayoutAttr
from loopopt.dialects.loopopt import COPY, LOOP_NAME
from loopopt.loops.affine_maps import constant_difference
from loopopt.loops.guard import Guard
from loopopt.loops.pad import new_padded_load
from loopopt.loops.padded_access import padded_load
from loopopt.lowering.llvm_common import element_bytes


def buffer_shape(extents: Sequence[int], pad: int = 0, transpose: bool = False) -> list[int]:
    """The shape of the buffer `promote` makes for a box of `extents` (the array's order):
    dimensions reversed when `transpose`, `pad` elements added to the innermost. The schedule
    model sizes shared memory with it."""
    ordered = list(extents[::-1] if transpose else extents)
    return [*ordered[:-1], ordered[-1] + pad] if ordered else []


SWIZZLE_CHUNK_BYTES = 16
"""The unit a swizzle moves: 16 bytes (a cp.async copy, an ld.shared.v4, a row of ldmatrix)."""
SWIZZLE_PERIOD = 8
"""The most chunks a row's swizzle permutes: 8 of 16 bytes span the 32 banks of 4 bytes."""


def swizzle_params(row_elements: int, elem_bytes: int) -> tuple[int, int] | None:
    """(chunk, period) of the XOR swizzle of rows of `row_elements` elements of `elem_bytes`:
    chunks of 16 bytes (4 f32, 8 f16), the row index taken modulo the largest power of two up
    to SWIZZLE_PERIOD that divides the row's chunks (rows of 64 bytes: 4, of 128 bytes and
    more: 8), so that a permuted chunk stays in its row. None when a row is not a whole
    number of at least two chunks."""
    if elem_bytes > SWIZZLE_CHUNK_BYTES or SWIZZLE_CHUNK_BYTES % elem_bytes:
        return None
    chunk = SWIZZLE_CHUNK_BYTES // elem_bytes
    if row_elements % chunk or row_elements < 2 * chunk:
        return None
    chunks = row_elements // chunk
    period = max(p for p in (1, 2, 4, 8) if p <= SWIZZLE_PERIOD and chunks % p == 0)
    return chunk, period


def swizzle_mask(row: Any, chunk: int, period: int) -> Any:
    """What a swizzled row XORs its column indices with: (row mod period) * chunk (a multiple
    of the chunk: the offset within a chunk is kept). Of integers, integer arrays (the cost
    model's layout, schedule/resources.py) or affine expressions (the lowering,
    lowering/swizzle.py)."""
    return (row % period) * chunk


def swizzled_column(row: Any, column: Any, chunk: int, period: int) -> Any:
    """The column where a swizzled buffer stores element (row, column) (`#loopopt.swizzle`):
    chunk column / chunk XOR row mod period. A bijection of each row's columns; down one
    column, `period` consecutive rows fall in `period` different chunks (16-byte pieces of
    different banks), and along one row `period` consecutive chunks stay distinct."""
    return column ^ swizzle_mask(row, chunk, period)


def promote(
    loop: affine.ForOp,
    fp: Footprint,
    memory_space: int | None = None,
    pad: int = 0,
    name: str | None = None,
    transpose: bool = False,
    swizzle: bool = False,
) -> SSAValue:
    """Promote `fp.memref` (its footprint under `loop`) into a buffer, returned, allocated at
    the start of the body in `memory_space` (an integer address space: 3 is GPU shared memory;
    None, no memory space). `name` prefixes the buffer (`A_local`, `A_shared`) and the copy
    loops (`A_copy_in_0` ...); default: the array's name. `transpose` stores the box with its
    dimensions reversed (`A[i, k]` at `A_shared[k, i]`; the copy loops keep the array's order,
    so global reads stay contiguous). `swizzle` gives the buffer the XOR-swizzled layout of
    its rows (`swizzle_params`; the caller checks that they can be)."""
    array = fp.memref
    name = name if name is not None else array_name(array)
    array_type = array.type
    assert isinstance(array_type, MemRefType)
    shape = buffer_shape(fp.extents, pad, transpose)
    space = IntegerAttr(memory_space, i64) if memory_space is not None else NoneAttr()
    layout: SwizzleLayoutAttr | NoneAttr = NoneAttr()
    if swizzle:
        params = swizzle_params(shape[-1], element_bytes(array_type.element_type))
        assert params is not None and len(shape) >= 2, "promote: rows that cannot be swizzled"
        layout = SwizzleLayoutAttr(*params)
    alloca = memref.AllocaOp.get(
        array_type.element_type, shape=shape, layout=layout, memory_space=space
    )
    buffer = alloca.memref
    buffer.name_hint = f"{name}_{'local' if memory_space is None else 'shared'}"
    block = loop.body.block
    first = _after_prologue(block, array)
    sizes = _dynamic_sizes(array, fp)
    for op in [*(op for pair in sizes.values() for op in pair), alloca]:
        block.insert_op_before(op, first)
    size_values = {d: pair[1].results[0] for d, pair in sizes.items()}
    padded = [a for a in fp.accesses if _padded_parent(a) is not None]
    if fp.copy_in is not None:
        for op in _copy_nest(
            fp, fp.copy_in, buffer, size_values, f"{name}_copy_in", True, transpose, bool(padded)
        ):
            block.insert_op_before(op, first)
    for access in fp.accesses:
        new = _retarget(access, buffer, fp, transpose)
        if access in padded:
            _unwrap(new)
    if fp.copy_out is not None:
        last = block.last_op
        assert last is not None
        for op in _copy_nest(
            fp, fp.copy_out, buffer, size_values, f"{name}_copy_out", False, transpose
        ):
            block.insert_op_before(op, last)
    return buffer


def _after_prologue(block: Block, array: SSAValue) -> Operation:
    """Where the buffer and copy-in go: after the buffers and copy-in loops of earlier
    promotions (in order of promotion), but before any op that touches `array`."""
    for op in block.ops:
        copy_loop = isinstance(op, affine.ForOp) and COPY in op.attributes
        prologue = copy_loop or isinstance(op, memref.AllocaOp | memref.DimOp | arith.ConstantOp)
        if not prologue or any(array in inner.operands for inner in op.walk()):
            return op
    raise ValueError("a loop body without terminator")


def _dynamic_sizes(array: SSAValue, fp: Footprint) -> dict[int, tuple[Operation, Operation]]:
    """(index constant, memref.dim) for each dynamic size a copy region mentions."""
    used: set[int] = set()
    for region in (fp.copy_in, fp.copy_out):
        if region is not None:
            for terms in (*region.lowers, *region.uppers):
                for term in terms:
                    used |= {e.position for e in term.dfs() if _is_symbol(e)}
    result: dict[int, tuple[Operation, Operation]] = {}
    for d in sorted(used):
        index = arith.ConstantOp(IntegerAttr(d, IndexType()))
        result[d] = (index, memref.DimOp(array, index.result))
    return result


def _is_symbol(expr: AffineExpr) -> bool:
    return isinstance(expr, AffineSymExpr)


def _compact(
    exprs: Sequence[AffineExpr], dims: Sequence[SSAValue], symbols: dict[int, SSAValue]
) -> tuple[AffineMapAttr, list[SSAValue]]:
    """A map of `exprs` over only the dims and symbols they use, with its operands."""
    exprs = [e.simplify(len(dims), max(symbols, default=-1) + 1) for e in exprs]
    used_dims = sorted(set().union(*(e.used_dims() for e in exprs)))
    used_syms = sorted({s.position for e in exprs for s in e.dfs() if _is_symbol(s)})
    new_dims = [
        AffineExpr.dimension(used_dims.index(d)) if d in used_dims else AffineExpr.constant(0)
        for d in range(len(dims))
    ]
    new_syms = [
        AffineExpr.symbol(used_syms.index(s)) if s in used_syms else AffineExpr.constant(0)
        for s in range(max(symbols, default=-1) + 1)
    ]
    results = tuple(e.replace_dims_and_symbols(new_dims, new_syms) for e in exprs)
    operands = [dims[d] for d in used_dims] + [symbols[s] for s in used_syms]
    return AffineMapAttr(AffineMap(len(used_dims), len(used_syms), results)), operands


def _padded_parent(access: affine.LoadOp | affine.StoreOp) -> affine.IfOp | None:
    """The padded load (loops/padded_access.py) whose load `access` is."""
    parent = access.parent_op()
    if parent is None or padded_load(parent) is not access:
        return None
    assert isinstance(parent, affine.IfOp)
    return parent


def _unwrap(load: Operation) -> None:
    """Replace the padded load around `load` (now a buffer read) by `load`: the buffer holds
    zeros where the padded load yielded them."""
    if_op = load.parent_op()
    assert isinstance(if_op, affine.IfOp)
    load.detach()
    parent = if_op.parent_block()
    assert parent is not None
    parent.insert_op_before(load, if_op)
    if_op.results[0].replace_all_uses_with(load.results[0])
    parent.erase_op(if_op)


def _fill_guard(
    region: CopyRegion, fp: Footprint, coords: Sequence[SSAValue], sizes: dict[int, SSAValue]
) -> Guard | None:
    """Where an element of a full-box copy lies in `region` (conditions `>= 0`, leaving out
    `c >= 0` and `E - 1 - c >= 0` for a coordinate c of extent E); None where it always does."""
    context = list(fp.context)
    num_dims = len(context) + len(coords)
    conditions: list[AffineExpr] = []
    for d, extent in enumerate(fp.extents):
        coord = AffineExpr.dimension(len(context) + d)
        for condition in (
            *(coord - (t - fp.origin[d]) for t in region.lowers[d]),
            *((t - fp.origin[d]) - coord - 1 for t in region.uppers[d]),
        ):
            above = constant_difference(condition, coord, num_dims)
            below = constant_difference(condition, AffineExpr.constant(0) - coord, num_dims)
            if not (above is not None and above >= 0 or below is not None and below >= extent - 1):
                conditions.append(condition)
    if not conditions:
        return None
    cmap, operands = _compact(conditions, [*context, *coords], sizes)
    return Guard(cmap.data, tuple(operands))


def _fill_load(load: affine.LoadOp, guard: Guard | None) -> Operation:
    """`load` where `guard` holds, else 0.0 (a full-box copy of padded loads)."""
    return load if guard is None else new_padded_load(load, guard, padded=False)


def _copy_nest(
    fp: Footprint,
    region: CopyRegion,
    buffer: SSAValue,
    sizes: dict[int, SSAValue],
    name: str,
    into_buffer: bool,
    transpose: bool,
    fill: bool = False,
) -> list[Operation]:
    """The loop nest copying `region` between the array and the buffer (a rank-0 array: the
    load and store alone). `fill` (copy-in only): the nest covers the whole box and stores
    0.0 outside `region` (for padded loads, which read 0.0 outside the array)."""
    rank = len(fp.extents)
    blocks = [Block(arg_types=[IndexType()]) for _ in range(rank)]
    coords = [b.args[0] for b in blocks]
    for d, coord in enumerate(coords):
        coord.name_hint = f"{name.replace('_copy', '')}{d}"
    context = list(fp.context)
    at_array = [fp.origin[d] + AffineExpr.dimension(len(context) + d) for d in range(rank)]
    array_map, array_operands = _compact(at_array, [*context, *coords], sizes)
    innermost = blocks[-1] if blocks else None
    at_buffer = coords[::-1] if transpose else coords
    if into_buffer:
        load = affine.LoadOp(fp.memref, array_operands, array_map)
        value = _fill_load(load, _fill_guard(region, fp, coords, sizes) if fill else None)
        store = affine.StoreOp(value.results[0], buffer, at_buffer)
    else:
        value = load = affine.LoadOp(buffer, at_buffer)
        store = affine.StoreOp(load.result, fp.memref, array_operands, array_map)
    if innermost is None:
        return [value, store]
    innermost.add_ops([value, store])
    nest: Operation | None = None
    for d in reversed(range(rank)):
        if nest is not None:
            blocks[d].add_op(nest)
        blocks[d].add_op(affine.YieldOp.get())
        lower = [t - fp.origin[d] for t in region.lowers[d]]
        upper = [t - fp.origin[d] for t in region.uppers[d]]
        if fill:
            lower, upper = [AffineExpr.constant(0)], [AffineExpr.constant(fp.extents[d])]
        lb_map, lb_operands = _compact(lower, context, sizes)
        ub_map, ub_operands = _compact(upper, context, sizes)
        nest = affine.ForOp.from_region(
            lb_operands, ub_operands, [], [], lb_map, ub_map, Region(blocks[d])
        )
        nest.attributes[LOOP_NAME] = StringAttr(f"{name}_{d}")
        nest.attributes[COPY] = UnitAttr()
    assert nest is not None
    return [nest]


def _retarget(
    access: affine.LoadOp | affine.StoreOp, buffer: SSAValue, fp: Footprint, transpose: bool
) -> Operation:
    """Make `access` index the buffer: original index minus the box origin (dimensions
    reversed with `transpose`).

    The new map takes every operand as a symbol, as xDSL's parser builds access maps (its
    printer shows mixed dims and symbols wrongly)."""
    amap = access.map.data
    operands = list(access.indices)
    dims, syms = operands[: amap.num_dims], operands[amap.num_dims :]
    ordered = [*dims, *syms]
    extra = [v for v in dict.fromkeys(fp.context) if v not in ordered]
    everything = [*ordered, *extra]
    as_dim = [AffineExpr.dimension(i) for i in range(len(everything))]  # MLIR's access form
    position = {v: as_dim[i] for i, v in reversed(list(enumerate(everything)))}
    context = [position[v] for v in fp.context]
    results = tuple(
        (
            r.replace_dims_and_symbols(as_dim[: len(dims)], as_dim[len(dims) :])
            - o.replace_dims_and_symbols(context, [])
        ).simplify(len(everything), 0)
        for r, o in zip(amap.results, fp.origin, strict=True)
    )
    if transpose:
        results = results[::-1]
    new_map = AffineMapAttr(AffineMap(len(everything), 0, results))
    if isinstance(access, affine.LoadOp):
        new: Operation = affine.LoadOp(buffer, everything, new_map, access.result.type)
        access.result.replace_all_uses_with(new.results[0])
    else:
        new = affine.StoreOp(access.value, buffer, everything, new_map)
    parent = access.parent_block()
    assert parent is not None
    parent.insert_op_before(new, access)
    parent.erase_op(access)
    return new
