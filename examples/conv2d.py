"""2-D convolution (valid, 3×3 filter) as a Python loop nest compiled by loopopt.

    python examples/conv2d.py [--full] [--target cpu|gpu] [--schedule PIPELINE] [--size N]

A 4096² float32 image on the GPU (or with --full), 512² on the CPU; the output is
(N-2)². Checked against numpy (a sum of shifted slices) in float64.
"""

from __future__ import annotations

import sys

import numpy as np
from common import Options, check, main, size, timed

import loopopt


@loopopt.kernel
def conv2d(image, filt, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            acc = 0.0
            for p in range(filt.shape[0]):
                for q in range(filt.shape[1]):
                    acc += image[i + p, j + q] * filt[p, q]
            out[i, j] = acc


def run(opts: Options) -> bool:
    n = size(opts, small=512, full=4096)
    rng = np.random.default_rng(2)
    image = rng.standard_normal((n, n)).astype(np.float32)
    filt = rng.standard_normal((3, 3)).astype(np.float32)
    out = np.zeros((n - 2, n - 2), np.float32)
    print(f"conv2d {n}x{n} image, 3x3 filter, float32")
    timed(conv2d, [image, filt, out], opts, flops=2.0 * 9 * (n - 2) ** 2)
    image64, filt64 = image.astype(np.float64), filt.astype(np.float64)
    expected = np.zeros(out.shape)
    for p in range(3):
        for q in range(3):
            expected += image64[p : p + n - 2, q : q + n - 2] * filt64[p, q]
    return check("out", out, expected, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    sys.exit(main(run, __doc__.splitlines()[0], sys.argv[1:]))
