"""`loopopt.compile`: MLIR text or module + pass pipeline → a callable on the GPU or the CPU.

    kern = loopopt.compile(text, func="matmul", pipeline="loop-tile{tile-sizes=32,32}",
                           target="auto")
    kern(A, B, C)        # numpy arrays (results written into them) or CUDA arrays (in place)
    kern.target          # "gpu" or "cpu"

target="gpu" runs the whole pipeline and needs loops mapped onto the GPU: an empty pipeline is
the cost model's schedule (`auto-schedule`), and `gpu-map-loops` is added to a pipeline that
launches nothing; "cpu" runs
the pipeline up to its first GPU pass and JIT-compiles for the host; "auto" is "gpu" where a
CUDA device is usable, else "cpu", with a `CpuFallbackWarning` (once per reason and process)
that says what is missing: cuda-python, the driver, or a device.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any, Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from loopopt.context import make_context, parse_module, verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.dialects import gpu_ext as gpu
from loopopt.pass_pipeline import apply_passes, parse_pipeline
from loopopt.universe import all_passes

Target = Literal["gpu", "cpu", "auto"]
GPU_PASSES = ("gpu-map-loops", "gpu-constant-memory", "loopopt-lower-gpu-to-nvvm")
"""Passes after which a module no longer runs on the CPU."""


class CpuFallbackWarning(UserWarning):
    """target="auto" runs on the CPU: no GPU is usable here, or the GPU pipeline refused the
    function; the message says why."""


_WARNED: set[str] = set()
"""The reasons `auto_target` has warned of (each once per process)."""


def auto_target(stacklevel: int = 1) -> str:
    """What target="auto" means here: "gpu" where a CUDA device is usable, else "cpu", with a
    `CpuFallbackWarning` naming what is missing (once per reason). `stacklevel`: the caller's
    distance from the user's code, as for `warnings.warn`."""
    from loopopt.runtime import cuda

    if cuda.available():
        return "gpu"
    reason = cuda.unavailable_reason() or "no usable CUDA device"
    if reason not in _WARNED:
        _WARNED.add(reason)
        warnings.warn(
            f"target='auto' runs on the CPU: no usable GPU: {reason}",
            CpuFallbackWarning,
            stacklevel=stacklevel + 1,
        )
    return "cpu"


@dataclass
class Compiled:
    """A compiled function; `target` says where it runs."""

    target: str
    function: Any

    def __call__(self, *args: Any) -> Any:
        return self.function(*args)

    def time(self, *args: Any, warmup: int = 3, repeat: int = 20) -> float:
        """Median milliseconds of one call on the GPU (CUDA events; data stays on the device)."""
        if self.target != "gpu":
            raise LoopoptError("timing with CUDA events needs target='gpu'")
        return self.function.time(*args, warmup=warmup, repeat=repeat)


def compile(
    module_or_text: ModuleOp | str,
    func: str = "kern",
    pipeline: str = "",
    target: Target = "auto",
    arch: str | None = None,
) -> Compiled:
    """Compile `func` of `module_or_text` after `pipeline` for `target` (see module docstring)."""
    if target not in ("gpu", "cpu", "auto"):
        raise LoopoptError(f"unknown target '{target}' (use gpu, cpu or auto)")
    if target == "auto":
        target = auto_target(stacklevel=2)
    ctx = make_context()
    module = (
        parse_module(module_or_text, "<compile>", ctx)
        if isinstance(module_or_text, str)
        else module_or_text.clone()
    )
    passes = parse_pipeline(pipeline)
    if target == "cpu":
        return Compiled("cpu", _compile_cpu(ctx, module, func, passes))
    return Compiled("gpu", _compile_gpu(ctx, module, func, passes, arch))


def _apply(ctx: Context, module: ModuleOp, passes: list[ModulePass]) -> None:
    apply_passes(ctx, module, passes, _verify_after)


def _verify_after(p: ModulePass, module: ModuleOp) -> None:
    verify_ir(module, f"{p.name} produced invalid IR")


def _compile_cpu(ctx: Context, module: ModuleOp, func: str, passes: list[ModulePass]) -> Any:
    from loopopt.runtime.cpu import compile_cpu

    cpu_passes: list[ModulePass] = []
    for p in passes:
        if p.name in GPU_PASSES:
            break
        if p.name == "auto-schedule":
            p = dataclasses.replace(p, gpu=False)  # its loop-level part only
        cpu_passes.append(p)
    _apply(ctx, module, cpu_passes)
    if any(isinstance(op, gpu.ModuleOp) for op in module.ops):
        raise LoopoptError("the module holds GPU kernels; it cannot run on the CPU")
    return compile_cpu(module, func)


def apply_mapped(ctx: Context, module: ModuleOp, func: str, passes: list[ModulePass]) -> None:
    """Apply `passes`, then map what they left on the host: with no passes at all, the cost
    model's schedule (`auto-schedule`; nothing for a module that launches kernels already);
    after passes that launched nothing (and did not ask for a mapping), `gpu-map-loops`."""
    registry = all_passes()
    launches = any(isinstance(op, gpu.LaunchFuncOp) for op in module.walk())
    if not passes and not launches and "auto-schedule" in registry:
        passes = [registry["auto-schedule"]()(func=func)]
    _apply(ctx, module, passes)
    if not any(isinstance(op, gpu.LaunchFuncOp) for op in module.walk()):
        mapper = registry.get("gpu-map-loops")
        if mapper is None or any(p.name in ("gpu-map-loops", "auto-schedule") for p in passes):
            raise LoopoptError(f"nothing in @{func} is mapped onto the GPU (use gpu-map-loops)")
        _apply(ctx, module, [mapper()()])


def _compile_gpu(
    ctx: Context, module: ModuleOp, func: str, passes: list[ModulePass], arch: str | None
) -> Any:
    from loopopt.runtime import cuda
    from loopopt.runtime.host import compile_gpu

    apply_mapped(ctx, module, func, passes)
    if arch is None:
        arch = cuda.context().arch
    return compile_gpu(module, func, arch)
