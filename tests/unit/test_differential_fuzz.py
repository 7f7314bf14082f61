"""The differential fuzzer (tests/fuzz/differential.py): random nests × random loop-pass
pipelines, run by upstream mlir-runner against the untransformed nest. 30 cases here, 3,000
under `slow`; the nests have the promised shapes; the judge catches a wrong transformation, a
crash of the run and IR that mlir-opt rejects."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))

import differential  # noqa: E402
from differential import Verdict, available, fuzz, judge, random_nest, run_batch  # noqa: E402

needs_upstream = pytest.mark.skipif(
    not available(), reason="needs mlir-opt and mlir-runner 22 with the MLIR runner libraries"
)

APPLIED_FLOOR = 0.4
"""The least fraction of cases whose pipeline must apply (about 60% do)."""


def test_the_nests_have_every_promised_shape() -> None:
    features: Counter[str] = Counter()
    for seed in range(300):
        features.update(random_nest(seed).features)
    for shape in (
        "triangular",
        "min-bound",
        "max-bound",
        "step",
        "imperfect",
        "iter_args",
        "affine.if",
        "promote",
        "symbol",
        "multi-result",
        "else",
        "nested-if",
        "select",
        "math",
        "scf.for",
        "layout",
        "f64",
        "i32",
        "i64",
        "affine.parallel",
        "sequence",
    ):
        assert features[shape] >= 10, (shape, features)


def _check(outcomes: Counter[str], cases: int) -> None:
    failed = {k: n for k, n in outcomes.items() if k.startswith("failed")}
    assert not failed, failed
    assert sum(outcomes.values()) == cases
    assert outcomes["applied"] >= APPLIED_FLOOR * cases, outcomes


@needs_upstream
def test_thirty_cases(capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = fuzz(0, 30, batch=30)
    _check(outcomes, 30)
    assert capsys.readouterr().out == ""  # failures are printed


@needs_upstream
@pytest.mark.slow
def test_three_thousand_cases() -> None:
    _check(fuzz(1_000_000, 3000), 3000)


def _applied_case(first_seed: int, has: str = "") -> tuple[differential.Case, str]:
    """The first case from `first_seed` on that applies (and whose output contains `has`)."""
    for seed in range(first_seed, first_seed + 100):
        case = random_nest(seed)
        try:
            after = differential.apply_loopopt(case.text, case.pipeline)
        except Exception:  # noqa: BLE001 (refused)
            continue
        if has in after:
            return case, after
    raise AssertionError("no case applied")


@needs_upstream
def test_the_judge_catches_wrong_results_crashes_and_invalid_ir(tmp_path: Path) -> None:
    good = _applied_case(0)
    case, after = _applied_case(good[0].seed + 1, has="arith.mulf")
    wrong = after.replace("arith.addf", "arith.subf").replace("arith.mulf", "arith.addf")
    assert wrong != after
    invalid = after.replace("affine.store", "affine.stor", 1)
    crash = after.replace(
        "func.func @nest(",
        "func.func private @abort()\nfunc.func @nest(",
    ).replace("func.return", "func.call @abort() : () -> ()\n    func.return", 1)
    for broken, why in ((wrong, "wrong result"), (invalid, "mlir-opt"), (crash, "mlir-runner")):
        verdicts = run_batch([good, (case, broken)], tmp_path)
        assert verdicts[0] == Verdict(good[0].seed, "applied")
        assert verdicts[1].seed == case.seed
        assert verdicts[1].outcome.startswith("failed") and why in verdicts[1].outcome, verdicts


@needs_upstream
def test_refusals_are_counted_not_run(tmp_path: Path) -> None:
    outcomes = Counter(v.outcome for v in judge(list(range(40)), tmp_path))
    assert outcomes["refused"] > 0 and outcomes["applied"] > 0


@needs_upstream
@pytest.mark.slow
def test_loopopt_next_to_upstream_passes(tmp_path: Path) -> None:
    """tests/fuzz/upstream_pairs.py: loopopt's results are right wherever it transforms, and
    it transforms where upstream's safe passes (unroll) do."""
    import upstream_pairs

    counts = upstream_pairs.compare(2_000_000, 20, tmp_path)
    for pair, tally in counts.items():
        assert not any("loopopt's result: failed" in what for what in tally), (pair, tally)
    unroll = counts["loop-unroll{unroll-factor=3}"]
    assert not any("upstream changed, loopopt" in w and "loopopt changed" not in w for w in unroll)
