"""Choose and apply a schedule with the cost model (`auto-schedule`).

    auto-schedule{device=sm_90 explain top=5 func=sgemm}

Before:  affine.for %i = 0 to 4096 { affine.for %j … { affine.for %k … { C += A * B } } }
After:   what the best candidate's pipeline makes of it, e.g. for SGEMM
         loop-tile{tile-sizes=128,64,16},promote{arrays=A loop=k_t …},…,gpu-map-loops{block=16,16},…

On the GPU, each function's scratch arrays that make its loops sequential are first expanded
where that is exact (`array-expand` without options: doitgen's `sum` per (r, q)), reads that
see no write of their nest read a copy taken before it where that makes a loop parallel
(`array-snapshot` without options: trmm's i), expressions that a nest computes again for
every iteration of some loops are computed once before it where that saves more than a launch
(`hoist-invariants`: gemm's `alpha * A[i, k]`), and each
top-level nest that would run as a single-block region with three sequential loops around its
statements (lu, cholesky, seidel-2d as written) is rescheduled by isl where that leaves one
sequential loop around parallel nests (`loop-reschedule` after `reduction-to-memory`:
passes/loop_reschedule.reschedule_deep). Then, for
each nest of each function (schedule/nests.py: the nests at the top of the function and in
its host loops whose values from outside the host computes; a parallel loop around several nests
is split first, as gpu-map-loops splits it): outline the nest into a function of its own
(loops/func_outline.py), summarize it (schedule/summary.py), enumerate the candidates of its
class (schedule/space.py; those that do not fit the device's threads, shared memory and
registers are already out), rank them by the model's predicted time (schedule/cost_model.py;
ties keep the space's order, so the choice is deterministic; rankings: schedule/rankings.py),
apply the first one's pipeline to that function and inline it back. A nest without
candidates may still get one for a part: the statements beside an inner loop are split off
(`expose_nests`) when every part holding that loop then has candidates, or is split so in turn
(doitgen: the fill of `sum` beside its s loop, then a batched contraction); on the GPU, a
nest whose inner loops carry scalar accumulators is then tried with them kept in memory
(`reduction-to-memory`: `s += A[i, k] * B[k, j]; C[i, j] = s` becomes a fill, a matmul and its
epilogue), kept where some part gets a recipe other than `map`; otherwise it is left as it
was. `map` candidates with a sequential loop inside or around their threads are left to
gpu-map-loops (its reduction strategies and loop order do better). On the GPU, `gpu-map-loops`
then maps the rest of the function (regions, reductions, nests without a summary). `explain`
prints, per nest, the top `top` candidates with their breakdowns to stderr, the chosen one
first, or the reason for the default mapping.
Each function is first put in the form the model reads (`affine_form`): scf loops and memref
accesses raised to affine ones where they are affine, unnamed loops named `i0, i1, …`.
`device=` is an architecture (sm_80, sm_89, sm_90) or a device name of schedule/device.py;
`auto` (the default) is the GPU in use, else sm_90. With `gpu=false` only the loop-level part of
the choice is applied (the passes before `gpu-map-loops`): the CPU path of `loopopt.compile`
uses that.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects import affine, builtin, func, gpu, memref
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from loopopt.analysis.box import band_box
from loopopt.analysis.nest import body_block, loops_in
from loopopt.analysis.parallel import is_parallel
from loopopt.diagnostics import LoopoptError
from loopopt.loops.demote import demote
from loopopt.loops.func_outline import (
    enclosing_function,
    fresh_function_name,
    inline_call,
    outline_nest,
)
from loopopt.loops.gpu_host import split_nests
from loopopt.loops.gpu_region import keep_stored_elements
from loopopt.loops.nest import (
    NON_AFFINE_LOOPS,
    enclosing_loops,
    functions,
    loop_name,
    perfect_band,
)
from loopopt.loops.outline import kernel_module, kernel_name, rename_kernel
from loopopt.passes import LoopoptPass
from loopopt.passes.array_expand import expand_function, expand_scratch
from loopopt.passes.array_snapshot import snapshot_function
from loopopt.passes.gpu_map_loops import GpuMapLoopsPass
from loopopt.passes.hoist_invariants import AUTO_MIN_REUSE, hoist_function, launch_ops
from loopopt.passes.loop_name import LoopNamePass
from loopopt.passes.loop_reschedule import reschedule_deep
from loopopt.passes.raise_scf_to_affine import RaiseScfToAffinePass
from loopopt.passes.reduction_to_memory import ReductionToMemoryPass
from loopopt.schedule.nests import candidate, expose_nests, is_host_loop
from loopopt.schedule.rankings import rank as rank
from loopopt.schedule.rankings import ranking
from loopopt.schedule.roles import map_roles
from loopopt.schedule.types import Device, NestSummary, Schedule

GPU_MAPPING = "gpu-map-loops"

FALLBACKS = 3
"""Candidates tried in rank order when a schedule's loop-level pass refuses the nest."""


