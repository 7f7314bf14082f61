"""The on-disk cache of compiled kernels: a second process compiling the same kernel does no
compile work.

    LOOPOPT_CACHE_DIR=/tmp/lc python my_program.py    # where (default ~/.cache/loopopt)
    LOOPOPT_CACHE=0 python my_program.py              # off (also compile(cache=False),
                                                      # @kernel(cache=False), --no-cache)
    loopopt.cache.stats()                             # {'kernels': (hits, misses), ...}

Two layers, each keyed by everything its result depends on, hashed (sha256):
- `kernels` (api.compile): the input IR text with its locations, the function, the pipeline,
  the target, the GPU architecture and device, `fingerprint()`; holds what the pass pipeline
  (auto-schedule's search) and, for the GPU, the kernels' NVVM lowering and PTX produced, with
  what the passes wrote to stderr (warnings, `explain`), which a hit writes again;
- `objects` (runtime/cpu.py): the LLVM IR of a host module, the host CPU and its features;
  holds the machine code MCJIT made of it (the O3 pipeline and code generation are skipped).

`fingerprint()` hashes loopopt's own source files (an edited checkout is a new compiler) and
the versions of xDSL, llvmlite (and its LLVM), islpy and numpy. An entry is one file,
DIR/<layer>/<key>, written to a temporary file and renamed into place (readers never see half
of one); its first line repeats the key and the payload's sha256, so a truncated, corrupt or
foreign file is a miss (and is rewritten), never a wrong hit. Only successful compiles are
stored. Failing to write (a read-only disk) is not an error: the compile just is not cached.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any, TextIO

FORMAT = b"loopopt-cache-1"
"""The first word of every entry; a new layout changes it."""

_disabled: ContextVar[bool] = ContextVar("loopopt_cache_disabled", default=False)
_hits: Counter[str] = Counter()
_misses: Counter[str] = Counter()


def cache_root() -> Path:
    """$LOOPOPT_CACHE_DIR, else $XDG_CACHE_HOME/loopopt, else ~/.cache/loopopt."""
    explicit = os.environ.get("LOOPOPT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "loopopt"


def enabled() -> bool:
    """Off with LOOPOPT_CACHE=0 (or false, no, off) and inside `disabled()`."""
    setting = os.environ.get("LOOPOPT_CACHE", "1").strip().lower()
    return setting not in ("0", "false", "no", "off") and not _disabled.get()


@contextmanager
def disabled(off: bool = True) -> Iterator[None]:
    """Within the block (when `off`), nothing is read from or written to the cache."""
    token = _disabled.set(off or _disabled.get())
    try:
        yield
    finally:
        _disabled.reset(token)


@cache
def fingerprint() -> str:
    """What else a cached result depends on: loopopt's sources and its dependencies' versions."""
    from importlib import metadata

    import llvmlite.binding as llvm

    digest = hashlib.sha256()
    package = Path(__file__).parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".mlir") and path.is_file():
            digest.update(str(path.relative_to(package)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    for dist in ("xdsl", "llvmlite", "islpy", "numpy"):
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            version = "none"
        digest.update(f"{dist}={version}\0".encode())
    digest.update(f"llvm={llvm.llvm_version_info}\0".encode())
    return digest.hexdigest()


def key(*parts: str) -> str:
    """The key of a result that depends on `parts` (and on `fingerprint()`)."""
    digest = hashlib.sha256(fingerprint().encode())
    for part in parts:
        encoded = part.encode()
        digest.update(len(encoded).to_bytes(8, "little") + encoded)
    return digest.hexdigest()


def _path(layer: str, entry_key: str) -> Path:
    return cache_root() / layer / entry_key


def get(layer: str, entry_key: str) -> bytes | None:
    """The payload stored under `entry_key`, or None (off, missing, corrupt or foreign)."""
    if not enabled():
        return None
    try:
        data = _path(layer, entry_key).read_bytes()
    except OSError:
        data = b""
    header, _, payload = data.partition(b"\n")
    expected = b" ".join((FORMAT, entry_key.encode(), hashlib.sha256(payload).hexdigest().encode()))
    if not data or header != expected:
        _misses[layer] += 1
        return None
    _hits[layer] += 1
    return payload


def put(layer: str, entry_key: str, payload: bytes) -> None:
    """Store `payload` under `entry_key` atomically (replacing a corrupt entry); nothing when
    the cache is off or cannot be written."""
    if not enabled():
        return
    path = _path(layer, entry_key)
    header = b" ".join((FORMAT, entry_key.encode(), hashlib.sha256(payload).hexdigest().encode()))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header + b"\n" + payload)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def stats() -> dict[str, tuple[int, int]]:
    """(hits, misses) of each layer in this process."""
    return {layer: (_hits[layer], _misses[layer]) for layer in sorted({*_hits, *_misses})}


class StderrRecorder:
    """sys.stderr while a compile runs: writes go through and are kept, so that a cache hit
    can write them again (`replay`). Progress lines (progress.py) bypass it (`inner`)."""

    def __init__(self, inner: TextIO):
        self.inner = inner
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.inner.write(text)

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextmanager
def recording_stderr() -> Iterator[StderrRecorder]:
    """Record what is written to sys.stderr within the block."""
    recorder = StderrRecorder(sys.stderr)
    sys.stderr = recorder
    try:
        yield recorder
    finally:
        sys.stderr = recorder.inner
