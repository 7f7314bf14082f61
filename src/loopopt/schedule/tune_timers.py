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

from loopopt.diagnostics import LoopoptError
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
        from loopopt.api import _apply, _passes
        from loopopt.context import make_context, parse_module

        ctx = make_context()
        _apply(ctx, parse_module(text, "<tune>", ctx), _passes(pipeline))
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
    from xdsl.dialects import llvm as llvm_dialect
    from xdsl.dialects.builtin import IntegerAttr

    from loopopt.api import _apply, _passes
    from loopopt.backend.ptx import gpu_module_to_ptx, gpu_modules
    from loopopt.context import make_context, parse_module
    from loopopt.dialects import gpu_ext as gpu
    from loopopt.lowering.gpu_to_nvvm import (
        DYNAMIC_SHARED_ATTR,
        KERNEL_ATTR,
        POINTER_ALIGN_ATTR,
        lower_gpu_to_nvvm,
    )
    from loopopt.runtime.host import KernelInfo, _find_host
    from loopopt.universe import all_passes

    ctx = make_context()
    module = parse_module(text, "<tune>", ctx)
    passes = _passes(pipeline)
    _apply(ctx, module, passes)
    if not any(isinstance(op, gpu.LaunchFuncOp) for op in module.walk()):
        if any(p.name == "gpu-map-loops" for p in passes):
            raise LoopoptError(f"nothing in @{func} is mapped onto the GPU")
        _apply(ctx, module, [all_passes()["gpu-map-loops"]()()])
    lower_gpu_to_nvvm(module)
    kernels = []  # what runtime/host.py's compile_gpu records of each kernel
    for gmod in gpu_modules(module):
        ptx = gpu_module_to_ptx(gmod, arch)
        for op in gmod.body.block.ops:
            if isinstance(op, llvm_dialect.FuncOp) and KERNEL_ATTR in op.attributes:
                dynamic = op.attributes.get(DYNAMIC_SHARED_ATTR)
                dynamic_bytes = dynamic.value.data if isinstance(dynamic, IntegerAttr) else 0
                params = list(op.function_type.inputs.data)
                align = op.attributes.get(POINTER_ALIGN_ATTR)
                align_bytes = align.value.data if isinstance(align, IntegerAttr) else 0
                info = KernelInfo(ptx, op.sym_name.data, params, dynamic_bytes, align_bytes)
                kernels.append(((gmod.sym_name.data, op.sym_name.data), info))
        gmod.detach()
    module.attributes.pop("gpu.container_module", None)
    _find_host(module, func)  # host-side errors are compile errors too
    return GpuArtifact(str(module), func, tuple(kernels))


_LOADED = itertools.count()


def load_gpu(artifact: GpuArtifact) -> Kernel:
    """The GPU program of `artifact`: launches bound to its kernels, the host function JITted."""
    from xdsl.parser import Parser

    from loopopt.api import Compiled
    from loopopt.context import make_context
    from loopopt.runtime.cpu import compile_cpu
    from loopopt.runtime.host import GpuFunction, GpuProgram, _find_host, _launches, _lower_launch

    # Launches name kernels that now live in `artifact.kernels`: parsed, not verified.
    module = Parser(make_context(), artifact.host).parse_module()
    program = GpuProgram(kernels=dict(artifact.kernels))
    host = _find_host(module, artifact.func)
    uid = f"{os.getpid()}_{next(_LOADED)}"
    for index, launch in enumerate(_launches(module)):
        _lower_launch(program, launch, f"__loopopt_tune_{uid}_{index}")
    function = compile_cpu(module, artifact.func)
    inputs = host.function_type.inputs.data
    return Compiled("gpu", GpuFunction(artifact.func, inputs, function.address, program))