@dataclass(frozen=True)
class Choice:
    """What auto-schedule decided for one function."""

    func: str
    ranked: list[tuple[Schedule, float]]
    """Candidates with predicted microseconds, best first (empty: default mapping)."""
    reason: str = ""
    """Why there are no candidates (the summary's diagnostic)."""
    summary: NestSummary | None = None
    nest: str = ""
    """The outermost loop of the nest the choice is for."""
    candidates: int = 0
    """Candidates in the nest's space."""
    short: bool = False
    """Only a shortlist was ranked (schedule/rankings.py: another nest of the size class)."""


def resolve_device(name: str) -> Device:
    """`auto`: the GPU in use, else the sm_90 table; otherwise an arch or device name."""
    from loopopt.schedule.device import current_device, device_for

    if name == "auto":
        return current_device() or device_for("sm_90")
    return device_for(name)


def choose(fn: func.FuncOp, device: Device) -> Choice:
    """Rank `fn`'s candidates; no candidates (and the reason) when its nest has no summary."""
    from loopopt.schedule.summary import summarize

    name = fn.sym_name.data
    try:
        summary = summarize(fn)
    except LoopoptError as e:
        return Choice(name, [], e.message)
    found = ranking(summary, device)
    ranked = [(s, t) for s, t in found.ranked if not _left_to_mapping(summary, s)]
    if not ranked and map_roles(summary) is not None:
        reason = (
            "a sequential loop around or inside the parallel ones: gpu-map-loops' reduction "
            "strategies and loop order"
        )
        return Choice(name, [], reason, summary)
    reason = "" if ranked else "no candidate fits the device"
    return Choice(name, ranked, reason, summary, candidates=found.total, short=found.shortlisted)


def _left_to_mapping(summary: NestSummary, schedule: Schedule) -> bool:
    """A `map` candidate with a sequential loop of the nest inside its threads (a reduction,
    as a rule: one thread per output, where gpu-map-loops' own strategies give a warp, a
    block or the grid to each output, coalesced) or around them on the host (a launch per
    iteration, where gpu-map-loops first moves the parallel loops outward when that is
    legal: atax's `y[j] += A[i, j] * tmp[i]` becomes column sums)."""
    roles = map_roles(summary) if schedule.recipe == "map" else None
    return roles is not None and (roles.inner is not None or roles.host > 0)


def split_pipeline(
    pipeline: str | Sequence[ModulePass],
) -> tuple[list[ModulePass], list[ModulePass]]:
    """The passes of `pipeline` (text or pass objects) up to and including the GPU mapping,
    and those after it."""
    from loopopt.pass_pipeline import parse_pipeline

    passes = parse_pipeline(pipeline) if isinstance(pipeline, str) else list(pipeline)
    cut = next((i + 1 for i, p in enumerate(passes) if p.name == GPU_MAPPING), len(passes))
    return passes[:cut], passes[cut:]


