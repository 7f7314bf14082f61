"""loopopt's kernels next to the anchors of issue 5, in one process, on the GPU: one table.

    python benchmarks/run.py [--quick] [--only NAME-substring ...] [--repeat N] [--out DIR]
                             [--schedule hand|auto] [--sgemm-variants]

For every workload (workloads.py) the nest is compiled with its schedule (schedules.py; with
`--schedule auto`, the pipeline `auto-schedule` alone: the cost model chooses on this GPU),
run once on fresh random inputs with its output zeroed (accumulating nests) or poisoned with
NaN, and checked against a float64 reference (‖out − ref‖ / ‖ref‖ < 1e-4, else WRONG); then
loopopt and every anchor (anchors.py: cuBLAS, cuDNN, Triton, torch, quoted upstream MLIR) are
timed with CUDA events (warm-up, median). The table gives each time, loopopt's rate, its share
of the roofline floor and the ratios anchor ms / loopopt ms (above 1: loopopt is faster).
Results go to DIR (default benchmarks/results/) as JSON and, with matplotlib, a bar plot.
An error in one row is reported in its note and the others go on. Exit status 1 when a check
fails or a loopopt kernel does not build or run. `--sgemm-variants`: only the SGEMM rows (A·B),
each once per schedule of schedules.sgemm_variants (the issue-16 candidates that apply to its
sizes), the anchors timed once per size: one run compares them all.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workloads import Workload, workloads

import loopopt
from loopopt.diagnostics import LoopoptError

TOLERANCE = 1e-4
"""Largest normwise relative error against the float64 reference."""
ANCHOR_ORDER = ("cuBLAS", "cuDNN", "Triton", "torch", "MLIR")
TIME_BUDGET_S = 5.0
"""A timing that would take longer gets fewer runs (at least 3) and one warm-up."""
PLOT_COLORS = {
    "cuBLAS": "tab:blue",
    "cuDNN": "tab:green",
    "Triton": "tab:orange",
    "torch": "tab:red",
    "MLIR": "tab:purple",
}
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Timing:
    """loopopt's or an anchor's time on one workload and its check."""

    name: str
    ms: float | None = None
    runs: int = 0
    rel_error: float | None = None
    error: str = ""
    quoted: bool = False
    """Not run here: a number quoted from ANCHORS.md."""

    @property
    def wrong(self) -> bool:
        return self.rel_error is not None and not self.rel_error < TOLERANCE


@dataclass
class Row:
    """One workload: its cost, its roofline floor and the timings."""

    workload: str
    schedule: str
    flops: float
    bytes: float
    floor_ms: float
    compute_bound: bool
    """The FMA floor is above the bandwidth floor (rates in TFLOP/s, else GB/s)."""
    loopopt: Timing
    anchors: list[Timing] = field(default_factory=list)

    def rate(self) -> str:
        ms = self.loopopt.ms
        if ms is None:
            return ""
        if self.compute_bound:
            return f"{self.flops / ms / 1e9:.2f} TFLOP/s"
        return f"{self.bytes / ms / 1e6:.0f} GB/s"

    def floor_share(self) -> float | None:
        """Roofline floor time / loopopt's time (1.0: at the floor)."""
        ms = self.loopopt.ms
        return None if ms is None else self.floor_ms / ms

    def ratio(self, anchor: Timing) -> float | None:
        """Anchor ms / loopopt ms (above 1: loopopt is faster)."""
        if anchor.ms is None or self.loopopt.ms is None:
            return None
        return anchor.ms / self.loopopt.ms

    def failed(self) -> bool:
        return bool(self.loopopt.error) or any(t.wrong for t in [self.loopopt, *self.anchors])


@dataclass
class Report:
    gpu: str
    date: str
    repeat: int
    peak_flops: float
    peak_note: str
    copy_bytes_per_s: float
    rows: list[Row] = field(default_factory=list)


