"""The benchmark rows of issue 5 (../shared/ANCHORS.md): loop nests, inputs, references, costs.

    for w in workloads(quick=True):
        text = w.mlir()                      # func.func @<w.func> with memref arguments
        inputs = w.inputs(seed=0)            # numpy float32, fresh random values
        out = np.full(w.output_shape, w.output_fill, np.float32)   # zeros or NaN poison
        ...run the nest on inputs + [out]...
        err = rel_error(out[w.written], w.reference([x.astype(np.float64) for x in inputs]))

Every nest is an affine nest with named loops (`loopopt.name`), arguments in the order
inputs..., output. SGEMM accumulates into its output (`C[i, j] = C[i, j] + a * b`, a perfect
nest), so its output starts at zero; the convolutions set each output to 0 ahead of their
filter loops and accumulate there (as cuDNN's `O = I * F`), and jacobi overwrites, so their
outputs start poisoned with NaN (ANCHORS.md: never time on zeros). The
reference works on float64 numpy arrays and on float64 torch tensors alike (slicing, `@`, `.T`
only): the CPU tests use numpy, run.py torch on the GPU. This module never imports torch.

Sizes are tuples: sgemm (m, n, k) with C m×n; conv2d (h, w, kh, kw) with an h×w output (the
image is (h + kh - 1)×(w + kw - 1)); conv3d (d, h, w, kd, kh, kw) likewise; jacobi2d (rows,
cols) of both arrays (the interior is written). `Workload.resized` gives the same nest at
other sizes (the CPU tests run every nest at `family.small`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

Sizes = tuple[int, ...]
Shape = tuple[int, ...]


def _memref(shape: Shape) -> str:
    return "memref<" + "x".join(str(s) for s in shape) + "xf32>"


def _accumulate_body(indent: str, loads: Sequence[tuple[str, str]], out: str, out_t: str) -> str:
    """`out = out + x * y` from two loads (name, `%Array[subscripts] : type`)."""
    (x, x_load), (y, y_load) = loads
    lines = [
        f"%{x} = affine.load {x_load}",
        f"%{y} = affine.load {y_load}",
        f"%o = affine.load {out} : {out_t}",
        f"%m = arith.mulf %{x}, %{y} : f32",
        "%s = arith.addf %o, %m : f32",
        f"affine.store %s, {out} : {out_t}",
    ]
    return "".join(f"{indent}{line}\n" for line in lines)


def _nest(loops: Sequence[tuple[str, int, int]], body: str, depth0: int = 0) -> str:
    """Perfectly nested affine.for loops (name, lower, upper), outermost first, around `body`
    (the outermost at nesting depth `depth0`)."""
    text = body
    for depth in reversed(range(depth0, depth0 + len(loops))):
        name, lower, upper = loops[depth - depth0]
        indent = "  " * (depth + 1)
        text = (
            f"{indent}affine.for %{name} = {lower} to {upper} {{\n"
            f"{text}"
            f'{indent}}} {{loopopt.name = "{name}"}}\n'
        )
    return text


def _func(name: str, args: Sequence[tuple[str, Shape]], body: str) -> str:
    params = ", ".join(f"%{arg}: {_memref(shape)}" for arg, shape in args)
    return f"func.func @{name}({params}) {{\n{body}  return\n}}\n"


# ---- SGEMM: C[i, j] += A[i, k] * B[k, j] --------------------------------------------------


def sgemm_shapes(sizes: Sizes) -> list[Shape]:
    m, n, k = sizes
    return [(m, k), (k, n), (m, n)]


def sgemm_mlir(sizes: Sizes) -> str:
    m, n, k = sizes
    a, b, c = (_memref(s) for s in sgemm_shapes(sizes))
    body = _accumulate_body(
        "        ", [("a", f"%A[%i, %k] : {a}"), ("b", f"%B[%k, %j] : {b}")], "%C[%i, %j]", c
    )
    nest = _nest([("i", 0, m), ("j", 0, n), ("k", 0, k)], body)
    return _func("sgemm", zip("ABC", sgemm_shapes(sizes), strict=True), nest)


def sgemm_reference(inputs: Sequence[Any]) -> Any:
    a, b = inputs
    return a @ b


# ---- SGEMM AᵀB: C[i, j] += A[k, i] * B[k, j] ------------------------------------------------


def sgemm_atb_shapes(sizes: Sizes) -> list[Shape]:
    m, n, k = sizes
    return [(k, m), (k, n), (m, n)]


def sgemm_atb_mlir(sizes: Sizes) -> str:
    m, n, k = sizes
    a, b, c = (_memref(s) for s in sgemm_atb_shapes(sizes))
    body = _accumulate_body(
        "        ", [("a", f"%A[%k, %i] : {a}"), ("b", f"%B[%k, %j] : {b}")], "%C[%i, %j]", c
    )
    nest = _nest([("i", 0, m), ("j", 0, n), ("k", 0, k)], body)
    return _func("sgemm_atb", zip("ABC", sgemm_atb_shapes(sizes), strict=True), nest)


def sgemm_atb_reference(inputs: Sequence[Any]) -> Any:
    a, b = inputs
    return a.T @ b


def sgemm_flops(sizes: Sizes) -> float:
    m, n, k = sizes
    return 2.0 * m * n * k


# ---- convolutions (cross-correlation, valid): out[x] = sum_f image[x + f] * filt[f] ------


def conv_shapes(sizes: Sizes) -> list[Shape]:
    rank = len(sizes) // 2
    out, filt = sizes[:rank], sizes[rank:]
    image = tuple(o + f - 1 for o, f in zip(out, filt, strict=True))
    return [image, filt, out]


CONV_LOOPS = {2: ("ij", "pq"), 3: ("ijl", "pqr")}
"""Loop names of the output and filter dimensions (schedules.py names them so)."""


def conv_mlir(sizes: Sizes) -> str:
    rank = len(sizes) // 2
    out_names, filt_names = CONV_LOOPS[rank]
    image_t, filt_t, out_t = (_memref(s) for s in conv_shapes(sizes))
    window = ", ".join(f"%{o} + %{f}" for o, f in zip(out_names, filt_names, strict=True))
    filt = ", ".join(f"%{f}" for f in filt_names)
    out = "%O[" + ", ".join(f"%{o}" for o in out_names) + "]"
    indent = "  " * (2 * rank + 1)
    body = _accumulate_body(
        indent, [("x", f"%I[{window}] : {image_t}"), ("f", f"%F[{filt}] : {filt_t}")], out, out_t
    )
    loops = [(name, 0, size) for name, size in zip(out_names + filt_names, sizes, strict=True)]
    filters = _nest(loops[rank:], body, depth0=rank)
    pad = "  " * (rank + 1)
    init = f"{pad}%zero = arith.constant 0.0 : f32\n{pad}affine.store %zero, {out} : {out_t}\n"
    name = f"conv{rank}d"
    return _func(
        name, zip("IFO", conv_shapes(sizes), strict=True), _nest(loops[:rank], init + filters)
    )


def conv_reference(inputs: Sequence[Any]) -> Any:
    """Sum over filter offsets of the shifted image window times the filter tap."""
    image, filt = inputs
    out_shape = [i - f + 1 for i, f in zip(image.shape, filt.shape, strict=True)]
    out = None
    for offset in itertools.product(*(range(f) for f in filt.shape)):
        window = image[tuple(slice(o, o + n) for o, n in zip(offset, out_shape, strict=True))]
        term = window * filt[offset]
        if out is None:
            out = term
        else:
            out += term
    return out


def conv_flops(sizes: Sizes) -> float:
    return 2.0 * math.prod(sizes)


# ---- jacobi-2d, one sweep: out[i, j] = 0.2 * (5-point sum of a), interior only ------------


def jacobi2d_shapes(sizes: Sizes) -> list[Shape]:
    return [sizes, sizes]


def jacobi2d_mlir(sizes: Sizes) -> str:
    rows, cols = sizes
    t = _memref(sizes)
    points = ["%i, %j", "%i - 1, %j", "%i + 1, %j", "%i, %j - 1", "%i, %j + 1"]
    lines = [f"%v{n} = affine.load %A[{p}] : {t}" for n, p in enumerate(points)]
    lines += ["%s1 = arith.addf %v0, %v1 : f32"]
    lines += [f"%s{n} = arith.addf %s{n - 1}, %v{n} : f32" for n in range(2, 5)]
    lines += [
        "%fifth = arith.constant 2.000000e-01 : f32",
        "%r = arith.mulf %fifth, %s4 : f32",
        f"affine.store %r, %B[%i, %j] : {t}",
    ]
    body = "".join(f"      {line}\n" for line in lines)
    nest = _nest([("i", 1, rows - 1), ("j", 1, cols - 1)], body)
    return _func("jacobi2d", [("A", sizes), ("B", sizes)], nest)


def jacobi2d_reference(inputs: Sequence[Any]) -> Any:
    (a,) = inputs
    c = a[1:-1, 1:-1]
    return 0.2 * ((((c + a[:-2, 1:-1]) + a[2:, 1:-1]) + a[1:-1, :-2]) + a[1:-1, 2:])


def jacobi2d_flops(sizes: Sizes) -> float:
    rows, cols = sizes
    return 5.0 * (rows - 2) * (cols - 2)


def _whole(sizes: Sizes) -> tuple[slice, ...]:
    return ()


def _interior(sizes: Sizes) -> tuple[slice, ...]:
    return tuple(slice(1, s - 1) for s in sizes)


@dataclass(frozen=True)
class Family:
    """One loop nest at any size: its MLIR, argument shapes, reference and cost."""

    func: str
    schedule: str
    """The generic pipeline's name in schedules.py."""
    mlir: Callable[[Sizes], str]
    shapes: Callable[[Sizes], list[Shape]]
    """Argument shapes, inputs first, the output last."""
    reference: Callable[[Sequence[Any]], Any]
    """float64 inputs (numpy or torch) → the expected `out[written]`."""
    flops: Callable[[Sizes], float]
    written: Callable[[Sizes], tuple[slice, ...]]
    """The region of the output the nest writes (and the check compares)."""
    accumulate: bool
    """The nest adds into its output (zeroed before a checked run) instead of overwriting it."""
    small: Sizes
    """Sizes for CPU tests (uneven, so that a transposed index shows)."""