def only(p: ModulePass, function: str) -> ModulePass:
    """`p` restricted to one function (func.func or gpu.func) where it has `func=`."""
    return replace(p, func=function) if "func" in {f.name for f in fields(p)} else p


def launched_kernels(fn: func.FuncOp) -> list[str]:
    """The kernels (gpu.func names) that `fn` launches."""
    names = [
        op.kernel.nested_references.data[-1].data
        for op in fn.walk()
        if isinstance(op, gpu.LaunchFuncOp)
    ]
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class AutoSchedulePass(LoopoptPass):
    """Choose tiles, block shape, register tile, unrolling and promotion by the cost model."""

    name = "auto-schedule"

    device: str = "auto"
    """sm_80, sm_89, sm_90, a device name of schedule/device.py, or auto (the GPU in use)."""
    explain: bool = False
    """Print the top candidates with their predicted breakdowns to stderr."""
    top: int = 5
    """How many candidates `explain` prints."""
    gpu: bool = True
    """Apply the GPU mapping too (false: only the loop-level passes, for the CPU)."""
    func: str | None = None
    """Only this function."""

    def __post_init__(self) -> None:
        if self.top < 0:
            raise LoopoptError(f"top must be >= 0, got {self.top}")

    affine_loops = False  # it raises scf loops itself (`affine_form`)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        device = resolve_device(self.device)
        for fn in functions(op, self.func):
            affine_form(ctx, op, fn)
            self.schedule(ctx, op, fn, device, sys.stderr)

    def schedule(
        self, ctx: Context, op: builtin.ModuleOp, fn: func.FuncOp, device: Device, out: TextIO
    ) -> None:
        """Each nest of `fn` (schedule/nests.py) that has candidates gets the best one's
        pipeline, applied to the nest outlined into a function of its own; then, on the GPU,
        `gpu-map-loops` maps whatever is left (other nests, code between them). On the GPU,
        scratch arrays that make a nest's loops sequential are expanded first (array-expand)."""
        body_block(fn, self.name)
        if self.gpu:
            expand_function(fn)
            snapshot_function(fn)
            for line in hoist_function(fn, AUTO_MIN_REUSE, launch_ops(device)):
                if self.explain:
                    print(f"auto-schedule @{fn.sym_name.data}: hoisted {line}", file=out)
            for nest in [o for o in fn.body.block.ops if isinstance(o, affine.ForOp)]:
                reschedule_deep(nest)
        self.walk(ctx, op, fn.body.block, device, out)
        if self.gpu:
            registers_in_parallel_loops(fn)
            self.run(ctx, op, only(GpuMapLoopsPass(), fn.sym_name.data))

    def walk(
        self, ctx: Context, op: builtin.ModuleOp, block: Block, device: Device, out: TextIO
    ) -> None:
        """Schedule the candidate nests of `block` (schedule/nests.py): each as a whole, else
        with the statements of its band split off (`expose_nests`; undone when no part gets a
        schedule), else, for a host loop, the nests in its body."""
        for top in list(block.ops):
            for nest in split_nests(top, self.name):
                if not candidate(nest):
                    continue
                parent, before = nest.parent_block(), nest.prev_op
                if self.place(ctx, op, nest, device, out):
                    continue
                if nest.parent_block() is None:  # a refused candidate put a copy in its place
                    assert parent is not None
                    nest = _next_loop(before.next_op if before is not None else parent.first_op)
                rest = self.exposed(ctx, op, nest, device, out)
                if rest is not None and self.gpu and self.demoted(ctx, op, rest, device, out):
                    continue
                # a host loop around several nests (not a perfect band: gpu-map-loops may move
                # the parallel loops of one outward)
                if rest is not None and is_host_loop(rest) and len(perfect_band(rest)) == 1:
                    self.walk(ctx, op, rest.body.block, device, out)

    def exposed(
        self, ctx: Context, op: builtin.ModuleOp, nest: affine.ForOp, device: Device, out: TextIO
    ) -> affine.ForOp | None:
        """Split `nest`'s band (`split`) and schedule the parts, when each part that holds a
        loop from inside the band gets a schedule (None); otherwise the nest as it was (`nest`
        or, where a split changed it, a copy of it in its place). On the GPU, a part without
        candidates is tried with its scalar accumulators in memory (`demoted`: symm's
        `temp2`, split off the update of C beside it)."""
        original = nest.clone()
        block = nest.parent_block()
        assert block is not None
        before, after = nest.prev_op, nest.next_op
        parts, changed = self.split(ctx, op, nest, device, out)
        if parts is not None:
            for part in parts:
                if not candidate(part):
                    continue
                parent, previous = part.parent_block(), part.prev_op
                if self.place(ctx, op, part, device, out) or not self.gpu:
                    continue
                if part.parent_block() is None:  # a refused candidate put a copy in its place
                    assert parent is not None
                    part = _next_loop(previous.next_op if previous else parent.first_op)
                self.demoted(ctx, op, part, device, out)
            original.erase()  # a detached copy keeps uses of the function's values
            return None
        if not changed:
            original.erase()
            return nest
        _put_back(original, block, before, after)
        return original

    def demoted(
        self, ctx: Context, op: builtin.ModuleOp, nest: affine.ForOp, device: Device, out: TextIO
    ) -> bool:
        """Schedule `nest` with its inner loops' scalar accumulators kept in memory
        (`reduction-to-memory`, where islpy proves each has an element to live in) when that
        gives it, or a part `split` makes of it, a recipe other than `map`: `s = 0; for k:
        s += A[i, k] * B[k, j]; C[i, j] = s` is then the memory-form contraction that the
        matmul recipe takes (with a fill and a copy of its own). Otherwise `nest` stays as it
        was (its iter_args are what gpu-map-loops' reduction strategies use) and False."""
        inner = [loop for loop in loops_in(nest) if loop.inits]
        if not inner:
            return False
        block = nest.parent_block()
        assert block is not None
        before, after = nest.prev_op, nest.next_op
        original = nest.clone()
        top_level = not enclosing_loops(nest)
        known = {a for a in nest.walk() if isinstance(a, memref.AllocaOp)}
        for loop in reversed(inner):  # inner loops first
            plan = ReductionToMemoryPass().plan(loop)
            if isinstance(plan, str) and top_level:  # no element to live in: a scratch one
                plan = ReductionToMemoryPass(scratch=True).plan(loop)
            if isinstance(plan, str):
                _put_back(original, block, before, after)
                return False
            demote(loop, plan)
        scratch = [a for a in nest.walk() if isinstance(a, memref.AllocaOp) and a not in known]
        if scratch and not expand_scratch(nest, scratch):
            _put_back(original, block, before, after)
            return False
        if self.recipe(op, nest, device) not in (None, "map"):
            self.place(ctx, op, nest, device, out)
            original.erase()
            return True
        parts, _ = self.split(ctx, op, nest, device, out)
        recipes = [self.recipe(op, p, device) for p in parts or [] if candidate(p)]
        if not any(r not in (None, "map") for r in recipes):
            _put_back(original, block, before, after)
            return False
        for part in parts or []:
            if candidate(part):
                self.place(ctx, op, part, device, out)
        original.erase()  # a detached copy keeps uses of the function's values
        return True

    @staticmethod
    def recipe(op: builtin.ModuleOp, nest: affine.ForOp, device: Device) -> str | None:
        """The recipe of `nest`'s best candidate (None: it has none); the IR is unchanged."""
        fn = enclosing_function(nest).sym_name.data
        callee, call = outline_nest(nest, op, fresh_function_name(op, f"{fn}__nest"))
        choice = choose(callee, device)
        inline_call(call, callee)
        return choice.ranked[0][0].recipe if choice.ranked else None

    def split(
        self, ctx: Context, op: builtin.ModuleOp, nest: affine.ForOp, device: Device, out: TextIO
    ) -> tuple[list[affine.ForOp] | None, bool]:
        """The parts `expose_nests` splits `nest` into, when some part holds a loop from inside
        its band and each such part has candidates, or is split the same way in turn (doitgen's
        `sum[p] = 0` beside its s loop: a fill and a batched contraction), or is a parallel
        nest left to gpu-map-loops; else None. And whether the IR changed."""
        depth = len(perfect_band(nest))
        parts, changed = expose_nests(nest, self.name)
        if parts is None or not any(len(perfect_band(p)) > depth for p in parts):
            return None, changed
        found: list[affine.ForOp] = []
        for part in parts:
            if len(perfect_band(part)) <= depth or (
                candidate(part) and self.place(ctx, op, part, device, out, dry=True)
            ):
                found.append(part)
                continue
            inner, moved = (
                self.split(ctx, op, part, device, out) if candidate(part) else (None, False)
            )
            if inner is None and not moved and _widely_parallel(part):
                found.append(part)  # no candidate: gpu-map-loops' own mapping of a parallel nest
                continue
            if inner is None:
                return None, True
            found += inner
        return found, True

    def place(
        self,
        ctx: Context,
        op: builtin.ModuleOp,
        nest: affine.ForOp,
        device: Device,
        out: TextIO,
        dry: bool = False,
    ) -> bool:
        """Schedule one nest (only look, when `dry`); whether it has a candidate."""
        fn = enclosing_function(nest).sym_name.data
        callee, call = outline_nest(nest, op, fresh_function_name(op, f"{fn}__nest"))
        choice = replace(choose(callee, device), func=fn, nest=loop_name(nest) or "?")
        if self.explain and not dry:
            print("\n".join(self.explain_choice(choice, device)), file=out)
        applied = False
        for schedule, _ in choice.ranked[:FALLBACKS] if not dry else []:
            callee, applied = self.apply_schedule(ctx, op, callee, schedule, out)
            if applied:
                break
        kernels = launched_kernels(callee)
        inline_call(call, callee)
        for name in kernels:  # named after the function, as gpu-map-loops names them
            rename_kernel(op, name, kernel_name(kernel_module(op), fn))
        return applied if not dry else bool(choice.ranked)

    def apply_schedule(
        self,
        ctx: Context,
        op: builtin.ModuleOp,
        callee: func.FuncOp,
        schedule: Schedule,
        out: TextIO,
    ) -> tuple[func.FuncOp, bool]:
        """Apply `schedule` to the outlined nest `callee`: (the function, True); or, where one
        of its loop-level passes refuses the nest before any kernel exists (a candidate the
        space offered wrongly: a tile of a band that is not fully permutable), the function as
        it was and False; `explain` says why."""
        host, kernel = split_pipeline(schedule.passes)
        if not self.gpu:
            host = [p for p in host if p.name != GPU_MAPPING]
            kernel = []
        target = callee.sym_name.data
        saved = callee.clone()
        try:
            for p in host:
                self.run(ctx, op, only(p, target))
        except LoopoptError as e:
            if launched_kernels(callee):
                raise
            Rewriter.replace_op(callee, saved)
            if self.explain:  # the space offers what legality may refuse: not the user's concern
                print(f"  {schedule.key()} refused ({e.message}); the next candidate", file=out)
            return saved, False
        saved.erase()
        for launched in launched_kernels(callee) if kernel else []:
            for p in kernel:
                self.run(ctx, op, only(p, launched))
        return callee, True

    @staticmethod
    def run(ctx: Context, op: builtin.ModuleOp, p: ModulePass) -> None:
        """Apply one pass of a schedule (the pass manager verifies the IR after auto-schedule:
        verifying a module of unrolled kernels after each pass would cost more than the passes)."""
        p.apply(ctx, op)

    def explain_choice(self, choice: Choice, device: Device) -> list[str]:
        from loopopt.schedule.cost_model import explain, predict

        where = f"@{choice.func}, nest '{choice.nest}'" if choice.nest else f"@{choice.func}"
        header = f"auto-schedule {where} on {device.name} ({device.arch}):"
        if not choice.ranked or choice.summary is None:
            return [f"{header} default mapping ({choice.reason})"]
        summary = choice.summary
        count = f"{len(choice.ranked)} candidates"
        if choice.short:
            count += f" (the shortlist of {choice.candidates} of its size class)"
        lines = [f"{header} {count}, best first"]
        for i, (schedule, _) in enumerate(choice.ranked[: self.top]):
            lines.append(
                f"  #{i + 1} {schedule.key()}: {explain(predict(summary, schedule, device))}"
            )
        lines.append(f"  pipeline: {choice.ranked[0][0].pipeline}")
        return lines


