"""3-D convolution with an 8×8×8 filter (valid) as a Python loop nest compiled by loopopt.

    python examples/conv3d.py [--full] [--target cpu|gpu] [--schedule PIPELINE] [--size N]

An 8×8×8 filter over a 135³ float32 volume (a 128³ output) on the GPU (or with --full); a
24³ output on the CPU. Checked against numpy (a sum of shifted slices) in float64.
"""

from __future__ import annotations

import sys

import numpy as np
from common import Options, check, main, size, timed

import loopopt

K = 8
"""The filter's size along each axis."""


@loopopt.kernel
def conv3d(volume, filt, out):
    for x in range(out.shape[0]):
        for y in range(out.shape[1]):
            for z in range(out.shape[2]):
                acc = 0.0
                for p in range(K):
                    for q in range(K):
                        for r in range(K):
                            acc += volume[x + p, y + q, z + r] * filt[p, q, r]
                out[x, y, z] = acc


def run(opts: Options) -> bool:
    m = size(opts, small=24, full=128)
    n = m + K - 1
    rng = np.random.default_rng(3)
    volume = rng.standard_normal((n, n, n)).astype(np.float32)
    filt = rng.standard_normal((K, K, K)).astype(np.float32)
    out = np.zeros((m, m, m), np.float32)
    print(f"conv3d {n}^3 volume, {K}^3 filter, {m}^3 output, float32")
    timed(conv3d, [volume, filt, out], opts, flops=2.0 * K**3 * m**3)
    volume64, filt64 = volume.astype(np.float64), filt.astype(np.float64)
    expected = np.zeros(out.shape)
    for p in range(K):
        for q in range(K):
            for r in range(K):
                expected += volume64[p : p + m, q : q + m, r : r + m] * filt64[p, q, r]
    return check("out", out, expected, rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    sys.exit(main(run, __doc__.splitlines()[0], sys.argv[1:]))
