"""`loopopt`: run a loop nest through a pipeline and check it, or tune its schedule by measuring.

    loopopt run [FILE] [--func NAME] [-p PIPELINE] [--target auto|gpu|cpu] [--repeat N]
                [--no-cache]
    loopopt tune FILE --func NAME --budget N [--device sm_90] [--target auto|gpu|cpu]
                 [--cache DIR] [--output PIPELINE_FILE] [--top K] [--jobs J] [--timeout S]

`run`: with no FILE, the bundled matmul example through a tiled schedule; a FILE runs as written
on the CPU and through gpu-map-loops on the GPU unless -p says otherwise. Every memref argument
(static shapes) gets fresh random data;
the transformed function runs on the target, the original on the CPU, and the results are
compared. Prints where it ran, the median time and the largest relative difference. Compiled
kernels come from the on-disk cache where an earlier run made them (loopopt/cache.py;
`--no-cache`: compiled again, nothing stored).

`tune`: summarizes the nest, enumerates its candidate schedules for the device, ranks them by
the cost model, measures the top N (schedule/tune.py: verified, cached, errors as +inf) and
prints a table of the K fastest (rank by the model, predicted and measured time, status,
schedule); `--output` gets the winner's pipeline (`loopopt-opt FILE -p "$(cat FILE)"` replays
it). `--target cpu` measures on the host with the CPU stand-in timer.

Exit 1 on a mismatch or an error (one line, as `loopopt-opt` reports them; an internal error
names the pass and the location, `--debug` adds the traceback).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import traceback
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp

from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError, internal_error
from loopopt.runtime.cpu import numpy_dtype
from loopopt.tools.inputs import read_file

if TYPE_CHECKING:
    from loopopt.schedule.tune import TuneResult

DEFAULT_EXAMPLE = "matmul.mlir"
GPU_PIPELINE = "auto-schedule"
"""The cost model's schedule (`-p gpu-map-loops`: the naive mapping)."""
CPU_PIPELINE = "loop-tile{tile-sizes=32,32,8},loop-unroll{unroll-factor=4 loop=k}"


def _arguments(module: ModuleOp, func_name: str | None, name: str) -> tuple[str, list[np.ndarray]]:
    funcs = [op for op in module.walk() if isinstance(op, func.FuncOp) and op.body.blocks]
    chosen = [f for f in funcs if func_name in (None, f.sym_name.data)]
    if not chosen:
        message = f"no function named '{func_name}'" if func_name else "no function with a body"
        raise LoopoptError(message, location=name)
    fn = chosen[0]
    if fn.function_type.outputs.data:
        raise LoopoptError(
            f"@{fn.sym_name.data}: `loopopt run` compares the arrays a function writes; it "
            "cannot check one that returns values",
            op=fn,
        )
    _check_input_bytes(fn)
    rng = np.random.default_rng(0)
    arrays: list[np.ndarray] = []
    for t in fn.function_type.inputs:
        if not isinstance(t, MemRefType) or any(d < 0 for d in t.get_shape()):
            raise LoopoptError(
                f"@{fn.sym_name.data}: `loopopt run` makes inputs for static memrefs only, got {t}",
                op=fn,
            )
        dtype = numpy_dtype(t.element_type)
        if dtype is None:
            raise LoopoptError(
                f"@{fn.sym_name.data}: element type {t.element_type} is not supported "
                "(f32, f64, i32, i64)",
                op=fn,
            )
        shape = t.get_shape()
        data = rng.standard_normal(shape) if dtype.kind == "f" else rng.integers(-9, 9, shape)
        arrays.append(np.ascontiguousarray(data.astype(dtype)))
    return fn.sym_name.data, arrays


