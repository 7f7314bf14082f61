"""Multi-stage software pipelining of a kernel loop's copies into shared memory with cp.async.

Before (after `promote{memory-space=shared}`, `gpu-map-loops{copy-vector=4}`, unrolled copies):
    gpu.func @k(...) workgroup(%B_shared : memref<16x68xf32, 3>) kernel {
    affine.for %k_t = 0 to 256 step 16 {
      %v0 = affine.load %B[%k_t + %r, %j_t + %c]      affine.store %v0, %B_shared[%r, %c]
      ... (%v1, %v2, %v3 at %c + 1, + 2, + 3)
      gpu.barrier   <compute on %B_shared>   gpu.barrier }
After (stages = 3; upstream's nvgpu ops, dialects/nvgpu.py; 4 elements = 16 bytes):
    gpu.func @k(...) workgroup(%B_shared : memref<3x16x68xf32, 3>) kernel {  (a ring of 3 tiles)
    %t0 = nvgpu.device_async_copy %B[0 + %r, %j_t + %c], %B_shared[0, %r, %c], 4 {bypassL1}
    %g0 = nvgpu.device_async_create_group %t0               (prologue: tiles 0 and 1)
    %t1 = nvgpu.device_async_copy %B[16 + %r, %j_t + %c], %B_shared[1, %r, %c], 4 {bypassL1}
    %g1 = nvgpu.device_async_create_group %t1
    affine.for %k_t = 0 to 256 step 16 {
      %k_t_stage = affine.apply ((d0 floordiv 16) mod 3)(%k_t)
      nvgpu.device_async_wait %g1 {numGroups = 1 : i32}   (tile t has landed, t+1 may not)
      gpu.barrier                      (every thread's tile t is there; nobody reads t-1 now)
      %k_t_ahead = affine.min (d0 + 32, 240)(%k_t)
      %k_t_ahead_stage = affine.apply ((d0 floordiv 16 + 2) mod 3)(%k_t)
      %t = nvgpu.device_async_copy %B[%k_t_ahead + %r, ...], %B_shared[%k_t_ahead_stage, ...
      %g = nvgpu.device_async_create_group %t              (tile t+2 into stage (t+2) mod 3)
      <compute on %B_shared[%k_t_stage, ...]> }
    nvgpu.device_async_wait %g1 {numGroups = 0 : i32}

Each iteration waits for its own tile (the groups are committed in tile order: after the
prologue's stages - 1 groups and one per iteration, waiting for all but stages - 2 leaves only the
tiles ahead in flight), then the barrier makes every thread's copies visible, and only then is
tile t + stages - 1 issued into the stage that tile t - 1 used: every thread has passed this
barrier, so none still reads it. The trailing barrier of the body is dropped where every
shared buffer the loop touches is a ring (nothing else needs it); where an outer loop runs
the prologue again, one barrier after the loop keeps it off the stages still being read.
The last iterations copy the last tile again (min), in bounds and guard-free, into stages
nobody reads any more; a wait for all after the loop lets no copy outlive it. A wait counts the
thread's groups; its token (the prologue's last group) only orders it after them.

Consecutive element copies of one thread (copy-vector lanes) whose source and destination
are contiguous and provably aligned (analysis/alignment.py; the kernel's
`loopopt.pointer_align` for the global array, 16 for shared buffers) become one 8- or 16-byte
copy (16: `cg`, bypassing L1); the others copy 4 (or 8) bytes each. No register holds a tile.

Zero-filled copies (the affine.if of `fill_load`: padded tiles) become copies with a source
size, their bytes where the condition holds and 0 where it fails, from the array's first
element there (loops/pipeline_async_fill.py); their lanes merge only where every lane's
condition agrees with lane 0's. The prologue's and the clamped last tiles' conditions are
recomputed from their tile's IV like the indices.

Candidates (`async_copies`): the loads of `loops/pipeline.prefetchable` (plain, or zero-filled)
whose only user is a store directly in the body, before its first barrier, into a workgroup
buffer (attribution, or alloca outside the loop) that only those stores write and only loads
after that barrier in the loop read.
Not checked here: that the loop has a constant trip count of at least one (the caller does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

from xdsl.dialects import affine, arith, gpu, memref, scf
from xdsl.dialects.builtin import AffineMapAttr, IntegerAttr, MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap

from loopopt.analysis.alignment import map_multiples, offset_multiple
from loopopt.dialects import gpu_ext
from loopopt.dialects.loopopt import POINTER_ALIGN_ATTR
from loopopt.dialects.nvgpu import DeviceAsyncCopyOp, DeviceAsyncCreateGroupOp, DeviceAsyncWaitOp
from loopopt.loops.affine_maps import Bound, MapBuilder, composed, lower_bound
from loopopt.loops.gpu_workgroup import (
    add_workgroup_attribution,
    erase_workgroup_attribution,
    is_static_workgroup_buffer,
)
from loopopt.loops.nest import iv, step_of, trip_count
from loopopt.loops.padded_access import fill_load
from loopopt.loops.pipeline import prefetchable
from loopopt.loops.pipeline_async_fill import conditions_agree, holds_copy, sized_source
from loopopt.lowering.gpu_shared import is_shared
from loopopt.target import SHARED_ALIGN


@dataclass
class Copy:
    """One element copy of the body: global load → shared store, with the body's
    affine.apply ops its indices (and its guard's operands) need, operands first; `guard`: the
    affine.if around the load of a zero-filled copy."""

    load: affine.LoadOp
    store: affine.StoreOp
    chain: list[Operation]
    guard: affine.IfOp | None = None


def first_barrier(loop: affine.ForOp) -> gpu.BarrierOp | None:
    return next((op for op in loop.body.block.ops if isinstance(op, gpu.BarrierOp)), None)


def kernel_of(loop: affine.ForOp) -> gpu.FuncOp | None:
    """The gpu.func around `loop`, if any."""
    op = loop.parent_op()
    while op is not None and not isinstance(op, gpu.FuncOp):
        op = op.parent_op()
    return op


def _ring_candidate(buffer: SSAValue, loop: affine.ForOp, stores: set[Operation]) -> bool:
    """`buffer` is a static workgroup buffer (attribution, or alloca outside `loop`), written
    only by `stores` and read only by affine.loads after the body's first barrier."""
    if not is_static_workgroup_buffer(buffer):
        return False
    if isinstance(buffer.owner, Operation) and loop.is_ancestor(buffer.owner):
        return False
    barrier = first_barrier(loop)
    assert barrier is not None
    body = loop.body.block
    for use in buffer.uses:
        user = use.operation
        if user in stores:
            continue
        if not isinstance(user, affine.LoadOp) or not loop.is_ancestor(user):
            return False
        top = body.find_ancestor_op_in_block(user)
        if top is None or body.get_operation_index(top) < body.get_operation_index(barrier):
            return False
    return True


def _chain(values: Sequence[SSAValue], loop: affine.ForOp, chain: list[Operation]) -> bool:
    """Add to `chain` the affine.apply ops of the body that `values` depend on; False if they
    depend on anything else computed in the body."""
    for value in values:
        owner = value.owner
        if value is iv(loop) or not (isinstance(owner, Operation) and owner.parent_op() is loop):
            continue
        if not isinstance(owner, affine.ApplyOp) or not _chain(owner.operands, loop, chain):
            return False
        if owner not in chain:
            chain.append(owner)
    return True


def async_copies(loop: affine.ForOp) -> list[Copy]:
    """The element copies of `loop`'s body that can become cp.async copies into rings."""
    barrier = first_barrier(loop)
    if barrier is None or kernel_of(loop) is None:
        return []
    body = loop.body.block
    limit = body.get_operation_index(barrier)
    found: list[Copy] = []
    for value, chain in prefetchable(loop):
        load = value if isinstance(value, affine.LoadOp) else fill_load(value)
        if load is None:
            continue
        guard = value if isinstance(value, affine.IfOp) else None
        users = [use.operation for use in value.results[0].uses]
        if len(users) != 1 or not isinstance(users[0], affine.StoreOp):
            continue
        store = users[0]
        if store.parent_op() is not loop or body.get_operation_index(store) > limit:
            continue
        width = getattr(store.memref.type.element_type, "bitwidth", 0)  # type: ignore[attr-defined]
        if is_shared(load.memref.type) or width not in (32, 64):
            continue
        chain = list(chain)
        if _chain(store.indices, loop, chain):
            ordered = sorted(chain, key=body.get_operation_index)
            found.append(Copy(load, store, ordered, guard))
    stores_of: dict[SSAValue, set[Operation]] = {}
    for copy in found:
        stores_of.setdefault(copy.store.memref, set()).add(copy.store)
    return [c for c in found if _ring_candidate(c.store.memref, loop, stores_of[c.store.memref])]


def _next_to(builder: MapBuilder, head: Copy, other: Copy, k: int) -> bool:
    """`other` copies the element `k` after `head`'s, in the source and in the destination,
    under a condition that holds exactly where `head`'s does."""
    if other.load.memref is not head.load.memref or other.store.memref is not head.store.memref:
        return False
    if not conditions_agree(head.guard, other.guard):
        return False
    for a, b in ((head.load, other.load), (head.store, other.store)):
        ea = composed(builder, a.map.data, a.indices)
        eb = composed(builder, b.map.data, b.indices)
        diffs = [builder.simplified(y - x) for x, y in zip(ea, eb, strict=True)]
        wanted = [0] * (len(diffs) - 1) + [k]
        if [d.value if isinstance(d, AffineConstantExpr) else None for d in diffs] != wanted:
            return False
    return True


def _width(array: SSAValue) -> int:
    t = array.type
    assert isinstance(t, MemRefType)
    return t.element_type.bitwidth // 8  # type: ignore[attr-defined]


def _aligned(copy: Copy, nbytes: int, global_align: int) -> bool:
    """The `nbytes` from `copy`'s element on are aligned in the array and in each ring stage."""
    src, dst = copy.load.memref.type, copy.store.memref.type
    assert isinstance(src, MemRefType) and isinstance(dst, MemRefType)
    count = nbytes // _width(copy.load.memref)
    src_m = offset_multiple(src, map_multiples(copy.load.map.data, copy.load.indices))
    dst_m = offset_multiple(dst, map_multiples(copy.store.map.data, copy.store.indices))
    stage = prod(dst.get_shape())  # the offset of a ring stage, in elements
    return (
        global_align % nbytes == 0
        and SHARED_ALIGN % nbytes == 0
        and all(m % count == 0 for m in (src_m, dst_m, stage))
    )


def group_copies(copies: Sequence[Copy], loop: affine.ForOp) -> list[tuple[Copy, int]]:
    """The copies to issue: (first element copy, bytes), consecutive aligned elements of one
    thread merged into 16- or 8-byte copies."""
    kernel = kernel_of(loop)
    align = kernel.attributes.get(POINTER_ALIGN_ATTR) if kernel is not None else None
    global_align = align.value.data if isinstance(align, IntegerAttr) else 1
    builder = MapBuilder()
    left = list(copies)
    groups: list[tuple[Copy, int]] = []
    while left:
        head = left.pop(0)
        width = _width(head.load.memref)
        for nbytes in (16, 8, width):
            count = nbytes // width
            if count < 1 or (count > 1 and not _aligned(head, nbytes, global_align)):
                continue
            if count > 1 and head.guard is not None and not holds_copy(head.load.memref, count):
                continue
            members = [
                next((c for c in left if _next_to(builder, head, c, k)), None)
                for k in range(1, count)
            ]
            found = [m for m in members if m is not None]
            if len(found) == count - 1:
                for m in found:
                    left.remove(m)
                groups.append((head, nbytes))
                break
    return groups


class _Issue:
    """Builds the cp.async copies of one tile (the IV at `at`) into ring stage `stage`."""

    def __init__(self, loop: affine.ForOp, at: SSAValue, stage: SSAValue, rings: _Rings):
        self.loop, self.rings = loop, rings
        self.mapping: dict[SSAValue, SSAValue] = {iv(loop): at}
        self.stage = stage
        self.ops: list[Operation] = []
        self.tokens: list[SSAValue] = []

    def _operands(self, chain: Sequence[Operation], operands: Sequence[SSAValue]) -> list[SSAValue]:
        for op in chain:
            if op.results[0] not in self.mapping:
                clone = op.clone(value_mapper=self.mapping)
                self.mapping[op.results[0]] = clone.results[0]
                self.ops.append(clone)
        return [self.mapping.get(v, v) for v in operands]

    def _indices(self, amap: AffineMap, operands: Sequence[SSAValue]) -> list[SSAValue]:
        indices: list[SSAValue] = []
        builder = MapBuilder()
        for result in builder.exprs(Bound(amap, tuple(operands))):
            result = builder.simplified(result)
            if isinstance(result, AffineDimExpr):  # an operand as it is
                indices.append(builder.values[result.position])
                continue
            bound = builder.build([result])
            apply = affine.ApplyOp(list(bound.operands), AffineMapAttr(bound.map))
            self.ops.append(apply)
            indices.append(apply.result)
        return indices

    def copy(self, head: Copy, nbytes: int) -> None:
        load, store = head.load, head.store
        src = self._indices(load.map.data, self._operands(head.chain, load.indices))
        dst = self._indices(store.map.data, self._operands(head.chain, store.indices))
        ring = self.rings[store.memref]
        size: SSAValue | None = None
        if head.guard is not None:  # zero-filled: the bytes (or 0) and a safe source
            args = self._operands(head.chain, head.guard.args)
            sized = sized_source(head.guard, args, src, nbytes // _width(load.memref))
            self.ops.append(sized)
            *src, size = sized.results
            if load.memref.name_hint:
                for index in src:
                    index.name_hint = f"{load.memref.name_hint}_src"
                size.name_hint = f"{load.memref.name_hint}_elements"
        elements = nbytes // _width(load.memref)
        copy = DeviceAsyncCopyOp(
            load.memref, src, ring, [self.stage, *dst], elements, nbytes == 16, size
        )
        self.ops.append(copy)
        self.tokens.append(copy.asyncToken)

    def group(self) -> DeviceAsyncCreateGroupOp:
        """The group of the tile's copies (its token is the group's)."""
        group = DeviceAsyncCreateGroupOp(self.tokens)
        self.ops.append(group)
        return group


_Rings = dict[SSAValue, SSAValue]


def ring_bytes(copies: Sequence[Copy], stages: int) -> int:
    """The shared memory the rings of `stages` tiles of the buffers `copies` store to take."""
    buffers = dict.fromkeys(c.store.memref for c in copies)
    return stages * sum(prod(b.type.get_shape()) * _width(b) for b in buffers)  # type: ignore[attr-defined]


def _make_rings(kernel: gpu.FuncOp, buffers: Sequence[SSAValue], stages: int) -> _Rings:
    """A workgroup buffer of `stages` tiles for each buffer: an attribution of `kernel` for an
    attribution, an alloca next to it for an alloca."""
    rings: _Rings = {}
    for buffer in buffers:
        t = buffer.type
        assert isinstance(t, MemRefType)
        ring_type = MemRefType(  # a swizzled tile's ring keeps its rows' layout
            t.element_type, [stages, *t.get_shape()], t.layout, t.memory_space
        )
        if isinstance(buffer.owner, memref.AllocaOp):
            ring = memref.AllocaOp.build(operands=[[], []], result_types=[ring_type])
            ring.memref.name_hint = buffer.name_hint
            block = buffer.owner.parent_block()
            assert block is not None
            block.insert_op_before(ring, buffer.owner)
            rings[buffer] = ring.memref
        else:
            rings[buffer] = add_workgroup_attribution(kernel, ring_type, buffer.name_hint)
    return rings


def _read_rings(rings: _Rings, stage: SSAValue) -> None:
    """Every load of a buffer reads its ring at `stage`."""
    for buffer, ring in rings.items():
        for use in list(buffer.uses):
            load = use.operation
            if not isinstance(load, affine.LoadOp):
                continue
            builder = MapBuilder()
            index = builder.value(stage)
            bound = builder.build(
                [index, *builder.exprs(Bound(load.map.data, tuple(load.indices)))], access=True
            )
            new = affine.LoadOp(ring, bound.operands, AffineMapAttr(bound.map), load.result.type)
            new.result.name_hint = load.result.name_hint
            block = load.parent_block()
            assert block is not None
            block.insert_op_before(new, load)
            load.result.replace_all_uses_with(new.result)
            block.erase_op(load)


class _Clock:
    """Affine values of the tiles of `loop`: an iteration's IV, a tile's ring stage."""

    def __init__(self, loop: affine.ForOp, stages: int):
        self.loop, self.stages = loop, stages
        self.step = step_of(loop)
        trips = trip_count(loop)
        assert trips is not None and trips >= 1
        self.trips = trips

    def _op(self, results: list[AffineExpr], builder: MapBuilder, hint: str) -> Operation:
        bound = builder.build(results, "min")
        attr = AffineMapAttr(bound.map)
        op: Operation
        if len(bound.map.results) == 1:
            op = affine.ApplyOp(list(bound.operands), attr)
        else:
            op = affine.MinOp(list(bound.operands), attr)
        name = iv(self.loop).name_hint
        op.results[0].name_hint = f"{name}_{hint}" if name else None
        return op

    def tile(self, ahead: int, inside: bool) -> Operation:
        """The IV `ahead` tiles after the current iteration (inside) or the first one, clamped
        to the last tile."""
        builder = MapBuilder()
        [lower] = builder.exprs(lower_bound(self.loop))
        base = builder.value(iv(self.loop)) if inside else lower
        last = lower + (self.trips - 1) * self.step
        return self._op([base + ahead * self.step, last], builder, "ahead" if inside else "first")

    def stage(self, ahead: int) -> Operation:
        """The ring stage of the tile `ahead` tiles after the current iteration."""
        builder = MapBuilder()
        [lower] = builder.exprs(lower_bound(self.loop))
        here = builder.value(iv(self.loop))
        index = ((here - lower) // self.step + ahead) % self.stages
        return self._op([index], builder, "ahead_stage" if ahead else "stage")


def _touches_only(loop: affine.ForOp, rings: _Rings) -> bool:
    """Every shared buffer an op of `loop` uses is one of the rings."""
    kept = set(rings.values())
    return all(
        value in kept or not is_shared(value.type) for op in loop.walk() for value in op.operands
    )


def pipeline_async(
    loop: affine.ForOp, copies: Sequence[Copy], stages: int
) -> list[tuple[Copy, int]]:
    """Turn `copies` (from `async_copies(loop)`) into cp.async copies into rings of `stages`
    tiles, issued stages - 1 tiles ahead (see the module docstring); returns the copies issued
    per tile, (first element copy, bytes). `loop` needs a constant trip count >= 1, stages >= 2."""
    assert stages >= 2
    groups = group_copies(copies, loop)
    body = loop.body.block
    barrier = first_barrier(loop)
    outer = loop.parent_block()
    assert barrier is not None and outer is not None
    clock = _Clock(loop, stages)
    kernel = kernel_of(loop)
    assert kernel is not None
    rings = _make_rings(kernel, list(dict.fromkeys(c.store.memref for c in copies)), stages)

    for k in range(stages - 1):  # the prologue: tiles 0 .. stages - 2
        at = clock.tile(k, inside=False)
        stage = arith.ConstantOp(IntegerAttr.from_index_int_value(k))
        issue = _Issue(loop, at.results[0], stage.result, rings)
        for head, nbytes in groups:
            issue.copy(head, nbytes)
        last_group = issue.group()
        outer.insert_ops_before([at, stage, *issue.ops], loop)

    current = clock.stage(0)
    body.insert_op_before(current, body.first_op)  # type: ignore[arg-type]
    _read_rings(rings, current.results[0])
    # A wait's token is only a dependence (the groups counted are the thread's): the last
    # group of the prologue, which every wait follows.
    token = last_group.asyncToken
    body.insert_op_before(DeviceAsyncWaitOp(token, stages - 2), barrier)
    at, stage = clock.tile(stages - 1, inside=True), clock.stage(stages - 1)
    issue = _Issue(loop, at.results[0], stage.results[0], rings)
    for head, nbytes in groups:
        issue.copy(head, nbytes)
    issue.group()
    body.insert_ops_after([at, stage, *issue.ops], barrier)

    for copy in copies:
        body.erase_op(copy.store)
        body.erase_op(copy.guard if copy.guard is not None else copy.load)
    chains = {op for copy in copies for op in copy.chain}
    for op in reversed(list(body.ops)):
        if op in chains and not any(result.uses for result in op.results):
            body.erase_op(op)
    for buffer in rings:
        assert not buffer.uses
        if isinstance(buffer, BlockArgument):
            erase_workgroup_attribution(kernel, buffer)
        else:
            buffer.owner.detach()
            buffer.owner.erase()
    trailing = body.last_op.prev_op if body.last_op is not None else None
    if (
        isinstance(trailing, gpu.BarrierOp)
        and trailing is not barrier
        and _touches_only(loop, rings)
    ):
        body.erase_op(trailing)
    drained = DeviceAsyncWaitOp(token, 0)
    outer.insert_op_after(drained, loop)
    if _in_a_loop(loop):  # the next prologue must not overwrite a stage still being read
        outer.insert_op_after(gpu_ext.BarrierOp(), drained)
    return groups


def _in_a_loop(loop: affine.ForOp) -> bool:
    """Some loop of the kernel runs `loop` more than once."""
    op = loop.parent_op()
    while op is not None and not isinstance(op, gpu.FuncOp):
        if isinstance(op, affine.ForOp | scf.ForOp | scf.WhileOp):
            return True
        op = op.parent_op()
    return False
