"""Reschedule loop nests with isl's scheduler where that makes them more parallel
(`loop-reschedule`).

Before (lu, in place: every loop carries a dependence for its first two statements):
    affine.for %i = 0 to 7 {
      affine.for %j = 0 to %i { affine.for %k = 0 to %j { A[i, j] -= A[i, k] * A[k, j] }
                                A[i, j] /= A[j, j] }
      affine.for %j = %i to 7 { affine.for %k = 0 to %i { A[i, j] -= A[i, k] * A[k, j] } }
    } {loopopt.name = "i"}
After (right-looking: c0 sequential, i and the j loops parallel):
    affine.for %c0 = 0 to 6 {
      affine.for %i = %c0 + 1 to 7 {
        A[i, c0] /= A[c0, c0]
        affine.for %j = %c0 + 1 to %i { A[i, j] -= A[i, c0] * A[c0, j] } {loopopt.name = "j"}
        affine.for %j_1 = %i to 7 { A[i, j_1] -= A[i, c0] * A[c0, j_1] } {loopopt.name = "j"}
      } {loopopt.name = "i"}
    } {loopopt.name = "c0"}

Each top-level nest (of `func=`, of the outermost loops named `loop=`) is modelled as
statements (`analysis.statements`: refused with an error naming the op and the reason where
the model would not be exact: iter_args, non-affine accesses, values crossing statements, calls,
aliasing memrefs), given a new schedule by isl under its exact dependences
(`analysis.isl_schedule`) and regenerated from isl's AST (`loops.isl_ast`). A nest is replaced
only where that pays: some statement gets an outermost parallel loop shallower than before (or
one where it had none) and none gets a deeper one (`loops.reschedule`); otherwise it is left as
it is, with a warning that gives the depths (and so are nests deeper than 8 loops). `force`
replaces it anyway (tests). New loops are named after the original loop they run for every
statement under them, else `c0, c1 …`.

`split` cuts each statement where its self-dependences change direction before isl schedules
it (floyd-warshall: i = k and j = k, nine pieces, each a parallel nest inside k); `wavefront`
takes Lamport's hyperplane instead of isl's schedule (seidel-2d:
    affine.for %t … affine.for %i … affine.for %j … A[i, j] = (… 9 neighbours …) / 9
→   affine.for %c0 = 3 to 4·T + … {                       c0 = 4t + 2i + j, sequential
      affine.for %t = max(…) to min(…) {                  parallel
        affine.for %i = max(…) to min(…) { A[i, c0 - 4t - 2i] = … } } }   parallel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import affine, builtin
from xdsl.ir import Block

from loopopt.analysis.nest import enclosing_loops
from loopopt.analysis.parallel import is_parallel
from loopopt.diagnostics import LoopoptError, warning
from loopopt.loops.demote import demote
from loopopt.loops.nest import describe_loop, functions, loop_name, outermost_loops
from loopopt.loops.reschedule import Depths, pays, reschedule
from loopopt.passes import LoopoptPass
from loopopt.passes.reduction_to_memory import ReductionToMemoryPass


@dataclass(frozen=True)
class LoopReschedulePass(LoopoptPass):
    """Reschedule each top-level loop nest with isl's scheduler where it gets more parallel."""

    name = "loop-reschedule"

    loop: str | None = None
    """Only the nests whose outermost loop has this name."""

    force: bool = False
    """Apply isl's schedule even where it does not make the nest more parallel."""

    split: bool = False
    """Cut each statement where its self-dependences change direction (index-set splitting:
    floyd-warshall's i = k and j = k) before isl's scheduler (`analysis.index_split`)."""

    wavefront: bool = False
    """Lamport's hyperplane instead of isl's scheduler: one outer loop `h·x` carries every
    dependence and every loop inside it is parallel (`analysis.hyperplane`)."""

    func: str | None = None
    """Only this function."""

    def nests(self, module: builtin.ModuleOp) -> list[affine.ForOp]:
        found = [loop for fn in functions(module, self.func) for loop in outermost_loops(fn)]
        if self.loop is None:
            return found
        return [loop for loop in found if loop_name(loop) == self.loop]

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for nest in self.nests(op):
            label = describe_loop(nest)
            outcome = reschedule(nest, self.force, wavefront=self.wavefront, split=self.split)
            if not outcome.changed:
                warning(f"{self.name}: nest '{label}' left as it is: {outcome.reason}", op=nest)


