"""Grid-wide reductions: a large reduction loop at the start of a region, shared out over a grid.

Before (a region: runs on one block):        After:
    %s = affine.for %i = 0 to 2^26               kernel k0, grid of G blocks of T threads:
        iter_args(%acc = %zero) {                  each thread reduces i = (bx·T + tx), + G·T, …
      %x = affine.load %X[%i]                      from 0.0; the block combines its T sums
      %a = arith.addf %acc, %x                     (loops/gpu_region's tree) and thread 0
      affine.yield %a }                            stores the total in @partials[bx]
    affine.store %s, %out[0]                     the region (one block), as before, with
                                                   %s = affine.for %b = 0 to G iter_args(%zero)
                                                       { … %p = load @partials[%b] … addf }
                                                   (a reduction its T threads share out)

`partials` is a `memref.global` in global memory (address space 1) of the kernels' module, one
per reduced value, G elements: both kernels see the same array, nothing is allocated at run
time, and the launches of one stream run in order, so the region reads what the grid wrote.
Each partial sums a fixed set of iterations in a fixed order, and the region combines them in
a fixed order: the result does not change from run to run (floating-point sums are
reassociated, like every shared-out reduction: analysis/reduction.py).

`grid_reducible` decides (a reduction loop, no dependence carried through memory, at least
`GRID_MIN_TRIP` iterations or an unknown count, code every thread can run); `split_off` makes
the grid kernel's loop and the region's combining loop; `map_grid` maps the outlined loop.
Not checked here: that the loop's operands are host values (it must start its region).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import AffineMap

from loopopt.analysis.dependence import carried_by, dependences
from loopopt.analysis.reduction import Reduction, identity, merge, reductions
from loopopt.dialects import gpu_ext as gpu
from loopopt.dialects.loopopt import LOOP_NAME, MAPPING
from loopopt.loops.affine_maps import Bound, BoundBuilder
from loopopt.loops.bounds import new_loop
from loopopt.loops.gpu_kernel import BLOCK_LEVEL_WRITES, mark_sequential
from loopopt.loops.gpu_map import affine_if, constant_trip, index_value, is_shared
from loopopt.loops.gpu_region import Threads, neutral_values, reduce_over_block
from loopopt.loops.nest import loop_name
from loopopt.target import GLOBAL_SPACE

GRID_BLOCKS = 1024
"""Blocks of a grid-wide reduction (and partial results the region combines)."""
GRID_MIN_TRIP = 1 << 16
"""Iterations from which a reduction at the start of a region is shared out over a grid."""


def grid_reducible(loop: Operation) -> list[Reduction] | None:
    """The reductions of `loop` when it should be shared out over a grid (module docstring)."""
    if not isinstance(loop, affine.ForOp):
        return None
    found = reductions(loop)
    if found is None:
        return None
    trip = constant_trip(loop)
    if trip is not None and trip < GRID_MIN_TRIP:
        return None
    if any(identity(r.kind, loop.results[r.position].type) is None for r in found):
        return None
    for op in loop.walk():
        if op.name in BLOCK_LEVEL_WRITES:
            return None
        if isinstance(op, memref.AllocaOp | memref.AllocOp) and not is_shared(op.results[0].type):
            return None
    if carried_by(dependences(loop), loop):
        return None
    return found


def scratch(gmod: gpu.ModuleOp, loop: affine.ForOp, found: Sequence[Reduction]) -> list[str]:
    """One `memref.global` of GRID_BLOCKS partial results per reduced value of `loop`, in
    global memory of `gmod`; their names."""
    taken = {op.sym_name.data for op in gmod.body.block.ops if isinstance(op, memref.GlobalOp)}
    names: list[str] = []
    for r in found:
        n = 0
        while f"__partials_{n}" in taken:
            n += 1
        name = f"__partials_{n}"
        taken.add(name)
        t = _partials_type(loop.results[r.position].type)
        global_op = memref.GlobalOp.get(
            StringAttr(name), t, UnitAttr(), sym_visibility=StringAttr("private")
        )
        global_op.location = loop.location
        first = gmod.body.block.first_op
        if first is None:
            gmod.body.block.add_op(global_op)
        else:
            gmod.body.block.insert_op_before(global_op, first)
        names.append(name)
    return names


def _partials_type(element: Attribute) -> MemRefType:
    return MemRefType(element, [GRID_BLOCKS], memory_space=IntegerAttr(GLOBAL_SPACE, i64))


def _get(name: str, element: Attribute) -> memref.GetGlobalOp:
    op = memref.GetGlobalOp(SymbolRefAttr(name), _partials_type(element))
    op.memref.name_hint = "partials"
    return op


def split_off(
    loop: affine.ForOp, found: Sequence[Reduction], names: Sequence[str]
) -> tuple[affine.ForOp, affine.ForOp]:
    """(grid, combine): a copy of `loop` reducing from the neutral elements, put before it
    (to be outlined as the grid kernel), and the loop over the partial results that takes
    `loop`'s place (its results, from `loop`'s initial values)."""
    block = loop.parent_block()
    assert block is not None
    neutral = neutral_values(loop, found)
    grid = loop.clone()
    for k, value in enumerate(neutral):
        grid.operands[len(grid.operands) - len(neutral) + k] = value
    block.insert_op_before(grid, loop)
    combine = new_loop(Bound.constant(0), Bound.constant(GRID_BLOCKS), 1, list(loop.inits))
    name = loop_name(loop)
    combine.attributes[LOOP_NAME] = StringAttr(f"{name}_blocks" if name else "blocks")
    body = combine.body.block
    body.args[0].name_hint = f"{name}_blocks" if name else "blocks"
    terminator = body.last_op
    assert terminator is not None
    values: list[SSAValue] = []
    for r, partials in zip(found, names, strict=True):
        element = loop.results[r.position].type
        array = _get(partials, element)
        load = affine.LoadOp(array.memref, [body.args[0]], AffineMapAttr(AffineMap.identity(1)))
        both = merge(r, body.args[1 + r.position], load.results[0])
        body.insert_ops_before([array, load, both], terminator)
        values.append(both.results[0])
    terminator.operands = values
    block.insert_op_before(combine, loop)
    for old, new in zip(loop.results, combine.results, strict=True):
        old.replace_all_uses_with(new)
    loop.detach()
    loop.erase()
    return grid, combine


def map_grid(
    kernel: gpu.FuncOp,
    loop: affine.ForOp,
    found: Sequence[Reduction],
    names: Sequence[str],
    threads: int,
) -> None:
    """Map the outlined grid loop: thread tx of block bx reduces iterations bx·T + tx, + G·T,
    …; the block combines its T shares and thread 0 stores the total in the partials."""
    entry: Block = kernel.body.block
    bx = gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum("x")))
    tx = gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum("x")))
    bx.result.name_hint, tx.result.name_hint = "bx", "tx"
    builder = BoundBuilder()
    first = index_value(builder, [builder.dim(bx.result) * threads + builder.dim(tx.result)], "g")
    entry.insert_ops_before([bx, tx, first], entry.first_op)  # type: ignore[list-item]
    after = loop.next_op
    assert after is not None
    guard_builder = BoundBuilder()
    guard = affine_if(guard_builder, [], [guard_builder.dim(tx.result)])
    guard.attributes[MAPPING] = StringAttr("one thread")
    then = guard.then_region.block
    for r, partials in zip(found, names, strict=True):
        array = _get(partials, loop.results[r.position].type)
        index = AffineMapAttr(AffineMap.identity(1))
        store = affine.StoreOp(loop.results[r.position], array.memref, [bx.result], index)
        assert then.last_op is not None
        then.insert_ops_before([array, store], then.last_op)
    block = loop.parent_block()
    assert block is not None
    block.insert_op_before(guard, after)
    shares = Threads(tx.result, threads, first=first.results[0], stride=GRID_BLOCKS * threads)
    reduce_over_block(loop, found, shares, entry)
    mark_sequential(kernel)
    kernel.attributes[MAPPING] = DictionaryAttr(
        {"grid_reduction": StringAttr(loop_name(loop) or "?"), "blocks": StringAttr("partials")}
    )
    kernel.known_block_size = DenseArrayBase.from_list(i32, [threads, 1, 1])
