"""Every pass file is registered under its own CLI name and has a FileCheck test."""

from __future__ import annotations

from pathlib import Path

import loopopt.passes
from loopopt.universe import LOOPOPT_UNIVERSE, PASSES, all_passes

PASS_DIR = Path(loopopt.passes.__file__).parent
FILECHECK_DIR = Path(__file__).parents[1] / "filecheck" / "passes"
NOT_PASSES = {"__init__"}


def _pass_files() -> list[str]:
    files = sorted(p.stem for p in PASS_DIR.glob("*.py") if p.stem not in NOT_PASSES)
    assert len(files) >= 10, f"only {files} in {PASS_DIR}"  # the loops below check each one
    return files


def test_every_pass_file_is_registered_under_its_name() -> None:
    registered = {module: name for name, (module, _) in PASSES.items()}
    for stem in _pass_files():
        assert stem in registered, f"passes/{stem}.py is not in universe.PASSES"
        assert registered[stem] == stem.replace("_", "-")


def test_every_registered_pass_loads_with_its_name() -> None:
    passes = all_passes()
    assert set(passes) == set(PASSES) == {stem.replace("_", "-") for stem in _pass_files()}
    for name, load in passes.items():
        cls = load()
        assert cls.name == name
        assert (cls.__doc__ or "").strip(), f"{name} has no one-line help"


def test_every_pass_has_a_filecheck_test() -> None:
    for stem in _pass_files():
        assert (FILECHECK_DIR / f"{stem.replace('_', '-')}.mlir").exists()


def test_xdsl_universe_entry_point() -> None:
    from xdsl.universe import Universe

    multiverse = Universe.get_multiverse()
    assert set(PASSES) <= set(multiverse.all_passes)
    assert set(LOOPOPT_UNIVERSE.all_passes) == set(PASSES)
