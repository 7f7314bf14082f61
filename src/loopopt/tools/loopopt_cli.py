"""`loopopt`: run a loop nest through a pipeline on the GPU (or the CPU) and check it.

    loopopt run [FILE] [--func NAME] [-p PIPELINE] [--target auto|gpu|cpu] [--repeat N]

With no FILE, the bundled matmul example. Every memref argument gets fresh random data; the
transformed function runs on the target, the original on the CPU, and the results are compared.
Prints where it ran, the median time and the largest relative difference. Exit 1 on a mismatch
or an error (one line, as `loopopt-opt` reports them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType

from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.runtime.cpu import numpy_dtype

DEFAULT_EXAMPLE = "matmul.mlir"
GPU_PIPELINE = (
    "loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},gpu-map-loops"
)
CPU_PIPELINE = "loop-tile{tile-sizes=32,32,8},loop-unroll{unroll-factor=4 loop=k}"


def _arguments(text: str, name: str, func_name: str | None) -> tuple[str, list[np.ndarray]]:
    module = parse_module(text, name)
    funcs = [op for op in module.walk() if isinstance(op, func.FuncOp) and op.body.blocks]
    chosen = [f for f in funcs if func_name in (None, f.sym_name.data)]
    if not chosen:
        raise LoopoptError(f"no function named '{func_name}'" if func_name else "no function")
    fn = chosen[0]
    rng = np.random.default_rng(0)
    arrays: list[np.ndarray] = []
    for t in fn.function_type.inputs:
        if not isinstance(t, MemRefType) or any(d < 0 for d in t.get_shape()):
            raise LoopoptError(
                f"'{fn.sym_name.data}': `loopopt run` makes inputs for static memrefs only, got {t}"
            )
        dtype = numpy_dtype(t.element_type)
        if dtype is None:
            raise LoopoptError(f"'{fn.sym_name.data}': element type {t.element_type} not supported")
        shape = t.get_shape()
        data = rng.standard_normal(shape) if dtype.kind == "f" else rng.integers(-9, 9, shape)
        arrays.append(np.ascontiguousarray(data.astype(dtype)))
    return fn.sym_name.data, arrays


def _median_ms(run: Any, args: Sequence[np.ndarray], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run(*args)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def run_command(args: argparse.Namespace) -> int:
    import loopopt

    if args.file is None:
        text = resources.files("loopopt.examples").joinpath(DEFAULT_EXAMPLE).read_text()
        name = DEFAULT_EXAMPLE
    else:
        try:
            with open(args.file) as f:
                text, name = f.read(), args.file
        except OSError as e:
            raise LoopoptError(f"cannot read input: {e.strerror}", location=args.file) from None
    func_name, inputs = _arguments(text, name, args.func)
    target = args.target
    if target == "auto":
        from loopopt.runtime import cuda

        target = "gpu" if cuda.available() else "cpu"
    default = GPU_PIPELINE if target == "gpu" else CPU_PIPELINE
    pipeline = args.passes if args.passes is not None else default
    kern = loopopt.compile(text, func_name, pipeline=pipeline, target=target)
    reference = [a.copy() for a in inputs]
    loopopt.compile(text, func_name, target="cpu")(*reference)
    got = [a.copy() for a in inputs]
    kern(*got)
    worst = max(
        float(np.linalg.norm((g - r).astype(np.float64)) / max(np.linalg.norm(r), 1e-30))
        for g, r in zip(got, reference, strict=True)
    )
    if kern.target == "gpu":
        from loopopt.runtime import cuda

        where = f"gpu ({cuda.context().name})"
        ms = kern.time(*[a.copy() for a in inputs], repeat=args.repeat)
    else:
        where = "cpu (llvmlite JIT)"
        ms = _median_ms(kern, [a.copy() for a in inputs], args.repeat)
    ok = worst < 1e-4
    print(f"{name}: @{func_name} after '{pipeline}'")
    print(f"  ran on {where}: {ms:.3f} ms (median of {args.repeat})")
    verdict = "matches" if ok else "DIFFERS FROM"
    print(f"  {verdict} the original on the CPU (largest relative difference {worst:.1e})")
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="loopopt", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="compile, run and check a function")
    run.add_argument("file", nargs="?", default=None, help="MLIR file (default: bundled matmul)")
    run.add_argument("--func", default=None, help="function to run (default: the first)")
    run.add_argument("-p", "--passes", default=None, help="pipeline (default: a tiled schedule)")
    run.add_argument("--target", choices=("auto", "gpu", "cpu"), default="auto")
    run.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        sys.exit(run_command(args))
    except LoopoptError as e:
        print(e.one_line(), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
