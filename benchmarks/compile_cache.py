"""The on-disk compile cache: the same kernel compiled in two processes, one after the other.

    python benchmarks/compile_cache.py [--n 1024] [--target cpu|gpu] [--arch sm_90]
                                       [--pipeline auto-schedule] [--cache-dir DIR]

Each process compiles the SGEMM nest C[i, j] += A[i, k] * B[k, j] (n³) with `loopopt.compile`
and reports its compile time and the cache's (hits, misses) per layer (loopopt/cache.py). The
first, on an empty cache folder (a fresh temporary one unless --cache-dir), does all the work;
the second should hit every layer: no pass, no kernel lowering, no PTX, no LLVM code generation.
`--target gpu` needs no GPU (PTX for --arch); on the CPU the function also runs and is checked.
Exit 1 when the second process missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

GEMM = """func.func @sgemm(%A: memref<{n}x{n}xf32>, %B: memref<{n}x{n}xf32>,
                          %C: memref<{n}x{n}xf32>) {{
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = 0 to {n} {{
        %a = affine.load %A[%i, %k] : memref<{n}x{n}xf32>
        %b = affine.load %B[%k, %j] : memref<{n}x{n}xf32>
        %c = affine.load %C[%i, %j] : memref<{n}x{n}xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<{n}x{n}xf32>
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""


def compile_once(n: int, target: str, arch: str, pipeline: str) -> dict[str, object]:
    """Compile (and on the CPU run and check) the nest in this process."""
    import numpy as np

    import loopopt
    from loopopt import cache

    start = time.perf_counter()
    text = GEMM.format(n=n)
    kern = loopopt.compile(text, "sgemm", pipeline, target=target, arch=arch)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    error = None
    if target == "cpu":
        rng = np.random.default_rng(0)
        a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
        c = np.zeros((n, n), np.float32)
        kern(a, b, c)
        error = float(np.abs(c - a @ b).max() / np.abs(a @ b).max())
    return {"seconds": seconds, "stats": cache.stats(), "error": error}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--target", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--pipeline", default="auto-schedule")
    parser.add_argument("--cache-dir", default=None, help="default: a fresh temporary folder")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(compile_once(args.n, args.target, args.arch, args.pipeline)))
        return 0
    folder = args.cache_dir or tempfile.mkdtemp(prefix="loopopt-cache-bench-")
    env = {**os.environ, "LOOPOPT_CACHE_DIR": folder, "LOOPOPT_CACHE": "1"}
    command = [sys.executable, __file__, "--child", "--n", str(args.n), "--target", args.target]
    command += ["--arch", args.arch, "--pipeline", args.pipeline]
    print(f"sgemm {args.n}^3, '{args.pipeline}', target {args.target}; cache {folder}")
    missed = False
    for run in ("first", "second"):
        out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        result = json.loads(out.stdout.strip().splitlines()[-1])
        stats = result["stats"]
        hits = sum(h for h, _ in stats.values())
        misses = sum(m for _, m in stats.values())
        layers = ", ".join(f"{layer} {h} hit/{m} miss" for layer, (h, m) in stats.items())
        checked = "" if result["error"] is None else f", max rel. error {result['error']:.1e}"
        print(f"  {run} process: compile {result['seconds']:.2f} s ({layers}{checked})")
        if run == "second":
            missed = misses > 0 or hits == 0
    verdict = "did no compile work" if not missed else "MISSED the cache"
    print(f"  the second process {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
