"""`@loopopt.kernel`: a Python loop nest, compiled per argument signature, run in place.

    @loopopt.kernel
    def gemm(A, B, C):
        for i in range(C.shape[0]):
            for j in range(C.shape[1]):
                for k in range(A.shape[1]):
                    C[i, j] += A[i, k] * B[k, j]

    gemm(A, B, C)                          # compiled once per (shapes, dtypes, schedule, target)
    gemm(A, B, C, schedule="loop-tile{tile-sizes=32,32}", target="cpu")
    print(gemm.mlir(A, B, C))              # the IR a call with these arguments compiles

Shapes: calls compile for the arrays' static shapes (`@loopopt.kernel(static_shapes=False)`:
`memref<?x?xf32>`, one compilation per dtypes); `kern.mlir()` without arguments prints dynamic
shapes, with types from string annotations (`A: "float32[:, :]"`, `n: int`, `x: float`) or else from
the last call. `schedule=None` runs the loops as written on the CPU and lets the cost model
schedule them on the GPU (`auto-schedule`); `"auto"` does that on both (on the CPU only its
loop-level part applies); `"gpu-map-loops"` is the naive mapping; any other string is a pass
pipeline. `target="auto"` is the GPU where
one is usable, else the CPU with a warning that says what is missing (cuda-python, the driver, a
device); a function its GPU pipeline refuses (a schedule that does not fit) then runs on the
CPU with a warning that says why (target="gpu" raises instead). Arrays: numpy (the GPU copies them
in and out), `__cuda_array_interface__` objects (GPU, in place), `loopopt.array` (kept on the device
between calls). Compilations are also kept on disk for later processes (`loopopt.cache`;
`cache=False` or LOOPOPT_CACHE=0: not). A call is refused where plain Python would differ:
subscripts that could leave an array (bounds.py), writes to read-only arrays, and arrays that
overlap where one is written (loopopt assumes distinct ones).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from xdsl.dialects import affine, func, memref
from xdsl.dialects.builtin import ModuleOp

from loopopt.api import Compiled, CpuFallbackWarning, auto_target
from loopopt.diagnostics import LoopoptError
from loopopt.frontend.array import array
from loopopt.frontend.bounds import BoundsCheck, bounds_check
from loopopt.frontend.source import Source
from loopopt.frontend.translate import parameters, translate
from loopopt.frontend.types import (
    DTYPES,
    PY_FLOAT,
    PY_INT,
    ArraySpec,
    ScalarSpec,
    Spec,
    spec_of,
    unsupported_argument,
)
from loopopt.runtime.device_arrays import cuda_array_interface

_AUTO_TARGET: list[str] = []
_ANNOTATION = re.compile(r"^\s*(float16|bfloat16|float32|float64|int32|int64)\s*(?:\[(.*)\])?\s*$")


def resolve_target(target: str) -> str:
    """ "gpu" or "cpu"; "auto" is asked once per process (`api.auto_target`: a warning says why
    it is the CPU), from a kernel's call or compile (the stack level of the warning)."""
    if target not in ("auto", "gpu", "cpu"):
        raise LoopoptError(f"unknown target '{target}' (use auto, gpu or cpu)")
    if target != "auto":
        return target
    if not _AUTO_TARGET:
        _AUTO_TARGET.append(auto_target(stacklevel=3))
    return _AUTO_TARGET[0]


def pipeline_for(schedule: str | None) -> str:
    """The pass pipeline of a `schedule=` value (see the module docstring)."""
    if schedule is None:
        return ""
    if schedule == "auto":
        from loopopt.universe import all_passes

        return "auto-schedule" if "auto-schedule" in all_passes() else ""
    return schedule


@dataclass
class _Entry:
    compiled: Compiled
    written: tuple[bool, ...]
    """Which parameters the kernel stores to."""
    bounds: BoundsCheck


