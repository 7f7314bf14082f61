"""Software pipelining of a loop's copy-in loads: the next iteration's loads are issued in this one.

Before (after `promote{memory-space=shared}`, `gpu-map-loops` and unrolled copy loops):
    affine.for %k_t = 0 to 4096 step 8 {
      %v = affine.load %A[%row, %k_t + %col]          (A is never written in the kernel)
      affine.store %v, %A_shared[%col, %row]
      gpu.barrier
      <compute on A_shared>
      gpu.barrier }
After:
    %v0 = affine.load %A[%row, 0 + %col]                                     (prologue)
    affine.for %k_t = 0 to 4096 step 8 iter_args(%v = %v0) {
      affine.store %v, %A_shared[%col, %row]
      %next = affine.min (d0 + 8, 4088)(%k_t)
      %v1 = affine.load %A[%row, %next + %col]       (in flight during the compute)
      gpu.barrier
      <compute on A_shared>
      gpu.barrier
      affine.yield %v1 }

The loads of iteration t + 1 are issued right after iteration t has stored its values, so their
latency overlaps the compute of iteration t (register double buffering: one shared buffer, the
next tile in registers). The last iteration reloads its own tile (the min), which is in bounds
and keeps the body free of guards. Candidates are the affine.loads directly in the loop's body
whose values only feed stores, from arrays that no op of the enclosing function writes (so
moving a load earlier never reads a stale value, on any thread), with indices computed from
values defined outside the loop, the IV and affine.apply ops in the body. Copy loops must be
unrolled first (`loop-unroll{unroll-full loop=A_copy_in}`): loads in nested regions (guarded
copies of partial tiles) are left where they are.

Not checked here: that the loop has a constant trip count of at least one (`pipeline_loads`'
caller does it) — the prologue would otherwise load the first tile of an empty loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, func, gpu, memref
from xdsl.dialects.builtin import AffineMapAttr
from xdsl.ir import Operation, SSAValue

from loopopt.loops.affine_maps import MapBuilder, lower_bound
from loopopt.loops.bounds import append_iter_args, iteration_value
from loopopt.loops.nest import defined_inside, iv, step_of, trip_count
from loopopt.loops.padded_access import fill_load

READS = (affine.LoadOp, memref.LoadOp, memref.DimOp)


def _function(loop: affine.ForOp) -> Operation:
    op: Operation | None = loop
    while op is not None and not isinstance(op, func.FuncOp | gpu.FuncOp):
        op = op.parent_op()
    return op if op is not None else loop


def read_only(array: SSAValue, scope: Operation) -> bool:
    """No op under `scope` writes `array` or passes it on (to a call, a view, a copy)."""
    for use in array.uses:
        user = use.operation
        if not scope.is_ancestor(user):
            continue
        if isinstance(user, affine.StoreOp | memref.StoreOp) and user.memref is array:
            return False
        if not isinstance(user, READS + (affine.StoreOp, memref.StoreOp)):
            return False
    return True


def _index_chain(value: SSAValue, loop: affine.ForOp, chain: list[Operation]) -> bool:
    """Collect (in `chain`, operands first) the affine.apply ops in `loop`'s body that `value`
    depends on; False when it depends on anything else computed in the loop."""
    if not defined_inside(value, loop) or value is iv(loop):
        return True
    owner = value.owner
    if not isinstance(owner, affine.ApplyOp) or owner.parent_op() is not loop:
        return False
    for operand in owner.operands:
        if not _index_chain(operand, loop, chain):
            return False
    if owner not in chain:
        chain.append(owner)
    return True


def prefetchable(loop: affine.ForOp) -> list[tuple[Operation, list[Operation]]]:
    """The loads of `loop`'s body that can be issued one iteration early, each with the
    affine.apply ops its indices need (see the module docstring). A load under an affine.if
    that yields 0 where it fails (`fill_load`: the zero-filled copies of padded tiles) is
    issued early as a whole, condition and all."""
    scope = _function(loop)
    found: list[tuple[Operation, list[Operation]]] = []
    for op in loop.body.block.ops:
        load = op if isinstance(op, affine.LoadOp) else fill_load(op)
        if load is None:
            continue
        users = [use.operation for use in op.results[0].uses]
        if not users or not all(isinstance(u, affine.StoreOp) for u in users):
            continue
        if not read_only(load.memref, scope):
            continue
        chain: list[Operation] = []
        needed = [*op.operands, *load.indices] if op is not load else list(load.indices)
        if all(_index_chain(v, loop, chain) for v in needed):
            found.append((op, chain))
    return found


def _clone_at(
    load: Operation, chain: Sequence[Operation], at: SSAValue, loop: affine.ForOp
) -> list[Operation]:
    """Copies of `chain` and `load` computing the load for the IV value `at`."""
    mapping: dict[SSAValue, SSAValue] = {iv(loop): at}
    ops: list[Operation] = []
    for op in [*chain, load]:
        copy = op.clone(value_mapper=mapping)
        for old, new in zip(op.results, copy.results, strict=True):
            mapping[old] = new
        ops.append(copy)
    return ops


def pipeline_loads(
    loop: affine.ForOp, loads: Sequence[tuple[Operation, list[Operation]]]
) -> affine.ForOp:
    """Issue `loads` (from `prefetchable(loop)`) one iteration early; returns the rebuilt loop.
    `loop` must have a constant trip count >= 1."""
    trips = trip_count(loop)
    assert trips is not None and trips >= 1
    block = loop.parent_block()
    assert block is not None
    first = iteration_value(loop, 0)
    start = affine.ApplyOp(list(first.operands), AffineMapAttr(first.map))
    start.result.name_hint = f"{iv(loop).name_hint}_first" if iv(loop).name_hint else None
    block.insert_op_before(start, loop)
    prologue: list[SSAValue] = []
    for load, chain in loads:
        ops = _clone_at(load, chain, start.result, loop)
        for op in ops:
            block.insert_op_before(op, loop)
        prologue.append(ops[-1].results[0])
    loop = append_iter_args(loop, prologue)
    body = loop.body.block
    carried = body.args[len(body.args) - len(loads) :]
    last_store = max(
        body.get_operation_index(use.operation) for load, _ in loads for use in load.results[0].uses
    )
    anchor = list(body.ops)[last_store].next_op
    assert anchor is not None
    builder = MapBuilder()
    here = builder.value(iv(loop))
    [lower] = builder.exprs(lower_bound(loop))
    last = lower + (trips - 1) * step_of(loop)
    bound = builder.build([here + step_of(loop), last])
    upcoming = affine.MinOp(list(bound.operands), AffineMapAttr(bound.map))
    upcoming.result.name_hint = f"{iv(loop).name_hint}_next" if iv(loop).name_hint else None
    body.insert_op_before(upcoming, anchor)
    fetched: list[SSAValue] = []
    for (load, chain), arg in zip(loads, carried, strict=True):
        ops = _clone_at(load, chain, upcoming.result, loop)
        for op in ops:
            body.insert_op_before(op, anchor)
        fetched.append(ops[-1].results[0])
        load.results[0].replace_all_uses_with(arg)
        arg.name_hint = load.results[0].name_hint
    yield_op = body.last_op
    assert isinstance(yield_op, affine.YieldOp)
    new_yield = affine.YieldOp.get(*yield_op.operands, *fetched)
    body.insert_op_before(new_yield, yield_op)
    body.erase_op(yield_op)
    for load, _ in loads:
        body.erase_op(load)
    applies = list(dict.fromkeys(op for _, chain in loads for op in chain))
    for op in reversed(applies):  # operands come first in each chain: erase users first
        if all(not result.uses for result in op.results):
            body.erase_op(op)
    return loop
