"""Loop-carried per-thread values across barriers in the GPU emulator (gpu_emulator.py).

Thread-loop fission splits a kernel at its barriers, so a loop whose body has a barrier runs
its body's phases in separate thread loops; a value the loop carries (`iter_args`:
scalar-replace's accumulators of a k_t loop with a copy ring) belongs to each thread, and no
SSA value can hold one per thread across phases. `demote_carried` keeps each such value in a
buffer of one element per thread, as a register would be:

    %r = affine.for %k = 0 to 4 iter_args(%acc = %zero) -> (f32) {        before
      … gpu.barrier … %next = arith.addf %acc, … ; affine.yield %next }

    %buf = memref.alloca() : memref<Z x Y x X x f32>                        after
    memref.store %zero, %buf[%tz, %ty, %tx]
    affine.for %k = 0 to 4 {
      %acc = memref.load %buf[%tz, %ty, %tx] … gpu.barrier … %next = …
      memref.store %next, %buf[%tz, %ty, %tx] }
    %r = memref.load %buf[%tz, %ty, %tx]

The loads and stores use the thread indices, so fission puts them in the thread loops, and each
thread reads back what it stored. Loops without a barrier inside keep their iter_args (one
thread loop runs them whole).
"""

from __future__ import annotations

from xdsl.dialects import affine, gpu, memref, scf
from xdsl.ir import Block, Operation, Region, SSAValue

AXES = ("z", "y", "x")


def demote_carried(entry: Block, sizes: dict[str, int]) -> None:
    """Keep the iter_args of every loop of `entry` that holds a barrier in per-thread
    buffers (see the module docstring); innermost loops first."""
    loops = [
        op
        for op in entry.walk(reverse=True)
        if isinstance(op, affine.ForOp | scf.ForOp) and op.results and _has_barrier(op)
    ]
    if not loops:
        return
    ids = [gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum(axis))) for axis in AXES]
    first = entry.first_op
    assert first is not None
    entry.insert_ops_before(ids, first)
    thread = [op.result for op in ids]
    for loop in loops:
        _demote(loop, entry, thread, sizes)


def _has_barrier(op: Operation) -> bool:
    return any(isinstance(inner, gpu.BarrierOp) for inner in op.walk())


def _demote(
    loop: affine.ForOp | scf.ForOp, entry: Block, thread: list[SSAValue], sizes: dict[str, int]
) -> None:
    shape = [sizes[axis] for axis in AXES]
    buffers: list[SSAValue] = []
    for result in loop.results:
        alloca = memref.AllocaOp.get(result.type, shape=shape)
        entry.insert_op_after(alloca, _last_id(entry))
        buffers.append(alloca.memref)
    parent = loop.parent_block()
    assert parent is not None
    inits = list(loop.inits) if isinstance(loop, affine.ForOp) else list(loop.iter_args)
    for init, buffer in zip(inits, buffers, strict=True):
        parent.insert_op_before(memref.StoreOp.get(init, buffer, thread), loop)
    body = loop.body.block
    carried = list(body.args[1:])
    head = body.first_op
    assert head is not None
    for arg, buffer in zip(carried, buffers, strict=True):
        load = memref.LoadOp.get(buffer, thread)
        body.insert_op_before(load, head)
        arg.replace_all_uses_with(load.res)
    for arg in reversed(carried):
        body.erase_arg(arg)
    yielded = body.last_op
    assert isinstance(yielded, affine.YieldOp | scf.YieldOp)
    for value, buffer in zip(yielded.operands, buffers, strict=True):
        body.insert_op_before(memref.StoreOp.get(value, buffer, thread), yielded)
    empty = affine.YieldOp.get() if isinstance(yielded, affine.YieldOp) else scf.YieldOp()
    body.insert_op_before(empty, yielded)
    yielded.detach()
    yielded.erase()
    region = loop.body
    loop.detach_region(region)
    new = _without_carried(loop, region)
    parent.insert_op_before(new, loop)
    after = loop
    for result, buffer in zip(loop.results, buffers, strict=True):
        load = memref.LoadOp.get(buffer, thread)
        parent.insert_op_after(load, after)
        result.replace_all_uses_with(load.res)
        after = load
    loop.detach()
    loop.erase()


def _without_carried(loop: affine.ForOp | scf.ForOp, region: Region) -> Operation:
    if isinstance(loop, scf.ForOp):
        new: Operation = scf.ForOp(loop.lb, loop.ub, loop.step, [], region)
        new.attributes.update(loop.attributes)
        return new
    new = affine.ForOp.from_region(
        list(loop.lowerBoundOperands),
        list(loop.upperBoundOperands),
        [],
        [],
        loop.lowerBoundMap,
        loop.upperBoundMap,
        region,
        loop.step,
    )
    new.attributes.update(loop.attributes)
    return new


def _last_id(entry: Block) -> Operation:
    """The last of the thread-index ops `demote_carried` put at the top of `entry`."""
    op = entry.first_op
    assert op is not None
    while isinstance(op.next_op, gpu.ThreadIdOp):
        op = op.next_op
    return op
