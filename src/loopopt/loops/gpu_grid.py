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

With atomics (`gpu-map-loops{reductions=grid-atomic}`), a one-thread kernel first sets an
accumulator per reduced value (`__total_N`, one element) to the neutral element, thread 0 of
each block adds its block's total into it with one `memref.atomic_rmw` (float add: `fadd`;
float min/max: the ordered-integer trick of lowering/atomic.py), and the region combines the
loop's initial value with the accumulator: the initial value counts exactly once. The order in
which blocks add is the hardware's: float sums may differ from run to run in the last bits.
Products have no atomic: they keep the partials.

`grid_reducible` decides (a reduction loop, no dependence carried through memory, at least
`GRID_MIN_TRIP` iterations or an unknown count, code every thread can run); `split_off` makes
the grid kernel's loop and the region's combining loop; `map_grid` maps the outlined loop.
Not checked here: that the loop's operands are host values (it must start its region).
`grid_start` finds the loop: the region's first op, or a loop after ops that only read memory
and compute none of its values but its initial ones (`m = x[0]; for i: m = max(m, x[i])`): the
grid then runs ahead of them (`hoist_grid`), and the region combines the partials with `m`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, arith, gpu, memref
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.analysis.dependence import carried_by, dependences
from loopopt.analysis.reduction import Reduction, constant, identity, merge, reductions
from loopopt.dialects import gpu_ext
from loopopt.dialects.loopopt import LOOP_NAME, MAPPING
from loopopt.loops.affine_maps import Bound, BoundBuilder
from loopopt.loops.bounds import new_loop
from loopopt.loops.gpu_kernel import BLOCK_LEVEL_WRITES, mark_sequential
from loopopt.loops.gpu_map import affine_if, constant_trip, index_value, is_shared
from loopopt.loops.gpu_region import Threads, neutral_values, reduce_over_block
from loopopt.loops.nest import loop_name
from loopopt.lowering.atomic import ATOMIC_KINDS
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


READS = frozenset(
    {"affine.load", "memref.load", "memref.dim", "affine.apply", "affine.min", "affine.max"}
    | {"affine.for", "affine.if", "affine.yield", "scf.if", "scf.for", "scf.yield"}
)
"""Ops that neither write memory nor synchronize (with arith's and math's)."""


def _reads_only(op: Operation) -> bool:
    return all(
        inner.name in READS or inner.name.startswith(("arith.", "math.")) for inner in op.walk()
    )


def grid_start(ops: Sequence[Operation]) -> tuple[int, list[Reduction]] | None:
    """The position among a region's `ops` of the loop to share out over a grid, and its
    reductions (module docstring); None where there is none."""
    for k, op in enumerate(ops):
        found = grid_reducible(op)
        if found is not None:
            assert isinstance(op, affine.ForOp)
            return (k, found) if k == 0 or _independent(op, ops[:k]) else None
        if not _reads_only(op):
            return None
    return None


def _independent(loop: affine.ForOp, before: Sequence[Operation]) -> bool:
    """`before` computes none of the values `loop` uses but its initial values."""
    used = [*loop.lowerBoundOperands, *loop.upperBoundOperands]
    used += [v for inner in loop.walk() if inner is not loop for v in inner.operands]
    for value in used:
        owner = value.owner
        if isinstance(owner, Block):
            owner = owner.parent_op()
        if owner is not None and any(b.is_ancestor(owner) for b in before):
            return False
    return True


def hoist_grid(grid: affine.ForOp, start: Operation) -> None:
    """Move the grid loop `split_off` made (and the neutral elements it starts from) ahead of
    `start`, the region's first op (`grid_start` checked that it may run there)."""
    block = grid.parent_block()
    assert block is not None
    for value in grid.inits:
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and owner.parent_block() is block:
            owner.detach()
            block.insert_op_before(owner, start)
    grid.detach()
    block.insert_op_before(grid, start)


def scratch(
    gmod: gpu.ModuleOp, loop: affine.ForOp, found: Sequence[Reduction], count: int = GRID_BLOCKS
) -> list[str]:
    """One `memref.global` of `count` partial results (GRID_BLOCKS, or 1 accumulator) per
    reduced value of `loop`, in global memory of `gmod`; their names."""
    taken = {op.sym_name.data for op in gmod.body.block.ops if isinstance(op, memref.GlobalOp)}
    prefix = "__partials" if count > 1 else "__total"
    names: list[str] = []
    for r in found:
        n = 0
        while f"{prefix}_{n}" in taken:
            n += 1
        name = f"{prefix}_{n}"
        taken.add(name)
        t = _partials_type(loop.results[r.position].type, count)
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


def _partials_type(element: Attribute, count: int) -> MemRefType:
    return MemRefType(element, [count], memory_space=IntegerAttr(GLOBAL_SPACE, i64))


