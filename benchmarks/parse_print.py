"""Parse + print of a large affine file: `loopopt-opt` next to plain `xdsl-opt`.

    python benchmarks/parse_print.py [--mb 5] [--keep FILE]

Generates about MB megabytes of functions with 2-deep affine nests (min bounds, loads, stores,
arith; named loops), then runs `xdsl-opt FILE -o OUT` and `loopopt-opt FILE -o OUT` (no passes)
and prints each one's CPU time (user + system of the child process, so that other work on the
machine does not count) and wall time, and their ratio. The outputs must be the same text (up
to the final newline). Exit 1 when loopopt takes more than 1.5 times xdsl-opt's CPU time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FUNCTION = """func.func @f{i}(%A: memref<64x64xf32>, %B: memref<64x64xf32>, %n: index) {{
  affine.for %i = 0 to 64 {{
    affine.for %j = 0 to min affine_map<(d0)[s0] -> (64, d0 + s0)>(%i)[%n] {{
      %a = affine.load %A[%i, %j] : memref<64x64xf32>
      %b = affine.load %B[%j, %i] : memref<64x64xf32>
      %c = arith.addf %a, %b : f32
      %d = arith.mulf %c, %a : f32
      affine.store %d, %A[%i, %j] : memref<64x64xf32>
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""

LIMIT = 1.5
"""loopopt-opt may take this many times xdsl-opt's CPU time."""


def generate(megabytes: float) -> str:
    parts: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        parts.append(FUNCTION.format(i=len(parts)))
        size += len(parts[-1])
    return "".join(parts)


def timed(command: list[str]) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of running `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def tool(name: str) -> list[str]:
    """The venv's script next to this Python, else PATH; loopopt-opt also as a module."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return [str(beside)]
    found = shutil.which(name)
    if found is not None:
        return [found]
    if name == "loopopt-opt":
        return [sys.executable, "-m", "loopopt.tools.loopopt_opt"]
    raise SystemExit(f"{name} not found")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=5.0, help="input size in MB (default 5)")
    parser.add_argument("--keep", default=None, help="write the generated input here")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="loopopt-parse-bench-"))
    source = Path(args.keep) if args.keep else folder / "input.mlir"
    source.write_text(generate(args.mb))
    print(f"{source}: {source.stat().st_size / 1e6:.1f} MB")
    results: dict[str, tuple[float, float]] = {}
    outputs: dict[str, str] = {}
    env_note = os.environ.get("PYTHONPATH", "")
    for name in ("xdsl-opt", "loopopt-opt"):
        out = folder / f"{name}.out"
        results[name] = timed([*tool(name), str(source), "-o", str(out)])
        outputs[name] = out.read_text()
        cpu, wall = results[name]
        print(f"  {name:<12} {cpu:7.1f} s CPU  {wall:7.1f} s wall")
    ratio = results["loopopt-opt"][0] / results["xdsl-opt"][0]
    same = outputs["xdsl-opt"].rstrip() == outputs["loopopt-opt"].rstrip()
    print(f"  loopopt-opt / xdsl-opt: {ratio:.2f}x CPU (limit {LIMIT}x); outputs equal: {same}")
    if env_note:
        print(f"  (PYTHONPATH={env_note})")
    shutil.rmtree(folder, ignore_errors=True)
    return 0 if ratio <= LIMIT and same else 1


if __name__ == "__main__":
    sys.exit(main())
