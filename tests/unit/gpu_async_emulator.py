"""cp.async in the GPU emulator (gpu_emulator.py): the nvgpu async-copy ops of a kernel become
plain copies with bookkeeping that turns every synchronization mistake into NaN.

Each thread counts the groups it committed, the groups it has waited for
(`nvgpu.device_async_wait {numGroups = N}`: all but the newest N) and the barriers it passed
(its phase: every thread passes the same barriers, so equal phases mean "no barrier in
between"). Each element of a ring (a buffer that cp.async writes) records the group and the
thread of its last copy, and the phase and the thread of its last reads (or SEVERAL threads).
- A copy writes its element when it is issued (the earliest it may land) and tags it. With a
  source size (`nvgpu.device_async_copy ..., 4, %n`), the elements past the first %n are
  zeros. Every element of a copy's source range must lie in the
  array, even the unread ones (pipeline-copies points zero-filling copies at the array's
  first element): one outside it is NaN, and is not read.
- A read of an element whose copy its thread has not waited for gives NaN (the copy may land
  as late as the wait): a missing or too weak wait; or, when another thread waited in this
  same phase, a missing barrier (in one thread order the read comes first).
- A copy into an element that another thread read in the same phase writes NaN: on a GPU that
  thread may still be reading the old tile. The emulator runs phases one after another (the
  loop's back edge included), so only the phases can show this race.
Never-written elements read as NaN too. Every thread resets its share of the tags before the
kernel's first op, behind an extra barrier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

from xdsl.dialects import affine, arith, gpu, memref
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.dialects import gpu_ext
from loopopt.dialects.nvgpu import DeviceAsyncCopyOp, DeviceAsyncCreateGroupOp, DeviceAsyncWaitOp
from loopopt.loops.affine_maps import Bound
from loopopt.loops.bounds import new_loop

NEVER = 1 << 40
"""The group of an element no copy has written: never waited for."""
SEVERAL = -1
"""The reader of an element that several threads read in one phase."""


def emulate_async_copies(entry: Block, sizes: dict[str, int]) -> None:
    """Rewrite the cp.async ops of the kernel body `entry` (launched on blocks of `sizes`
    threads per axis) into plain, tagged copies and checked reads."""
    copies = [op for op in entry.walk() if isinstance(op, DeviceAsyncCopyOp)]
    if copies:
        _AsyncCopies(entry, sizes, copies).rewrite()


def _index(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr.from_index_int_value(value))


@dataclass
class _Tags:
    """Per element of a ring, by row-major offset."""

    group: SSAValue
    writer: SSAValue
    read_phase: SSAValue
    reader: SSAValue


class _Ops:
    """A list of ops being built, with the few constructors the rewrites need."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def load(self, buffer: SSAValue, index: SSAValue) -> SSAValue:
        return self.add(memref.LoadOp.get(buffer, [index]))

    def store(self, value: SSAValue, buffer: SSAValue, index: SSAValue) -> None:
        self.ops.append(memref.StoreOp.get(value, buffer, [index]))

    def apply(self, expr: AffineExpr, operands: Sequence[SSAValue]) -> SSAValue:
        amap = AffineMap(len(operands), 0, (expr,))
        return self.add(affine.ApplyOp(list(operands), AffineMapAttr(amap)))

    def cmp(self, a: SSAValue, b: SSAValue, predicate: str) -> SSAValue:
        return self.add(arith.CmpiOp(a, b, predicate))

    def select(self, condition: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.SelectOp(condition, a, b))

    def nan(self, t: Attribute) -> SSAValue:
        assert isinstance(t, AnyFloat), "the emulated cp.async copies floats"
        return self.add(arith.ConstantOp(FloatAttr(float("nan"), t)))

    def float(self, value: float, t: Attribute) -> SSAValue:
        assert isinstance(t, AnyFloat), "the emulated cp.async copies floats"
        return self.add(arith.ConstantOp(FloatAttr(value, t)))

    def both(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.AndIOp(a, b))

    def extent(self, array: SSAValue, dim: int) -> SSAValue:
        t = array.type
        assert isinstance(t, MemRefType)
        size = t.get_shape()[dim]
        if size >= 0:
            return self.add(_index(size))
        return self.add(memref.DimOp.from_source_and_index(array, self.add(_index(dim))))


