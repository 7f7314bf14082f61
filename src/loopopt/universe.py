"""loopopt's passes for xDSL's plugin registry (entry point `xdsl.universe`), loaded lazily.

`PASSES` maps each CLI name to (module, class); a unit test checks that every file in passes/
is listed here under its own name.

Importing this module (xdsl-opt does, to find plugins) puts loopopt's syntax for xDSL's gpu,
affine and llvm ops into xDSL's own dialects (`loopopt.dialects.extend`): those names stay
xDSL's, so the plugin lists only the dialects xDSL lacks, and plain `xdsl-opt` reads what
loopopt prints.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe

from loopopt.dialects import affine_ext, gpu_ext, llvm_ext

SYNTAX_MODULES = (affine_ext, gpu_ext, llvm_ext)
"""Imported for their effect: each extends one of xDSL's dialects in place."""

PASSES: dict[str, tuple[str, str]] = {
    "loop-name": ("loop_name", "LoopNamePass"),
    "raise-scf-to-affine": ("raise_scf_to_affine", "RaiseScfToAffinePass"),
    "loop-tile": ("loop_tile", "LoopTilePass"),
    "loop-strip-mine": ("loop_strip_mine", "LoopStripMinePass"),
    "loop-unroll": ("loop_unroll", "LoopUnrollPass"),
    "loop-unroll-jam": ("loop_unroll_jam", "LoopUnrollJamPass"),
    "loop-interchange": ("loop_interchange", "LoopInterchangePass"),
    "loop-peel": ("loop_peel", "LoopPeelPass"),
    "loop-skew": ("loop_skew", "LoopSkewPass"),
    "loop-distribute": ("loop_distribute", "LoopDistributePass"),
    "loop-fuse": ("loop_fuse", "LoopFusePass"),
    "loop-reschedule": ("loop_reschedule", "LoopReschedulePass"),
    "array-expand": ("array_expand", "ArrayExpandPass"),
    "array-snapshot": ("array_snapshot", "ArraySnapshotPass"),
    "hoist-invariants": ("hoist_invariants", "HoistInvariantsPass"),
    "reduction-to-memory": ("reduction_to_memory", "ReductionToMemoryPass"),
    "pad-tiles": ("pad_tiles", "PadTilesPass"),
    "gpu-mma": ("gpu_mma", "GpuMmaPass"),
    "loop-mark-parallel": ("loop_mark_parallel", "LoopMarkParallelPass"),
    "promote": ("promote", "PromotePass"),
    "pipeline-copies": ("pipeline_copies", "PipelineCopiesPass"),
    "scalar-replace": ("scalar_replace", "ScalarReplacePass"),
    "version-guards": ("version_guards", "VersionGuardsPass"),
    "loopopt-lower-to-llvm": ("loopopt_lower_to_llvm", "LoopoptLowerToLLVMPass"),
    "gpu-map-loops": ("gpu_map_loops", "GpuMapLoopsPass"),
    "gpu-constant-memory": ("gpu_constant_memory", "GpuConstantMemoryPass"),
    "auto-schedule": ("auto_schedule", "AutoSchedulePass"),
    "loopopt-lower-gpu-to-nvvm": ("loopopt_lower_gpu_to_nvvm", "LoopoptLowerGpuToNvvmPass"),
}

DIALECTS: dict[str, tuple[str, str]] = {
    "nvvm": ("nvvm", "NVVM"),
    "nvgpu": ("nvgpu", "NVGPU"),
    "loopopt": ("layout", "LAYOUT"),
}


def _loader(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(f"loopopt.passes.{module}"), cls)

    return load


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> loader."""
    return {name: _loader(module, cls) for name, (module, cls) in PASSES.items()}


def all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Dialect name -> loader, for loopopt's own dialects (those xDSL lacks)."""
    return {name: _dialect_loader(module, attr) for name, (module, attr) in DIALECTS.items()}


def _dialect_loader(module: str, attr: str) -> Callable[[], Dialect]:
    def load() -> Dialect:
        return getattr(importlib.import_module(f"loopopt.dialects.{module}"), attr)

    return load


LOOPOPT_UNIVERSE = Universe(all_passes=all_passes(), all_dialects=all_dialects())
