"""What every example shares: options, where it runs, timing, and the check against numpy.

python examples/matmul.py                 # the GPU when there is one (issue sizes), else
                                          # the CPU at small sizes (seconds)
python examples/matmul.py --full          # the full sizes on the CPU too
python examples/matmul.py --target cpu --schedule 'loop-tile{tile-sizes=32,32,8}'
python examples/matmul.py --size 64       # any size (the main dimension)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import loopopt
from loopopt.diagnostics import LoopoptError
from loopopt.frontend.kernel import Kernel, resolve_target


class Options(argparse.Namespace):
    full: bool
    target: str
    schedule: str | None
    size: int | None
    repeat: int


def options(description: str, argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--full", action="store_true", help="the full sizes, also on the CPU")
    parser.add_argument("--target", choices=("auto", "gpu", "cpu"), default="auto")
    parser.add_argument("--schedule", default=None, help="a pass pipeline, or 'auto'")
    parser.add_argument("--size", type=int, default=None, help="the main dimension")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs")
    opts = parser.parse_args(argv, namespace=Options())
    opts.target = resolve_target(opts.target)
    return opts


def size(opts: Options, small: int, full: int) -> int:
    """`--size`, else the full size on the GPU or with --full, else the small one."""
    if opts.size is not None:
        return opts.size
    return full if opts.full or opts.target == "gpu" else small


def timed(kern: Kernel, args: list[Any], opts: Options, flops: float) -> None:
    """Run once (compiling), then time runs of the compiled code on copies; print both."""
    start = time.perf_counter()
    kern(*args, target=opts.target, schedule=opts.schedule)
    first = time.perf_counter() - start
    copies = [np.array(a) if isinstance(a, np.ndarray | loopopt.array) else a for a in args]
    compiled = kern.compile(*copies, target=opts.target, schedule=opts.schedule)
    if compiled.target == "gpu":
        ms = compiled.time(*copies, warmup=1, repeat=opts.repeat)
    else:
        times = []
        for _ in range(opts.repeat):
            run = [a.copy() if isinstance(a, np.ndarray) else a for a in copies]
            begin = time.perf_counter()
            compiled(*run)
            times.append((time.perf_counter() - begin) * 1e3)
        ms = statistics.median(times)
    rate = f", {flops / ms / 1e6:.1f} GFLOP/s" if flops else ""
    where = f"{kern.__name__} on the {compiled.target}"
    print(f"  {where}: {ms:.3f} ms{rate} (first call {first:.2f} s)")


def check(name: str, got: Any, expected: np.ndarray, rtol: float, atol: float = 0.0) -> bool:
    """Compare with the float64 numpy reference element by element (|got - ref| <= atol +
    rtol |ref|); print the verdict and the normwise relative error ||got - ref|| / ||ref||."""
    got = np.asarray(got, dtype=np.float64)
    error = np.abs(got - expected)
    bound = atol + rtol * np.abs(expected)
    scale = float(np.linalg.norm(expected))
    relative = float(np.linalg.norm(error)) / scale if scale else float(np.linalg.norm(error))
    ok = bool(np.all(error <= bound))
    verdict = "matches" if ok else "DIFFERS FROM"
    print(f"  {name}: {verdict} numpy (relative error {relative:.1e})")
    return ok


def main(body: Callable[[Options], bool], description: str, argv: Sequence[str] | None) -> int:
    opts = options(description, argv)
    try:
        ok = body(opts)
    except LoopoptError as e:
        print(e.one_line(), file=sys.stderr)
        return 1
    return 0 if ok else 1
