"""The examples/ scripts run on the CPU (at tiny sizes here) and pass their numpy checks; on a
device (tests marked `gpu`), at medium sizes."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SIZES = {
    "matmul": 24,
    "atb": 24,
    "conv2d": 20,
    "conv3d": 4,
    "jacobi2d": 20,
    "nbody": 40,
    "reduction": 256 * 8,
}


DEVICE_SIZES = {
    "matmul": 512,
    "atb": 512,
    "conv2d": 1024,
    "conv3d": 32,
    "jacobi2d": 512,
    "nbody": 4096,
    "reduction": 1 << 20,
}


def _run(name: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        common = importlib.import_module("common")
        example = importlib.import_module(name)
    finally:
        sys.path.remove(str(EXAMPLES))
    assert common.main(example.run, name, argv) == 0
    out = capsys.readouterr().out
    assert "matches numpy" in out and "DIFFERS" not in out


@pytest.mark.parametrize("name", list(SIZES))
def test_example_runs_and_checks_itself(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    _run(name, ["--target", "cpu", "--size", str(SIZES[name]), "--repeat", "1"], capsys)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(DEVICE_SIZES))
def test_example_on_the_device(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    _run(name, ["--target", "gpu", "--size", str(DEVICE_SIZES[name])], capsys)


def test_every_example_is_tested() -> None:
    scripts = {p.stem for p in EXAMPLES.glob("*.py")} - {"common"}
    assert scripts == set(SIZES)
