"""Compile times: auto-schedule against the naive mapping, from the loop nest to PTX.

    python benchmarks/compile_times.py                 # every program, CPU process time
    python benchmarks/compile_times.py --only sgemm    # programs whose name contains a word
    python benchmarks/compile_times.py --disk-cache    # and a second process on a warm cache

Each program compiles in a process of its own (so nothing is kept in memory from another
compile): its pass pipeline (`auto-schedule{device=sm_90}`, or `gpu-map-loops` for the naive
mapping) and the PTX of its kernels (runtime/host.build_kernels: the NVVM lowering, LLVM's O3
and the NVPTX backend), timed with time.process_time (CPU time of the process, which a busy
machine disturbs less than wall time; imports not counted). `sgemm 2048³ after 4096³` compiles
4096³ first in the same process and reports the second compile alone: the size class of
schedule/rankings.py re-ranks only 4096³'s shortlist. The on-disk cache is off
(LOOPOPT_CACHE=0) unless `--disk-cache`, which gives each program an empty cache (a temporary
folder) and compiles it again in a new process on what the first compile left there: the
kernels layer of loopopt.compile is not involved (this calls the passes directly), only the
`rankings` layer.

No GPU needed (PTX for sm_90). The issue's target: auto-scheduled SGEMM 4096³ in ≤ 2 s and
≤ 3x the naive mapping; another size of the same nest ≤ 0.2 s more than a repeated compile.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "unit"))

AUTO = "auto-schedule{device=sm_90}"
NAIVE = "gpu-map-loops"
POLYBENCH_LARGE = {
    "gemm": ((1000, 1100), (1000, 1200), (1200, 1100)),
    "2mm": ((800, 900), (800, 1100), (1100, 900), (900, 1200), (800, 1200)),
    "3mm": (
        (800, 900),
        (800, 1000),
        (1000, 900),
        (900, 1100),
        (900, 1200),
        (1200, 1100),
        (800, 1100),
    ),
}
"""The array shapes of PolyBench 4.2's LARGE_DATASET (benchmarks/polybench_large.py)."""
PROGRAMS = ["sgemm 4096³", "sgemm 2048³", "sgemm 2048³ after 4096³", *POLYBENCH_LARGE]


def _module(program: str) -> object:
    """The program's module: the benchmarks' SGEMM nest, or a PolyBench kernel as a
    `@loopopt.kernel` function of float32 arrays."""
    import numpy as np
    import polybench_py as pb
    import workloads

    from loopopt.context import parse_module
    from loopopt.frontend.kernel import Kernel

    if program.startswith("sgemm"):
        n = int(program.split()[1].rstrip("³"))
        return parse_module(workloads.sgemm_mlir((n, n, n)))
    shapes = POLYBENCH_LARGE[program]
    scalars = [1.5, 1.2] if program in ("gemm", "2mm") else []
    arrays = [np.zeros(shape, np.float32) for shape in shapes]
    return Kernel(pb.CASES[program][0]).module(*scalars, *arrays)


def compile_once(program: str, pipeline: str) -> dict[str, float]:
    """Process time of the passes and of the PTX of `program` compiled in this process."""
    from xdsl.passes import PassPipeline

    from loopopt.context import make_context
    from loopopt.runtime.host import build_kernels
    from loopopt.universe import all_passes

    if program.endswith(" after 4096³"):
        compile_once("sgemm 4096³", pipeline)
        program = program.removesuffix(" after 4096³")
    module = _module(program)
    start = time.process_time()
    PassPipeline.parse_spec(all_passes(), pipeline).apply(make_context(), module)  # type: ignore[arg-type]
    passes = time.process_time()
    build_kernels(module, "sm_90")  # type: ignore[arg-type]
    done = time.process_time()
    return {"passes": passes - start, "ptx": done - passes, "total": done - start}


def _child(program: str, pipeline: str, env: dict[str, str]) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", program, pipeline]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{program}: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="programs containing these words")
    parser.add_argument("--disk-cache", action="store_true", help="also a warm second process")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(compile_once(*args.child)))
        return 0
    env = {**os.environ, "LOOPOPT_PROGRESS": "0", "LOOPOPT_CACHE": "0"}
    programs = [p for p in PROGRAMS if not args.only or any(w in p for w in args.only)]
    print("CPU process time in seconds (passes + PTX); sm_90")
    header = f"{'program':<26} {'naive':>7} {'auto':>16} {'auto/naive':>10}"
    print(header + (f" {'auto, warm disk':>16}" if args.disk_cache else ""))
    for program in programs:
        naive = _child(program, NAIVE, env)
        warm = None
        if args.disk_cache:  # an empty cache of its own, which the first compile fills
            folder = tempfile.mkdtemp(prefix="loopopt-compile-times-")
            warm = {**env, "LOOPOPT_CACHE": "1", "LOOPOPT_CACHE_DIR": folder}
        auto = _child(program, AUTO, warm or env)
        split = f"{auto['passes']:.2f}+{auto['ptx']:.2f}"
        line = f"{program:<26} {naive['total']:7.2f} {auto['total']:6.2f} ({split:>8})"
        line += f" {auto['total'] / naive['total']:9.1f}x"
        if warm:
            again = _child(program, AUTO, warm)
            line += f" {again['total']:7.2f} ({again['passes']:.2f}+{again['ptx']:.2f})"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