def registers_in_parallel_loops(fn: func.FuncOp) -> None:
    """Before gpu-map-loops maps what no schedule took: elements that a loop inside a parallel
    loop reads and writes at indices invariant in it become its iter_args
    (`keep_stored_elements`, innermost loops first), so that gpu-map-loops sees the reductions
    it shares out (nussinov's `table[i, j] = max(table[i, j], …)` over k: a block per cell, k
    over its threads). In context, where the host loops around bound the indices that isl needs to
    tell the element from the others the loop reads; loops with no parallel loop around them
    (host loops) keep their memory."""
    for loop in reversed(list(loops_in(fn))):
        if any(is_parallel(outer) for outer in enclosing_loops(loop)):
            keep_stored_elements(loop)


def _next_loop(op: Operation | None) -> affine.ForOp:
    """The first affine.for from `op` on in its block."""
    while not isinstance(op, affine.ForOp):
        assert op is not None, "the nest put back after a refused candidate"
        op = op.next_op
    return op


RAISED = frozenset({*NON_AFFINE_LOOPS, "memref.load", "memref.store"})
"""Ops that `raise-scf-to-affine` turns into affine ones where their bounds or indices are."""


def affine_form(ctx: Context, op: builtin.ModuleOp, fn: func.FuncOp) -> None:
    """`fn` as the cost model reads it: scf loops and memref accesses raised to affine ones
    where they are affine (`raise-scf-to-affine`), and its loops named (`loop-name`). MLIR text
    as written (`scf.for`, unnamed `affine.for`) got the default mapping: a single thread
    for scf loops, gpu-map-loops' mapping where a matmul recipe was due."""
    name = fn.sym_name.data
    if any(inner.name in RAISED for inner in fn.walk()):
        RaiseScfToAffinePass(func=name).apply(ctx, op)
    LoopNamePass(func=name).apply(ctx, op)


