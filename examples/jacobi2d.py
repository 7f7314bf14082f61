"""Jacobi 2-D (5-point stencil, time-stepped) with the data kept on the GPU between calls.

    python examples/jacobi2d.py [--full] [--target cpu|gpu] [--schedule PIPELINE] [--size N]

A 4096² float32 grid, 10 steps per call, on the GPU (or with --full); 256² on the CPU. The
arrays are `loopopt.array`s: on the GPU they are copied to the device by the first call, stay
there for the second, and come back once, when the check reads them. The time loop runs on
the host around the launches of the two sweeps. Checked against numpy in float64.
"""

from __future__ import annotations

import sys

import numpy as np
from common import Options, check, main, size, timed

import loopopt

STEPS = 10


@loopopt.kernel
def jacobi2d(steps, A, B):
    n = A.shape[0]
    for t in range(steps):  # noqa: B007 (the time loop, named t)
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])


def reference(steps: int, a: np.ndarray, b: np.ndarray) -> None:
    for _ in range(steps):
        for src, dst in ((a, b), (b, a)):
            dst[1:-1, 1:-1] = 0.2 * (
                src[1:-1, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:] + src[2:, 1:-1] + src[:-2, 1:-1]
            )


def run(opts: Options) -> bool:
    n = size(opts, small=256, full=4096)
    rng = np.random.default_rng(4)
    a0 = rng.standard_normal((n, n)).astype(np.float32)
    print(f"jacobi-2d {n}x{n} float32, {STEPS} steps per call")
    timed(jacobi2d, [STEPS, a0.copy(), a0.copy()], opts, flops=2 * 6.0 * (n - 2) ** 2 * STEPS)
    a, b = loopopt.array(a0), loopopt.array(a0)
    for _ in range(2):  # on the GPU: copied in by the first call, not copied between calls
        jacobi2d(STEPS, a, b, target=opts.target, schedule=opts.schedule)
    where = "host" if a.host_current else "device"
    print(f"  after 2 calls of {STEPS} steps, A is current on the {where} only")
    expected_a, expected_b = a0.astype(np.float64), a0.astype(np.float64)
    reference(2 * STEPS, expected_a, expected_b)
    return check("A", a, expected_a, rtol=1e-4, atol=1e-5) and check(
        "B", b, expected_b, rtol=1e-4, atol=1e-5
    )


if __name__ == "__main__":
    sys.exit(main(run, __doc__.splitlines()[0], sys.argv[1:]))
