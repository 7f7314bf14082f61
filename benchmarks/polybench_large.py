"""The PolyBench table: all 30 kernels at PolyBench 4.2's dataset sizes, as `@loopopt.kernel`
functions on torch CUDA tensors, each against the fastest faithful torch form of its maths.

    python3 benchmarks/polybench_large.py                      # LARGE_DATASET, default schedule
    python3 benchmarks/polybench_large.py --size medium        # the quick smoke run
    python3 benchmarks/polybench_large.py --only gemm lu jacobi-2d --schedule auto
    python3 benchmarks/polybench_large.py --json out.json --plot out.svg --repeat 10

The kernels are the plain-Python loops of tests/unit/polybench_py.py, compiled with
target="gpu" and the default schedule (`--schedule TEXT`: that schedule, e.g. `auto` or a
pipeline); the torch forms are benchmarks/polybench_torch.py's (checked against the same loops
by tests/unit/test_polybench_torch_forms.py). Sizes are PolyBench 4.2's SMALL, MEDIUM and
LARGE_DATASET (polybench-code/<kernel>/<kernel>.h). Inputs are random float32 (int32 for
floyd-warshall and nussinov), well-conditioned where a solver needs it (SPD matrices for lu,
ludcmp and cholesky, a dominant diagonal for trisolv, |r| summing below 1 for durbin, columns
that are far from dependent for gramschmidt), with pure outputs poisoned with NaN.

Per kernel: the compile (timed, `compile s`), one run of loopopt and of the torch form on copies
of the same inputs, and two checks, each a normwise relative error (‖x − y‖ / ‖y‖, the largest
over the kernel's arrays; integers must be equal): loopopt against torch, and torch in float32
against torch in float64 (the inputs' float64 copies), both within the kernel's tolerance.
gramschmidt is checked on the columns its rows determine (LARGE has 1200 columns of 1000 rows:
the rest are rounding noise). Then both are timed as benchmarks/user_programs.py times them
(kernel time: CUDA events after an L2 flush, median of --repeat runs, fewer for runs that take
seconds: run.repeats), on the arrays the check left (the in-place kernels go on from their
results). A row: name, size, loopopt ms, torch ms, torch/loopopt (above 1: loopopt is faster),
compile s, check. A kernel that does not compile, run, or check prints its one-line reason and
counts as a failure; the summary gives the geometric mean of torch/loopopt over the kernels
timed and the count below 0.5x. Exit status 1 if any kernel failed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "unit"))

import polybench_py as pb  # noqa: E402
from anchors import strict_fp32, time_ms  # noqa: E402
from polybench_torch import FORMS  # noqa: E402
from run import _wall, one_line, repeats  # noqa: E402

import loopopt  # noqa: E402

SIZE_NAMES = ("small", "medium", "large")
DEVICE = "cuda"
Sizes = dict[str, int]
Inputs = Callable[[Sizes, str], list[Any]]


@dataclass(frozen=True)
class Kernel:
    name: str
    """PolyBench's name."""
    case: str
    """polybench_py.CASES's and polybench_torch.FORMS's name."""
    sizes: tuple[Sizes, Sizes, Sizes]
    """PolyBench 4.2's SMALL, MEDIUM and LARGE_DATASET parameters."""
    inputs: Inputs
    """The arguments (on a device) for the parameters."""
    tolerance: float = 1e-4


def _rand(device: str, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, device=device)


def _nan(device: str, *shape: int) -> torch.Tensor:
    return torch.full(shape, float("nan"), device=device)


def _zeros(device: str, *shape: int) -> torch.Tensor:
    return torch.zeros(*shape, device=device)


def _spd(device: str, n: int) -> torch.Tensor:
    """M Mᵀ / n + I: symmetric, eigenvalues in [1, 5]."""
    m = torch.randn(n, n, device=device, dtype=torch.float64)
    return (m @ m.T / n + torch.eye(n, device=device, dtype=torch.float64)).float()