def _put_back(
    original: affine.ForOp, block: Block, before: Operation | None, after: Operation | None
) -> None:
    """Replace what now lies between `before` and `after` in `block` by `original`."""
    current = before.next_op if before is not None else block.first_op
    made: list[Operation] = []
    while current is not None and current is not after:
        made.append(current)
        current = current.next_op
    for part in reversed(made):  # users before the values they use (hoisted constants)
        part.detach()
        part.erase()
    if after is not None:
        block.insert_op_before(original, after)
    else:
        block.add_op(original)


WIDE = 65536
"""Iterations of its outer parallel loops from which a part without candidates is left to
gpu-map-loops' own mapping (a thread each) rather than keeping the nest whole: covariance's
triangular product (720,000 at PolyBench's LARGE size: 0.30 ms on the H200, against 0.98 ms
for padded tiles and 0.47 ms for the nest whole), not its column means (1,200 threads, each
summing 1,400 values: the nest whole reduces them over a block)."""


def _widely_parallel(nest: affine.ForOp) -> bool:
    """`nest`'s outer parallel loops run at least WIDE iterations (their bounding box)."""
    band: list[affine.ForOp] = []
    for loop in perfect_band(nest):
        if not is_parallel(loop):
            break
        band.append(loop)
    box = band_box(band) if band else None
    if box is None:
        return False
    return math.prod(hi - lo + 1 for lo, hi in box) >= WIDE
