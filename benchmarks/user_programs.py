"""User programs: plain `@loopopt.kernel` loops on torch CUDA tensors against the same maths in
torch, in one process.

    python3 benchmarks/user_programs.py [--only NAME ...] [--schedule auto] [--json OUT]

Each program is the loop nest a user would write, with no schedule (gpu-map-loops maps the
whole function; `--schedule auto`: the cost model); mvt, gesummv and gemm are PolyBench's, from
tests/unit/polybench_py.py. Inputs are fresh random float32 tensors, outputs
are poisoned with NaN first, and each result is checked against torch in float64
(‖out − ref‖ / ‖ref‖ < 1e-4). Times are kernel time only (CUDA events around each run after an
L2 flush, median of 20: runtime.cuda.time_kernel for loopopt, anchors.time_ms for torch), so
several launches of one program (host loops) count only their kernels. Prints ms and
torch / loopopt (above 1: loopopt is faster).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "unit"))

from anchors import rel_error, strict_fp32, time_ms  # noqa: E402
from polybench_py import atax, bicg, gemm, gesummv, jacobi_2d, mvt, three_mm, two_mm  # noqa: E402
from polybench_torch import FORMS  # noqa: E402

import loopopt  # noqa: E402


def row_sums(A, out):
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j]
        out[i] = s


def column_sums(A, out):
    for j in range(A.shape[1]):
        s = 0.0
        for i in range(A.shape[0]):
            s += A[i, j]
        out[j] = s


def matvec(A, x, y):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            y[i] += A[i, j] * x[j]


def total(X, out):
    s = 0.0
    for i in range(X.shape[0]):
        s += X[i]
    out[0] = s


@dataclass
class Program:
    name: str
    function: Callable[..., None]
    inputs: Callable[[], list]
    """Arguments; outputs come poisoned or initialized as the program expects."""
    reference: Callable[[list], list[torch.Tensor]]
    """torch's result for each output, from the arguments (computed before the run)."""
    outputs: list[int]
    """Positions of the outputs among the arguments."""
    torch_run: Callable[[list], object]
    schedule: str | None = None
    """The program's own schedule (a pipeline), when `--schedule` gives none."""


def _r(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device="cuda", dtype=torch.float32)


def _nan(*shape: int) -> torch.Tensor:
    return torch.full(shape, float("nan"), device="cuda", dtype=torch.float32)


def _form(name: str, outputs: list[int]) -> Callable[[list], list[torch.Tensor]]:
    """The reference of a PolyBench program: its torch form (polybench_torch.FORMS) run in
    float64 on copies of the arguments."""

    def reference(args: list) -> list[torch.Tensor]:
        copies = [a.double() if isinstance(a, torch.Tensor) else a for a in args]
        FORMS[name](*copies)
        return [copies[k] for k in outputs]

    return reference


def _polybench(
    label: str,
    function: Callable[..., None],
    name: str,
    inputs: Callable[[], list],
    outputs: list[int],
) -> Program:
    """A PolyBench kernel against its torch form (the fastest faithful one, float32)."""
    return Program(
        label, function, inputs, _form(name, outputs), outputs, lambda a: FORMS[name](*a)
    )


def _imperfect_gemm(n: int) -> Program:
    """PolyBench's gemm (`C *= beta` beside the k loop) at n³, against torch.addmm."""
    return Program(
        f"gemm {n}³ (imperfect nest)",
        gemm,
        lambda: [1.5, 1.2, _r(n, n), _r(n, n), _r(n, n)],
        lambda a: [a[1] * a[2].double() + a[0] * a[3].double() @ a[4].double()],
        [2],
        lambda a: torch.addmm(a[2], a[3], a[4], beta=a[1], alpha=a[0]),
    )


