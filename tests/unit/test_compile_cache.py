"""The on-disk compile cache (loopopt/cache.py) and progress lines (loopopt/progress.py): a
second compile hits and computes the same; changing the IR, the pipeline, the target or the
architecture misses; corrupt, truncated and foreign entries are misses and are rewritten; off
means nothing read or written; a second process does no compile work; the passes' warnings
are said again on a hit."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

import loopopt
from loopopt import cache, progress
from loopopt.backend.ptx import find_ptxas
from loopopt.runtime import cpu

ROOT = Path(__file__).resolve().parents[2]
MATMUL = (ROOT / "src/loopopt/examples/matmul.mlir").read_text()
TILE = "loop-tile{tile-sizes=8,8}"

RECURRENCE = """func.func @recurrence(%A: memref<10xf32>, %B: memref<10xf32>) {
  affine.for %i = 1 to 9 {
    %a = affine.load %A[%i - 1] : memref<10xf32>
    %b = affine.load %B[%i] : memref<10xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %A[%i] : memref<10xf32>
    %t = affine.load %A[%i] : memref<10xf32>
    affine.store %t, %B[%i + 1] : memref<10xf32>
  } {loopopt.name = "i"}
  return
}
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache folder, and no engine compiled before in this process (cpu._ENGINES)."""
    monkeypatch.setenv("LOOPOPT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("LOOPOPT_CACHE", raising=False)
    monkeypatch.setattr(cpu, "_ENGINES", OrderedDict())
    return tmp_path


def _entries(folder: Path, layer: str) -> list[Path]:
    return sorted(p for p in (folder / layer).glob("*") if not p.name.startswith("."))


def _kernels(before: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """(hits, misses) of the kernels layer since `before`."""
    hits, misses = cache.stats().get("kernels", (0, 0))
    old_hits, old_misses = before.get("kernels", (0, 0))
    return hits - old_hits, misses - old_misses


def _run_matmul(kern: loopopt.api.Compiled) -> np.ndarray:
    rng = np.random.default_rng(7)
    a = rng.random((100, 80), dtype=np.float32)
    b = rng.random((80, 120), dtype=np.float32)
    c = np.zeros((100, 120), np.float32)
    kern(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    return c


def test_second_compile_hits_and_computes_the_same(folder: Path) -> None:
    before = cache.stats()
    first = _run_matmul(loopopt.compile(MATMUL, "matmul", TILE, target="cpu"))
    assert _kernels(before) == (0, 1)
    assert len(_entries(folder, "kernels")) == 1
    assert len(_entries(folder, "objects")) == 1
    second = _run_matmul(loopopt.compile(MATMUL, "matmul", TILE, target="cpu"))
    assert _kernels(before) == (1, 1)
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize(
    "change",
    [
        lambda text, pipe: (text.replace("to 120", "to 119"), pipe),
        lambda text, pipe: (text.replace("%p = arith.mulf", "%p = arith.addf"), pipe),
        lambda text, pipe: (text, "loop-tile{tile-sizes=8,4}"),
        lambda text, pipe: (text, ""),
    ],
    ids=["bounds", "op", "tile-sizes", "no-pipeline"],
)
def test_a_change_of_ir_or_schedule_misses(folder: Path, change) -> None:  # noqa: ANN001
    loopopt.compile(MATMUL, "matmul", TILE, target="cpu")
    text, pipeline = change(MATMUL, TILE)
    before = cache.stats()
    kern = loopopt.compile(text, "matmul", pipeline, target="cpu")
    assert _kernels(before) == (0, 1)
    assert len(_entries(folder, "kernels")) == 2
    reference = loopopt.compile(text, "matmul", pipeline, target="cpu", cache=False)
    rng = np.random.default_rng(1)
    a = rng.random((100, 80), dtype=np.float32)
    b = rng.random((80, 120), dtype=np.float32)
    c, expected = np.zeros((100, 120), np.float32), np.zeros((100, 120), np.float32)
    kern(a, b, c)
    reference(a, b, expected)
    np.testing.assert_array_equal(c, expected)


def test_locations_are_part_of_the_key(folder: Path) -> None:
    """The same nest from another line: its warnings name other locations, so it misses."""
    loopopt.compile(MATMUL, "matmul", TILE, target="cpu")
    before = cache.stats()
    loopopt.compile("\n" + MATMUL, "matmul", TILE, target="cpu")
    assert _kernels(before) == (0, 1)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",
        lambda data: data[: len(data) // 2],
        lambda data: data[:-3] + b"xyz",
        lambda data: b"not a cache entry at all",
        lambda data: data.replace(b"loopopt-cache-1", b"loopopt-cache-0", 1),
    ],
    ids=["empty", "truncated", "flipped-bytes", "foreign", "old-format"],
)
def test_a_corrupt_entry_is_a_miss_and_is_rewritten(folder: Path, damage) -> None:  # noqa: ANN001
    loopopt.compile(MATMUL, "matmul", TILE, target="cpu")
    for layer in ("kernels", "objects"):
        (entry,) = _entries(folder, layer)
        entry.write_bytes(damage(entry.read_bytes()))
    before = cache.stats()
    _run_matmul(loopopt.compile(MATMUL, "matmul", TILE, target="cpu"))
    assert _kernels(before) == (0, 1)
    (entry,) = _entries(folder, "kernels")
    assert cache.get("kernels", entry.name) is not None  # rewritten whole


def test_an_entry_under_another_key_is_never_a_hit(folder: Path) -> None:
    loopopt.compile(MATMUL, "matmul", TILE, target="cpu")
    (entry,) = _entries(folder, "kernels")
    other = cache.key("something else")
    (folder / "kernels" / other).write_bytes(entry.read_bytes())
    assert cache.get("kernels", other) is None


def test_off_reads_and_writes_nothing(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = cache.stats()
    _run_matmul(loopopt.compile(MATMUL, "matmul", TILE, target="cpu", cache=False))
    assert not _entries(folder, "kernels")
    monkeypatch.setenv("LOOPOPT_CACHE", "0")
    _run_matmul(loopopt.compile(MATMUL, "matmul", "loop-tile{tile-sizes=4,4}", target="cpu"))
    assert not _entries(folder, "kernels")
    assert _kernels(before) == (0, 0)


def test_an_unwritable_folder_only_means_no_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("LOOPOPT_CACHE_DIR", str(blocker / "cache"))
    _run_matmul(loopopt.compile(MATMUL, "matmul", TILE, target="cpu"))


def test_warnings_are_said_again_on_a_hit(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = "loop-distribute{loop=i}"
    loopopt.compile(RECURRENCE, "recurrence", pipeline, target="cpu")
    first = capsys.readouterr().err
    assert "warning: loop-distribute: loop i left as it is" in first
    before = cache.stats()
    loopopt.compile(RECURRENCE, "recurrence", pipeline, target="cpu")
    assert _kernels(before) == (1, 0)
    assert capsys.readouterr().err == first


def test_kernel_decorator_caches_and_can_be_told_not_to(folder: Path) -> None:
    def scale(A, s: float):  # noqa: ANN001, ANN202
        for i in range(A.shape[0]):
            A[i] = A[i] * s

    a = np.arange(5, dtype=np.float32)
    loopopt.kernel(scale)(a, 2.0, target="cpu")
    assert len(_entries(folder, "kernels")) == 1
    before = cache.stats()
    loopopt.kernel(scale)(a, 2.0, target="cpu")  # a new Kernel: only the disk knows it
    assert _kernels(before) == (1, 0)
    np.testing.assert_array_equal(a, np.arange(5, dtype=np.float32) * 4)
    loopopt.kernel(scale, cache=False)(a, 3.0, target="cpu")
    assert _kernels(before) == (1, 0)


def test_ptx_is_cached_by_architecture(folder: Path) -> None:
    """target="gpu" compiles without a GPU when the architecture is given: the kernels' PTX
    comes back from the cache for the same arch, and is made again for another."""
    pipeline = "gpu-map-loops{block=16,8}"
    first = loopopt.compile(MATMUL, "matmul", pipeline, target="gpu", arch="sm_90")
    before = cache.stats()
    second = loopopt.compile(MATMUL, "matmul", pipeline, target="gpu", arch="sm_90")
    assert _kernels(before) == (1, 0)
    ptx = [k.ptx for k in first.function.program.kernels.values()]
    assert ptx and ptx == [k.ptx for k in second.function.program.kernels.values()]
    assert ".target sm_90" in ptx[0]
    other = loopopt.compile(MATMUL, "matmul", pipeline, target="gpu", arch="sm_80")
    assert _kernels(before) == (1, 1)
    (other_ptx,) = [k.ptx for k in other.function.program.kernels.values()]
    assert ".target sm_80" in other_ptx
    if find_ptxas() is not None:
        from loopopt.backend.ptx import assemble

        assemble(ptx[0], "sm_90")


def test_a_second_process_does_no_compile_work(tmp_path: Path) -> None:
    """benchmarks/compile_cache.py: the second process hits every layer (exit 0)."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/compile_cache.py"), "--n", "48"]
        + ["--pipeline", "loop-tile{tile-sizes=16,16}", "--cache-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "second process: compile" in out.stdout
    assert "kernels 1 hit/0 miss, objects 1 hit/0 miss" in out.stdout
    assert "the second process did no compile work" in out.stdout


def test_a_slow_phase_says_so_and_a_fast_one_does_not(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPOPT_PROGRESS", "1")  # stderr is captured, not a terminal
    with progress.phase("quick", threshold_s=0.5):
        pass
    assert capsys.readouterr().err == ""
    with progress.phase("slow step", threshold_s=0.05):
        time.sleep(0.3)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "loopopt: slow step ..."
    assert lines[1].startswith("loopopt: slow step done in ") and lines[1].endswith(" s")
    with progress.quiet(), progress.phase("silenced", threshold_s=0.05):
        time.sleep(0.2)
    monkeypatch.setenv("LOOPOPT_PROGRESS", "0")
    with progress.phase("silenced too", threshold_s=0.05):
        time.sleep(0.2)
    assert capsys.readouterr().err == ""
