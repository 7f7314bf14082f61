"""Timers of the tuner: how a candidate is built, loaded and timed, on the GPU or the CPU.

    timer = GpuTimer("sm_90")
    artifact = timer.build(text, "sgemm", pipeline)   # passes, NVVM, PTX: picklable, any process
    kernel = timer.load(artifact)                     # in the timing worker: host JIT, a Compiled
    ms = timer.time(kernel, args)                     # CUDA events, median

`GpuTimer` does the CPU-bound part (the passes, the NVVM lowering, llvmlite's PTX) in `build`,
so a pool of processes can build while one worker times; `load` only parses the small host
function, binds its launches to the PTX and JIT-compiles it. `CpuTimer` is the stand-in the
tests use: `build` applies the whole pipeline (what is replayed must apply), `load` compiles
with `loopopt.compile(target="cpu")` (the part before the first GPU pass) and `time` uses
`time.perf_counter`. A timer is a frozen dataclass: it travels to the worker processes.
"""

from __future__ import annotations

import itertools
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from loopopt.schedule.tune_check import Arrays, Kernel, NumpyArrays, TorchArrays


class Timer(Protocol):
    """Builds (any process), loads and times (the timing worker) one candidate."""

    name: str
    """Part of the cache key."""
    reference_pipeline: str
    """The pipeline of the unscheduled reference (the GPU one needs a mapping)."""

    def build(self, text: str, func: str, pipeline: str) -> Any: ...
    def load(self, artifact: Any) -> Kernel: ...
    def time(self, kernel: Kernel, args: Sequence[Any]) -> float: ...
    def arrays(self) -> Arrays: ...


@dataclass(frozen=True)
class CpuArtifact:
    text: str
    func: str
    pipeline: str


@dataclass(frozen=True)
class CpuTimer:
    """The CPU stand-in: llvmlite JIT, median of `repeat` perf_counter timings."""

    repeat: int = 5
    name: ClassVar[str] = "cpu"
    reference_pipeline: ClassVar[str] = ""

    def build(self, text: str, func: str, pipeline: str) -> CpuArtifact:
        """The whole pipeline must apply (as `loopopt-opt -p` replays it), GPU passes too;
        what runs on the CPU is its part before the first GPU pass."""
        from loopopt.api import _apply
        from loopopt.context import make_context, parse_module
        from loopopt.pass_pipeline import parse_pipeline

        ctx = make_context()
        _apply(ctx, parse_module(text, "<tune>", ctx), parse_pipeline(pipeline))
        return CpuArtifact(text, func, pipeline)

    def load(self, artifact: CpuArtifact) -> Kernel:
        from loopopt.api import compile

        return compile(artifact.text, artifact.func, artifact.pipeline, target="cpu")

    def time(self, kernel: Kernel, args: Sequence[Any]) -> float:
        kernel(*args)
        times = []
        for _ in range(max(1, self.repeat)):
            start = time.perf_counter()
            kernel(*args)
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    def arrays(self) -> Arrays:
        return NumpyArrays()


@dataclass(frozen=True)
class GpuArtifact:
    """A GPU program between build and load: the host function (text) and its kernels' PTX."""

    host: str
    """The module with its gpu.modules detached (launches refer to `kernels`)."""
    func: str
    kernels: tuple[tuple[tuple[str, str], Any], ...]
    """((gpu.module, kernel), runtime.host.KernelInfo) pairs."""


@dataclass(frozen=True)
class GpuTimer:
    """CUDA events: median of `repeat` runs, fewer when they would take over `seconds`;
    arguments live on the GPU (torch tensors) when torch is installed."""

    arch: str = "sm_90"
    repeat: int = 10
    seconds: float = 0.5
    name: ClassVar[str] = "gpu"
    reference_pipeline: ClassVar[str] = "gpu-map-loops"

    def build(self, text: str, func: str, pipeline: str) -> GpuArtifact:
        return build_gpu(text, func, pipeline, self.arch)

    def load(self, artifact: GpuArtifact) -> Kernel:
        return load_gpu(artifact)

    def time(self, kernel: Kernel, args: Sequence[Any]) -> float:
        """The verification run warmed it up; a kernel slower than `seconds` / 3 is timed once
        (enough to rank it)."""
        first = kernel.time(*args, warmup=0, repeat=1)  # type: ignore[attr-defined]
        runs = min(self.repeat, int(self.seconds * 1e3 / max(first, 1e-3)))
        if runs < 3:
            return first
        return kernel.time(*args, warmup=1, repeat=runs)  # type: ignore[attr-defined]

    def arrays(self) -> Arrays:
        try:
            return TorchArrays()
        except ImportError:
            return NumpyArrays()


def build_gpu(text: str, func: str, pipeline: str, arch: str) -> GpuArtifact:
    """The passes (plus `gpu-map-loops` when nothing is mapped), NVVM lowering and PTX."""
    from loopopt.api import apply_mapped
    from loopopt.context import make_context, parse_module
    from loopopt.pass_pipeline import parse_pipeline
    from loopopt.runtime.host import build_kernels, find_host

    ctx = make_context()
    module = parse_module(text, "<tune>", ctx)
    apply_mapped(ctx, module, func, parse_pipeline(pipeline))
    kernels = build_kernels(module, arch)
    find_host(module, func)  # host-side errors are compile errors too
    return GpuArtifact(str(module), func, tuple(kernels.items()))


_LOADED = itertools.count()


def load_gpu(artifact: GpuArtifact) -> Kernel:
    """The GPU program of `artifact`: launches bound to its kernels, the host function JITted."""
    from xdsl.parser import Parser

    from loopopt.api import Compiled
    from loopopt.context import make_context
    from loopopt.runtime.host import bind_host

    # Launches name kernels that now live in `artifact.kernels`: parsed, not verified.
    module = Parser(make_context(), artifact.host).parse_module()
    prefix = f"__loopopt_tune_{os.getpid()}_{next(_LOADED)}"
    return Compiled("gpu", bind_host(module, artifact.func, dict(artifact.kernels), prefix))