def one_line(e: BaseException) -> str:
    if isinstance(e, LoopoptError):
        return e.one_line()
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def repeats(seconds: float, repeat: int) -> tuple[int, int]:
    """(warm-up, runs) for a kernel taking `seconds` a run: all `repeat` runs within budget."""
    if seconds * (repeat + 3) <= TIME_BUDGET_S:
        return 3, repeat
    return 1, max(3, min(repeat, int(TIME_BUDGET_S / max(seconds, 1e-9))))


def _columns(report: Report) -> list[str]:
    present = {t.name for row in report.rows for t in row.anchors}
    return [name for name in ANCHOR_ORDER if name in present]


def _cells(row: Row, anchors: Sequence[str], repeat: int) -> list[str]:
    t = row.loopopt
    share = row.floor_share()
    cells = [
        row.workload,
        row.schedule,
        "" if t.ms is None else f"{t.ms:.3f}",
        row.rate(),
        "" if share is None else f"{share * 100:.0f}%",
    ]
    notes = [t.error] if t.error else []
    if t.ms is not None and t.runs < repeat:
        notes.append(f"loopopt median of {t.runs}")
    by_name = {a.name: a for a in row.anchors}
    for name in anchors:
        a = by_name.get(name)
        ratio = None if a is None else row.ratio(a)
        if a is None:
            cells += ["", ""]
            continue
        ms = "error" if a.ms is None else f"{a.ms:.3f}" + ("*" if a.quoted else "")
        cells += [ms, "" if ratio is None else f"{ratio:.2f}x"]
        if a.error:
            notes.append(f"{name}: {a.error}")
        if a.wrong:
            notes.append(f"{name} WRONG (rel. err {a.rel_error:.1e})")
    check = "" if t.rel_error is None else f"{t.rel_error:.1e}"
    cells += [("WRONG " if t.wrong else "") + check, "; ".join(notes)]
    return cells