SGEMM = Family(
    func="sgemm",
    schedule="SGEMM",
    mlir=sgemm_mlir,
    shapes=sgemm_shapes,
    reference=sgemm_reference,
    flops=sgemm_flops,
    written=_whole,
    accumulate=True,
    small=(5, 7, 6),
)
SGEMM_ATB = replace(
    SGEMM,
    func="sgemm_atb",
    schedule="SGEMM_ATB",
    mlir=sgemm_atb_mlir,
    shapes=sgemm_atb_shapes,
    reference=sgemm_atb_reference,
)
CONV2D = Family(
    func="conv2d",
    schedule="CONV2D",
    mlir=conv_mlir,
    shapes=conv_shapes,
    reference=conv_reference,
    flops=conv_flops,
    written=_whole,
    accumulate=False,
    small=(6, 7, 3, 2),
)
CONV3D = replace(CONV2D, func="conv3d", schedule="CONV3D", small=(4, 5, 3, 2, 3, 2))
JACOBI2D = Family(
    func="jacobi2d",
    schedule="JACOBI2D",
    mlir=jacobi2d_mlir,
    shapes=jacobi2d_shapes,
    reference=jacobi2d_reference,
    flops=jacobi2d_flops,
    written=_interior,
    accumulate=False,
    small=(7, 9),
)


