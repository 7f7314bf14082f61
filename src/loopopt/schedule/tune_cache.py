"""The tuner's on-disk cache: one JSON file per measured candidate, written atomically.

    cache = TuneCache.open(None, text, "sgemm", device="NVIDIA H200", scope=("gpu", check.name))
    cache.get(pipeline)          # a Measurement, or None: not measured yet
    cache.put(measurement)       # as soon as it is taken: an interrupted search resumes here

Layout: DIR/<key>/<sha256 of the pipeline>.json, where <key> hashes the IR text and function
name, the device name, loopopt's version and the `scope` (the timer and the check), and
DIR/<key>/key.json records those. DIR is the `tune` folder of loopopt's cache
(`cache.cache_root()`: `$LOOPOPT_CACHE_DIR`, else ~/.cache/loopopt).
Unreadable or foreign entries count as misses.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import loopopt
from loopopt.cache import cache_root

STATUSES = ("ok", "wrong", "compile-error", "crash", "timeout")


@dataclass(frozen=True)
class Measurement:
    """One candidate's result: `ms` is inf unless `status` is ok; `detail` says why."""

    rank: int
    """Its place in the order the candidates were given (the model's ranking), from 0."""
    key: str
    pipeline: str
    ms: float
    status: str
    detail: str = ""
    cached: bool = False
    """Read from the cache, not measured by this call."""

    @property
    def ok(self) -> bool:
        return self.status == "ok" and math.isfinite(self.ms)


def default_cache_dir() -> Path:
    return cache_root() / "tune"


def _sha256(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class TuneCache:
    """The measurements of one nest on one device (see the module docstring)."""

    def __init__(self, folder: Path, key: dict[str, str]):
        self.folder = folder
        self.key = key

    @classmethod
    def open(
        cls,
        cache_dir: str | Path | None,
        text: str,
        func: str,
        device: str,
        scope: Sequence[str] = (),
    ) -> TuneCache:
        key = {
            "nest": _sha256(text, func),
            "func": func,
            "device": device,
            "loopopt": loopopt.__version__,
            "scope": " / ".join(scope),
        }
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        folder = root / _sha256(*key.values())[:32]
        return cls(folder, key)

    def _path(self, pipeline: str) -> Path:
        return self.folder / f"{_sha256(pipeline)[:32]}.json"

    def get(self, pipeline: str) -> Measurement | None:
        try:
            data = json.loads(self._path(pipeline).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("pipeline") != pipeline:
            return None
        status, ms = data.get("status"), data.get("ms")
        if status not in STATUSES or not (ms is None or isinstance(ms, int | float)):
            return None
        return Measurement(
            rank=-1,
            key=str(data.get("key", "")),
            pipeline=pipeline,
            ms=math.inf if ms is None else float(ms),
            status=status,
            detail=str(data.get("detail", "")),
            cached=True,
        )

    def put(self, m: Measurement) -> None:
        """Write `m` (replacing any earlier entry) so that a reader never sees half of it."""
        entry: dict[str, Any] = {
            "key": m.key,
            "pipeline": m.pipeline,
            "ms": m.ms if math.isfinite(m.ms) else None,
            "status": m.status,
            "detail": m.detail,
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        record = self.folder / "key.json"
        if not record.exists():
            _atomic_write(record, json.dumps(self.key, indent=1))
        _atomic_write(self._path(m.pipeline), json.dumps(entry, indent=1))


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
