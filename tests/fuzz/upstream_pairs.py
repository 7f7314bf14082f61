"""loopopt's loop passes next to upstream MLIR's passes of the same meaning, on the
differential fuzzer's nests.

    python tests/fuzz/upstream_pairs.py --cases 200 [--seed 0]

For each pair (`loop-tile{tile-sizes=2,3}` and `affine-loop-tile{tile-sizes=2,3}`, …) and each
nest of `differential.random_nest` (its pipeline is not used), loopopt applies its pass
in-process and mlir-opt 22 its own (`func.func(...)`). Each side's output, where it changed the
nest, is run by mlir-runner against the untransformed nest (`differential.run_batch`). Printed
per pair: how often each side changed the nest, left it as it was or refused it, the cases
where upstream transforms and loopopt does not (with loopopt's reason), and every result that
differs from the original's, on either side. Upstream's affine-loop-tile and
affine-loop-unroll-jam do not check dependences: their wrong results are upstream's, and the
cases loopopt refuses with a dependence are among them.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import differential
from differential import Case, apply_traced, random_nest, run_batch

PAIRS = (
    ("loop-tile{tile-sizes=2,3}", "affine-loop-tile{tile-sizes=2,3}"),
    ("loop-unroll{unroll-factor=3}", "affine-loop-unroll{unroll-factor=3}"),
    ("loop-unroll{unroll-full}", "affine-loop-unroll{unroll-factor=-1}"),
    ("loop-unroll-jam{unroll-jam-factor=2}", "affine-loop-unroll-jam{unroll-jam-factor=2}"),
    ("loop-fuse", "affine-loop-fusion"),
)
"""(loopopt's pass, upstream's pass) of the same meaning."""


def upstream(text: str, pipeline: str, workdir: Path) -> tuple[str, str | None]:
    """(`changed`, `unchanged` or `refused`, mlir-opt's output when changed)."""
    assert differential.MLIR_OPT is not None
    source = workdir / "pair.mlir"
    source.write_text(text)

    def opt(*args: str) -> subprocess.CompletedProcess[str]:
        command = [differential.MLIR_OPT, str(source), "--mlir-print-local-scope", *args]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    after = opt(f"--pass-pipeline=builtin.module(func.func({pipeline}))")
    if after.returncode != 0:
        return "refused", None
    if after.stdout == opt().stdout:
        return "unchanged", None
    return "changed", re.sub(r"^module \{", "builtin.module {", after.stdout.strip())


def compare(first_seed: int, cases: int, workdir: Path) -> dict[str, Counter[str]]:
    from loopopt.diagnostics import LoopoptError

    counts: dict[str, Counter[str]] = {}
    for ours, theirs in PAIRS:
        tally: Counter[str] = Counter()
        judged: dict[str, list[tuple[Case, str]]] = {"loopopt": [], "upstream": []}
        for seed in range(first_seed, first_seed + cases):
            case = random_nest(seed)
            their_state, their_text = upstream(case.text, theirs, workdir)
            try:
                our_text, unchanged = apply_traced(case.text, ours)
                our_state, why = ("unchanged" if unchanged else "changed"), ""
            except LoopoptError as e:
                our_state, why = "refused", e.message
            tally[f"upstream {their_state}, loopopt {our_state}"] += 1
            if their_state == "changed" and our_state != "changed":
                print(f"{ours}: seed {seed}: upstream transforms, loopopt {our_state} {why}")
            if our_state == "changed":
                judged["loopopt"].append((case, our_text))
            if their_text is not None:
                judged["upstream"].append((case, their_text))
        for side, applied in judged.items():
            for start in range(0, len(applied), 25):
                for verdict in run_batch(applied[start : start + 25], workdir):
                    tally[f"{side}'s result: {verdict.outcome}"] += 1
                    if verdict.outcome != "applied":
                        print(f"{ours}: seed {verdict.seed}: {side} {verdict.outcome}")
        counts[ours] = tally
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    args = parser.parse_args()
    if not differential.available():
        print("needs mlir-opt and mlir-runner 22 (and the MLIR runner libraries)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="loopopt-pairs-") as tmp:
        counts = compare(args.seed, args.cases, Path(tmp))
    for ours, tally in counts.items():
        print(ours)
        for what, n in sorted(tally.items()):
            print(f"  {n:5d} {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
