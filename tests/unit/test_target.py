"""loopopt/target.py: the GPU's limits are defined there once, and every layer reads them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import loopopt
from loopopt import target
from loopopt.diagnostics import LoopoptError
from loopopt.schedule import registers
from loopopt.schedule.device import DEVICES
from loopopt.schedule.types import Schedule

PACKAGE = Path(loopopt.__file__).parent
FACTS = {
    name
    for name, value in vars(target).items()
    if name.isupper() and isinstance(value, int | tuple) and name != "KIB"
}
COPIED_LITERALS = re.compile(r"\b(227|163|99|48) \* (1024|KIB)\b")


def _sources() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if p.name != "target.py"]


def _assigned_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for t in targets:
            for leaf in ast.walk(t):
                if isinstance(leaf, ast.Name):
                    names.add(leaf.id)
    return names


def test_no_module_defines_a_target_fact_again() -> None:
    """A module-level assignment of one of target.py's names elsewhere is a second copy."""
    copies = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in _sources()
        for name in sorted(_assigned_names(ast.parse(path.read_text())) & FACTS)
    ]
    assert copies == []


def test_no_module_spells_a_shared_memory_limit() -> None:
    """The per-block shared-memory limits (227, 163, 99 and 48 KiB) appear in target.py only."""
    found = [
        f"{path.relative_to(PACKAGE)}: {m.group(0)}"
        for path in _sources()
        for m in COPIED_LITERALS.finditer(path.read_text())
    ]
    assert found == []


@pytest.mark.parametrize("name", sorted(DEVICES))
def test_device_tables_agree_with_the_target(name: str) -> None:
    device = DEVICES[name]
    assert device.smem_per_block_optin == target.arch(device.arch).max_shared_bytes
    assert device.smem_per_block == target.STATIC_SHARED_BYTES
    assert device.max_threads_per_block == target.THREADS_PER_BLOCK
    assert device.warp_size == target.WARP_SIZE


@pytest.mark.parametrize(
    ("threads", "min_blocks"), [(64, 0), (96, 3), (256, 1), (256, 2), (384, 2), (1024, 0)]
)
def test_the_model_and_gpu_map_loops_cap_registers_alike(threads: int, min_blocks: int) -> None:
    """The cap the model assumes is the `.maxnreg` gpu-map-loops{max-registers=cap} sets."""
    schedule = Schedule(
        recipe="map",
        params=(),
        pipeline="",
        block_tile=(),
        thread_tile=(),
        threads=(threads, 1, 1),
        x_loop="i",
        min_blocks=min_blocks,
    )
    assert registers.register_cap(schedule, DEVICES["H200"]) == target.register_cap(
        threads, min_blocks
    )


def test_unknown_architecture_is_a_diagnostic() -> None:
    with pytest.raises(LoopoptError, match="unknown GPU architecture 'sm_70'"):
        target.arch("sm_70")