def _lower_dominant(device: str, n: int) -> torch.Tensor:
    """I + G / n: a triangular solve with its lower triangle is well-conditioned."""
    return torch.eye(n, device=device) + _rand(device, n, n) / n


def _independent_columns(device: str, m: int, n: int) -> torch.Tensor:
    """3 I + G / √m (m x n): the first min(m, n) columns have singular values near [1, 5]."""
    return 3.0 * torch.eye(m, n, device=device) + _rand(device, m, n) / math.sqrt(m)


def _ints(device: str, low: int, high: int, *shape: int) -> torch.Tensor:
    return torch.randint(low, high, shape, device=device, dtype=torch.int32)


def _s(**sizes: int) -> Sizes:
    return sizes


KERNELS: list[Kernel] = [
    Kernel(
        "gemm",
        "gemm",
        (_s(NI=60, NJ=70, NK=80), _s(NI=200, NJ=220, NK=240), _s(NI=1000, NJ=1100, NK=1200)),
        lambda s, d: [
            1.5,
            1.2,
            _rand(d, s["NI"], s["NJ"]),
            _rand(d, s["NI"], s["NK"]),
            _rand(d, s["NK"], s["NJ"]),
        ],
    ),
    Kernel(
        "2mm",
        "2mm",
        (
            _s(NI=40, NJ=50, NK=70, NL=80),
            _s(NI=180, NJ=190, NK=210, NL=220),
            _s(NI=800, NJ=900, NK=1100, NL=1200),
        ),
        lambda s, d: [
            1.5,
            1.2,
            _nan(d, s["NI"], s["NJ"]),
            _rand(d, s["NI"], s["NK"]),
            _rand(d, s["NK"], s["NJ"]),
            _rand(d, s["NJ"], s["NL"]),
            _rand(d, s["NI"], s["NL"]),
        ],
    ),
    Kernel(
        "3mm",
        "3mm",
        (
            _s(NI=40, NJ=50, NK=60, NL=70, NM=80),
            _s(NI=180, NJ=190, NK=200, NL=210, NM=220),
            _s(NI=800, NJ=900, NK=1000, NL=1100, NM=1200),
        ),
        lambda s, d: [
            _nan(d, s["NI"], s["NJ"]),
            _rand(d, s["NI"], s["NK"]),
            _rand(d, s["NK"], s["NJ"]),
            _nan(d, s["NJ"], s["NL"]),
            _rand(d, s["NJ"], s["NM"]),
            _rand(d, s["NM"], s["NL"]),
            _nan(d, s["NI"], s["NL"]),
        ],
    ),
    Kernel(
        "syrk",
        "syrk",
        (_s(M=60, N=80), _s(M=200, N=240), _s(M=1000, N=1200)),
        lambda s, d: [1.5, 1.2, _rand(d, s["N"], s["N"]), _rand(d, s["N"], s["M"])],
    ),
    Kernel(
        "syr2k",
        "syr2k",
        (_s(M=60, N=80), _s(M=200, N=240), _s(M=1000, N=1200)),
        lambda s, d: [
            1.5,
            1.2,
            _rand(d, s["N"], s["N"]),
            _rand(d, s["N"], s["M"]),
            _rand(d, s["N"], s["M"]),
        ],
    ),
    Kernel(
        "symm",
        "symm",
        (_s(M=60, N=80), _s(M=200, N=240), _s(M=1000, N=1200)),
        lambda s, d: [
            1.5,
            1.2,
            _rand(d, s["M"], s["N"]),
            _rand(d, s["M"], s["M"]),
            _rand(d, s["M"], s["N"]),
        ],
    ),
    Kernel(
        "trmm",
        "trmm",
        (_s(M=60, N=80), _s(M=200, N=240), _s(M=1000, N=1200)),
        lambda s, d: [1.5, _rand(d, s["M"], s["M"]) / math.sqrt(s["M"]), _rand(d, s["M"], s["N"])],
    ),
    Kernel(
        "lu",
        "lu",
        (_s(N=120), _s(N=400), _s(N=2000)),
        lambda s, d: [_spd(d, s["N"])],
        tolerance=1e-3,
    ),
    Kernel(
        "ludcmp",
        "ludcmp",
        (_s(N=120), _s(N=400), _s(N=2000)),
        lambda s, d: [_spd(d, s["N"]), _rand(d, s["N"]), _nan(d, s["N"]), _nan(d, s["N"])],
        tolerance=1e-3,
    ),
    Kernel(
        "cholesky",
        "cholesky",
        (_s(N=120), _s(N=400), _s(N=2000)),
        lambda s, d: [_spd(d, s["N"])],
        tolerance=1e-3,
    ),
    Kernel(
        "trisolv",
        "trisolv",
        (_s(N=120), _s(N=400), _s(N=2000)),
        lambda s, d: [_lower_dominant(d, s["N"]), _nan(d, s["N"]), _rand(d, s["N"])],
        tolerance=1e-3,
    ),
    Kernel(
        "durbin",
        "durbin",
        (_s(N=120), _s(N=400), _s(N=2000)),
        lambda s, d: [
            (torch.rand(s["N"], device=d) * 2 - 1) * 0.9 / s["N"],
            _nan(d, s["N"]),
            _zeros(d, s["N"]),
        ],
        tolerance=1e-3,
    ),
    Kernel(
        "gramschmidt",
        "gramschmidt",
        (_s(M=60, N=80), _s(M=200, N=240), _s(M=1000, N=1200)),
        lambda s, d: [
            _independent_columns(d, s["M"], s["N"]),
            _zeros(d, s["N"], s["N"]),
            _nan(d, s["M"], s["N"]),
        ],
        tolerance=1e-3,
    ),
    Kernel(
        "jacobi-1d",
        "jacobi_1d",
        (_s(TSTEPS=40, N=120), _s(TSTEPS=100, N=400), _s(TSTEPS=500, N=2000)),
        lambda s, d: [s["TSTEPS"], _rand(d, s["N"]), _rand(d, s["N"])],
        tolerance=1e-3,
    ),
    Kernel(
        "jacobi-2d",
        "jacobi_2d",
        (_s(TSTEPS=40, N=90), _s(TSTEPS=100, N=250), _s(TSTEPS=500, N=1300)),
        lambda s, d: [s["TSTEPS"], _rand(d, s["N"], s["N"]), _rand(d, s["N"], s["N"])],
        tolerance=1e-3,
    ),
    Kernel(
        "seidel-2d",
        "seidel_2d",
        (_s(TSTEPS=40, N=120), _s(TSTEPS=100, N=400), _s(TSTEPS=500, N=2000)),
        lambda s, d: [s["TSTEPS"], _rand(d, s["N"], s["N"])],
        tolerance=1e-3,
    ),
    Kernel(
        "fdtd-2d",
        "fdtd_2d",
        (_s(TMAX=40, NX=60, NY=80), _s(TMAX=100, NX=200, NY=240), _s(TMAX=500, NX=1000, NY=1200)),
        lambda s, d: [
            _rand(d, s["NX"], s["NY"]),
            _rand(d, s["NX"], s["NY"]),
            _rand(d, s["NX"], s["NY"]),
            _rand(d, s["TMAX"]),
        ],
        tolerance=1e-3,
    ),
    Kernel(
        "heat-3d",
        "heat_3d",
        (_s(TSTEPS=40, N=20), _s(TSTEPS=100, N=40), _s(TSTEPS=500, N=120)),
        lambda s, d: [s["TSTEPS"], *(_rand(d, s["N"], s["N"], s["N"]) for _ in range(2))],
        tolerance=1e-3,
    ),
    Kernel(
        "adi",
        "adi",
        (_s(TSTEPS=40, N=60), _s(TSTEPS=100, N=200), _s(TSTEPS=500, N=1000)),
        lambda s, d: [
            s["TSTEPS"],
            _rand(d, s["N"], s["N"]),
            _rand(d, s["N"], s["N"]),
            _zeros(d, s["N"], s["N"]),
            _zeros(d, s["N"], s["N"]),
        ],
        tolerance=1e-2,  # right-hand sides cancel terms 2 N² / TSTEPS large: f32 loses 1e-4..1e-3
    ),
    Kernel(
        "floyd-warshall",
        "floyd_warshall",
        (_s(N=180), _s(N=500), _s(N=2800)),
        lambda s, d: [_ints(d, 1, 1000, s["N"], s["N"])],
    ),
    Kernel(
        "nussinov",
        "nussinov",
        (_s(N=180), _s(N=500), _s(N=2500)),
        lambda s, d: [
            _ints(d, 0, 4, s["N"]),
            torch.zeros(s["N"], s["N"], device=d, dtype=torch.int32),
        ],
    ),
    Kernel(
        "atax",
        "atax",
        (_s(M=116, N=124), _s(M=390, N=410), _s(M=1900, N=2100)),
        lambda s, d: [
            _rand(d, s["M"], s["N"]),
            _rand(d, s["N"]),
            _nan(d, s["N"]),
            _nan(d, s["M"]),
        ],
    ),
    Kernel(
        "bicg",
        "bicg",
        (_s(M=116, N=124), _s(M=390, N=410), _s(M=1900, N=2100)),
        lambda s, d: [
            _rand(d, s["N"], s["M"]),
            _nan(d, s["M"]),
            _nan(d, s["N"]),
            _rand(d, s["M"]),
            _rand(d, s["N"]),
        ],
    ),
    Kernel(
        "mvt",
        "mvt",
        (_s(N=120), _s(N=400), _s(N=2000)),
        lambda s, d: [*(_rand(d, s["N"]) for _ in range(4)), _rand(d, s["N"], s["N"])],
    ),
    Kernel(
        "correlation",
        "correlation",
        (_s(M=80, N=100), _s(M=240, N=260), _s(M=1200, N=1400)),
        lambda s, d: [
            float(s["N"]),
            _rand(d, s["N"], s["M"]),
            _nan(d, s["M"], s["M"]),
            _nan(d, s["M"]),
            _nan(d, s["M"]),
        ],
    ),
    Kernel(
        "covariance",
        "covariance",
        (_s(M=80, N=100), _s(M=240, N=260), _s(M=1200, N=1400)),
        lambda s, d: [
            float(s["N"]),
            _rand(d, s["N"], s["M"]),
            _nan(d, s["M"], s["M"]),
            _nan(d, s["M"]),
        ],
    ),
    Kernel(
        "doitgen",
        "doitgen",
        (_s(NQ=20, NR=25, NP=30), _s(NQ=40, NR=50, NP=60), _s(NQ=140, NR=150, NP=160)),
        lambda s, d: [
            _rand(d, s["NR"], s["NQ"], s["NP"]),
            _rand(d, s["NP"], s["NP"]) / math.sqrt(s["NP"]),
            _nan(d, s["NP"]),
        ],
    ),
    Kernel(
        "gesummv",
        "gesummv",
        (_s(N=90), _s(N=250), _s(N=1300)),
        lambda s, d: [
            1.5,
            1.2,
            _rand(d, s["N"], s["N"]),
            _rand(d, s["N"], s["N"]),
            _nan(d, s["N"]),
            _rand(d, s["N"]),
            _nan(d, s["N"]),
        ],
    ),
    Kernel(
        "gemver",
        "gemver",
        (_s(N=120), _s(N=400), _s(N=2000)),
        lambda s, d: [
            1.5,
            1.2,
            _rand(d, s["N"], s["N"]),
            *(_rand(d, s["N"]) for _ in range(8)),
        ],
    ),
    Kernel(
        "deriche",
        "deriche",
        (_s(W=192, H=128), _s(W=720, H=480), _s(W=4096, H=2160)),
        lambda s, d: [
            0.25,
            torch.rand(s["W"], s["H"], device=d),
            *(_nan(d, s["W"], s["H"]) for _ in range(3)),
        ],
        tolerance=1e-3,
    ),
]
"""The 30 kernels, in polybench_py's order."""