@dataclass(frozen=True)
class Workload:
    """One benchmark row: a family at given sizes, the anchors it is compared with."""

    name: str
    family: Family
    sizes: Sizes
    anchors: tuple[str, ...]
    """Names of anchors.py's anchors that apply (cuBLAS, Triton, MLIR, cuDNN, torch)."""
    schedule_names: tuple[str, ...] = ()
    """schedules.py names tried before the family's generic one (e.g. SGEMM_1088)."""
    quick: bool = False
    """In the `--quick` set."""

    @property
    def func(self) -> str:
        return self.family.func

    def mlir(self) -> str:
        return self.family.mlir(self.sizes)

    @property
    def shapes(self) -> list[Shape]:
        return self.family.shapes(self.sizes)

    @property
    def output_shape(self) -> Shape:
        return self.shapes[-1]

    @property
    def output_fill(self) -> float:
        """Zeros for an accumulating nest, NaN poison for one that overwrites its output."""
        return 0.0 if self.family.accumulate else float("nan")

    @property
    def written(self) -> tuple[slice, ...]:
        return self.family.written(self.sizes)

    @property
    def flops(self) -> float:
        return self.family.flops(self.sizes)

    @property
    def bytes(self) -> float:
        """Least DRAM traffic: every input read once, the written output stored once (fp32)."""
        inputs = sum(math.prod(s) for s in self.shapes[:-1])
        parts = self.written + (slice(None),) * (len(self.output_shape) - len(self.written))
        written = math.prod(
            len(range(*part.indices(n))) for n, part in zip(self.output_shape, parts, strict=True)
        )
        return 4.0 * (inputs + written)

    def schedule(self, module: Any) -> tuple[str, str]:
        """(name, pipeline) of the first of `schedule_names`, then the generic one, in `module`."""
        for name in (*self.schedule_names, self.family.schedule):
            pipeline = getattr(module, name, None)
            if isinstance(pipeline, str):
                return name, pipeline
        raise AttributeError(f"schedules.py has no {self.family.schedule}")

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Fresh standard-normal float32 inputs (the output is not among them)."""
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(shape, dtype=np.float32) for shape in self.shapes[:-1]]

    def reference(self, inputs: Sequence[Any]) -> Any:
        """The expected `out[written]` from float64 inputs (numpy arrays or torch tensors)."""
        return self.family.reference(inputs)

    def resized(self, sizes: Sizes) -> Workload:
        return replace(self, name=f"{self.name}@{'x'.join(map(str, sizes))}", sizes=sizes)

    def small(self) -> Workload:
        return self.resized(self.family.small)


def _sgemm(n: int, quick: bool = False) -> Workload:
    anchors = ("cuBLAS", "Triton", "MLIR") if n == 4096 else ("cuBLAS", "Triton")
    return Workload(f"sgemm-{n}", SGEMM, (n, n, n), anchors, (f"SGEMM_{n}",), quick)


def _conv2d(n: int, k: int, quick: bool = False) -> Workload:
    names = (f"CONV2D_{n}_{k}X{k}", f"CONV2D_{k}X{k}")
    return Workload(f"conv2d-{n}-{k}x{k}", CONV2D, (n, n, k, k), ("cuDNN",), names, quick)


WORKLOADS: tuple[Workload, ...] = (
    _sgemm(4096, quick=True),
    _sgemm(8192),
    _sgemm(1088, quick=True),
    _sgemm(2496),
    _sgemm(5312),
    _sgemm(8000),
    _sgemm(1000),
    _sgemm(3001),
    Workload(
        "sgemm-atb-2048",
        SGEMM_ATB,
        (2048, 2048, 2048),
        ("cuBLAS", "Triton"),
        ("SGEMM_ATB_2048",),
        quick=True,
    ),
    _conv2d(4096, 3, quick=True),
    _conv2d(4096, 5),
    _conv2d(4096, 8),
    _conv2d(4096, 16, quick=True),
    _conv2d(8000, 8),
    _conv2d(8000, 16),
    Workload(
        "conv3d-608-8x8x8", CONV3D, (608, 608, 608, 8, 8, 8), ("cuDNN",), ("CONV3D_608_8X8X8",)
    ),
    Workload("jacobi2d-8192", JACOBI2D, (8192, 8192), ("torch",), ("JACOBI2D_8192",), quick=True),
)


def workloads(quick: bool = False, only: Sequence[str] = ()) -> list[Workload]:
    """The rows to run: all (or the quick set), those whose name contains one of `only`."""
    rows = [w for w in WORKLOADS if w.quick or not quick]
    if only:
        rows = [w for w in rows if any(part in w.name for part in only)]
    return rows
