"""seidel-2d as a wavefront on the GPU: `loop-skew{loops=i,j factor=auto wavefront}` then
gpu-map-loops (host loops t and j_sk around one kernel over i per wavefront), checked against
the CPU run of the plain loops.

    python3 benchmarks/wavefront_gpu.py [N] [STEPS]
    compute-sanitizer --tool racecheck python3 benchmarks/wavefront_gpu.py 40 2
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "unit"))

import polybench_py as pb  # noqa: E402

import loopopt  # noqa: E402

WAVEFRONT = "loop-skew{loops=i,j factor=auto wavefront},gpu-map-loops"


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    rng = np.random.default_rng(3)
    a = rng.standard_normal((n, n))
    kern = loopopt.kernel(pb.seidel_2d)
    cpu = a.copy()
    kern(steps, cpu, target="cpu")
    results = {}
    for name, schedule in (("region", None), ("wavefront", WAVEFRONT)):
        gpu = a.copy()
        kern(steps, gpu, target="gpu", schedule=schedule)  # compile and check
        good = np.allclose(gpu, cpu, rtol=1e-9, atol=1e-9)
        start = time.perf_counter()
        kern(steps, a.copy(), target="gpu", schedule=schedule)
        results[name] = (good, time.perf_counter() - start)
        print(f"seidel-2d n={n} steps={steps} {name:9s} {'ok' if good else 'WRONG'}"
              f"  {results[name][1]:.4f} s (numpy arrays in and out)")
    return 0 if all(good for good, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
