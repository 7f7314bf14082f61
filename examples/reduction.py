"""A sum reduction: partial sums per chunk, then a tree of halving steps, all on the device.

    python examples/reduction.py [--full] [--target cpu|gpu] [--schedule PIPELINE] [--size N]

2^26 float32 numbers on the GPU (or with --full), 2^20 on the CPU. A loop that carries a
running sum cannot run in parallel, so the sum is taken in two kernels: `chunk_sums` (one
sequential sum per chunk of 256 numbers, chunks in parallel) and `halve` (p[b] += p[b + h], called
with h = nb/2, nb/4, …, 1). The partial sums are a `loopopt.array`: they stay on the device
across the calls, and one number comes back at the end. Checked against numpy in float64.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from common import Options, check, main, size

import loopopt

CHUNK = 256


@loopopt.kernel
def chunk_sums(x, partial):
    for b in range(partial.shape[0]):
        s = 0.0
        for i in range(CHUNK):
            s += x[i, b]  # chunk b is column b: neighbouring threads read neighbouring numbers
        partial[b] = s


@loopopt.kernel
def halve(partial, h):
    for b in range(h):
        partial[b] += partial[b + h]


def total(x: np.ndarray, opts: Options) -> float:
    chunks = x.reshape(CHUNK, -1)
    partial = loopopt.array(np.zeros(chunks.shape[1], np.float32))
    chunk_sums(chunks, partial, target=opts.target, schedule=opts.schedule)
    h = chunks.shape[1] // 2
    while h >= 1:
        halve(partial, h, target=opts.target, schedule=opts.schedule)
        h //= 2
    return float(partial[0])


def run(opts: Options) -> bool:
    n = size(opts, small=1 << 20, full=1 << 26)
    if n % CHUNK or (n // CHUNK) & (n // CHUNK - 1):
        raise SystemExit(f"--size must be {CHUNK} times a power of two")
    rng = np.random.default_rng(6)
    x = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    print(f"sum of {n} float32 numbers ({n // CHUNK} chunks of {CHUNK})")
    total(x, opts)  # compiles both kernels
    start = time.perf_counter()
    got = total(x, opts)
    print(f"  sum on the {opts.target}: {(time.perf_counter() - start) * 1e3:.3f} ms")
    expected = np.array(x.astype(np.float64).sum())
    return check("sum", np.array(got), expected, rtol=1e-4, atol=1e-2)


if __name__ == "__main__":
    sys.exit(main(run, __doc__.splitlines()[0], sys.argv[1:]))
