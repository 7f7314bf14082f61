"""N-body accelerations (all pairs, softened gravity) as a Python loop nest compiled by loopopt.

    python examples/nbody.py [--full] [--target cpu|gpu] [--schedule PIPELINE] [--size N]

65536 bodies in float32 on the GPU (or with --full), 1024 on the CPU: each body sums the pull
of every other (n² interactions, 20 flops each). `np.sqrt` keeps float32 (`math.sqrt` would
compute in float64, as Python does). Checked against numpy in float64 (on 256 sampled bodies
for large n).
"""

from __future__ import annotations

import sys

import numpy as np
from common import Options, check, main, size, timed

import loopopt

SOFTENING = 1e-3


@loopopt.kernel
def nbody(pos, mass, acc):
    n = pos.shape[0]
    for i in range(n):
        ax = 0.0
        ay = 0.0
        az = 0.0
        for j in range(n):
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            dz = pos[j, 2] - pos[i, 2]
            inv = 1.0 / np.sqrt(dx * dx + dy * dy + dz * dz + SOFTENING)
            s = mass[j] * inv * inv * inv
            ax += s * dx
            ay += s * dy
            az += s * dz
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az


def reference(pos: np.ndarray, mass: np.ndarray, bodies: np.ndarray) -> np.ndarray:
    d = pos[None, :, :] - pos[bodies, None, :]
    inv = 1.0 / np.sqrt((d * d).sum(axis=2) + SOFTENING)
    return ((mass[None, :] * inv**3)[:, :, None] * d).sum(axis=1)


def run(opts: Options) -> bool:
    n = size(opts, small=1024, full=65536)
    rng = np.random.default_rng(5)
    pos = rng.standard_normal((n, 3)).astype(np.float32)
    mass = rng.uniform(0.5, 1.5, n).astype(np.float32)
    acc = np.zeros((n, 3), np.float32)
    print(f"n-body {n} bodies float32")
    timed(nbody, [pos, mass, acc], opts, flops=20.0 * n * n)
    bodies = np.arange(n) if n <= 4096 else rng.choice(n, 256, replace=False)
    expected = reference(pos.astype(np.float64), mass.astype(np.float64), bodies)
    scale = float(np.abs(expected).max())
    return check("acc", acc[bodies], expected, rtol=1e-3, atol=1e-4 * scale)


if __name__ == "__main__":
    sys.exit(main(run, __doc__.splitlines()[0], sys.argv[1:]))
