"""Where each op of a function runs when it is mapped onto the GPU (`gpu-map-loops`' plan).

    func.func @durbin(...) {                     Region  (one kernel: a block of threads)
      %a = affine.load %r[0]  ...                   the scalar code, and the k loop whose
      %b, %c = affine.for %k … iter_args(…) {       iter_args hold values read from memory
        … } }
    func.func @lu(%A) {
      affine.for %i = 0 to 8 {                   HostLoop (carries a dependence; host loop)
        affine.for %j = 0 to %i { … }              Region  (no parallel loop: one kernel)
        affine.for %j = %i to 8 { … } } }          Kernel  (a parallel band: grid of blocks)

The ops of a host block are sorted into items: a `Kernel` is a nest whose outer loops carry no
dependence (loops/gpu_plan maps it; parallel loops of its perfect band that lie inside a loop
carrying a dependence move outward first, where legal: `parallel_first`); a `HostLoop` carries a
dependence, has no iter_args and bounds the host computes, and holds some kernel: it stays on
the host around the launches of its body; pure ops without regions stay on the host (`Host`);
everything else (memory access outside parallel loops, recurrences, loops the host cannot run)
is `Region` code, which runs on the device in single-block kernels (loops/gpu_region). Values
cannot cross from a kernel to the host or to another kernel, so the items from a region op to
any later op that uses one of its values become one region, until nothing crosses; a block whose
terminator uses a region's value cannot be split and runs whole as a region of its parent.
Kernel launches already made (an earlier run of the pass) stay as they are.

Not checked here: resource limits of the kernels (gpu_plan and the backend check those).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import affine, gpu, memref
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator, is_side_effect_free

from loopopt.analysis.distribution import distribution_groups
from loopopt.analysis.legality import is_permutation_legal, require_distribution_legal
from loopopt.analysis.parallel import is_parallel, parallel_loops
from loopopt.diagnostics import LoopoptError
from loopopt.loops.box import box_band
from loopopt.loops.distribute import distribute
from loopopt.loops.gpu_plan import KernelPlan, plan_kernel, point_loop_of
from loopopt.loops.interchange import permute_band
from loopopt.loops.nest import body_ops, host_buffer_op, perfect_band
from loopopt.loops.outline import captured_values


@dataclass
class Kernel:
    op: affine.ForOp
    plan: KernelPlan


@dataclass
class HostLoop:
    op: affine.ForOp
    items: list[Item]


@dataclass
class Host:
    op: Operation


@dataclass
class Region:
    ops: list[Operation] = field(default_factory=list[Operation])


Item = Kernel | HostLoop | Host | Region


def item_ops(item: Item) -> list[Operation]:
    return item.ops if isinstance(item, Region) else [item.op]


def launches(item: Item) -> bool:
    """The item launches a kernel on the device (directly or in a host loop)."""
    if isinstance(item, Kernel):
        return True
    if isinstance(item, HostLoop):
        return any(launches(inner) for inner in item.items)
    return isinstance(item, Host) and any(isinstance(op, gpu.LaunchFuncOp) for op in item.op.walk())


@dataclass
class Planner:
    """Sorts host code into items; `block` and `grid` are gpu-map-loops' options."""

    block_sizes: Sequence[int]
    grid: Sequence[int]
    pass_name: str

    def plan(self, block: Block) -> list[Item] | None:
        """The items of a host block, or None when it must run whole in one region."""
        items: list[Item] = []
        terminator: Operation | None = None
        for op in list(block.ops):
            if op.has_trait(IsTerminator):
                terminator = op
            else:
                items += [self.classify(piece) for piece in split_nests(op, self.pass_name)]
        items = close(items)
        if terminator is not None:
            device = device_values(items)
            if any(value in device for value in terminator.operands):
                return None
        return items

    def classify(self, op: Operation) -> Item:
        if any(isinstance(inner, gpu.LaunchFuncOp) for inner in op.walk()):
            if isinstance(op, affine.ForOp) and not op.results:  # a host loop mapped in part
                inner = self.plan(op.body.block)
                if inner is not None:
                    return HostLoop(op, inner)
            return Host(op)
        if isinstance(op, affine.ForOp):
            op = parallel_first(op, self.pass_name)
            prefix = list(itertools.takewhile(is_parallel, perfect_band(op)))
            if len(prefix) > 1 and not any(point_loop_of(loop) for loop in prefix):
                box_band(prefix, self.pass_name)  # not tiled bands: a point loop is no triangle
            plan = plan_kernel(op, self.block_sizes, self.grid, self.pass_name)
            if plan is not None:
                return Kernel(op, plan)
            if not op.results:
                inner = self.plan(op.body.block)
                if inner is not None and any(launches(item) for item in inner):
                    return HostLoop(op, inner)
            return Region([op])
        if (not op.regions and is_side_effect_free(op)) or host_buffer_op(op):
            return Host(op)
        return Region([op])