def _get(name: str, element: Attribute, count: int = GRID_BLOCKS) -> memref.GetGlobalOp:
    op = memref.GetGlobalOp(SymbolRefAttr(name), _partials_type(element, count))
    op.memref.name_hint = "partials" if count > 1 else "total"
    return op


def atomic_kind(r: Reduction, element: Attribute) -> int | None:
    """The `memref.atomic_rmw` kind that adds a block's result of `r` into an accumulator,
    or None (a product: no atomic multiplies)."""
    floating = isinstance(element, AnyFloat)
    names = {
        "add": "addf" if floating else "addi",
        "sub": "addf" if floating else "addi",
        "max": "maximumf" if floating else "maxs",
        "min": "minimumf" if floating else "mins",
        "maxu": "maxu",
        "minu": "minu",
    }
    if r.kind not in names or not isinstance(element, AnyFloat | IntegerType):
        return None
    return ATOMIC_KINDS[names[r.kind]]


def atomic_reducible(loop: affine.ForOp, found: Sequence[Reduction]) -> bool:
    """Every reduction of `loop` has an atomic (see `atomic_kind`)."""
    return all(atomic_kind(r, loop.results[r.position].type) is not None for r in found)


def reset_ops(
    loop: affine.ForOp, found: Sequence[Reduction], names: Sequence[str]
) -> list[Operation]:
    """Ops that set each accumulator to its neutral element (a one-thread kernel before the
    grid's: the accumulators then hold the grid's result alone, and the region adds the
    initial value once)."""
    ops: list[Operation] = []
    for r, name in zip(found, names, strict=True):
        element = loop.results[r.position].type
        array = _get(name, element, 1)
        neutral = constant(r.kind, element)
        assert neutral is not None
        zero = AffineMapAttr(AffineMap(0, 0, (AffineExpr.constant(0),)))
        ops += [array, neutral, affine.StoreOp(neutral.result, array.memref, [], zero)]
    return ops


def split_off_atomic(
    loop: affine.ForOp, found: Sequence[Reduction], names: Sequence[str]
) -> tuple[affine.ForOp, list[Operation]]:
    """(grid, reads): the grid loop (a copy of `loop` from the neutral elements, put before
    it), and the ops that take `loop`'s place: its initial values combined with the
    accumulators, read after the grid."""
    block = loop.parent_block()
    assert block is not None
    neutral = neutral_values(loop, found)
    grid = loop.clone()
    for k, value in enumerate(neutral):
        grid.operands[len(grid.operands) - len(neutral) + k] = value
    block.insert_op_before(grid, loop)
    zero = AffineMapAttr(AffineMap(0, 0, (AffineExpr.constant(0),)))
    reads: list[Operation] = []
    for r, name, init in zip(found, names, loop.inits, strict=True):
        element = loop.results[r.position].type
        array = _get(name, element, 1)
        total = affine.LoadOp(array.memref, [], zero)
        both = merge(r, init, total.results[0])
        reads += [array, total, both]
        loop.results[r.position].replace_all_uses_with(both.results[0])
    block.insert_ops_before(reads, loop)
    loop.detach()
    loop.erase()
    return grid, reads


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
    atomic: bool = False,
) -> None:
    """Map the outlined grid loop: thread tx of block bx reduces iterations bx·T + tx, + G·T,
    …; the block combines its T shares and thread 0 stores the total in the partials (or,
    `atomic`, adds it into the accumulators with one `memref.atomic_rmw`)."""
    entry: Block = kernel.body.block
    bx = gpu_ext.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum("x")))
    tx = gpu_ext.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum("x")))
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
        element = loop.results[r.position].type
        value = loop.results[r.position]
        ops: list[Operation]
        if atomic:
            array = _get(partials, element, 1)
            zero = arith.ConstantOp(IntegerAttr.from_index_int_value(0))
            kind = atomic_kind(r, element)
            assert kind is not None
            add = memref.AtomicRMWOp.build(
                operands=[value, array.memref, [zero.result]],
                result_types=[element],
                properties={"kind": IntegerAttr(kind, i64)},
            )
            ops = [array, zero, add]
        else:
            array = _get(partials, element)
            index = AffineMapAttr(AffineMap.identity(1))
            ops = [array, affine.StoreOp(value, array.memref, [bx.result], index)]
        assert then.last_op is not None
        then.insert_ops_before(ops, then.last_op)
    block = loop.parent_block()
    assert block is not None
    block.insert_op_before(guard, after)
    shares = Threads(tx.result, threads, first=first.results[0], stride=GRID_BLOCKS * threads)
    reduce_over_block(loop, found, shares, entry)
    mark_sequential(kernel)
    kernel.attributes[MAPPING] = DictionaryAttr(
        {
            "grid_reduction": StringAttr(loop_name(loop) or "?"),
            "blocks": StringAttr("atomics" if atomic else "partials"),
        }
    )
    kernel.known_block_size = DenseArrayBase.from_list(i32, [threads, 1, 1])
