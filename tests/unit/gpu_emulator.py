"""Run the output of gpu-map-loops on the CPU: each gpu.launch_func becomes loops over the
grid's blocks around the kernel body, whose barrier-free stretches run in loops over the
block's threads (MCUDA-style "thread-loop fission" at every gpu.barrier).

This checks the mapping's arithmetic (block/thread indices, guards, grid sizes, copies spread
over threads) and that the barriers separate the phases: a missing barrier lets one thread
read what a later thread has not written yet. Threads run in increasing or decreasing order
(`reverse`), blocks one after another. It is a test helper, not a GPU simulator: races within
one phase are not detected. Values that cross a barrier are recomputed in each phase where
they are pure functions of the thread ids and uniform values; other per-thread values (loads)
are kept in a buffer of one element per thread, as a register across a barrier; uniform reads
(loads at block-uniform addresses and loops of them) run once for the block.

Warp shuffles (nvvm.shfl.sync) become exchanges between barriers, checked as PTX specifies
them (gpu_shuffle_emulator.py). Asynchronous copies (nvvm.cp.async.*) become tagged plain
copies first (gpu_async_emulator.py), tensor-core ops exchanges of fragments
(gpu_mma_emulator.py): a missing or too weak wait, a missing barrier, or a
copy into a stage other threads still read gives NaN. Values that a loop with a barrier inside
carries (iter_args) are kept per thread in buffers (gpu_carried_emulator.py). A kernel's
constant-memory globals (gpu-constant-memory) read the arguments the runtime copies into them.
"""

from __future__ import annotations

import weakref

from gpu_async_emulator import emulate_async_copies
from gpu_carried_emulator import demote_carried
from gpu_mma_emulator import emulate_mma
from gpu_shuffle_emulator import check_convergent, declare_error_function, emulate_shuffles
from xdsl.dialects import affine, arith, builtin, func, gpu, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, NoneAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.analysis.divergence import Divergence
from loopopt.dialects.nvvm import ShflSyncOp
from loopopt.loops.affine_maps import Bound
from loopopt.loops.bounds import new_loop
from loopopt.loops.constant_memory import constant_args
from loopopt.loops.gpu_workgroup import workgroup_buffers_to_allocas

AXES = ("x", "y", "z")
PURE_PREFIXES = ("arith.", "math.")
PURE_OPS = frozenset({"affine.apply", "affine.min", "affine.max", "gpu.thread_id"})
UNIFORM_READS = frozenset(
    {"affine.load", "memref.load", "affine.for", "affine.if", "affine.yield"}
    | {"scf.for", "scf.if", "scf.yield"}
)
"""Ops that may run once for all threads when their operands are uniform (no writes)."""


def _stored_arrays(op: Operation) -> set[SSAValue]:
    """The memrefs that `op` or an op in it stores to."""
    return {
        inner.memref for inner in op.walk() if isinstance(inner, affine.StoreOp | memref.StoreOp)
    }


def _read_arrays(op: Operation) -> set[SSAValue]:
    """The memrefs that `op` or an op in it loads from."""
    return {inner.memref for inner in op.walk() if isinstance(inner, affine.LoadOp | memref.LoadOp)}


_ID_MAP = builtin.AffineMapAttr(AffineMap.identity(3))
_GLOBAL = IntegerAttr(1, 64)
"""Global memory's address space, as memref types spell it."""
_BUFFERS: weakref.WeakKeyDictionary[Block, dict[str, SSAValue]] = weakref.WeakKeyDictionary()
"""The buffer standing for each global-memory array, by launching function's body."""


def _load_saved(buffer: SSAValue, ids: dict[str, SSAValue]) -> affine.LoadOp:
    return affine.LoadOp(buffer, [ids[a] for a in ("z", "y", "x")], _ID_MAP)


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
    if any(isinstance(op, ShflSyncOp) for fn in kernels.values() for op in fn.walk()):
        declare_error_function(module)
    for kernel in kernels.values():
        workgroup_buffers_to_allocas(kernel)  # workgroup allocas: one per emulated block
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
    check_convergent(kernel)
    region = kernel.body.clone()
    entry = region.block
    for arg, value in zip(entry.args, launch.kernelOperands, strict=True):
        arg.replace_all_uses_with(value)
    _constants_as_arguments(entry, kernel, launch)
    _globals_as_buffers(entry, launch)
    sizes = _block_sizes(launch)
    emulate_async_copies(entry, sizes)
    emulate_shuffles(entry, sizes)
    emulate_mma(entry, sizes)
    demote_carried(entry, sizes)
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


