"""schedule/rankings.py: rankings kept per (summary by size class, device), in the process
and on disk; a shortlist re-ranked with the nest's own sizes."""

from __future__ import annotations

import dataclasses
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopopt import cache
from loopopt.context import parse_module
from loopopt.schedule import rankings
from loopopt.schedule.cost_model import predict
from loopopt.schedule.device import device_for
from loopopt.schedule.rankings import ranking, size_class
from loopopt.schedule.summary import summarize_module
from loopopt.schedule.types import NestSummary

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402

SM90 = device_for("sm_90")


def _gemm(m: int, n: int, k: int) -> NestSummary:
    return summarize_module(parse_module(workloads.sgemm_mlir((m, n, k))))


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Empty in-process tables; sizes from 128 up count by class (small nests rank faster)."""
    monkeypatch.setattr(rankings, "LARGE", 128)
    rankings.forget()
    yield
    rankings.forget()


def test_size_class() -> None:
    big, bigger, odd = _gemm(2048, 2048, 2048), _gemm(4096, 8192, 4096), _gemm(3000, 2048, 2048)
    assert size_class(big) == size_class(bigger)
    assert size_class(big) != size_class(odd)  # 3000: tiles of 8 divide it, not of 32
    assert size_class(_gemm(1024, 2048, 2048)) != size_class(big)  # below LARGE: exact
    assert size_class(big).func == "" and big.func != ""
    small = _gemm(64, 48, 32)
    assert [loop.trip for loop in size_class(small).loops] == [64, 48, 32]
    shapes = {a.shape for a in size_class(big).accesses}
    assert shapes == {(rankings.CLASS_BASE + 256,) * 2}


def test_another_size_reranks_the_shortlist(fresh: None) -> None:
    first, other = _gemm(128, 128, 128), _gemm(384, 384, 384)  # one class with LARGE = 128
    assert size_class(first) == size_class(other)
    full = ranking(first, SM90)
    assert not full.shortlisted and full.total == len(full.ranked) > rankings.SHORTLIST
    again = ranking(first, SM90)  # the same nest: its exact ranking
    assert not again.shortlisted and again.ranked == full.ranked
    short = ranking(other, SM90)
    assert short.shortlisted and short.total == full.total
    assert 0 < len(short.ranked) <= rankings.SHORTLIST
    nest = dataclasses.replace(other, func="")
    times = [t for _, t in short.ranked]
    assert times == sorted(times)
    assert all(predict(nest, s, SM90).time_us == t for s, t in short.ranked)
    assert short.ranked[0][0] == rankings.rank(nest, SM90)[0][0]  # the same choice


def test_shortlists_persist_on_disk(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPOPT_CACHE", "1")
    monkeypatch.setenv("LOOPOPT_CACHE_DIR", str(tmp_path))
    full = ranking(_gemm(128, 128, 128), SM90)
    (entry,) = (tmp_path / rankings.LAYER).iterdir()
    rankings.forget()  # another process: only the disk holds the shortlist
    hits = cache.stats().get(rankings.LAYER, (0, 0))[0]
    short = ranking(_gemm(384, 384, 384), SM90)
    assert short.shortlisted and cache.stats()[rankings.LAYER][0] == hits + 1
    rankings.forget()
    same = ranking(_gemm(128, 128, 128), SM90)  # the same nest: its shortlist, in order
    assert same.shortlisted and same.ranked == full.ranked[: len(same.ranked)]
    _, _, payload = entry.read_bytes().partition(b"\n")
    assert "_hash" not in pickle.loads(payload).summary.__dict__  # hashes differ per process
    entry.write_bytes(b"garbage")  # a corrupt entry is a miss, never an error
    rankings.forget()
    assert not ranking(_gemm(384, 384, 384), SM90).shortlisted


@pytest.mark.slow
@pytest.mark.parametrize("first", [4096, 2048])
def test_sgemm_sizes_keep_their_choice(first: int) -> None:
    """The benchmarks' SGEMM sizes of one class choose from the shortlist what the full
    ranking chooses."""
    rankings.forget()
    ranking(_gemm(first, first, first), SM90)
    for n in (1024, 2048, 4096, 8192):
        nest = _gemm(n, n, n)
        short = ranking(nest, SM90)
        exact = rankings.rank(dataclasses.replace(nest, func=""), SM90)
        assert short.ranked[0][0] == exact[0][0], n
    rankings.forget()