def checked(kernel: Kernel, args: list[Any]) -> list[torch.Tensor]:
    """The arrays the check compares: all, but gramschmidt's determined columns only."""
    arrays = [a for a in args if isinstance(a, torch.Tensor)]
    if kernel.case != "gramschmidt":
        return arrays
    A, R, Q = arrays
    m = min(A.shape)
    return [A[:, :m], R[:m], Q[:, :m]]


def copies(args: list[Any], dtype: torch.dtype | None = None) -> list[Any]:
    """Fresh copies of the arrays (floating ones cast to `dtype`), numbers as they are."""
    result = []
    for a in args:
        if isinstance(a, torch.Tensor):
            a = a.to(dtype) if dtype is not None and a.is_floating_point() else a.clone()
        result.append(a)
    return result


def difference(got: list[torch.Tensor], want: list[torch.Tensor]) -> float:
    """The largest ‖got − want‖ / ‖want‖ (float64); integers: 0 if equal, else inf."""
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        if not w.is_floating_point():
            error = 0.0 if torch.equal(g, w) else math.inf
        else:
            norm = torch.linalg.vector_norm(w.double())
            diff = torch.linalg.vector_norm(g.double() - w.double())
            error = float(diff / norm) if norm > 0 else float(diff)
        worst = max(worst, error if math.isfinite(error) else math.inf)
    return worst


