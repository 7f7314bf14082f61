"""Choose and apply a schedule with the cost model (`auto-schedule`).

    auto-schedule{device=sm_90 explain top=5 func=sgemm}

Before:  affine.for %i = 0 to 4096 { affine.for %j … { affine.for %k … { C += A * B } } }
After:   what the best candidate's pipeline makes of it, e.g. for SGEMM
         loop-tile{tile-sizes=128,64,16},promote{arrays=A loop=k_t …},…,gpu-map-loops{block=16,16},…

For each function holding one perfect affine nest: summarize it (schedule/summary.py), enumerate
the candidates of its class (schedule/space.py; those that do not fit the device's threads,
shared memory and registers are already out), rank them by the model's predicted time
(schedule/cost_model.py; ties keep the space's order, so the choice is deterministic), and apply
the first one's pipeline to that function. `explain` prints the top `top` candidates with their
breakdowns to stderr, one line each, the chosen one first. A function the summary cannot
describe (an imperfect or non-constant nest) keeps the default mapping (`gpu-map-loops`), with
the reason under `explain`. `device=` is an architecture (sm_80, sm_89, sm_90) or a device name
of schedule/device.py; `auto` (the default) is the GPU in use, else sm_90. With `gpu=false` only
the loop-level part of the choice is applied (the passes before `gpu-map-loops`): the CPU path of
`loopopt.compile` uses that.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.passes import ModulePass

from loopopt.context import verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.dialects import gpu_ext as gpu
from loopopt.loops.nest import functions
from loopopt.passes import LoopoptPass
from loopopt.schedule.types import Device, NestSummary, Schedule

GPU_MAPPING = "gpu-map-loops"


@dataclass(frozen=True)
class Choice:
    """What auto-schedule decided for one function."""

    func: str
    ranked: list[tuple[Schedule, float]]
    """Candidates with predicted microseconds, best first (empty: default mapping)."""
    reason: str = ""
    """Why there are no candidates (the summary's diagnostic)."""
    summary: NestSummary | None = None


def resolve_device(name: str) -> Device:
    """`auto`: the GPU in use, else the sm_90 table; otherwise an arch or device name."""
    from loopopt.schedule.device import current_device, device_for

    if name == "auto":
        return current_device() or device_for("sm_90")
    return device_for(name)


def rank(summary: NestSummary, device: Device) -> list[tuple[Schedule, float]]:
    """The summary's candidates by predicted time, best first (stable: ties keep space order)."""
    from loopopt.schedule.cost_model import predict
    from loopopt.schedule.space import candidates

    predicted = [(s, predict(summary, s, device).time_us) for s in candidates(summary, device)]
    return sorted(predicted, key=lambda pair: pair[1])


def choose(fn: func.FuncOp, device: Device) -> Choice:
    """Rank `fn`'s candidates; no candidates (and the reason) when its nest has no summary."""
    from loopopt.schedule.summary import summarize

    name = fn.sym_name.data
    try:
        summary = summarize(fn)
    except LoopoptError as e:
        return Choice(name, [], e.message)
    ranked = rank(summary, device)
    return Choice(name, ranked, "" if ranked else "no candidate fits the device", summary)


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

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        device = resolve_device(self.device)
        for fn in functions(op, self.func):
            self.schedule(ctx, op, fn, device, sys.stderr)

    def schedule(
        self, ctx: Context, op: builtin.ModuleOp, fn: func.FuncOp, device: Device, out: TextIO
    ) -> None:
        choice = choose(fn, device)
        if self.explain:
            print("\n".join(self.explain_choice(choice, device)), file=out)
        pipeline = choice.ranked[0][0].passes if choice.ranked else GPU_MAPPING
        host, kernel = split_pipeline(pipeline)
        if not self.gpu:
            host = [p for p in host if p.name != GPU_MAPPING]
            kernel = []
        for p in host:
            self.run(ctx, op, only(p, choice.func))
        for name in launched_kernels(fn) if kernel else []:
            for p in kernel:
                self.run(ctx, op, only(p, name))

    @staticmethod
    def run(ctx: Context, op: builtin.ModuleOp, p: ModulePass) -> None:
        p.apply(ctx, op)
        verify_ir(op, f"auto-schedule: {p.name} produced invalid IR")

    def explain_choice(self, choice: Choice, device: Device) -> list[str]:
        from loopopt.schedule.cost_model import explain, predict

        header = f"auto-schedule @{choice.func} on {device.name} ({device.arch}):"
        if not choice.ranked or choice.summary is None:
            return [f"{header} default mapping ({choice.reason})"]
        summary = choice.summary
        lines = [f"{header} {len(choice.ranked)} candidates, best first"]
        for i, (schedule, _) in enumerate(choice.ranked[: self.top]):
            lines.append(
                f"  #{i + 1} {schedule.key()}: {explain(predict(summary, schedule, device))}"
            )
        lines.append(f"  pipeline: {choice.ranked[0][0].pipeline}")
        return lines
