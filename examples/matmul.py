"""Matrix multiplication, C += A·B, as a Python loop nest compiled by loopopt.

    python examples/matmul.py [--full] [--target cpu|gpu] [--schedule PIPELINE] [--size N]

2048² float32 on the GPU (or with --full), 256² on the CPU. Checked against numpy in float64.
On the GPU, try the tiled shared-memory schedule:
    --schedule 'loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared}'
"""

from __future__ import annotations

import sys

import numpy as np
from common import Options, check, main, size, timed

import loopopt


@loopopt.kernel
def matmul(A, B, C):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def run(opts: Options) -> bool:
    n = size(opts, small=256, full=2048)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    print(f"matmul {n}x{n}x{n} float32")
    timed(matmul, [a, b, c], opts, flops=2.0 * n**3)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    return check("C", c, expected, rtol=1e-3, atol=1e-3 * np.sqrt(n))


if __name__ == "__main__":
    sys.exit(main(run, __doc__.splitlines()[0], sys.argv[1:]))