def programs(n: int, big: int) -> list[Program]:
    d = lambda t: t.double()  # noqa: E731
    return [
        Program(
            f"row sums {n}²",
            row_sums,
            lambda: [_r(n, n), _nan(n)],
            lambda a: [d(a[0]).sum(1)],
            [1],
            lambda a: torch.sum(a[0], 1, out=a[1]),
        ),
        Program(
            f"column sums {n}²",
            column_sums,
            lambda: [_r(n, n), _nan(n)],
            lambda a: [d(a[0]).sum(0)],
            [1],
            lambda a: torch.sum(a[0], 0, out=a[1]),
        ),
        Program(
            f"A·x {n}²",
            matvec,
            lambda: [_r(n, n), _r(n), torch.zeros(n, device="cuda")],
            lambda a: [d(a[0]) @ d(a[1])],
            [2],
            lambda a: torch.mv(a[0], a[1], out=a[2]),
        ),
        Program(
            f"mvt {n}²",
            mvt,
            lambda: [_r(n), _r(n), _r(n), _r(n), _r(n, n)],
            lambda a: [d(a[0]) + d(a[4]) @ d(a[2]), d(a[1]) + d(a[4]).T @ d(a[3])],
            [0, 1],
            lambda a: (torch.addmv(a[0], a[4], a[2]), torch.addmv(a[1], a[4].T, a[3])),
        ),
        Program(
            f"gesummv {n}²",
            gesummv,
            lambda: [1.5, 1.2, _r(n, n), _r(n, n), _nan(n), _r(n), _nan(n)],
            lambda a: [a[0] * (d(a[2]) @ d(a[5])) + a[1] * (d(a[3]) @ d(a[5]))],
            [6],
            lambda a: torch.add(
                torch.mv(a[2], a[5]), torch.mv(a[3], a[5]), alpha=a[1] / a[0], out=a[4]
            ).mul_(a[0]),
        ),
        Program(
            f"sum 2^{big.bit_length() - 1}",
            total,
            lambda: [_r(big), _nan(1)],
            lambda a: [d(a[0]).sum().reshape(1)],
            [1],
            lambda a: torch.sum(a[0], 0, keepdim=True, out=a[1]),
        ),
        Program(
            f"sum 2^{big.bit_length() - 1} (grid-atomic)",
            total,
            lambda: [_r(big), _nan(1)],
            lambda a: [d(a[0]).sum().reshape(1)],
            [1],
            lambda a: torch.sum(a[0], 0, keepdim=True, out=a[1]),
            "gpu-map-loops{reductions=grid-atomic}",
        ),
        *(_imperfect_gemm(size) for size in (2048, 4096)),
        _polybench(
            "2mm 2048",
            two_mm,
            "2mm",
            lambda: [1.5, 1.2, _nan(2048, 2048), *(_r(2048, 2048) for _ in range(4))],
            [6],
        ),
        _polybench(
            "3mm 2048",
            three_mm,
            "3mm",
            lambda: (
                [_nan(2048, 2048), _r(2048, 2048), _r(2048, 2048), _nan(2048, 2048)]
                + [_r(2048, 2048), _r(2048, 2048), _nan(2048, 2048)]
            ),
            [6],
        ),
        _polybench(f"atax {n}²", atax, "atax", lambda: [_r(n, n), _r(n), _nan(n), _nan(n)], [2]),
        _polybench(
            f"bicg {n}²", bicg, "bicg", lambda: [_r(n, n), _nan(n), _nan(n), _r(n), _r(n)], [1, 2]
        ),
        _polybench(
            "jacobi-2d 4096², 10 steps",
            jacobi_2d,
            "jacobi_2d",
            lambda: [10, _r(4096, 4096), _r(4096, 4096)],
            [1, 2],
        ),
    ]


def measure(program: Program, schedule: str | None) -> dict[str, object]:
    args = program.inputs()
    expected = program.reference(args)
    kern = loopopt.kernel(program.function)
    compiled = kern.compile(*args, schedule=schedule or program.schedule, target="gpu")
    compiled(*args)
    torch.cuda.synchronize()
    errors = [rel_error(args[k], ref) for k, ref in zip(program.outputs, expected, strict=True)]
    ms = compiled.time(*args)
    torch_ms = time_ms(lambda: program.torch_run(args))
    return {
        "name": program.name,
        "loopopt_ms": ms,
        "torch_ms": torch_ms,
        "speedup": torch_ms / ms,
        "rel_error": max(errors),
        "ok": all(e < 1e-4 for e in errors),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--schedule", default=None)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--big", type=int, default=1 << 26)
    parser.add_argument("--json", default=None)
    options = parser.parse_args()
    strict_fp32()
    print(f"GPU: {torch.cuda.get_device_name(0)}")
    results = []
    ok = True
    for program in programs(options.n, options.big):
        if options.only and not any(word in program.name for word in options.only):
            continue
        result = measure(program, options.schedule)
        results.append(result)
        ok &= bool(result["ok"])
        print(
            f"{result['name']:30s} loopopt {result['loopopt_ms']:9.4f} ms   torch "
            f"{result['torch_ms']:8.4f} ms   torch/loopopt {result['speedup']:6.3f}x   "
            f"err {result['rel_error']:.1e}{'' if result['ok'] else '  WRONG'}"
        )
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
