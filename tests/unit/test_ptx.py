"""PTX from llvmlite's NVPTX target (no GPU needed); assembled by ptxas where one is found."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from equivalence import transform
from gpu_kernels import ALL, MATH, MATMUL, REVERSE_CHUNKS, TRANSPOSE, VADD, WARP_SUM
from kernels import matmul

from loopopt.backend.libdevice import find_libdevice
from loopopt.backend.ptx import (
    ARCHS,
    arch_info,
    assemble,
    find_ptxas,
    gpu_module_to_llvm_ir,
    gpu_modules,
    module_to_ptx,
)
from loopopt.context import make_context, parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.target import register_cap

PTXAS = find_ptxas()
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not found")


def _ptx(text: str, arch: str = "sm_90") -> str:
    return module_to_ptx(parse_module(text, "<test>", make_context()), arch)


@pytest.mark.parametrize(
    ("arch", "version"), [("sm_80", "7.0"), ("sm_89", "7.8"), ("sm_90", "7.8")]
)
def test_ptx_isa_matches_the_architecture(arch: str, version: str) -> None:
    ptx = _ptx(VADD, arch)
    assert f".version {version}\n" in ptx
    assert f".target {arch}\n" in ptx
    assert ".address_size 64" in ptx


def test_kernel_is_an_entry_with_pointer_and_size_params() -> None:
    ptx = _ptx(VADD)
    entry = re.search(r"\.visible \.entry vadd_k0\((.*?)\)", ptx, re.S)
    assert entry is not None
    params = [p.strip() for p in entry.group(1).split(",")]
    assert params[0] == ".param .u64 .ptr .align 1 vadd_k0_param_0"
    assert params[1] == ".param .u64 vadd_k0_param_1"  # the dynamic size of A
    assert len(params) == 7  # 3 × (pointer + size) + n
    assert "ld.global" in ptx and "st.global" in ptx


def test_kernels_get_the_ptx_kernel_calling_convention() -> None:
    gmod = gpu_modules(parse_module(MATMUL, "<test>", make_context()))[0]
    from loopopt.lowering.gpu_to_nvvm import lower_gpu_module

    lower_gpu_module(gmod)
    llvm_ir = gpu_module_to_llvm_ir(gmod)
    assert 'define ptx_kernel void @"matmul_k0"' in llvm_ir
    assert 'target triple = "nvptx64-nvidia-cuda"' in llvm_ir


def test_shared_memory_is_static_below_48kb() -> None:
    ptx = _ptx(TRANSPOSE)
    assert ".shared .align 16 .b8 __shm_transpose_k0_0[4224];" in ptx
    assert re.search(r"bar\.sync\s+0;", ptx)
    assert "st.shared.b32" in ptx and "ld.shared.b32" in ptx


def test_shared_memory_above_48kb_is_dynamic() -> None:
    ptx = _ptx(REVERSE_CHUNKS)
    assert ".extern .shared .align 16 .b8 __loopopt_dynamic_shmem[];" in ptx
    assert "st.shared.b32" in ptx


def test_shared_memory_over_the_architecture_limit_is_an_error() -> None:
    big = REVERSE_CHUNKS.replace("16384", "28672")  # 112 KB: fits sm_90 and sm_80, not sm_89
    assert "__loopopt_dynamic_shmem" in _ptx(big, "sm_80")
    with pytest.raises(LoopoptError, match="needs 114688 bytes of shared memory; sm_89 allows"):
        _ptx(big, "sm_89")


def test_warp_shuffles() -> None:
    ptx = _ptx(WARP_SUM)
    assert len(re.findall(r"shfl\.sync\.bfly\.b32", ptx)) == 5
    assert "%laneid" in ptx


def test_math_comes_from_libdevice() -> None:
    if find_libdevice() is None:
        with pytest.raises(LoopoptError, match="__nv_expf.* need CUDA's libdevice"):
            _ptx(MATH)
        return
    ptx = _ptx(MATH)
    assert "call" not in ptx and ".extern" not in ptx  # linked and inlined
    assert "sin.approx" not in ptx  # libdevice's accurate sinf, not the fast approximation


def _with_kernel_body(body: str) -> str:
    return VADD.replace("        %c = arith.addf %a, %b : f32\n", body)


def test_what_the_backend_cannot_compile_is_a_diagnostic() -> None:
    powi = "        %k = arith.constant 3 : i32\n        %c = math.fpowi %a, %k : f32, i32\n"
    with pytest.raises(LoopoptError, match="cannot compile 'llvm.powi.f32.i32' for the GPU"):
        _ptx(_with_kernel_body(powi))
    text = _with_kernel_body("        %c = func.call @helper(%a) : (f32) -> f32\n").replace(
        '    "gpu.func"()', '    func.func private @helper(f32) -> f32\n    "gpu.func"()', 1
    )
    with pytest.raises(LoopoptError, match="kernels cannot call the host function 'helper'"):
        _ptx(text)


def test_unknown_architecture_and_missing_kernels_are_errors() -> None:
    with pytest.raises(LoopoptError, match="unknown GPU architecture 'sm_70'"):
        arch_info("sm_70")
    with pytest.raises(LoopoptError, match="no gpu.module to compile to PTX"):
        _ptx("func.func @f() {\n  return\n}\n")


def test_emit_ptx_from_the_command_line(tmp_path: Path) -> None:
    source = tmp_path / "vadd.mlir"
    source.write_text(VADD)
    out = tmp_path / "vadd.ptx"
    command = [sys.executable, "-m", "loopopt.tools.loopopt_opt", str(source)]
    proc = subprocess.run(
        [*command, "--emit", "ptx", "--gpu-arch", "sm_80", "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert ".target sm_80" in out.read_text()
    proc = subprocess.run(
        [*command, "--emit", "ptx", "--gpu-arch", "sm_75"], capture_output=True, text=True
    )
    assert proc.returncode != 0 and "sm_75" in proc.stderr


@needs_ptxas
@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_ptxas_assembles(name: str, arch: str) -> None:
    if name == "math" and find_libdevice() is None:
        pytest.skip("libdevice not found")
    report = assemble(_ptx(ALL[name], arch), arch, PTXAS)
    assert f"for '{arch}'" in report
    spills = re.findall(r"(\d+) bytes spill stores", report)
    assert spills and all(s == "0" for s in spills)


@needs_ptxas
def test_ptxas_errors_are_diagnostics() -> None:
    with pytest.raises(LoopoptError, match="ptxas failed"):
        assemble(".version 7.8\n.target sm_90\n.address_size 64\nbogus;\n", "sm_90", PTXAS)


def test_two_shared_buffers_of_different_sizes_lower_to_ptx() -> None:
    """Each shared buffer has its own array type; the generic-pointer intrinsic is shared."""
    text, _, _ = matmul(100, 90, 70, np.random.default_rng(0))
    pipeline = (
        "loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},"
        "gpu-map-loops,loopopt-lower-gpu-to-nvvm"
    )
    ptx = module_to_ptx(parse_module(transform(text, pipeline), "<test>", make_context()))
    assert ptx.count(".shared .align 16 .b8") == 2
    assert "ld.shared" in ptx and "st.shared" in ptx


@pytest.mark.parametrize(
    ("threads", "min_blocks", "cap"),
    [(256, 0, 255), (256, 1, 255), (512, 0, 128), (256, 2, 128), (96, 3, 224), (1024, 0, 64)],
)
def test_register_cap_lets_the_blocks_fit_the_register_file(
    threads: int, min_blocks: int, cap: int
) -> None:
    """`.maxnreg`: 64 K registers per SM, whole warps, multiples of 8, at most 255."""
    assert register_cap(threads, min_blocks) == cap
    assert cap * 32 * -(-threads // 32) * max(1, min_blocks) <= 64 * 1024
