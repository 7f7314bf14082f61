"""Kernels (a gpu.module in the llvm + nvvm dialects) → LLVM IR → PTX with llvmlite's NVPTX target.

Before:  gpu.module @kernels { llvm.func @k(%A: !llvm.ptr) attributes {nvvm.kernel} { ... } }
After:   .version 7.8
         .target sm_90
         .visible .entry k(.param .u64 .ptr .align 1 k_param_0) { ... }

nvvm ops become intrinsic calls, kernels get the ptx_kernel calling convention (xDSL's
translation drops calling conventions) and `noalias` pointer parameters (distinct arrays do
not overlap: loopopt's dependence analysis assumes it too), shared-memory globals an undef
initializer, and the module is optimized at O3 for the target before PTX is emitted; math
functions come from libdevice (backend/libdevice.py). The PTX ISA version is the lowest one
that supports the architecture. `find_ptxas`/`assemble` check PTX with NVIDIA's assembler where
one is installed (PATH, or the nvidia-cuda-nvcc wheel).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tempfile
from pathlib import Path

import llvmlite.binding as llvm
import llvmlite.ir as ir
from xdsl.dialects import gpu
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp

from loopopt.backend.libdevice import check_supported, link_libdevice, use_libdevice
from loopopt.backend.llvm_ir import module_to_llvmlite
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import (
    MAX_REGISTERS_ATTR,
    MIN_BLOCKS_ATTR,
    POINTER_ALIGN_ATTR,
    SHARED_BYTES_ATTR,
)
from loopopt.lowering.gpu_to_nvvm import KERNEL_ATTR, MAX_THREADS_ATTR, lower_gpu_to_nvvm
from loopopt.lowering.nvvm_to_llvm import lower_nvvm_to_llvm
from loopopt.target import ARCHS as ARCHS  # re-exported: the backend's architectures
from loopopt.target import DEFAULT_ARCH, SHARED_ALIGN, SHARED_SPACE, Arch
from loopopt.target import arch as arch_info

TRIPLE = "nvptx64-nvidia-cuda"


def _target_machine(arch: Arch) -> llvm.TargetMachine:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(TRIPLE)
    features = "+ptx" + arch.ptx_isa.replace(".", "")
    return target.create_target_machine(cpu=arch.name, features=features, opt=3)


def gpu_modules(module: ModuleOp) -> list[gpu.ModuleOp]:
    return [op for op in module.ops if isinstance(op, gpu.ModuleOp)]


def module_to_ptx(module: ModuleOp, arch: str = DEFAULT_ARCH) -> str:
    """PTX of every gpu.module of `module` (kernels still in the gpu dialect are lowered first,
    in place)."""
    lower_gpu_to_nvvm(module)
    gmods = gpu_modules(module)
    if not gmods:
        raise LoopoptError("no gpu.module to compile to PTX; map loops onto the GPU first")
    return "\n".join(gpu_module_to_ptx(gmod, arch) for gmod in gmods)


def gpu_module_to_llvm_ir(gmod: gpu.ModuleOp, arch: str = DEFAULT_ARCH) -> str:
    """The (unoptimized) LLVM IR of a lowered gpu.module, for the NVPTX target."""
    info = arch_info(arch)
    return _llvm_ir(gmod, info, _target_machine(info))[0]


def _llvm_ir(gmod: gpu.ModuleOp, info: Arch, machine: llvm.TargetMachine) -> tuple[str, set[str]]:
    """LLVM IR text of the kernels, and the libdevice functions it calls."""
    staging = ModuleOp([op.clone() for op in gmod.body.block.ops])
    for op in staging.ops:
        if op.name.startswith("gpu."):
            raise LoopoptError(f"cannot compile '{op.name}' to PTX: lower gpu to nvvm first", op=op)
        _check_shared_memory(op, info)
    lower_nvvm_to_llvm(staging)
    used = use_libdevice(staging)
    check_supported(staging)
    module = module_to_llvmlite(staging, TRIPLE, str(machine.target_data))
    for op in staging.ops:
        if isinstance(op, llvm_dialect.FuncOp) and KERNEL_ATTR in op.attributes:
            function = module.get_global(op.sym_name.data)
            assert isinstance(function, ir.Function)
            function.calling_convention = "ptx_kernel"
            align = op.attributes.get(POINTER_ALIGN_ATTR)
            for arg in function.args:  # distinct arrays never alias (the analyses assume it)
                if isinstance(arg.type, ir.PointerType):
                    arg.add_attribute("noalias")
                    if isinstance(align, IntegerAttr):  # checked at launch
                        arg.attributes.align = align.value.data
            _launch_bounds(module, function, op)
    for value in module.global_values:
        if _is_shared(value):
            assert isinstance(value, ir.GlobalVariable)
            value.align = SHARED_ALIGN
            if value.initializer is None and value.linkage == "internal":
                value.initializer = ir.Constant(value.value_type, ir.Undefined)
    return str(module), used


def gpu_module_to_ptx(gmod: gpu.ModuleOp, arch: str = DEFAULT_ARCH) -> str:
    """PTX text of a gpu.module whose kernels are in the llvm + nvvm dialects."""
    info = arch_info(arch)
    machine = _target_machine(info)
    text, used = _llvm_ir(gmod, info, machine)
    try:
        ref = llvm.parse_assembly(text)
        ref.verify()
        link_libdevice(ref, used)
    except RuntimeError as e:
        raise LoopoptError(f"LLVM rejected the kernels' IR: {_first_line(e)}") from None
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(ref, builder)
    try:
        return machine.emit_assembly(ref)
    except RuntimeError as e:
        raise LoopoptError(f"the NVPTX backend failed: {_first_line(e)}") from None


def _launch_bounds(module: ir.Module, function: ir.Function, op: llvm_dialect.FuncOp) -> None:
    """`.maxntid` from the kernel's known block size, `.minnctapersm` from its minimum of
    resident blocks per SM, `.maxnreg` from its register cap (gpu-map-loops' options; all as
    nvvm.annotations, which LLVM reads as launch bounds)."""
    i32 = ir.IntType(32)
    entries: list[tuple[str, int]] = []
    sizes = op.attributes.get(MAX_THREADS_ATTR)
    if isinstance(sizes, DenseArrayBase):
        entries += [
            (f"maxntid{axis}", int(n)) for axis, n in zip("xyz", sizes.get_values(), strict=True)
        ]
    for key, attr in (("minctasm", MIN_BLOCKS_ATTR), ("maxnreg", MAX_REGISTERS_ATTR)):
        value = op.attributes.get(attr)
        if isinstance(value, IntegerAttr):
            entries.append((key, value.value.data))
    annotations = module.add_named_metadata("nvvm.annotations")
    for key, value in entries:
        annotations.add(module.add_metadata([function, ir.MetaDataString(module, key), i32(value)]))


def _is_shared(value: ir.GlobalValue) -> bool:
    """A shared-memory buffer: aligned for vector access; PTX allows it no initial value."""
    return isinstance(value, ir.GlobalVariable) and value.addrspace == SHARED_SPACE


def _check_shared_memory(op: object, arch: Arch) -> None:
    if not isinstance(op, llvm_dialect.FuncOp):
        return
    used = op.attributes.get(SHARED_BYTES_ATTR)
    if isinstance(used, IntegerAttr) and used.value.data > arch.max_shared_bytes:
        raise LoopoptError(
            f"kernel @{op.sym_name.data} needs {used.value.data} bytes of shared memory; "
            f"{arch.name} allows {arch.max_shared_bytes} per block",
            op=op,
        )


def _first_line(e: Exception) -> str:
    lines = [line for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


def find_ptxas() -> str | None:
    """NVIDIA's PTX assembler: on PATH, or in the nvidia-cuda-nvcc wheel (nvidia/*/bin)."""
    found = shutil.which("ptxas")
    if found is not None:
        return found
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        for candidate in sorted(Path(root).glob("*/bin/ptxas")):
            if candidate.is_file():
                return str(candidate)
    return None


def assemble(ptx: str, arch: str = DEFAULT_ARCH, ptxas: str | None = None) -> str:
    """Assemble `ptx` with ptxas for `arch`; its resource report (-v), or a LoopoptError."""
    tool = ptxas or find_ptxas()
    if tool is None:
        raise LoopoptError("ptxas not found (install nvidia-cuda-nvcc or the CUDA toolkit)")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "kernels.ptx"
        source.write_text(ptx)
        cubin = Path(tmp) / "kernels.cubin"
        proc = subprocess.run(
            [tool, f"-arch={arch}", "-v", str(source), "-o", str(cubin)],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise LoopoptError(f"ptxas failed: {_first_line(RuntimeError(proc.stderr))}")
    return proc.stderr
