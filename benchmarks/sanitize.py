"""Run every benchmark schedule once at a small size and check it, for compute-sanitizer.

    compute-sanitizer --tool memcheck  python3 benchmarks/sanitize.py
    compute-sanitizer --tool racecheck python3 benchmarks/sanitize.py

Each workload of workloads.py is resized to sizes its schedule's tiles divide (and, where the
schedule handles partial tiles, sizes they do not), compiled with its schedule from
schedules.py, run on fresh inputs with a poisoned or zeroed output, and compared with the
float64 reference. Exits 1 if a result is wrong.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import schedules  # noqa: E402
import workloads  # noqa: E402

import loopopt  # noqa: E402

SMALL = {
    "sgemm-4096": (256, 256, 256),
    "sgemm-1088": (192, 192, 192),
    "sgemm-1000": (150, 130, 45),
    "sgemm-atb-2048": (256, 128, 64),
    "conv2d-4096-3x3": (96, 64, 3, 3),
    "conv2d-4096-8x8": (32, 128, 8, 8),
    "conv2d-4096-16x16": (128, 128, 16, 16),
    "conv3d-608-8x8x8": (16, 32, 32, 8, 8, 8),
    "jacobi2d-8192": (202, 150),
}
"""Workload name -> small sizes (sgemm-1000: padded partial tiles in i, j and k; jacobi's
interior 200 x 148: partial tiles, guarded rows)."""


def main() -> int:
    failed = False
    for workload in workloads.WORKLOADS:
        if workload.name not in SMALL:
            continue
        small = workload.resized(SMALL[workload.name])
        name, pipeline = small.schedule(schedules)
        inputs = small.inputs(seed=1)
        out = np.full(small.output_shape, small.output_fill, np.float32)
        kern = loopopt.compile(small.mlir(), small.func, pipeline=pipeline, target="gpu")
        kern(*inputs, out)
        ref = small.reference([a.astype(np.float64) for a in inputs])
        got = out[small.written].astype(np.float64)
        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        ok = bool(np.isfinite(got).all()) and err < 1e-5
        failed |= not ok
        print(f"{small.name:32s} {name:12s} rel. err {err:.1e} {'ok' if ok else 'WRONG'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
