"""Triangular contractions through the default GPU schedule, for compute-sanitizer.

    compute-sanitizer --tool memcheck  python3 tests/unit/gpu_sanitize_triangles.py
    compute-sanitizer --tool racecheck python3 tests/unit/gpu_sanitize_triangles.py

symm, trmm, syrk, syr2k, covariance and symm's temp2 nest (test_imperfect_contractions) at
45 x 37, which no tile divides: padded tiles whose guards hold the triangle, accumulators kept
in registers under them, versioned diagonals (`version-guards`), a scratch accumulator expanded
into a contraction. Each result against the loops in float64; exits 1 if one is wrong. Not
collected by pytest (no test_ prefix).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import polybench_py as pb  # noqa: E402
from test_imperfect_contractions import triangular_temp  # noqa: E402

from loopopt.frontend.kernel import Kernel  # noqa: E402

M, N = 45, 37


def main() -> int:
    rng = np.random.default_rng(0)
    r = rng.random
    cases = [
        ("symm", pb.symm, [1.5, 1.2, r((M, N)), r((M, M)), r((M, N))]),
        ("trmm", pb.trmm, [1.5, r((M, M)), r((M, N))]),
        ("syrk", pb.syrk, [1.5, 1.2, r((M, M)), r((M, N))]),
        ("syr2k", pb.syr2k, [1.5, 1.2, r((M, M)), r((M, N)), r((M, N))]),
        ("covariance", pb.covariance, [float(N), r((N, M)), np.zeros((M, M)), np.zeros(M)]),
        ("temp2", triangular_temp, [1.5, 1.2, r((M, N)), r((M, M)), r((M, N))]),
    ]
    bad = 0
    for name, f, made in cases:
        args = [a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in made]
        expected = [a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args]
        f(*expected)
        Kernel(f)(*args, target="gpu")
        err = max(
            float(np.max(np.abs(g - e)))
            for g, e in zip(args, expected, strict=True)
            if isinstance(e, np.ndarray)
        )
        print(f"{name}: max error {err:.2e}", flush=True)
        bad += err > 1e-3
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
