"""The cost model against measurement: each benchmark kernel's candidates, predicted and timed.

    python benchmarks/model_quality.py [--quick] [--only NAME ...] [--out DIR] [--jobs J]
    python benchmarks/model_quality.py --from-json FILE [--device sm_90]   # re-score, no GPU
    python benchmarks/model_quality.py --small --target cpu                # smoke run, no GPU

For each kernel (sgemm 4096³, 1088³ and 1000³ (padded tiles), AᵀB 2048², conv2d 4096² 3×3,
8×8 (column tiles) and 16×16, conv3d 608³, jacobi2d 8192²; `--quick`: the same nests smaller)
the nest is summarized, its whole candidate space enumerated (schedule/space.py) and each
candidate's time predicted (schedule/cost_model.py). A space of at most `--per-kernel` (56)
schedules is measured whole; a larger one (sgemm's hold hundreds) by the model's 8 best and
the rest evenly spaced along the model's ranking, so that 8 minutes suffice on an H200
machine. The tuner (schedule/tune.py)
measures them: built in parallel, verified against the workload's float64 reference (on the GPU
with torch), compile errors, wrong results, crashes and timeouts +inf, results cached.

Per kernel: the Spearman rank correlation of predicted and measured times over the candidates
that ran (the others are counted apart), the model's pick (lowest prediction) measured / the
best measured (goal: at most 1/0.9), and the best measured schedule. The JSON (every measured
candidate's schedule, prediction and measurement) goes to DIR (default benchmarks/results/);
`--from-json` predicts its candidates again with the current model and prints the same table,
so the model can be improved offline.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from workloads import Workload, workloads

from loopopt.diagnostics import LoopoptError
from loopopt.schedule.types import Device, Schedule

RESULTS = Path(__file__).resolve().parent / "results"
KERNELS: dict[str, tuple[int, ...]] = {
    "sgemm-4096": (1024, 1024, 1024),
    "sgemm-1088": (576, 576, 576),
    "sgemm-1000": (600, 600, 600),
    "sgemm-atb-2048": (1024, 1024, 1024),
    "conv2d-4096-3x3": (1024, 1024, 3, 3),
    "conv2d-4096-8x8": (1024, 1024, 8, 8),
    "conv2d-4096-16x16": (1024, 1024, 16, 16),
    "conv3d-608-8x8x8": (128, 128, 128, 8, 8, 8),
    "jacobi2d-8192": (2048, 2048),
}
"""The kernels measured, and their `--quick` sizes (64 divides the sgemm-1088 one, 128 not;
no tile divides sgemm-1000's: padded tiles)."""
PER_KERNEL = 56
"""Candidates measured per kernel (the spaces of sgemm hold hundreds: ≤ 8 minutes in all)."""
TOP = 8
"""Of them, the model's best; the others spread over its ranking."""
GOAL_SPEARMAN = 0.8
GOAL_PICK = 1 / 0.9
"""The model's pick may take at most this times the best measured time."""


@dataclass(frozen=True)
class WorkloadCheck:
    """The tuner's check for a benchmark nest: the workload's inputs, its output zeroed or
    poisoned, and its float64 reference (computed where the arguments live)."""

    workload: Workload
    seed: int = 0
    tolerance: float = 1e-4
    uses_reference: bool = False

    @property
    def name(self) -> str:
        return f"workload float64 reference seed={self.seed} tol={self.tolerance:g}"

    def prepare(self, arrays: Any, reference: Any) -> tuple[list[Any], list[Any]]:
        w = self.workload
        out = np.full(w.output_shape, w.output_fill, dtype=np.float32)
        args = arrays.upload([*w.inputs(self.seed), out])
        expected = w.reference([arrays.float64(a) for a in args[:-1]])
        return args, [(len(args) - 1, w.written, expected)]


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks from 1, ties getting the mean of the ranks they span."""
    _, inverse, counts = np.unique(
        np.asarray(values, float), return_inverse=True, return_counts=True
    )
    starts = np.cumsum(counts) - counts
    return (starts + (counts + 1) / 2.0)[inverse]


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson's of the average ranks); nan under 2 distinct."""
    if len(x) < 2:
        return math.nan
    rx, ry = average_ranks(x), average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    norm = math.sqrt(float((rx * rx).sum() * (ry * ry).sum()))
    return float((rx * ry).sum()) / norm if norm > 0 else math.nan


def score(entry: dict[str, Any]) -> dict[str, Any]:
    """Spearman, pick / best and the best of one kernel's candidates (predicted_us, ms)."""
    rows = entry["candidates"]
    ran = [r for r in rows if r["ms"] is not None]
    pick = min(rows, key=lambda r: r["predicted_us"])
    best = min(ran, key=lambda r: r["ms"]) if ran else None
    ratio = math.inf
    if best is not None and pick["ms"] is not None:
        ratio = pick["ms"] / best["ms"]
    return {
        "spearman": spearman([r["predicted_us"] for r in ran], [r["ms"] for r in ran]),
        "ran": len(ran),
        "failed": len(rows) - len(ran),
        "pick": pick,
        "best": best,
        "pick_over_best": ratio,
    }


def schedule_from_json(data: dict[str, Any]) -> Schedule:
    """A Schedule from `dataclasses.asdict` output read back from JSON (lists → tuples; the
    passes come from its pipeline text)."""

    def tuples(value: Any) -> Any:
        return tuple(tuples(v) for v in value) if isinstance(value, list) else value

    return Schedule(**{key: tuples(value) for key, value in data.items()})


def measure(w: Workload, model_device: Device, args: argparse.Namespace) -> dict[str, Any]:
    """One kernel: its space, predicted and measured (see the module docstring)."""
    from loopopt.context import parse_module
    from loopopt.schedule.cost_model import predict
    from loopopt.schedule.space import candidates
    from loopopt.schedule.summary import summarize_module
    from loopopt.schedule.tune import CpuTimer, GpuTimer, tune

    text = w.mlir()
    summary = summarize_module(parse_module(text, w.name), w.func)
    space = candidates(summary, model_device)
    predictions = {s.pipeline: predict(summary, s, model_device) for s in space}
    predicted = {pipeline: p.time_us for pipeline, p in predictions.items()}
    measured = sample(space, predicted, args.per_kernel)
    gpu = args.target == "gpu"
    timer = GpuTimer(model_device.arch) if gpu else CpuTimer()
    result = tune(
        text,
        w.func,
        measured,
        budget=max(1, len(measured)),
        device=args.measured_on,
        timer=timer,
        check=WorkloadCheck(w),
        cache_dir=args.cache,
        jobs=args.jobs,
        timeout_s=args.timeout,
    )
    by_pipeline = {m.pipeline: m for m in result.results}
    rows = []
    for s in measured:
        m = by_pipeline[s.pipeline]
        rows.append(
            {
                "key": s.key(),
                "predicted_us": predicted[s.pipeline],
                "ms": m.ms if m.ok else None,
                "status": m.status,
                "detail": m.detail,
                "schedule": {k: v for k, v in asdict(s).items() if k != "steps"},
                "prediction": asdict(predictions[s.pipeline]),
            }
        )
    return {
        "workload": w.name,
        "func": w.func,
        "sizes": list(w.sizes),
        "measured_on": args.measured_on,
        "model_device": asdict(model_device),
        "space": len(space),
        "candidates": rows,
    }


def sample(space: Sequence[Schedule], predicted: dict[str, float], n: int) -> list[Schedule]:
    """In the model's order: all of `space` when it has at most `n` schedules, else the
    model's TOP best and the rest evenly spaced along its ranking (every rank range alike)."""
    ranked = sorted(space, key=lambda s: (predicted[s.pipeline], s.key()))
    if n <= 0 or len(ranked) <= n:
        return ranked
    top = min(TOP, n)
    rest, k = ranked[top:], n - top
    spread = [rest[round(i * (len(rest) - 1) / max(1, k - 1))] for i in range(k)]
    return ranked[:top] + list(dict.fromkeys(spread))


def rescore(entry: dict[str, Any], device: Device | None) -> dict[str, Any]:
    """`entry` with every candidate predicted again by the current model (no GPU)."""
    from loopopt.context import parse_module
    from loopopt.schedule.cost_model import predict
    from loopopt.schedule.summary import summarize_module

    w = next(x for x in _all_workloads() if x.name.split("@")[0] == entry["workload"].split("@")[0])
    w = w.resized(tuple(entry["sizes"]))
    model_device = device if device is not None else Device(**entry["model_device"])
    summary = summarize_module(parse_module(w.mlir(), w.name), w.func)
    rows = [
        dict(
            r,
            predicted_us=predict(summary, schedule_from_json(r["schedule"]), model_device).time_us,
        )
        for r in entry["candidates"]
    ]
    return dict(entry, candidates=rows, model_device=asdict(model_device))


def _all_workloads() -> list[Workload]:
    return [w for w in workloads() if w.name in KERNELS]


def chosen(args: argparse.Namespace) -> list[Workload]:
    rows = [w for w in _all_workloads() if not args.only or any(p in w.name for p in args.only)]
    if args.small:
        return [w.small() for w in rows]
    if args.quick:
        return [w.resized(KERNELS[w.name]) for w in rows]
    return rows


def format_table(entries: Sequence[dict[str, Any]]) -> str:
    header = ["kernel", "cands", "ran", "failed", "spearman", "pick ms", "best ms", "pick/best"]
    lines = [[*header, "best schedule"]]
    for entry in entries:
        s = score(entry)
        pick_ms, best = s["pick"]["ms"], s["best"]
        lines.append(
            [
                entry["workload"],
                str(len(entry["candidates"])),
                str(s["ran"]),
                str(s["failed"]),
                f"{s['spearman']:.3f}",
                "inf" if pick_ms is None else f"{pick_ms:.4f}",
                "" if best is None else f"{best['ms']:.4f}",
                f"{s['pick_over_best']:.3f}",
                "" if best is None else best["key"],
            ]
        )
    widths = [max(len(line[c]) for line in lines) for c in range(len(lines[0]))]
    text = [
        "  ".join(
            cell.ljust(w) if c in (0, len(line) - 1) else cell.rjust(w)
            for c, (cell, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    ]
    text.insert(1, "  ".join("-" * w for w in widths))
    text.append(
        f"goals: spearman >= {GOAL_SPEARMAN}, pick/best <= {GOAL_PICK:.3f} "
        "(the model's pick at >= 0.9x the best measured speed); failed = +inf, not ranked"
    )
    return "\n".join(text)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the same nests, smaller")
    parser.add_argument("--small", action="store_true", help="the CPU tests' sizes")
    parser.add_argument("--only", nargs="*", default=[], help="kernels whose name contains")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON")
    parser.add_argument("--from-json", type=Path, default=None, help="re-score a stored run")
    parser.add_argument("--device", default=None, help="cost model device (sm_90, H200, ...)")
    parser.add_argument("--target", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--cache", default=None, help="tuner cache (default $LOOPOPT_CACHE_DIR)")
    parser.add_argument("--jobs", type=int, default=None, help="build processes")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per candidate")
    parser.add_argument(
        "--per-kernel", type=int, default=PER_KERNEL, help="candidates measured (0: all)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from loopopt.schedule.device import current_device, device_for

    args = parse_args(argv)
    override = device_for(args.device) if args.device else None
    if args.from_json is not None:
        report = json.loads(args.from_json.read_text())
        entries = [rescore(e, override) for e in report["kernels"]]
        print(format_table(entries))
        return 0
    gpu = current_device() if args.target == "gpu" else None
    if args.target == "gpu" and gpu is None:
        raise LoopoptError("no usable GPU: model_quality measures on the GPU (--target cpu)")
    args.measured_on = gpu.name if gpu is not None else "cpu"
    model_device = override or gpu or device_for("sm_90")
    rows = chosen(args)
    if not rows:
        raise LoopoptError(f"no kernel matches --only {' '.join(args.only)}")
    date = datetime.date.today().isoformat()
    tag = "quick" if args.quick else "small" if args.small else "full"
    path = args.out / f"model-quality-{args.measured_on.replace(' ', '_')}-{tag}-{date}.json"
    report: dict[str, Any] = {"measured_on": args.measured_on, "date": date, "kernels": []}
    for w in rows:
        print(f"{w.name} ...", file=sys.stderr, flush=True)
        report["kernels"].append(measure(w, model_device, args))
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=1) + "\n")
    print(format_table(report["kernels"]))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except LoopoptError as e:
        print(e.one_line(), file=sys.stderr)
        sys.exit(1)