def _constants_as_arguments(entry: Block, kernel: gpu.FuncOp, launch: gpu.LaunchFuncOp) -> None:
    """Loads from a constant-memory global read the argument the runtime copies into it."""
    copied = {name: launch.kernelOperands[index] for index, name in constant_args(kernel).items()}
    for op in list(entry.walk()):
        if isinstance(op, memref.GetGlobalOp) and op.name_.string_value() in copied:
            op.memref.replace_all_uses_with(copied[op.name_.string_value()])
            op.detach()
            op.erase()


def _globals_as_buffers(entry: Block, launch: gpu.LaunchFuncOp) -> None:
    """Global-memory arrays of the kernels' module (a grid reduction's partial results) become
    one buffer per array at the start of the launching function, which every launch shares."""
    host = launch.parent_op()
    while host is not None and not isinstance(host, func.FuncOp):
        host = host.parent_op()
    assert host is not None
    top = host.body.block
    for op in list(entry.walk()):
        if not isinstance(op, memref.GetGlobalOp) or op.memref.type.memory_space != _GLOBAL:
            continue
        buffers = _BUFFERS.setdefault(top, {})
        name = op.name_.string_value()
        if name not in buffers:
            t = op.memref.type
            buffer = memref.AllocaOp.get(t.element_type, shape=t.get_shape())
            assert top.first_op is not None
            top.insert_op_before(buffer, top.first_op)
            buffers[name] = buffer.memref
        op.memref.replace_all_uses_with(buffers[name])
        op.detach()
        op.erase()


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
        self.nests: list[tuple[Operation, dict[str, SSAValue]]] = []
        """The thread-loop nests made so far and their thread indices."""
        self.saved: dict[SSAValue, SSAValue] = {}
        """Per-thread values kept across a barrier: the buffer (one element per thread)."""

    def _per_thread_value(self, value: SSAValue) -> bool:
        value = self.origin.get(value, value)
        return value in self.ivs or self.divergence.is_divergent(value)

    def block(self, block: Block, scope: Operation) -> None:
        self.divergence = Divergence(scope)
        self.top = block
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
        """`op` runs in the thread loops: it uses a thread-dependent value or writes memory.
        Uniform reads (loads at block-uniform addresses, loops of them) run once, at block
        level: every thread would read the same values."""
        if isinstance(op, gpu.ThreadIdOp):
            return False
        for inner in op.walk():
            if isinstance(inner, memref.AllocaOp):
                continue
            if any(self.divergence.is_divergent(v) for v in inner.operands):
                return True
            if not _pure(inner) and inner.name not in UNIFORM_READS:
                return True
        return False

    def _flush(self, segment: list[Operation], before: Operation) -> None:
        # The thread loops of a segment run where it ends, so a uniform read that follows a
        # per-thread op (which may write what it reads) ends the segment there.
        start = 0
        written: set[SSAValue] = set()  # arrays the per-thread ops so far store to
        for k, op in enumerate(segment):
            if self._per_thread(op):
                written |= _stored_arrays(op)
            elif written and _read_arrays(op) & written:
                self._flush_part(segment[start:k], op)
                start, written = k, set()
        self._flush_part(segment[start:], before)

    def _flush_part(self, segment: list[Operation], before: Operation) -> None:
        moved = [op for op in segment if self._per_thread(op)]
        if not moved:
            return
        block = before.parent_block()
        assert block is not None
        nest, body, ids = self._thread_loops()
        self.nests.append((nest, ids))
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
        assert isinstance(owner, Operation)
        if not _pure(owner):
            if not any(nest.is_ancestor(owner) for nest, _ in self.nests):
                return value  # computed once for all threads (a uniform read)
            load = _load_saved(self._saved(value, owner), ids)
            body.insert_op_before(load, first)
            clones[value] = load.results[0]
            self.origin[load.results[0]] = value
            return load.results[0]
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

    def _saved(self, value: SSAValue, owner: Operation) -> SSAValue:
        """A buffer of one element per thread that the thread loops defining `value` (a
        per-thread value that is no pure function of the ids, such as a load) store it into,
        as a GPU thread keeps it in a register across a barrier."""
        if value in self.saved:
            return self.saved[value]
        ids = next(ids for nest, ids in self.nests if nest.is_ancestor(owner))
        shape = [self.sizes[axis] for axis in ("z", "y", "x")]
        buffer = memref.AllocaOp.get(value.type, shape=shape)
        assert self.top.first_op is not None
        self.top.insert_op_before(buffer, self.top.first_op)
        store = affine.StoreOp(value, buffer.memref, [ids[a] for a in ("z", "y", "x")], _ID_MAP)
        block = owner.parent_block()
        assert block is not None
        block.insert_op_after(store, owner)
        self.saved[value] = buffer.memref
        return buffer.memref

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