class _AsyncCopies:
    def __init__(self, entry: Block, sizes: dict[str, int], copies: list[DeviceAsyncCopyOp]):
        self.entry = entry
        x, y, z = sizes["x"], sizes["y"], sizes["z"]
        self.threads = x * y * z
        self.top = _Ops()  # for the kernel's entry, then a barrier
        ids = [self.top.add(gpu_ext.ThreadIdOp(axis)) for axis in "xyz"]
        d = [AffineExpr.dimension(k) for k in range(3)]
        self.tid = self.top.apply(d[0] + x * (d[1] + y * d[2]), ids)
        self.zero = self.top.add(_index(0))
        self.committed, self.waited, self.phase = (self._counter() for _ in range(3))
        self.tags: dict[SSAValue, _Tags] = {}
        for copy in copies:
            if copy.dst not in self.tags:
                self.tags[copy.dst] = self._tags(copy.dst.type)

    def _counter(self) -> SSAValue:
        counter = self.top.add(memref.AllocaOp.get(IndexType(), shape=[self.threads]))
        self.top.store(self.zero, counter, self.tid)
        return counter

    def _tags(self, t: Attribute) -> _Tags:
        assert isinstance(t, MemRefType)
        rounds = -(-prod(t.get_shape()) // self.threads)
        shape = [rounds * self.threads]
        buffers = [self.top.add(memref.AllocaOp.get(IndexType(), shape=shape)) for _ in range(4)]
        tags = _Tags(*buffers)
        loop = new_loop(Bound.constant(0), Bound.constant(rounds), 1)
        body = _Ops()
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        offset = body.apply(d0 * self.threads + d1, [loop.body.block.args[0], self.tid])
        for buffer, value in (
            (tags.group, NEVER),
            (tags.writer, 0),
            (tags.read_phase, -1),
            (tags.reader, 0),
        ):
            body.store(body.add(_index(value)), buffer, offset)
        loop.body.block.insert_ops_before(body.ops, loop.body.block.first_op)  # type: ignore[arg-type]
        self.top.ops.append(loop)
        return tags

    def rewrite(self) -> None:
        for op in list(self.entry.walk()):
            if isinstance(op, DeviceAsyncCopyOp):
                self._replace(op, self._copy(op))
            elif isinstance(op, DeviceAsyncCreateGroupOp):
                self._replace(op, self._bump(self.committed))
            elif isinstance(op, DeviceAsyncWaitOp):
                self._replace(op, self._wait(op.pending))
            elif isinstance(op, gpu.BarrierOp):
                block = op.parent_block()
                assert block is not None
                block.insert_ops_before(self._bump(self.phase), op)
            elif isinstance(op, affine.LoadOp | memref.LoadOp) and op.memref in self.tags:
                self._check(op)
        first = self.entry.first_op
        assert first is not None
        self.entry.insert_ops_before([*self.top.ops, gpu_ext.BarrierOp()], first)

    def _replace(self, op: Operation, ops: list[Operation]) -> None:
        block = op.parent_block()
        assert block is not None
        block.insert_ops_before(ops, op)
        block.erase_op(op, safe_erase=False)  # tokens: their users go too

    def _bump(self, counter: SSAValue) -> list[Operation]:
        b = _Ops()
        more = b.add(arith.AddiOp(b.load(counter, self.tid), b.add(_index(1))))
        b.store(more, counter, self.tid)
        return b.ops

    def _wait(self, pending: int) -> list[Operation]:
        b = _Ops()
        landed = b.add(arith.SubiOp(b.load(self.committed, self.tid), b.add(_index(pending))))
        done = b.add(arith.MaxSIOp(b.load(self.waited, self.tid), landed))
        b.store(done, self.waited, self.tid)
        return b.ops

    def _offset(self, b: _Ops, t: Attribute, indices: Sequence[SSAValue]) -> SSAValue:
        assert isinstance(t, MemRefType)
        expr: AffineExpr = AffineExpr.constant(0)
        for dim, size in enumerate(t.get_shape()):
            expr = expr * size + AffineExpr.dimension(dim)
        return b.apply(expr, indices)

    def _read_by_other(self, b: _Ops, tags: _Tags, offset: SSAValue) -> SSAValue:
        """Whether another thread read the element in this phase (i1)."""
        phase = b.load(self.phase, self.tid)
        same = b.cmp(b.load(tags.read_phase, offset), phase, "eq")
        other = b.cmp(b.load(tags.reader, offset), self.tid, "ne")
        return b.add(arith.AndIOp(same, other))

    def _source(self, b: _Ops, op: DeviceAsyncCopyOp, src: Sequence[SSAValue], k: int) -> SSAValue:
        """Element `k` of the copy: read from `src` (in the array), zero past the source size,
        NaN where `src` is outside the array or the source size cuts the element."""
        zero = b.add(_index(0))
        inside = b.add(arith.ConstantOp(IntegerAttr(1, 1)))
        for dim, index in enumerate(src):
            low = b.cmp(index, zero, "sge")
            high = b.cmp(index, b.extent(op.src, dim), "slt")
            inside = b.both(inside, b.both(low, high))
        safe = [b.select(inside, index, zero) for index in src]
        value = b.add(memref.LoadOp.get(op.src, safe))
        t = value.type
        if op.srcElements is not None:
            read = b.cmp(b.add(_index(k)), op.srcElements, "slt")
            value = b.select(read, value, b.float(0.0, t))
        return b.select(inside, value, b.nan(t))

    def _copy(self, op: DeviceAsyncCopyOp) -> list[Operation]:
        b = _Ops()
        group = b.load(self.committed, self.tid)
        tags = self.tags[op.dst]
        for k in range(op.elements):
            step = b.add(_index(k))
            src = [*op.srcIndices[:-1], b.add(arith.AddiOp(op.srcIndices[-1], step))]
            dst = [*op.dstIndices[:-1], b.add(arith.AddiOp(op.dstIndices[-1], step))]
            offset = self._offset(b, op.dst.type, dst)
            value = self._source(b, op, src, k)
            race = self._read_by_other(b, tags, offset)
            b.ops.append(memref.StoreOp.get(b.select(race, b.nan(value.type), value), op.dst, dst))
            b.store(group, tags.group, offset)
            b.store(self.tid, tags.writer, offset)
        return b.ops

    def _check(self, load: affine.LoadOp | memref.LoadOp) -> None:
        """The element, or NaN when its copy has not been waited for; the read recorded."""
        b = _Ops()
        indices = list(load.indices)
        if isinstance(load, affine.LoadOp):
            amap = load.map.data
            maps = [AffineMap(amap.num_dims, amap.num_symbols, (r,)) for r in amap.results]
            indices = [b.add(affine.ApplyOp(indices, AffineMapAttr(m))) for m in maps]
        tags = self.tags[load.memref]
        offset = self._offset(b, load.memref.type, indices)
        done = b.load(self.waited, b.load(tags.writer, offset))
        landed = b.cmp(b.load(tags.group, offset), done, "slt")
        value = load.results[0]
        checked = arith.SelectOp(landed, value, b.nan(value.type))
        value.replace_all_uses_with(checked.result)
        checked.operands = (landed, value, checked.operands[2])
        b.ops.append(checked)
        several = b.add(_index(SEVERAL))
        reader = b.select(self._read_by_other(b, tags, offset), several, self.tid)
        b.store(b.load(self.phase, self.tid), tags.read_phase, offset)
        b.store(reader, tags.reader, offset)
        block = load.parent_block()
        assert block is not None
        block.insert_ops_after(b.ops, load)