def format_table(report: Report) -> str:
    """The header (GPU, date, floors), one line per workload, the legend."""
    anchors = _columns(report)
    header = ["workload", "schedule", "loopopt ms", "rate", "% floor"]
    for name in anchors:
        header += [f"{name} ms", f"vs {name}"]
    header += ["rel. err", "note"]
    lines = [header] + [_cells(row, anchors, report.repeat) for row in report.rows]
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    left = {0, 1, len(header) - 1}

    def fmt(line: list[str]) -> str:
        parts = [
            cell.ljust(w) if c in left else cell.rjust(w)
            for c, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    out = [
        f"loopopt benchmarks on {report.gpu}, {report.date}",
        f"fp32 strict (TF32 off); kernel time, median of {report.repeat} runs (CUDA events) "
        "after warm-up, each after an L2 flush (as triton.testing.do_bench)",
        f"roofline floors: FP32 FMA peak {report.peak_flops / 1e12:.1f} TFLOP/s "
        f"({report.peak_note}); copy bandwidth {report.copy_bytes_per_s / 1e12:.2f} TB/s "
        "(measured: 1 GiB, read + write)",
        "",
        fmt(header),
        fmt(["-" * w for w in widths]),
        *(fmt(line) for line in lines[1:]),
        "",
        "vs X = X ms / loopopt ms (above 1: loopopt faster); "
        "% floor = roofline floor / loopopt ms;",
        "rel. err = ‖out − ref‖ / ‖ref‖ against float64 (WRONG from 1e-4)",
    ]
    if "MLIR" in anchors:
        out.append("* quoted from ANCHORS.md (upstream MLIR 22 on the H200), not run here")
    return "\n".join(out)


def progress(row: Row) -> str:
    """One line on a finished row (printed while the run goes on)."""
    parts = []
    for t in [row.loopopt, *row.anchors]:
        ms = "error" if t.ms is None else f"{t.ms:.3f} ms"
        parts.append(f"{t.name} {ms}" + (" WRONG" if t.wrong else ""))
    errors = [f"{t.name}: {t.error}" for t in [row.loopopt, *row.anchors] if t.error]
    return ", ".join(parts) + "".join(f"\n  {e}" for e in errors)


def to_json(report: Report) -> dict[str, Any]:
    data = asdict(report)
    for row, entry in zip(report.rows, data["rows"], strict=True):
        entry["floor_share"] = row.floor_share()
        entry["ratios"] = {a.name: row.ratio(a) for a in row.anchors}
    return data


def write_plot(report: Report, path: Path) -> bool:
    """Bars of anchor ms / loopopt ms per workload and anchor; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [row for row in report.rows if row.loopopt.ms is not None]
    bars = [[(a, row.ratio(a)) for a in row.anchors if row.ratio(a) is not None] for row in rows]
    width = 0.8 / max([1, *(len(b) for b in bars)])
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 2), 4.5))
    labelled: set[str] = set()
    for x, row_bars in enumerate(bars):
        for index, (anchor, ratio) in enumerate(row_bars):
            label = f"vs {anchor.name}" + (" (quoted)" if anchor.quoted else "")
            offset = (index - (len(row_bars) - 1) / 2) * width
            drawn = ax.bar(
                x + offset,
                ratio,
                width,
                color=PLOT_COLORS.get(anchor.name, "gray"),
                label=None if label in labelled else label,
            )
            ax.bar_label(drawn, fmt="%.2f", fontsize=7)
            labelled.add(label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    names = [row.workload + (" (WRONG)" if row.loopopt.wrong else "") for row in rows]
    ax.set_xticks(range(len(rows)), names, rotation=45, ha="right")
    ax.set_ylabel("anchor ms / loopopt ms (above 1: loopopt faster)")
    ax.set_title(f"loopopt vs anchors, {report.gpu}, {report.date}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _wall(run: Callable[[], object]) -> float:
    import torch

    torch.cuda.synchronize()
    start = time.perf_counter()
    run()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def _time_loopopt(w: Workload, pipeline: str, inputs: list[Any], ref: Any, repeat: int) -> Timing:
    import torch
    from anchors import rel_error

    timing = Timing("loopopt")
    try:
        kern = loopopt.compile(w.mlir(), w.func, pipeline=pipeline, target="gpu")
        out = torch.full(w.output_shape, w.output_fill, device="cuda")
        kern(*inputs, out)
        timing.rel_error = rel_error(out[w.written], ref)
        warmup, timing.runs = repeats(_wall(lambda: kern(*inputs, out)), repeat)
        timing.ms = kern.time(*inputs, out, warmup=warmup, repeat=timing.runs)
    except Exception as e:
        timing.error = one_line(e)
    return timing


def _time_anchor(name: str, w: Workload, inputs: list[Any], ref: Any, repeat: int) -> Timing:
    import anchors

    quoted = anchors.quoted_ms(name, w)
    if quoted is not None:
        return Timing(name, ms=quoted, quoted=True)
    timing = Timing(name)
    try:
        run = anchors.runner(name, w, inputs)
        timing.rel_error = anchors.rel_error(run(), ref)
        warmup, timing.runs = repeats(_wall(run), repeat)
        timing.ms = anchors.time_ms(run, warmup=warmup, repeat=timing.runs)
    except Exception as e:
        timing.error = one_line(e)
    return timing


def auto_choice(w: Workload) -> str:
    """What `auto-schedule` picks for `w` on this GPU (the key of the model's best candidate)."""
    from loopopt.context import parse_module
    from loopopt.loops.nest import functions
    from loopopt.passes.auto_schedule import choose, resolve_device

    [fn] = functions(parse_module(w.mlir(), w.func), w.func)
    choice = choose(fn, resolve_device("auto"))
    return "auto: " + (choice.ranked[0][0].key() if choice.ranked else "default mapping")


def run_row(
    w: Workload,
    report: Report,
    repeat: int,
    seed: int,
    auto: bool = False,
    variant: tuple[str, str] | None = None,
    anchors_of: Row | None = None,
) -> Row:
    """Check and time loopopt's kernel and the anchors of `w`; `auto`: the pipeline is
    `auto-schedule` alone (the cost model's choice), not the hand schedule of schedules.py;
    `variant`: (name, pipeline) instead of either. `anchors_of`: a row of the same workload
    whose anchor timings are reused (not timed again)."""
    import schedules
    import torch

    compute_s = w.flops / report.peak_flops
    memory_s = w.bytes / report.copy_bytes_per_s
    row = Row(
        workload=w.name,
        schedule="",
        flops=w.flops,
        bytes=w.bytes,
        floor_ms=max(compute_s, memory_s) * 1e3,
        compute_bound=compute_s >= memory_s,
        loopopt=Timing("loopopt"),
    )
    try:
        if variant is not None:
            row.schedule, pipeline = variant
        elif auto:
            row.schedule, pipeline = auto_choice(w), "auto-schedule"
        else:
            row.schedule, pipeline = w.schedule(schedules)
        inputs = [torch.from_numpy(x).cuda() for x in w.inputs(seed)]
        ref = w.reference([x.double() for x in inputs])
    except Exception as e:
        row.loopopt.error = one_line(e)
        return row
    row.loopopt = _time_loopopt(w, pipeline, inputs, ref, repeat)
    if anchors_of is not None:
        row.anchors = anchors_of.anchors
    else:
        row.anchors = [_time_anchor(name, w, inputs, ref, repeat) for name in w.anchors]
    return row


def variant_runs(rows: Sequence[Workload]) -> list[tuple[Workload, tuple[str, str] | None]]:
    """(workload, variant) pairs of --sgemm-variants: each SGEMM row (A·B) once per schedule
    of schedules.sgemm_variants at its sizes."""
    import schedules
    import workloads

    return [
        (w, variant)
        for w in rows
        if w.family == workloads.SGEMM
        for variant in schedules.sgemm_variants(w.sizes).items()
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced set of rows")
    parser.add_argument("--only", nargs="+", default=[], metavar="NAME", help="name substrings")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs (median)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder of JSON and plot")
    parser.add_argument(
        "--schedule",
        choices=("hand", "auto"),
        default="hand",
        help="hand: the pipelines of schedules.py; auto: `auto-schedule` alone (the cost model)",
    )
    parser.add_argument(
        "--sgemm-variants",
        action="store_true",
        help="the SGEMM rows once per schedule of schedules.sgemm_variants (anchors once)",
    )
    args = parser.parse_args(argv)
    rows = workloads(quick=args.quick, only=args.only)
    runs: list[tuple[Workload, tuple[str, str] | None]] = [(w, None) for w in rows]
    if args.sgemm_variants:
        runs = variant_runs(rows)
    if not runs:
        print("no workload matches --only", " ".join(args.only), file=sys.stderr)
        return 2
    import anchors
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: the benchmarks run on the GPU", file=sys.stderr)
        return 2
    anchors.strict_fp32()
    bandwidth = anchors.copy_bandwidth()
    torch.cuda.empty_cache()
    peak, peak_note = anchors.fp32_peak()
    now = datetime.datetime.now().astimezone()
    report = Report(
        torch.cuda.get_device_name(0),
        now.strftime("%Y-%m-%d %H:%M %Z"),
        args.repeat,
        peak,
        peak_note,
        bandwidth,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    kind = "-variants" if args.sgemm_variants else "-auto" if args.schedule == "auto" else ""
    stem = args.out / f"bench{kind}-{now.strftime('%Y%m%d-%H%M%S')}"
    timed: dict[str, Row] = {}  # the first row of each workload: its anchors are reused
    for w, variant in runs:
        label = w.name if variant is None else f"{w.name} [{variant[0]}]"
        print(f"{label} ...", end=" ", file=sys.stderr, flush=True)
        row = run_row(
            w, report, args.repeat, args.seed, args.schedule == "auto", variant, timed.get(w.name)
        )
        if row.anchors:
            timed.setdefault(w.name, row)
        report.rows.append(row)
        print(progress(report.rows[-1]), file=sys.stderr, flush=True)
        # Written after every row: a run cut short keeps the rows it finished.
        stem.with_suffix(".json").write_text(json.dumps(to_json(report), indent=2) + "\n")
        gc.collect()
        torch.cuda.empty_cache()
    print(format_table(report))
    if write_plot(report, stem.with_suffix(".png")):
        print(f"\nwrote {stem}.json and {stem}.png")
    else:
        print(f"\nwrote {stem}.json (matplotlib is not installed: no plot)")
    return 1 if any(row.failed() for row in report.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