SEQUENTIAL_DEPTH = 3
"""Sequential loops around a statement from which auto-schedule reschedules a nest: with two
(trisolv: a sequential loop around a reduction) the single-block region that gpu-map-loops
makes is faster than a host loop of launches (H200, n=2000: 4.1 against 15.8 ms); with three
it is not (lu: minutes against 35 ms, cholesky 1,730 s against 29 ms)."""


def sequential_depth(loop: affine.ForOp) -> int:
    """The most loops carrying a dependence (or iter_args) nested from `loop` inward, stopping
    at parallel loops."""
    if is_parallel(loop) and not loop.inits:
        return 0
    inner = [
        op
        for op in loop.walk()
        if isinstance(op, affine.ForOp) and op is not loop and enclosing_loops(op)[-1] is loop
    ]
    return 1 + max((sequential_depth(op) for op in inner), default=0)


MIN_WAVEFRONT_WIDTH = 256
"""Iterations a wavefront must hold on average for auto-schedule to run a hyperplane schedule
(one launch each) rather than leave the nest to a single-block region."""


def reschedule_deep(nest: affine.ForOp) -> bool:
    """auto-schedule's use (GPU): reschedule `nest`, its iter_args first moved to memory, when
    it has SEQUENTIAL_DEPTH sequential loops and isl's schedule leaves every statement at most
    one sequential loop deep (one host loop around parallel kernels: not floyd-warshall's
    anti-diagonals inside k). Tried in turn, the first that leaves no sequential loop inside
    the parallel ones taken (else the first accepted): isl's schedule; isl's schedule of the
    statements cut by index-set splitting (floyd-warshall: k, then nine parallel nests); the
    hyperplane schedule, also for a nest only two sequential loops deep, where its wavefronts
    hold MIN_WAVEFRONT_WIDTH iterations on average (seidel-2d: isl's leaves j sequential in
    each thread). Works on copies; the nest stays as it is otherwise."""
    depth = sequential_depth(nest)
    if depth < 2:
        return False
    attempts: list[dict[str, Any]] = []
    if depth >= SEQUENTIAL_DEPTH:
        attempts += [{"accept": _one_host_loop}, {"accept": _one_host_loop, "split": True}]
    attempts.append({"wavefront": True, "min_width": MIN_WAVEFRONT_WIDTH, "accept": _one_host_loop})
    fallback: Block | None = None
    for options in attempts:
        scratch, inner = _trial(nest, options)
        if scratch is None:
            continue
        if inner == 0:
            if fallback is not None:
                _discard(fallback)
            return _adopt(nest, scratch)
        if fallback is None:
            fallback = scratch
        else:
            _discard(scratch)
    return fallback is not None and _adopt(nest, fallback)


def _discard(scratch: Block) -> None:
    for op in reversed(list(scratch.ops)):  # users before the values they use
        op.detach()
        op.erase()


def _trial(nest: affine.ForOp, options: dict[str, Any]) -> tuple[Block | None, int]:
    """Reschedule a demoted copy of `nest` in a block of its own: that block (None where the
    copy was left or refused) and the most sequential loops left inside parallel ones."""
    trial = nest.clone()
    scratch = Block([trial])
    demoter = ReductionToMemoryPass()
    try:
        for loop in reversed([op for op in trial.walk() if isinstance(op, affine.ForOp)]):
            if loop.inits:
                plan = demoter.plan(loop)
                if isinstance(plan, str):
                    raise LoopoptError(plan, op=loop)
                demote(loop, plan)
        outcome = reschedule(trial, **options)
    except LoopoptError:
        return None, 0  # outside what the statements model: the nest as it is
    except Exception as e:  # an optional rewrite: a fault in it must not fail the compile
        warning(
            f"internal: loop-reschedule left the nest as it is ({type(e).__name__}: {e})", op=nest
        )
        return None, 0
    if not outcome.changed:
        return None, 0
    return scratch, outcome.inner


def _adopt(nest: affine.ForOp, scratch: Block) -> bool:
    """Move the rescheduled ops of `scratch` before `nest` and erase `nest`."""
    block = nest.parent_block()
    assert block is not None
    for op in list(scratch.ops):
        op.detach()
        block.insert_op_before(op, nest)
    nest.detach()
    nest.erase()
    return True


def _one_host_loop(old: Depths, new: Depths) -> bool:
    return pays(old, new) and all(d is None or d <= 1 for d in new.values())
