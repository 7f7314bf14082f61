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

Compiled kernels are kept on disk (cache.py: `$LOOPOPT_CACHE_DIR`, default ~/.cache/loopopt):
a later process compiling the same IR with the same pipeline for the same target and device
runs no pass, no lowering of kernels and no PTX generation; `cache=False` (or LOOPOPT_CACHE=0)
neither reads nor writes it. Compile steps over 2 s say so on stderr (progress.py).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass
from io import StringIO
from typing import Any, Literal

from xdsl.context import Context
from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError

from loopopt import cache as disk_cache
from loopopt.context import make_context, parse_module, verify_ir
from loopopt.diagnostics import LoopoptError
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
    cache: bool = True,
) -> Compiled:
    """Compile `func` of `module_or_text` after `pipeline` for `target` (see module docstring)."""
    if target not in ("gpu", "cpu", "auto"):
        raise LoopoptError(f"unknown target '{target}' (use gpu, cpu or auto)")
    if target == "auto":
        target = auto_target(stacklevel=2)
    with disk_cache.disabled(not cache):
        ctx = make_context()
        passes = parse_pipeline(pipeline)
        if target == "gpu" and arch is None:
            from loopopt.runtime import cuda

            arch = cuda.context().arch
        key = disk_cache.key(
            "compile",
            _input_text(module_or_text),
            func,
            pipeline,
            target,
            arch or "",
            _device_text(passes),
        )
        stored = disk_cache.get("kernels", key)
        if stored is not None:
            try:
                return _from_cache(ctx, json.loads(stored), func)
            except (KeyError, TypeError, ValueError, ParseError, LoopoptError):
                pass  # an entry this loopopt cannot read: compiled again and replaced
        module = (
            parse_module(module_or_text, "<compile>", ctx)
            if isinstance(module_or_text, str)
            else module_or_text.clone()
        )
        with disk_cache.recording_stderr() as said:
            if target == "cpu":
                payload, compiled = _compile_cpu(ctx, module, func, passes)
            else:
                assert arch is not None
                payload, compiled = _compile_gpu(ctx, module, func, passes, arch)
        payload["stderr"] = "".join(said.parts)
        disk_cache.put("kernels", key, json.dumps(payload).encode())
        return Compiled(target, compiled)


def _input_text(module_or_text: ModuleOp | str) -> str:
    """The input as the cache sees it: text as given, a module printed with its locations
    (diagnostics and warnings name them)."""
    if isinstance(module_or_text, str):
        return module_or_text
    out = StringIO()
    Printer(stream=out, print_debuginfo=True).print_op(module_or_text)
    return out.getvalue()


def _device_text(passes: list[ModulePass]) -> str:
    """The GPU in use where a pass asks the cost model about it (auto-schedule device=auto)."""
    if not any(getattr(p, "device", None) == "auto" for p in passes):
        return ""
    from loopopt.schedule.device import current_device

    return repr(current_device())


def _print_module(module: ModuleOp) -> str:
    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    return out.getvalue()


def _from_cache(ctx: Context, payload: dict[str, Any], func: str) -> Compiled:
    """The compiled function of a cache entry (what `_compile_cpu`/`_compile_gpu` stored); the
    passes' messages are said again."""
    import sys

    sys.stderr.write(payload["stderr"])
    if payload["target"] == "cpu":
        from loopopt.runtime.cpu import compile_cpu

        return Compiled("cpu", compile_cpu(payload["module"], func))
    from loopopt.runtime.host import KernelInfo, bind_host, program_prefix

    kernels: dict[tuple[str, str], KernelInfo] = {}
    for k in payload["kernels"]:
        params = [Parser(ctx, text).parse_attribute() for text in k["params"]]
        constants = {int(index): name for index, name in k["constant_args"].items()}
        info = KernelInfo(k["ptx"], k["name"], params, k["dynamic"], k["align"], constants)
        kernels[(k["module"], k["name"])] = info
    host = Parser(ctx, payload["host"], "<compile>").parse_module()  # launches of no kernel
    return Compiled("gpu", bind_host(host, func, kernels, program_prefix()))


def _apply(ctx: Context, module: ModuleOp, passes: list[ModulePass]) -> None:
    apply_passes(ctx, module, passes, _verify_after)


def _verify_after(p: ModulePass, module: ModuleOp) -> None:
    verify_ir(module, f"{p.name} produced invalid IR")


def _compile_cpu(
    ctx: Context, module: ModuleOp, func: str, passes: list[ModulePass]
) -> tuple[dict[str, Any], Any]:
    """The CPU function, and what the cache keeps of it (the module after the passes)."""
    from loopopt.runtime.cpu import compile_cpu

    cpu_passes: list[ModulePass] = []
    for p in passes:
        if p.name in GPU_PASSES:
            break
        if p.name == "auto-schedule":
            p = dataclasses.replace(p, gpu=False)  # its loop-level part only
        cpu_passes.append(p)
    _apply(ctx, module, cpu_passes)
    kernels = next((op for op in module.ops if isinstance(op, gpu.ModuleOp)), None)
    if kernels is not None:
        raise LoopoptError("the module holds GPU kernels; it cannot run on the CPU", op=kernels)
    text = _print_module(module)
    return {"target": "cpu", "module": text}, compile_cpu(module, func)


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
    ctx: Context, module: ModuleOp, func: str, passes: list[ModulePass], arch: str
) -> tuple[dict[str, Any], Any]:
    """The GPU program, and what the cache keeps of it (the kernels' PTX, the host module)."""
    from loopopt.runtime.host import bind_host, build_kernels, find_host, program_prefix

    apply_mapped(ctx, module, func, passes)
    kernels = build_kernels(module, arch)
    find_host(module, func)
    payload: dict[str, Any] = {
        "target": "gpu",
        "host": _print_module(module),
        "kernels": [
            {
                "module": gmod,
                "name": name,
                "ptx": k.ptx,
                "params": [str(t) for t in k.params],
                "dynamic": k.dynamic_shared_bytes,
                "align": k.pointer_align,
                "constant_args": {str(i): g for i, g in k.constant_args.items()},
            }
            for (gmod, name), k in kernels.items()
        ],
    }
    return payload, bind_host(module, func, kernels, program_prefix())
