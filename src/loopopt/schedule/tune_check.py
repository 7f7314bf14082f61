"""Verification of tuning candidates: the arguments they run on and what they must produce.

    check = reference_check(text, "matmul")       # random arguments; outputs: those stored to
    initial, expected = check.prepare(arrays, reference_kernel)    # once, in the timing worker
    max_rel_error(arrays, got, value) < check.tolerance            # per candidate and output

`ReferenceCheck`, the default, gives every memref argument random values and runs the reference
(the same function with no schedule) on them. Its outputs are first poisoned with NaN: if the
reference's outputs come out free of NaN they are fully overwritten, and candidates start from
the poison too (an element a candidate skips shows); otherwise (accumulating or partly written
outputs) reference and candidates start from the same random values. The error is
max |got − ref| / max |ref|, accumulated in float64; a NaN where the reference has none (or the
reverse) is an infinite error. `NumpyArrays` does this on the host, `TorchArrays` on the GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from loopopt.diagnostics import LoopoptError

TOLERANCE = 1e-4
CHUNK_ELEMENTS = 1 << 22
"""Elements compared at once on the host (bounds the float64 temporaries)."""

Expected = tuple[int, tuple[slice, ...], Any]
"""(argument index, region of it that is compared (() = all), the values it must hold)."""
Kernel = Callable[..., Any]


class Arrays(Protocol):
    """Array operations on the device a timer runs on."""

    def upload(self, arrays: Sequence[np.ndarray]) -> list[Any]: ...
    def copies(self, arrays: Sequence[Any]) -> list[Any]: ...
    def fill_nan(self, array: Any) -> None: ...
    def has_nan(self, array: Any) -> bool: ...
    def float64(self, array: Any) -> Any: ...
    def compare(self, got: Any, expected: Any) -> tuple[float, float, bool]:
        """(max |got − expected|, max |expected|, NaN positions differ), in float64."""
        ...


class Check(Protocol):
    """How candidates are verified (a picklable value: it travels to the timing worker)."""

    name: str
    """Part of the cache key: measurements verified differently are not reused."""
    tolerance: float
    uses_reference: bool
    """`prepare` needs the reference kernel (the function built with no schedule)."""

    def prepare(
        self, arrays: Arrays, reference: Kernel | None
    ) -> tuple[list[Any], list[Expected]]: ...


def max_rel_error(arrays: Arrays, got: Any, expected: Any) -> float:
    """max |got − expected| / max |expected| (float64), inf where NaNs do not match."""
    if len(expected.shape) == 0:
        got, expected = got.reshape(1), expected.reshape(1)
    rows = max(1, CHUNK_ELEMENTS // max(1, math.prod(expected.shape[1:])))
    diff = scale = 0.0
    for start in range(0, expected.shape[0], rows):
        d, s, mismatch = arrays.compare(got[start : start + rows], expected[start : start + rows])
        if mismatch:
            return math.inf
        diff, scale = max(diff, d), max(scale, s)
    return diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf)


class NumpyArrays:
    """Host arrays (the CPU timer, or a GPU timer without torch: copied per call)."""

    def upload(self, arrays: Sequence[np.ndarray]) -> list[Any]:
        return [np.array(a, copy=True) for a in arrays]

    def copies(self, arrays: Sequence[Any]) -> list[Any]:
        return [np.array(a, copy=True) for a in arrays]

    def fill_nan(self, array: Any) -> None:
        array.fill(np.nan)

    def has_nan(self, array: Any) -> bool:
        return bool(np.isnan(array).any())

    def float64(self, array: Any) -> Any:
        return np.asarray(array, dtype=np.float64)

    def compare(self, got: Any, expected: Any) -> tuple[float, float, bool]:
        g = np.asarray(got, dtype=np.float64)
        e = np.asarray(expected, dtype=np.float64)
        if g.shape != e.shape:
            return math.inf, 0.0, True
        nan = np.isnan(e)
        if bool((np.isnan(g) != nan).any()):
            return math.inf, 0.0, True
        if g.size == 0:
            return 0.0, 0.0, False
        diff = np.abs(np.where(nan, 0.0, g - e))
        return float(diff.max()), float(np.abs(np.where(nan, 0.0, e)).max()), False


class TorchArrays:
    """CUDA tensors (torch): arguments stay on the GPU and are compared there."""

    def __init__(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise ImportError("torch has no CUDA device")
        self.torch = torch

    def upload(self, arrays: Sequence[np.ndarray]) -> list[Any]:
        return [self.torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in arrays]

    def copies(self, arrays: Sequence[Any]) -> list[Any]:
        return [a.clone() for a in arrays]

    def fill_nan(self, array: Any) -> None:
        array.fill_(math.nan)

    def has_nan(self, array: Any) -> bool:
        return bool(self.torch.isnan(array).any().item())

    def float64(self, array: Any) -> Any:
        return array.double()

    def compare(self, got: Any, expected: Any) -> tuple[float, float, bool]:
        torch = self.torch
        e = torch.as_tensor(expected, device=got.device).double()
        g = got.double()
        if g.shape != e.shape:
            return math.inf, 0.0, True
        nan = torch.isnan(e)
        if bool((torch.isnan(g) != nan).any().item()):
            return math.inf, 0.0, True
        if g.numel() == 0:
            return 0.0, 0.0, False
        zero = torch.zeros((), dtype=torch.float64, device=g.device)
        diff = torch.where(nan, zero, g - e).abs().max().item()
        return float(diff), float(torch.where(nan, zero, e).abs().max().item()), False


@dataclass(frozen=True)
class ReferenceCheck:
    """Random arguments; expected outputs from the reference run (see the module docstring)."""

    arguments: tuple[tuple[tuple[int, ...], str], ...]
    """(shape, numpy dtype name) of each argument, in order."""
    written: tuple[int, ...]
    """The arguments the function stores to."""
    seed: int = 0
    tolerance: float = TOLERANCE
    uses_reference: bool = True

    @property
    def name(self) -> str:
        return f"reference seed={self.seed} tol={self.tolerance:g}"

    def random(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        values = []
        for shape, dtype_name in self.arguments:
            dtype = np.dtype(dtype_name)
            data = rng.standard_normal(shape) if dtype.kind == "f" else rng.integers(-9, 9, shape)
            values.append(np.ascontiguousarray(np.asarray(data, dtype=dtype)))
        return values

    def prepare(self, arrays: Arrays, reference: Kernel | None) -> tuple[list[Any], list[Expected]]:
        if reference is None:
            raise LoopoptError("the reference check needs the reference kernel")
        floats = [i for i in self.written if np.dtype(self.arguments[i][1]).kind == "f"]
        initial = arrays.upload(self.random())
        poisoned = arrays.copies(initial)
        for i in floats:
            arrays.fill_nan(poisoned[i])
        ran = arrays.copies(poisoned)
        reference(*ran)
        if floats and not any(arrays.has_nan(ran[i]) for i in self.written):
            return poisoned, [(i, (), ran[i]) for i in self.written]
        ran = arrays.copies(initial)
        reference(*ran)
        return initial, [(i, (), ran[i]) for i in self.written]


def reference_check(text: str, func: str, seed: int = 0) -> ReferenceCheck:
    """The default check of `func` in `text`: its memref arguments and which it stores to."""
    from xdsl.dialects.builtin import MemRefType

    from loopopt.context import parse_module
    from loopopt.loops.nest import functions
    from loopopt.runtime.cpu import numpy_dtype

    module = parse_module(text, "<tune>")
    fn = functions(module, func)[0]
    if not fn.body.blocks:
        raise LoopoptError(f"@{func} has no body", op=fn)
    arguments = []
    for t in fn.function_type.inputs:
        dtype = numpy_dtype(t.element_type) if isinstance(t, MemRefType) else None
        if not isinstance(t, MemRefType) or dtype is None or any(d < 0 for d in t.get_shape()):
            raise LoopoptError(
                f"@{func}: tuning makes inputs for static f32/f64/i32/i64 memrefs only, got {t}",
                op=fn,
            )
        arguments.append((tuple(t.get_shape()), dtype.name))
    params = list(fn.body.blocks[0].args)
    written = set()
    for op in fn.walk():
        if op.name in ("affine.store", "memref.store") and op.operands[1] in params:
            written.add(params.index(op.operands[1]))
    if not written:
        raise LoopoptError(f"@{func} stores to none of its arguments: nothing to verify", op=fn)
    return ReferenceCheck(tuple(arguments), tuple(sorted(written)), seed)