@dataclass
class Row:
    name: str
    size: str
    loopopt_ms: float | None = None
    torch_ms: float | None = None
    compile_s: float | None = None
    error: float | None = None
    """loopopt against torch."""
    torch_error: float | None = None
    """torch float32 against torch float64."""
    tolerance: float = 0.0
    runs: int = 0
    problem: str = ""
    """Why the kernel failed (one line), or ''."""

    @property
    def ratio(self) -> float | None:
        if self.loopopt_ms is None or self.torch_ms is None or self.loopopt_ms <= 0:
            return None
        return self.torch_ms / self.loopopt_ms


def size_label(sizes: Sizes) -> str:
    return " ".join(f"{key}={value}" for key, value in sizes.items())


def measure(kernel: Kernel, size: str, schedule: str | None, repeat: int) -> Row:
    sizes = kernel.sizes[SIZE_NAMES.index(size)]
    row = Row(kernel.name, size_label(sizes), tolerance=kernel.tolerance)
    base = kernel.inputs(sizes, DEVICE)
    ours, theirs = copies(base), copies(base)
    form = FORMS[kernel.case]
    try:
        form(*theirs)
        integer = not any(a.is_floating_point() for a in checked(kernel, theirs))
        if not integer:
            exact = copies(base, torch.float64)
            form(*exact)
            row.torch_error = difference(checked(kernel, theirs), checked(kernel, exact))
        torch.cuda.synchronize()
    except Exception as e:
        row.problem = f"torch: {one_line(e)}"
        return row
    try:
        start = time.perf_counter()
        compiled = loopopt.kernel(pb.CASES[kernel.case][0]).compile(
            *ours, schedule=schedule, target="gpu"
        )
        row.compile_s = time.perf_counter() - start
    except Exception as e:
        row.problem = f"compile: {one_line(e)}"
        return row
    try:
        seconds = _wall(lambda: compiled(*ours))
        row.error = difference(checked(kernel, ours), checked(kernel, theirs))
        warmup, row.runs = repeats(seconds, repeat)
        row.loopopt_ms = compiled.time(*ours, warmup=warmup, repeat=row.runs)
    except Exception as e:
        row.problem = f"loopopt: {one_line(e)}"
        return row
    try:
        warmup, runs = repeats(_wall(lambda: form(*theirs)), repeat)
        row.torch_ms = time_ms(lambda: form(*theirs), warmup=warmup, repeat=runs)
    except Exception as e:
        row.problem = f"torch timing: {one_line(e)}"
        return row
    if not row.error <= kernel.tolerance:
        row.problem = f"WRONG: loopopt differs from torch by {row.error:.1e}"
    elif row.torch_error is not None and not row.torch_error <= kernel.tolerance:
        row.problem = f"torch float32 differs from float64 by {row.torch_error:.1e}"
    return row


