"""Rankings of a nest's candidates, kept per (nest summary by size class, device).

    r = ranking(summarize(fn), device_for("sm_90"))   # r.ranked: [(Schedule, µs)], best first
    r.total                                            # candidates in the nest's space
    r.shortlisted                                      # re-ranked from another size's ranking

Ranking every candidate of a matmul (1,500 of them) takes seconds. What a space offers and how
the candidates compare hardly depend on the sizes once the loops are long: the space reads a
trip count only through which tiles divide it and which tiles are shorter than it, so two
nests that differ only in sizes of the same *size class* (`size_class`: every trip count and
array extent of at least LARGE replaced by its largest power-of-two divisor up to 256; the
function name dropped) have the same candidates. The first nest of a class is ranked in full
(`rank`: exact, memoized per summary); the top SHORTLIST of that ranking are kept for the
class, in the process and in the on-disk cache (cache.py's `rankings` layer, keyed by the
class, the device and `cache.fingerprint()`). Another nest of the class (another size of the
same gemm, a second gemm of the same names; the same nest in another process) predicts only
those again with its own sizes, drops what does not fit, and ranks them; the same nest in the
same process gets its full ranking back.

Not checked: that the best candidate of a size lies within the shortlist of another size of
its class (the model's time grows with the waves of blocks, and near-ties may reorder);
tests/unit/test_rankings.py checks it for the SGEMM sizes of the benchmarks.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pickle
from dataclasses import dataclass

from loopopt import cache
from loopopt.schedule.types import Device, NestSummary, Schedule

SHORTLIST = 64
"""Candidates of a class's first ranking that another nest of the class ranks again."""
LARGE = 2048
"""Trip counts and extents from which only the largest power-of-two divisor (up to
CLASS_DIVISOR) counts. At least 2 x the largest tile (every tile is shorter) and 3 x the
deepest k slice (a cp.async ring fits); SGEMM from 2048³ on has several waves of blocks and
ranks alike (512³ does not: its best schedule is not in 4096³'s shortlist)."""
CLASS_DIVISOR = 256
"""The largest tile of any recipe: divisibility by more does not change the space."""
CLASS_BASE = 1 << 62
"""Size-class values are CLASS_BASE + divisor: never a real size."""
LAYER = "rankings"
"""The on-disk cache layer of the shortlists."""


@dataclass(frozen=True)
class Ranking:
    """Candidates with predicted microseconds, best first."""

    ranked: list[tuple[Schedule, float]]
    total: int
    """Candidates in the nest's space (more than `ranked` holds when shortlisted)."""
    shortlisted: bool = False
    """Only the shortlist of another nest of the size class was ranked."""


@dataclass(frozen=True)
class _Shortlist:
    summary: NestSummary
    """The summary (function name dropped) the full ranking was of."""
    schedules: tuple[Schedule, ...]
    total: int


_classes: dict[tuple[NestSummary, Device], _Shortlist] = {}
_full: dict[tuple[NestSummary, Device], list[tuple[Schedule, float]]] = {}
"""The full ranking of a class's first nest, where this process made it."""


def size_class(summary: NestSummary) -> NestSummary:
    """`summary` without its function name, every trip count and array extent of at least
    LARGE replaced by its class (CLASS_BASE + its largest power-of-two divisor up to
    CLASS_DIVISOR)."""
    loops = tuple(dataclasses.replace(loop, trip=_size(loop.trip)) for loop in summary.loops)
    accesses = tuple(
        dataclasses.replace(a, shape=tuple(_size(n) for n in a.shape)) for a in summary.accesses
    )
    return dataclasses.replace(summary, func="", loops=loops, accesses=accesses)


def _size(n: int) -> int:
    return CLASS_BASE + math.gcd(n, CLASS_DIVISOR) if n >= LARGE else n


def ranking(summary: NestSummary, device: Device) -> Ranking:
    """The nest's candidates by predicted time (see the module docstring)."""
    from loopopt.schedule.cost_model import predict
    from loopopt.schedule.occupancy import misfit

    nest = dataclasses.replace(summary, func="")
    key = (size_class(summary), device)
    kept = _classes.get(key) or _load(key)
    if kept is None:
        full = rank(nest, device)
        kept = _Shortlist(nest, tuple(s for s, _ in full[:SHORTLIST]), len(full))
        _classes[key], _full[key] = kept, full
        _store(key, kept)
        return Ranking(full, len(full))
    if kept.summary == nest and key in _full:
        return Ranking(_full[key], kept.total)
    again = [
        (s, predict(nest, s, device).time_us)
        for s in kept.schedules
        if misfit(nest, s, device) is None
    ]
    again.sort(key=lambda pair: pair[1])
    return Ranking(again, kept.total, shortlisted=True)


@functools.lru_cache(maxsize=256)
def rank(summary: NestSummary, device: Device) -> list[tuple[Schedule, float]]:
    """Every candidate of the summary by predicted time, best first (stable: ties keep the
    space's order); kept per (summary, device) for the process (callers must not change
    the list)."""
    from loopopt.schedule.cost_model import predict
    from loopopt.schedule.space import candidates

    predicted = [(s, predict(summary, s, device).time_us) for s in candidates(summary, device)]
    return sorted(predicted, key=lambda pair: pair[1])


def forget() -> None:
    """Drop the in-process shortlists and rankings (tests; the disk cache stays)."""
    _classes.clear()
    _full.clear()
    rank.cache_clear()


def _disk_key(key: tuple[NestSummary, Device]) -> str:
    return cache.key(LAYER, repr(key[0]), repr(key[1]))


def _load(key: tuple[NestSummary, Device]) -> _Shortlist | None:
    payload = cache.get(LAYER, _disk_key(key))
    if payload is None:
        return None
    try:
        kept = pickle.loads(payload)
    except Exception:  # an entry of another layout: a miss
        return None
    if not isinstance(kept, _Shortlist):
        return None
    _classes[key] = kept
    return kept


def _store(key: tuple[NestSummary, Device], kept: _Shortlist) -> None:
    try:
        payload = pickle.dumps(kept)
    except Exception:  # a pass option that does not pickle: kept in the process only
        return
    cache.put(LAYER, _disk_key(key), payload)