class Kernel:
    """A Python function that loopopt compiles and runs (see the module docstring)."""

    def __init__(
        self, function: Callable[..., Any], static_shapes: bool = True, cache: bool = True
    ):
        self.source = Source.of(function)
        self.parameters = parameters(self.source.tree, self.source)
        self.static_shapes = static_shapes
        self.cache = cache
        self.__name__ = self.source.name
        self.__doc__ = function.__doc__
        self.__wrapped__ = function
        self._compiled: dict[tuple[Any, ...], _Entry] = {}
        self._gpu_refused: set[tuple[Any, ...]] = set()
        """(specs, schedule) that the GPU pipeline refused: target="auto" runs them on the CPU."""
        self._last: tuple[Spec, ...] | None = None

    def __repr__(self) -> str:
        return f"<loopopt.kernel {self.__name__} ({self.source.filename})>"

    def specs(self, args: tuple[Any, ...]) -> tuple[Spec, ...]:
        args = self._bind(args)
        result: list[Spec] = []
        for name, value in zip(self.parameters, args, strict=True):
            spec = spec_of(value, dynamic=not self.static_shapes)
            if spec is None:
                raise LoopoptError(
                    f"{self.__name__}() argument '{name}' is {unsupported_argument(value)}",
                    location=self.source.location(self.source.tree),
                )
            result.append(spec)
        return tuple(result)

    def _bind(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        defaults = self.__wrapped__.__defaults__ or ()
        missing = len(self.parameters) - len(args)
        if 0 < missing <= len(defaults):
            args = (*args, *defaults[len(defaults) - missing :])
        if len(args) != len(self.parameters):
            raise LoopoptError(
                f"{self.__name__}() takes {len(self.parameters)} arguments, {len(args)} given",
                location=self.source.location(self.source.tree),
            )
        return args

    def module(self, *args: Any) -> ModuleOp:
        """The module a call with `args` compiles (before any schedule)."""
        specs = self.specs(args) if args else self._annotated_specs()
        return translate(self.source, specs)

    def mlir(self, *args: Any, locations: bool = False) -> str:
        """The IR text (with `loc(...)` of the Python lines if `locations`)."""
        module = self.module(*args)
        if not locations:
            return str(module)
        from io import StringIO

        from xdsl.printer import Printer

        stream = StringIO()
        Printer(stream=stream, print_debuginfo=True).print_op(module)
        return stream.getvalue()

    def compile(self, *args: Any, schedule: str | None = None, target: str = "auto") -> Compiled:
        """The compiled function for arguments like `args` (cached)."""
        return self._entry(self.specs(args), schedule, resolve_target(target)).compiled

    def __call__(self, *args: Any, schedule: str | None = None, target: str = "auto") -> None:
        args = self._bind(args)
        specs = self.specs(args)
        resolved = resolve_target(target)
        if target == "auto" and (specs, schedule) in self._gpu_refused:
            resolved = "cpu"
        try:
            entry = self._entry(specs, schedule, resolved)
        except LoopoptError as e:
            if target != "auto" or resolved != "gpu":
                raise
            # target="auto": a function the GPU pipeline refuses still runs, on the CPU;
            # the reason is said once.
            warnings.warn(
                f"{self.__name__}: runs on the CPU: {e.one_line()}",
                CpuFallbackWarning,
                stacklevel=2,
            )
            self._gpu_refused.add((specs, schedule))
            resolved = "cpu"
            entry = self._entry(specs, schedule, resolved)
        entry.bounds.check(args)
        self._check_writes(args, entry.written)
        passed = [self._argument(a, resolved) for a in args]
        written = [
            v for v, w in zip(args, entry.written, strict=True) if isinstance(v, array) and w
        ]
        on_host = [v for v in written if v.host_current]
        try:
            entry.compiled(*passed)
        except BaseException:
            for value in on_host:  # a failed run: the host copy, as before the call, is the truth
                value.written_on_host()
            raise
        for value in written:
            if resolved == "gpu":
                value.written_on_device()
            else:
                value.written_on_host()

    def _check_writes(self, args: tuple[Any, ...], written: tuple[bool, ...]) -> None:
        """Refuse what plain Python would do differently: writing a read-only array, and
        arrays that overlap where one is written (loopopt assumes distinct arrays)."""
        where = self.source.location(self.source.tree)
        for name, value, writes in zip(self.parameters, args, written, strict=True):
            if writes and isinstance(value, np.ndarray) and not value.flags.writeable:
                raise LoopoptError(
                    f"{self.__name__}(): argument '{name}' is read-only but the kernel writes it",
                    location=where,
                )
        arrays = [(n, v, w) for n, v, w in zip(self.parameters, args, written, strict=True)]
        for k, (name_a, a, writes_a) in enumerate(arrays):
            for name_b, b, writes_b in arrays[k + 1 :]:
                if (writes_a or writes_b) and _overlap(a, b):
                    raise LoopoptError(
                        f"{self.__name__}(): arguments '{name_a}' and '{name_b}' share memory "
                        "and one is written; loopopt assumes distinct arrays",
                        location=where,
                    )

    def _argument(self, value: Any, target: str) -> Any:
        if isinstance(value, array):
            return value.for_device_kernel() if target == "gpu" else value.for_host_kernel()
        if target == "cpu" and cuda_array_interface(value) is not None:
            raise LoopoptError(f"{self.__name__}(): a CUDA array needs target='gpu'")
        return value

    def _entry(self, specs: tuple[Spec, ...], schedule: str | None, target: str) -> _Entry:
        key = (specs, schedule, target)
        entry = self._compiled.get(key)
        if entry is None:
            import loopopt

            module = translate(self.source, specs)
            fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
            bounds = bounds_check(fn)
            compiled = loopopt.compile(
                module, self.__name__, pipeline_for(schedule), target, cache=self.cache
            )
            entry = _Entry(compiled, _written(fn), bounds)
            self._compiled[key] = entry
        self._last = specs
        return entry

    def _annotated_specs(self) -> tuple[Spec, ...]:
        """Specs from the parameters' annotations, else the last call's (dynamic shapes)."""
        specs: list[Spec] = []
        for arg in self.source.tree.args.args:
            spec = _annotation_spec(arg.annotation)
            if spec is None:
                break
            specs.append(spec)
        if len(specs) == len(self.parameters):
            return tuple(specs)
        if self._last is not None:
            return tuple(
                replace(s, shape=tuple(None for _ in s.shape)) if isinstance(s, ArraySpec) else s
                for s in self._last
            )
        missing = self.parameters[len(specs)]
        raise LoopoptError(
            f"{self.__name__}.mlir() needs example arguments, a call before, or annotations "
            f"(parameter '{missing}' has none it understands: int, float, \"float32[:, :]\" …)",
            location=self.source.location(self.source.tree),
        )


def _annotation_spec(node: object) -> Spec | None:
    import ast

    if isinstance(node, ast.Name) and node.id in ("int", "float"):
        return ScalarSpec(PY_INT if node.id == "int" else PY_FLOAT)
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return None
    found = _ANNOTATION.match(node.value)
    if found is None:
        return None
    dtype, dims = found.group(1), found.group(2)
    if dims is None:
        return ScalarSpec(DTYPES[dtype]) if dtype in DTYPES else None
    shape: list[int | None] = []
    for dim in dims.split(","):
        dim = dim.strip()
        if dim in (":", "?"):
            shape.append(None)
        elif dim.isdigit():
            shape.append(int(dim))
        else:
            return None
    return ArraySpec(dtype, tuple(shape)) if shape else None


def _extent(value: Any) -> tuple[int, int] | None:
    interface = cuda_array_interface(value)
    if interface is None:
        return None
    start = int(interface["data"][0])
    size = int(np.prod(interface["shape"])) * np.dtype(interface["typestr"]).itemsize
    return start, start + size


def _overlap(a: Any, b: Any) -> bool:
    """May arrays `a` and `b` share memory (numpy, loopopt.array or CUDA arrays)?"""
    if isinstance(a, array) or isinstance(b, array):
        return a is b
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    ea, eb = _extent(a), _extent(b)
    return ea is not None and eb is not None and ea[0] < eb[1] and eb[0] < ea[1]


def _written(fn: func.FuncOp) -> tuple[bool, ...]:
    stores = (affine.StoreOp, memref.StoreOp)
    return tuple(
        any(isinstance(use.operation, stores) and use.index == 1 for use in arg.uses)
        for arg in fn.body.block.args
    )


def kernel(
    function: Callable[..., Any] | None = None, *, static_shapes: bool = True, cache: bool = True
) -> Any:
    """`@loopopt.kernel` or `@loopopt.kernel(static_shapes=False, cache=False)` (see the module
    docstring)."""
    if function is None:
        return lambda f: Kernel(f, static_shapes=static_shapes, cache=cache)
    return Kernel(function, static_shapes=static_shapes, cache=cache)