def format_row(row: Row) -> str:
    def number(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    ratio = number(row.ratio, ".3f") + ("x" if row.ratio is not None else "")
    errors = f"{number(row.error, '.0e')}, torch {number(row.torch_error, '.0e')}"
    check = f"{row.problem} ({errors})" if row.problem else f"ok ({errors})"
    return (
        f"{row.name:15s} {row.size:32s} {number(row.loopopt_ms, '10.3f')} "
        f"{number(row.torch_ms, '10.3f')} {ratio:>9s} {number(row.compile_s, '8.2f')}  {check}"
    )


HEADER = (
    f"{'kernel':15s} {'size':32s} {'loopopt ms':>10s} {'torch ms':>10s} {'torch/lo':>9s} "
    f"{'compile s':>9s} check (loopopt vs torch, torch f32 vs f64)"
)


def summary(rows: list[Row]) -> tuple[float | None, int, int]:
    """(geometric mean of torch/loopopt over the rows that passed, those below 0.5x, failed
    rows)."""
    ratios = [row.ratio for row in rows if row.ratio is not None and not row.problem]
    mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None
    return mean, sum(r < 0.5 for r in ratios), sum(bool(row.problem) for row in rows)


def write_plot(rows: list[Row], path: Path, title: str) -> bool:
    """Bars of torch ms / loopopt ms per kernel (red: failed), log scale, lines at 1 and 0.5;
    False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    timed = [row for row in rows if row.ratio is not None]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.4 * len(timed) + 2), 4.5))
    colors = ["tab:red" if row.problem else "tab:blue" for row in timed]
    bars = ax.bar(range(len(timed)), [row.ratio for row in timed], color=colors)
    ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(0.5, color="gray", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_xticks(range(len(timed)), [row.name for row in timed], rotation=60, ha="right")
    ax.set_ylabel("torch ms / loopopt ms (above 1: loopopt faster)")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def selected(only: list[str] | None) -> list[Kernel]:
    if not only:
        return KERNELS
    names = {k.name for k in KERNELS} | {k.case for k in KERNELS}
    unknown = [name for name in only if name not in names]
    if unknown:
        raise SystemExit(f"unknown kernel {', '.join(unknown)} (known: {', '.join(sorted(names))})")
    return [k for k in KERNELS if k.name in only or k.case in only]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, metavar="NAME")
    parser.add_argument("--size", choices=SIZE_NAMES, default="large")
    parser.add_argument("--schedule", default=None, help="default: loopopt's default schedule")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs (median)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, metavar="OUT")
    parser.add_argument("--plot", default=None, metavar="OUT.svg")
    options = parser.parse_args()
    kernels = selected(options.only)
    strict_fp32()
    torch.manual_seed(options.seed)
    gpu = torch.cuda.get_device_name(0)
    date = datetime.date.today().isoformat()
    schedule = options.schedule or "default"
    print(f"PolyBench 4.2 {options.size.upper()}_DATASET on {gpu}, schedule {schedule}, {date}")
    print(HEADER)
    rows: list[Row] = []
    for kernel in kernels:
        row = measure(kernel, options.size, options.schedule, options.repeat)
        rows.append(row)
        print(format_row(row), flush=True)
        if options.json:
            report = {"gpu": gpu, "size": options.size, "schedule": schedule, "date": date}
            report["rows"] = [asdict(r) | {"ratio": r.ratio} for r in rows]
            Path(options.json).write_text(json.dumps(report, indent=1))
    mean, slow, failed = summary(rows)
    shown = "-" if mean is None else f"{mean:.3f}x"
    passed = sum(not r.problem for r in rows)
    print(
        f"geometric mean torch/loopopt {shown} over the {passed} kernels that passed; "
        f"{slow} of them below 0.5x; {failed} failed"
    )
    if options.plot:
        title = f"loopopt vs torch, PolyBench {options.size.upper()}, {gpu}, {schedule}"
        if not write_plot(rows, Path(options.plot), title):
            print("no plot: matplotlib is not installed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
