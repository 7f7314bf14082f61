"""Run the output of gpu-map-loops on the CPU: each gpu.launch_func becomes loops over the
grid's blocks around the kernel body, whose barrier-free stretches run in loops over the
block's threads (MCUDA-style "thread-loop fission" at every gpu.barrier).

This checks the mapping's arithmetic (block/thread indices, guards, grid sizes, copies spread
over threads) and that the barriers separate the phases: a missing barrier lets one thread
read what a later thread has not written yet. Threads run in increasing or decreasing order
(`reverse`), blocks one after another. It is a test helper, not a GPU simulator: races within
one phase are not detected. Values that cross a barrier must be pure functions of the thread
ids and uniform values (they are recomputed in each phase), as in gpu-map-loops' kernels.

Asynchronous copies (nvvm.cp.async.*) are emulated by `_AsyncCopies`: a copy writes its
elements when it is issued (the earliest it may land: a later read of the old tile by another
thread shows as a wrong result) and tags each with the issuing thread and its group; a read
of an element whose group that thread has not waited for (wait.group) yet gives NaN (the
latest it may land). Each thread counts its committed and its completed groups. So a missing
or too weak wait, or a missing barrier between a wait and other threads' reads, breaks the
result, as does overwriting a stage other threads still read.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects import affine, arith, builtin, memref, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.analysis.divergence import Divergence
from loopopt.dialects import gpu_ext as gpu
from loopopt.dialects.nvvm import CpAsyncCommitGroupOp, CpAsyncCopyOp, CpAsyncWaitGroupOp
from loopopt.loops.affine_maps import Bound
from loopopt.loops.bounds import new_loop

AXES = ("x", "y", "z")
NEVER = 1 << 40
"""The group of an element no cp.async has written: never waited for."""
PURE_PREFIXES = ("arith.",)
PURE_OPS = frozenset({"affine.apply", "affine.min", "affine.max", "gpu.thread_id"})


def _index(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr.from_index_int_value(value))


def _pure(op: Operation) -> bool:
    return not op.regions and (op.name in PURE_OPS or op.name.startswith(PURE_PREFIXES))


def emulate(module: ModuleOp, reverse: bool = False) -> None:
    """Replace every launch by its CPU emulation, in place, and drop the gpu.module."""
    kernels = {
        fn.sym_name.data: fn
        for gmod in module.ops
        if isinstance(gmod, gpu.ModuleOp)
        for fn in gmod.body.block.ops
        if isinstance(fn, gpu.FuncOp)
    }
    for launch in [op for op in module.walk() if isinstance(op, gpu.LaunchFuncOp)]:
        kernel = kernels[launch.kernel.nested_references.data[-1].data]
        _emulate_launch(launch, kernel, reverse)
    for op in list(module.ops):
        if isinstance(op, gpu.ModuleOp):
            op.detach()
            op.erase()
    module.attributes.pop("gpu.container_module", None)


def _emulate_launch(launch: gpu.LaunchFuncOp, kernel: gpu.FuncOp, reverse: bool) -> None:
    host = launch.parent_block()
    assert host is not None
    zero, one = _index(0), _index(1)
    host.insert_ops_before([zero, one], launch)
    grid = [launch.gridSizeZ, launch.gridSizeY, launch.gridSizeX]
    blocks: dict[str, SSAValue] = {}
    body = Block()
    outer: Operation | None = None
    parent_body: Block | None = None
    for axis, size in zip(("z", "y", "x"), grid, strict=True):
        loop_body = Block(arg_types=[IndexType()])
        blocks[axis] = loop_body.args[0]
        loop = scf.ForOp(zero.result, size, one.result, [], Region(loop_body))
        if parent_body is None:
            outer = loop
        else:
            parent_body.add_op(loop)
            parent_body.add_op(scf.YieldOp())
        parent_body = loop_body
    assert outer is not None and parent_body is not None
    body = parent_body
    region = kernel.body.clone()
    entry = region.block
    for arg, value in zip(entry.args, launch.kernelOperands, strict=True):
        arg.replace_all_uses_with(value)
    sizes = _block_sizes(launch)
    _AsyncCopies(entry, sizes).emulate()
    for op in list(entry.ops):
        op.detach()
        if isinstance(op, gpu.ReturnOp):
            continue
        if isinstance(op, gpu.BlockIdOp):
            op.result.replace_all_uses_with(blocks[op.dimension.data])
            continue
        if isinstance(op, gpu.BlockDimOp):
            size = _index(sizes[op.dimension.data])
            body.add_op(size)
            op.result.replace_all_uses_with(size.result)
            continue
        body.add_op(_without_space(op))
    body.add_op(scf.YieldOp())
    host.insert_op_before(outer, launch)
    launch.detach()
    launch.erase()
    _Fission(sizes, reverse).block(body, outer)


def _block_sizes(launch: gpu.LaunchFuncOp) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for axis, value in zip(
        AXES, (launch.blockSizeX, launch.blockSizeY, launch.blockSizeZ), strict=True
    ):
        owner = value.owner
        assert isinstance(owner, arith.ConstantOp), "block sizes are constants"
        attr = owner.value
        assert isinstance(attr, IntegerAttr)
        sizes[axis] = attr.value.data
    return sizes


def _without_space(op: Operation) -> Operation:
    """A workgroup alloca as a plain one (the CPU lowering has no address spaces)."""
    if isinstance(op, memref.AllocaOp) and not isinstance(op.memref.type.memory_space, NoneAttr):
        t = op.memref.type
        assert isinstance(t, MemRefType)
        plain = memref.AllocaOp.get(t.element_type, shape=t.get_shape())
        plain.memref.name_hint = op.memref.name_hint
        op.memref.replace_all_uses_with(plain.memref)
        return plain
    return op


class _Fission:
    """Wraps every barrier-free stretch of block-level code in loops over the threads."""

    def __init__(self, sizes: dict[str, int], reverse: bool):
        self.sizes, self.reverse = sizes, reverse
        self.ivs: dict[SSAValue, str] = {}
        """Thread indices of the thread loops made so far, by axis."""
        self.origin: dict[SSAValue, SSAValue] = {}
        """Recomputed values and the kernel values they stand for."""

    def _per_thread_value(self, value: SSAValue) -> bool:
        value = self.origin.get(value, value)
        return value in self.ivs or self.divergence.is_divergent(value)

    def block(self, block: Block, scope: Operation) -> None:
        self.divergence = Divergence(scope)
        self._split(block)
        for op in list(block.ops):
            if isinstance(op, gpu.ThreadIdOp):
                op.detach()
                op.erase()  # every use was recomputed inside the thread loops

    def _split(self, block: Block) -> None:
        segment: list[Operation] = []
        for op in list(block.ops):
            if isinstance(op, gpu.BarrierOp):
                self._flush(segment, op)
                segment = []
                op.detach()
                op.erase()
            elif any(isinstance(inner, gpu.BarrierOp) for inner in op.walk()):
                self._flush(segment, op)
                segment = []
                for region in op.regions:
                    for inner in region.blocks:
                        self._split(inner)
            elif op is block.last_op:
                self._flush(segment, op)
            else:
                segment.append(op)

    def _per_thread(self, op: Operation) -> bool:
        if isinstance(op, gpu.ThreadIdOp):
            return False
        for inner in op.walk():
            if isinstance(inner, memref.AllocaOp):
                continue
            if not _pure(inner) or any(self.divergence.is_divergent(v) for v in inner.operands):
                return True
        return False

    def _flush(self, segment: list[Operation], before: Operation) -> None:
        moved = [op for op in segment if self._per_thread(op)]
        if not moved:
            return
        block = before.parent_block()
        assert block is not None
        nest, body, ids = self._thread_loops()
        block.insert_op_before(nest, before)
        terminator = body.last_op
        assert terminator is not None
        for op in moved:
            op.detach()
            body.insert_op_before(op, terminator)
        clones: dict[SSAValue, SSAValue] = {}
        first = moved[0]
        for op in moved:
            for inner in op.walk():
                for k, value in enumerate(inner.operands):
                    if self._per_thread_value(value) and not nest.is_ancestor(value.owner):
                        inner.operands[k] = self._recompute(value, ids, clones, body, first)

    def _recompute(
        self,
        value: SSAValue,
        ids: dict[str, SSAValue],
        clones: dict[SSAValue, SSAValue],
        body: Block,
        first: Operation,
    ) -> SSAValue:
        value = self.origin.get(value, value)
        if value in clones:
            return clones[value]
        if value in self.ivs:
            return ids[self.ivs[value]]
        owner = value.owner
        assert isinstance(owner, Operation) and _pure(owner), "only pure values cross barriers"
        if isinstance(owner, gpu.ThreadIdOp):
            clones[value] = ids[owner.dimension.data]
            return clones[value]
        operands = [
            self._recompute(v, ids, clones, body, first) if self._per_thread_value(v) else v
            for v in owner.operands
        ]
        copy = owner.clone()
        copy.operands = operands
        body.insert_op_before(copy, first)
        clones[value] = copy.results[0]
        self.origin[copy.results[0]] = value
        return copy.results[0]

    def _thread_loops(self) -> tuple[Operation, Block, dict[str, SSAValue]]:
        ids: dict[str, SSAValue] = {}
        outer: Operation | None = None
        parent: Block | None = None
        for axis in ("z", "y", "x"):
            size = self.sizes[axis]
            loop = new_loop(Bound.constant(0), Bound.constant(size), 1)
            body = loop.body.block
            index = body.args[0]
            if self.reverse:
                flip = affine.ApplyOp(
                    [index],
                    builtin.AffineMapAttr(
                        AffineMap(1, 0, (AffineExpr.constant(size - 1) - AffineExpr.dimension(0),))
                    ),
                )
                body.insert_op_before(flip, body.first_op)  # type: ignore[arg-type]
                index = flip.result
            ids[axis] = index
            self.ivs[index] = axis
            if parent is None:
                outer = loop
            else:
                assert parent.last_op is not None
                parent.insert_op_before(loop, parent.last_op)
            parent = body
        assert outer is not None and parent is not None
        return outer, parent, ids


class _AsyncCopies:
    """Rewrites a kernel's cp.async ops into plain copies with tags (see the module docstring)."""

    def __init__(self, entry: Block, sizes: dict[str, int]):
        self.entry, self.sizes = entry, sizes
        self.top: list[Operation] = []
        """Ops for the kernel's entry: buffers, thread index, counters set to 0."""

    def _at_top(self, op: Operation) -> SSAValue:
        self.top.append(op)
        return op.results[0]

    def _index_buffer(self, shape: Sequence[int]) -> SSAValue:
        return self._at_top(memref.AllocaOp.get(IndexType(), shape=shape))

    def emulate(self) -> None:
        ops = [op for op in self.entry.walk() if isinstance(op, CpAsyncCopyOp)]
        if not ops:
            return
        x, y, z = (self.sizes[axis] for axis in AXES)
        ids = [self._at_top(gpu.ThreadIdOp(axis)) for axis in AXES]
        linear = AffineMap(
            3,
            0,
            (
                AffineExpr.dimension(0)
                + x * (AffineExpr.dimension(1) + y * AffineExpr.dimension(2)),
            ),
        )
        self.tid = self._at_top(affine.ApplyOp(ids, builtin.AffineMapAttr(linear)))
        self.committed = self._index_buffer([x * y * z])
        self.waited = self._index_buffer([x * y * z])
        self.zero = self._at_top(_index(0))
        for counter in (self.committed, self.waited):
            self.top.append(memref.StoreOp.get(self.zero, counter, [self.tid]))
        self.tags: dict[SSAValue, tuple[SSAValue, SSAValue]] = {}
        for op in ops:
            if op.dst not in self.tags:
                self.tags[op.dst] = self._tag_buffers(op.dst.type, x * y * z)
        for op in list(self.entry.walk()):
            if isinstance(op, CpAsyncCopyOp):
                self._replace(op, self._copy(op))
            elif isinstance(op, CpAsyncCommitGroupOp):
                self._replace(op, self._commit())
            elif isinstance(op, CpAsyncWaitGroupOp):
                self._replace(op, self._wait(op.n.value.data))
            elif isinstance(op, affine.LoadOp | memref.LoadOp) and op.memref in self.tags:
                self._check(op)
        first = self.entry.first_op
        assert first is not None
        self.entry.insert_ops_before([*self.top, gpu.BarrierOp()], first)  # tags set first

    def _tag_buffers(self, t: Attribute, threads: int) -> tuple[SSAValue, SSAValue]:
        """The group and the thread that wrote each element of a buffer of type `t`, by
        row-major offset; every thread marks its share as never written (group NEVER)."""
        assert isinstance(t, MemRefType)
        rounds = -(-prod(t.get_shape()) // threads)
        group_tag = self._index_buffer([rounds * threads])
        thread_tag = self._index_buffer([rounds * threads])
        loop = new_loop(Bound.constant(0), Bound.constant(rounds), 1)
        body = loop.body.block
        share = AffineMap(2, 0, (AffineExpr.dimension(0) * threads + AffineExpr.dimension(1),))
        offset = affine.ApplyOp([body.args[0], self.tid], builtin.AffineMapAttr(share))
        never = _index(NEVER)
        body.insert_ops_before(
            [
                offset,
                never,
                memref.StoreOp.get(never.result, group_tag, [offset.result]),
                memref.StoreOp.get(self.zero, thread_tag, [offset.result]),
            ],
            body.first_op,  # type: ignore[arg-type]
        )
        self.top.append(loop)
        return group_tag, thread_tag

    def _offset(self, t: Attribute, indices: Sequence[SSAValue], ops: list[Operation]) -> SSAValue:
        """The row-major offset of element `indices` of a buffer of type `t`."""
        assert isinstance(t, MemRefType)
        shape = t.get_shape()
        expr: AffineExpr = AffineExpr.constant(0)
        for dim in range(len(shape)):
            expr = expr * shape[dim] + AffineExpr.dimension(dim)
        ops.append(
            affine.ApplyOp(list(indices), builtin.AffineMapAttr(AffineMap(len(shape), 0, (expr,))))
        )
        return ops[-1].results[0]

    def _replace(self, op: Operation, ops: list[Operation]) -> None:
        block = op.parent_block()
        assert block is not None
        block.insert_ops_before(ops, op)
        block.erase_op(op)

    def _counter(self, counter: SSAValue, ops: list[Operation]) -> SSAValue:
        load = memref.LoadOp.get(counter, [self.tid])
        ops.append(load)
        return load.res

    def _copy(self, op: CpAsyncCopyOp) -> list[Operation]:
        ops: list[Operation] = []
        group = self._counter(self.committed, ops)
        group_tag, thread_tag = self.tags[op.dst]
        for k in range(op.elements()):
            shifted: list[list[SSAValue]] = []
            for indices in (op.src_indices, op.dst_indices):
                step = _index(k)
                last = arith.AddiOp(indices[-1], step.result)
                ops += [step, last]
                shifted.append([*indices[:-1], last.result])
            value = memref.LoadOp.get(op.src, shifted[0])
            ops += [value, memref.StoreOp.get(value.res, op.dst, shifted[1])]
            offset = self._offset(op.dst.type, shifted[1], ops)
            ops += [
                memref.StoreOp.get(group, group_tag, [offset]),
                memref.StoreOp.get(self.tid, thread_tag, [offset]),
            ]
        return ops

    def _commit(self) -> list[Operation]:
        ops: list[Operation] = []
        count = self._counter(self.committed, ops)
        one = _index(1)
        more = arith.AddiOp(count, one.result)
        return [*ops, one, more, memref.StoreOp.get(more.result, self.committed, [self.tid])]

    def _wait(self, pending: int) -> list[Operation]:
        ops: list[Operation] = []
        count = self._counter(self.committed, ops)
        done = self._counter(self.waited, ops)
        allowed = _index(pending)
        landed = arith.SubiOp(count, allowed.result)
        newest = arith.MaxSIOp(done, landed.result)
        store = memref.StoreOp.get(newest.result, self.waited, [self.tid])
        return [*ops, allowed, landed, newest, store]

    def _check(self, load: affine.LoadOp | memref.LoadOp) -> None:
        """NaN instead of the element when its copy has not been waited for."""
        ops: list[Operation] = []
        indices: list[SSAValue] = list(load.indices)
        if isinstance(load, affine.LoadOp):
            amap = load.map.data
            indices = []
            for result in amap.results:
                single = AffineMap(amap.num_dims, amap.num_symbols, (result,))
                ops.append(affine.ApplyOp(list(load.indices), builtin.AffineMapAttr(single)))
                indices.append(ops[-1].results[0])
        group_tag, thread_tag = self.tags[load.memref]
        offset = self._offset(load.memref.type, indices, ops)
        group = memref.LoadOp.get(group_tag, [offset])
        thread = memref.LoadOp.get(thread_tag, [offset])
        done = memref.LoadOp.get(self.waited, [thread.res])
        landed = arith.CmpiOp(group.res, done.res, "slt")
        t = load.result.type if isinstance(load, affine.LoadOp) else load.res.type
        assert isinstance(t, AnyFloat), "the emulated cp.async copies floats"
        nan = arith.ConstantOp(FloatAttr(float("nan"), t))
        value = load.results[0]
        select = arith.SelectOp(landed.result, value, nan.result)
        ops += [group, thread, done, landed, nan, select]
        value.replace_all_uses_with(select.result)
        select.operands = (landed.result, value, nan.result)
        block = load.parent_block()
        assert block is not None
        block.insert_ops_after(ops, load)