def _memory_bytes() -> int:
    """This machine's physical memory (16 GiB where the OS does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 16 << 30


def _check_input_bytes(fn: func.FuncOp) -> None:
    """Refuse inputs that cannot be held: `loopopt run` keeps each array about 4 times (the
    inputs, the reference's and the compiled run's copies, the comparison)."""
    total = 0
    for t in fn.function_type.inputs:
        if isinstance(t, MemRefType) and all(d >= 0 for d in t.get_shape()):
            dtype = numpy_dtype(t.element_type)
            total += math.prod(t.get_shape()) * (dtype.itemsize if dtype is not None else 8)
    memory = _memory_bytes()
    if total > memory // 4:
        raise LoopoptError(
            f"@{fn.sym_name.data}: `loopopt run` would need {total / 2**30:.3g} GiB for its "
            f"inputs, more than a quarter of this machine's {memory / 2**30:.3g} GiB",
            op=fn,
        )


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
        text, name = read_file(args.file), args.file
    module = parse_module(text, name)  # diagnostics point into the file
    func_name, inputs = _arguments(module, args.func, name)
    target = args.target
    if target == "auto":
        from loopopt.runtime import cuda

        target = "gpu" if cuda.available() else "cpu"
    if args.passes is not None:
        pipeline = args.passes
    elif args.file is None:  # the bundled example's tiled schedule (its loops are i, j, k)
        pipeline = GPU_PIPELINE if target == "gpu" else CPU_PIPELINE
    else:  # as written on the CPU; gpu-map-loops on the GPU (loopopt.compile adds it)
        pipeline = ""
    cache = not args.no_cache
    kern = loopopt.compile(module, func_name, pipeline=pipeline, target=target, cache=cache)
    reference = [a.copy() for a in inputs]
    loopopt.compile(module, func_name, target="cpu", cache=cache)(*reference)
    got = [a.copy() for a in inputs]
    kern(*got)
    worst = (
        max(
            float(np.linalg.norm((g - r).astype(np.float64)) / max(np.linalg.norm(r), 1e-30))
            for g, r in zip(got, reference, strict=True)
        )
        if inputs
        else 0.0
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


def tune_command(args: argparse.Namespace) -> int:
    from loopopt.context import parse_module
    from loopopt.schedule.cost_model import predict
    from loopopt.schedule.device import current_device, device_for
    from loopopt.schedule.space import candidates
    from loopopt.schedule.summary import summarize_module
    from loopopt.schedule.tune import CpuTimer, GpuTimer, tune

    text = read_file(args.file)
    summary = summarize_module(parse_module(text, args.file), args.func)
    target = args.target
    gpu = current_device() if target in ("auto", "gpu") else None
    if target == "gpu" and gpu is None:
        raise LoopoptError("tune --target gpu: no usable GPU (use --target cpu)")
    device = device_for(args.device) if args.device else (gpu or device_for("sm_90"))
    space = candidates(summary, device)
    if not space:
        raise LoopoptError(f"tune: no candidate schedule for @{summary.func} on {device.name}")
    predicted = {s.pipeline: predict(summary, s, device).time_us / 1e3 for s in space}
    ranked = sorted(space, key=lambda s: predicted[s.pipeline])
    loops = " ".join(f"{loop.name}={loop.trip}" for loop in summary.loops)
    parallel = ",".join(loop.name for loop in summary.loops if loop.parallel) or "none"
    where = f"gpu ({gpu.name})" if gpu is not None else "cpu (stand-in timer)"
    print(
        f"{args.file}: @{summary.func}: loops {loops} (parallel: {parallel}), "
        f"{len(summary.accesses)} accesses, {summary.flops} flops/iteration"
    )
    print(
        f"  {len(space)} candidates for {device.name}; measuring the model's top "
        f"{min(args.budget, len(space))} on {where}"
    )
    timer = GpuTimer(device.arch) if gpu is not None else CpuTimer()
    measured_on = gpu.name if gpu is not None else "cpu"
    result = tune(
        text,
        summary.func,
        ranked,
        budget=args.budget,
        device=measured_on,
        timer=timer,
        cache_dir=args.cache,
        jobs=args.jobs,
        timeout_s=args.timeout,
    )
    _print_table(result, predicted, args.top)
    if args.output:
        _write(args.output, result.winner_pipeline + "\n")
        print(f"  pipeline written to {args.output}")
    return 0


def _print_table(result: TuneResult, predicted: dict[str, float], top: int) -> None:
    """The `top` fastest measurements, then the winner and the model's pick."""
    print(f"  {'rank':>4}  {'predicted ms':>12}  {'measured ms':>11}  {'status':<28}  schedule")
    for m in result.results[:top]:
        status = f"{m.status} ({m.detail})" if m.detail else m.status
        status = status if len(status) <= 28 else status[:27] + "…"
        measured = f"{m.ms:.4f}" if m.ok else "inf"
        row = f"{m.rank + 1:>4}  {predicted[m.pipeline]:>12.4f}  {measured:>11}  {status:<28}"
        print(f"  {row}  {m.key}")
    cached = sum(m.cached for m in result.results)
    print(f"  {cached} of {len(result.results)} measurements from the cache")
    winner = result.winner
    if winner is None:
        raise LoopoptError(f"tune: none of the {len(result.results)} candidates ran correctly")
    print(f"  winner: {winner.key}: {winner.ms:.4f} ms (model rank {winner.rank + 1})")
    pick = next(m for m in result.results if m.rank == 0)
    if pick.ok:
        print(f"  model's pick: {pick.ms:.4f} ms, {winner.ms / pick.ms:.2f}x the winner's speed")
    else:
        print(f"  model's pick: {pick.status} ({pick.detail})")


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise LoopoptError(f"cannot write output: {e.strerror}", location=path) from None