def split_nests(op: Operation, pass_name: str) -> list[Operation]:
    """A loop whose body holds several statement groups that no dependence cycle or scalar
    value ties becomes one loop per group, so each nest gets its own kernels:
    - a parallel loop around several loop nests (gemm's `C *= beta` loop and its `k` loop): always
      legal for a loop that carries nothing; a lone nest keeps the statements around it
      (block-level code);
    - a loop that carries a dependence, split from the inside out (`split_sequential`): atax's
      `i` around `tmp[i] = A[i, :] · x` and `y[j] += A[i, j] * tmp[i]`, bicg's `j` around its two
      reductions, whose parts are parallel or reductions instead of one host loop launching
      kernels in every iteration.
    Other ops (and loops that already launch kernels) are themselves."""
    if not isinstance(op, affine.ForOp) or op.results:
        return [op]
    if not any(isinstance(inner, affine.ForOp) for inner in body_ops(op)):
        return [op]
    if any(isinstance(inner, gpu.LaunchFuncOp) for inner in op.walk()):
        return [op]
    if not is_parallel(op):
        return split_sequential(op, pass_name)
    groups = distribution_groups(op)
    nests = [g for g in groups if any(isinstance(inner, affine.ForOp) for inner in g)]
    if len(nests) < 2:
        return [op]
    try:
        require_distribution_legal(op, groups, pass_name)
    except LoopoptError:
        return [op]
    return list(distribute(op, groups, pass_name))


def split_sequential(loop: affine.ForOp, pass_name: str) -> list[Operation]:
    """`loop` (it carries a dependence) split into the finest legal statement groups, after its
    inner loops that carry one are split the same way; `[loop]` unchanged when it stays one
    group (a time loop whose nests feed each other, lu's `k`, durbin's scalar recurrence)."""
    block = loop.parent_block()
    if block is None or not _several_statements(loop):
        return [loop]
    copy = loop.clone()
    block.insert_op_before(copy, loop)
    for inner in list(body_ops(copy)):
        if isinstance(inner, affine.ForOp) and not inner.results and not is_parallel(inner):
            split_sequential(inner, pass_name)
    groups = distribution_groups(copy)
    try:
        if len(groups) < 2:
            raise LoopoptError("one group")
        require_distribution_legal(copy, groups, pass_name)
    except LoopoptError:
        copy.detach()
        copy.erase()
        return [loop]
    parts = list(distribute(copy, groups, pass_name))
    loop.detach()
    loop.erase()
    return parts


def _several_statements(root: Operation) -> bool:
    """Some block under `root` holds two or more loops or stores (what distribution could put in
    loops of their own); a quick test before any dependence analysis."""
    for op in root.walk():
        for region in op.regions:
            for block in region.blocks:
                kinds = (affine.ForOp, affine.StoreOp, memref.StoreOp)
                if sum(isinstance(inner, kinds) for inner in block.ops) >= 2:
                    return True
    return False


def parallel_first(root: affine.ForOp, pass_name: str) -> affine.ForOp:
    """Where a parallel loop of `root`'s perfect band lies inside one that carries a
    dependence (`for i, k, j` of a matmul), move the parallel loops outward (`i, j, k`) when
    the exact analysis proves the permutation legal, so that the kernel gets them all; the new
    outermost loop (or `root`, unchanged)."""
    band = perfect_band(root)
    parallel = set(parallel_loops(root))
    flags = [loop in parallel for loop in band]
    if all(flags) or not any(flags[flags.index(False) :]):
        return root
    depths = range(len(band))
    order = [d for d in depths if flags[d]] + [d for d in depths if not flags[d]]
    permutation = [order.index(d) for d in range(len(band))]
    if not is_permutation_legal(band, permutation):
        return root
    try:
        return permute_band(band, permutation, pass_name)[0]
    except LoopoptError:
        return root


def defined_values(item: Item) -> list[SSAValue]:
    return [result for op in item_ops(item) for result in op.results]


def used_values(item: Item) -> set[SSAValue]:
    used: set[SSAValue] = set()
    for op in item_ops(item):
        used.update(captured_values(op))
        used.update(op.operands)
    return used


def device_values(items: Sequence[Item]) -> set[SSAValue]:
    return {value for item in items if isinstance(item, Region) for value in defined_values(item)}


def close(items: list[Item]) -> list[Item]:
    """Merge items into regions until no value of a region is used outside it (see the module
    docstring); adjacent regions become one."""
    while True:
        merged = _merge_once(items)
        if merged is None:
            return _join_adjacent(items)
        items = merged


def _merge_once(items: list[Item]) -> list[Item] | None:
    """One merge of the items from a region to a later user of its values, or None."""
    for first, item in enumerate(items):
        if not isinstance(item, Region):
            continue
        values = set(defined_values(item))
        if not values:
            continue
        users = [k for k in range(first + 1, len(items)) if used_values(items[k]) & values]
        if users:
            last = max(users)
            ops = [op for inner in items[first : last + 1] for op in item_ops(inner)]
            return [*items[:first], Region(ops), *items[last + 1 :]]
    return None


def _join_adjacent(items: list[Item]) -> list[Item]:
    """Adjacent regions become one; a pure host op between two regions (it uses no value of
    theirs) moves ahead of the first, so they can. A launch made earlier (by auto-schedule's
    nest schedules) has no regions but touches memory: it stays between them."""
    joined: list[Item] = []
    for item in items:
        previous = joined[-1] if joined else None
        if isinstance(item, Region) and isinstance(previous, Region):
            previous.ops.extend(item.ops)
        elif (
            isinstance(item, Host)
            and isinstance(previous, Region)
            and not item.op.regions
            and is_side_effect_free(item.op)
        ):
            block = previous.ops[0].parent_block()
            assert block is not None
            item.op.detach()
            block.insert_op_before(item.op, previous.ops[0])
            joined.insert(len(joined) - 1, item)
        else:
            joined.append(item)
    return joined
