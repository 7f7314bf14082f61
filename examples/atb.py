"""AᵀB: C += Aᵀ·B, reading A by columns, as a Python loop nest compiled by loopopt.

    python examples/atb.py [--full] [--target cpu|gpu] [--schedule PIPELINE] [--size N]

2048² float32 on the GPU (or with --full), 256² on the CPU. Checked against numpy in float64.
"""

from __future__ import annotations

import sys

import numpy as np
from common import Options, check, main, size, timed

import loopopt


@loopopt.kernel
def atb(A, B, C):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            for k in range(A.shape[0]):
                C[i, j] += A[k, i] * B[k, j]


def run(opts: Options) -> bool:
    n = size(opts, small=256, full=2048)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    print(f"AtB {n}x{n}x{n} float32")
    timed(atb, [a, b, c], opts, flops=2.0 * n**3)
    expected = a.astype(np.float64).T @ b.astype(np.float64)
    return check("C", c, expected, rtol=1e-3, atol=1e-3 * np.sqrt(n))


if __name__ == "__main__":
    sys.exit(main(run, __doc__.splitlines()[0], sys.argv[1:]))