def _integer(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{value}'") from None


def _positive(value: str) -> int:
    number = _integer(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def _count(value: str) -> int:
    number = _integer(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {number}")
    return number


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got '{value}'") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {value}")
    return number


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="loopopt", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="compile, run and check a function")
    run.add_argument("file", nargs="?", default=None, help="MLIR file (default: bundled matmul)")
    run.add_argument("--func", default=None, help="function to run (default: the first)")
    run.add_argument(
        "-p",
        "--passes",
        default=None,
        help="pipeline (default: a tiled schedule for the bundled example; for FILE none on the "
        "CPU, gpu-map-loops on the GPU)",
    )
    run.add_argument("--target", choices=("auto", "gpu", "cpu"), default="auto")
    run.add_argument("--repeat", type=_positive, default=10, help="timed runs (default 10)")
    run.add_argument("--no-cache", action="store_true", help="do not use the compile cache")
    run.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    tune = commands.add_parser("tune", help="measure the cost model's top schedules, keep the best")
    tune.add_argument("file", help="MLIR file with the loop nest")
    tune.add_argument("--func", default=None, help="function to tune (default: the only one)")
    tune.add_argument("--budget", type=_positive, required=True, help="candidates to measure")
    tune.add_argument("--device", default=None, help="sm_80|sm_89|sm_90|H100|H200 (cost model)")
    tune.add_argument("--target", choices=("auto", "gpu", "cpu"), default="auto")
    tune.add_argument(
        "--cache", default=None, help="cache folder (default: $LOOPOPT_CACHE_DIR/tune)"
    )
    tune.add_argument("--output", default=None, help="file for the winner's pipeline")
    tune.add_argument("--top", type=_positive, default=10, help="table rows (default 10)")
    tune.add_argument("--jobs", type=_count, default=None, help="build processes (0: none)")
    tune.add_argument("--timeout", type=_seconds, default=120.0, help="seconds per candidate")
    tune.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    args = parser.parse_args(argv)
    command = run_command if args.command == "run" else tune_command
    try:
        code = command(args)
    except LoopoptError as e:
        print(e.one_line(), file=sys.stderr)
        code = 1
    except Exception as e:  # an internal error is still reported as a diagnostic
        if args.debug:
            traceback.print_exception(e)
        location = args.file or DEFAULT_EXAMPLE
        print(internal_error(e, location=location).one_line(), file=sys.stderr)
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
