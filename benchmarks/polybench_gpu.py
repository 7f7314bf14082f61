"""PolyBench kernels as `@loopopt.kernel` functions on the GPU: every kernel maps, and its result
equals the CPU's.

    python3 benchmarks/polybench_gpu.py                 # all 30 at the tests' small sizes
    python3 benchmarks/polybench_gpu.py --schedule loop-fuse,gpu-map-loops
    python3 benchmarks/polybench_gpu.py --time lu:1000 durbin:2000 trisolv:2000
    compute-sanitizer --tool racecheck python3 benchmarks/polybench_gpu.py

Without --time: each kernel of tests/unit/polybench_py.py runs on its small random inputs as
plain Python (the reference) and with target="gpu" (the default schedule: gpu-map-loops maps the
whole function), and the results must agree. With --time NAME:N: the kernels that take one square
size (the solvers and recurrences, the ones that need region kernels) run at size N on the GPU and
on the CPU (llvmlite's JIT, the same IR without gpu-map-loops), results compared, and the GPU's
median time over a few calls is printed (numpy arrays: copies in and out included). Exits 1 if a
result is wrong.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "unit"))

import polybench_py as pb  # noqa: E402

import loopopt  # noqa: E402


def _spd(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, n)) / np.sqrt(n)
    return m @ m.T + np.eye(n)


SIZED: dict[str, Callable[[np.random.Generator, int], tuple[Callable[..., None], list[Any]]]] = {
    "lu": lambda g, n: (pb.lu, [_spd(g, n)]),
    "cholesky": lambda g, n: (pb.cholesky, [_spd(g, n)]),
    "trisolv": lambda g, n: (pb.trisolv, [_spd(g, n), np.zeros(n), g.standard_normal(n)]),
    "durbin": lambda g, n: (pb.durbin, [g.uniform(0.0, 0.1, n) / n, np.zeros(n), np.zeros(n)]),
    "ludcmp": lambda g, n: (
        pb.ludcmp,
        [_spd(g, n), g.standard_normal(n), np.zeros(n), np.zeros(n)],
    ),
    "seidel_2d": lambda g, n: (pb.seidel_2d, [4, g.standard_normal((n, n))]),
    "nussinov": lambda g, n: (
        pb.nussinov,
        [g.integers(0, 4, n).astype(np.int32), np.zeros((n, n), np.int32)],
    ),
}
"""Kernels timed at one size N: name -> (function, inputs)."""


def _copies(args: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _close(got: list[Any], expected: list[Any], tol: float) -> bool:
    for g, e in zip(got, expected, strict=True):
        if isinstance(e, np.ndarray) and not np.allclose(g, e, rtol=tol, atol=tol):
            return False
    return True


def check_small(schedule: str | None) -> bool:
    ok = True
    rng = np.random.default_rng(1)
    for name in sorted(pb.CASES):
        function, inputs = pb.CASES[name]
        args = inputs(rng)
        expected = _copies(args)
        with np.errstate(all="ignore"):
            function(*expected)
        got = _copies(args)
        start = time.perf_counter()
        loopopt.kernel(function)(*got, target="gpu", schedule=schedule)
        seconds = time.perf_counter() - start
        tol = 2e-5 if any(getattr(a, "dtype", None) == np.float32 for a in args) else 1e-9
        good = _close(got, expected, tol)
        ok &= good
        print(f"{name:16s} {'ok' if good else 'WRONG'}  (compile + run {seconds:.2f} s)")
    return ok


def time_sized(specs: list[str]) -> bool:
    ok = True
    rng = np.random.default_rng(2)
    for spec in specs:
        name, size = spec.split(":")
        function, args = SIZED[name](rng, int(size))
        kern = loopopt.kernel(function)
        cpu = _copies(args)
        start = time.perf_counter()
        kern(*cpu, target="cpu")
        cpu_s = time.perf_counter() - start
        gpu = _copies(args)
        kern(*gpu, target="gpu")  # compile, load, and the result to check
        good = _close(gpu, cpu, 1e-6)
        ok &= good
        runs = []
        for _ in range(3):
            again = _copies(args)
            start = time.perf_counter()
            kern(*again, target="gpu")
            runs.append(time.perf_counter() - start)
        verdict = "ok" if good else "WRONG"
        gpu_s = statistics.median(runs)
        print(f"{name:10s} n={size:>5s} {verdict}  gpu {gpu_s:.4f} s  cpu {cpu_s:.4f} s")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", nargs="*", default=None, metavar="NAME:N")
    parser.add_argument("--schedule", default=None, help="a pipeline for every kernel")
    args = parser.parse_args()
    ok = time_sized(args.time) if args.time is not None else check_small(args.schedule)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
