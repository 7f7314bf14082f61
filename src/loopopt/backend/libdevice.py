"""Math in kernels: LLVM's math intrinsics and libm calls → CUDA's libdevice (`__nv_*`).

Before:  %y = llvm.call_intrinsic "llvm.exp.f32"(%x) : (f32) -> f32
         %z = llvm.call @erf(%w) : (f64) -> f64
After:   %y = llvm.call @__nv_expf(%x) : (f32) -> f32
         %z = llvm.call @__nv_erf(%w) : (f64) -> f64

The NVPTX backend selects only a few math intrinsics (sqrt, fabs, fma, floor, min/max ...);
the others become calls of libdevice, linked from CUDA's `nvvm/libdevice/libdevice.10.bc`
(the CUDA toolkit, or the nvidia-nvvm / nvidia-cuda-nvcc wheels). `check_supported` turns what
the backend would abort on into a diagnostic before LLVM sees it.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import llvmlite.binding as llvm
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import Float32Type, Float64Type, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute
from xdsl.rewriter import Rewriter

from loopopt.diagnostics import LoopoptError

LIBDEVICE_MATH = {
    "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "pow", "atan2", "round", "erf", "log1p", "expm1", "cbrt",
    "asinh", "acosh", "atanh",
}  # fmt: skip
"""Math functions that kernels get from libdevice (as intrinsics or as libm calls)."""

NATIVE_INTRINSICS = {
    "sqrt", "fabs", "fma", "floor", "ceil", "trunc", "roundeven", "rint", "nearbyint",
    "copysign", "minnum", "maxnum", "minimum", "maximum", "fptosi.sat", "fptoui.sat", "abs",
    "smax", "smin", "umax", "umin", "ctlz", "cttz", "ctpop", "bswap", "bitreverse", "fshl",
    "fshr",
}  # fmt: skip
"""LLVM intrinsics (without type suffixes) that the NVPTX backend selects itself."""

DEVICE_FUNCTIONS = {"malloc", "free"}
"""External functions the CUDA device runtime provides."""


def _base_and_type(name: str) -> tuple[str, str]:
    """'llvm.exp.f32' → ('exp', 'f32'); 'llvm.fptosi.sat.i32.f32' → ('fptosi.sat', ...)."""
    parts = name.removeprefix("llvm.").split(".")
    suffixes = [p for p in parts if p[:1] in "if" and p[1:].isdigit()]
    base = ".".join(p for p in parts if p not in suffixes)
    return base, suffixes[0] if suffixes else ""


def _nv_name(base: str, is_f32: bool) -> str:
    return f"__nv_{base}{'f' if is_f32 else ''}"


def _libm_base(name: str, t: Attribute | None) -> str | None:
    """'erff' returning f32 → 'erf'; 'erf' returning f64 → 'erf'; None if not libdevice math."""
    if isinstance(t, Float32Type):
        base = name.removesuffix("f") if name.endswith("f") else None
    else:
        base = name if isinstance(t, Float64Type) else None
    return base if base in LIBDEVICE_MATH else None


def use_libdevice(module: ModuleOp) -> set[str]:
    """Rewrite math intrinsics and libm calls of `module` to libdevice; the names used."""
    used: set[str] = set()
    declared = {op.sym_name.data for op in module.ops if isinstance(op, llvm_dialect.FuncOp)}
    for op in list(module.walk()):
        if isinstance(op, llvm_dialect.CallIntrinsicOp):
            base, suffix = _base_and_type(op.intrin.data)
            if base not in LIBDEVICE_MATH or suffix not in ("f32", "f64"):
                continue
            t = op.results[0].type
            name = _nv_name(base, suffix == "f32")
            if name not in declared:
                fn_type = llvm_dialect.LLVMFunctionType([a.type for a in op.args], t)
                external = llvm_dialect.LinkageAttr("external")
                module.body.block.add_op(llvm_dialect.FuncOp(name, fn_type, external))
                declared.add(name)
            Rewriter.replace_op(op, llvm_dialect.CallOp(name, *op.args, return_type=t))
            used.add(name)
        elif isinstance(op, llvm_dialect.FuncOp) and not op.body.blocks:
            base = _libm_base(op.sym_name.data, op.function_type.output)
            if base is not None:
                is_f32 = isinstance(op.function_type.output, Float32Type)
                op.sym_name = StringAttr(_nv_name(base, is_f32))
        elif isinstance(op, llvm_dialect.CallOp) and op.callee is not None:
            t = op.returned.type if op.returned is not None else None
            base = _libm_base(op.callee.string_value(), t)
            if base is not None:
                name = _nv_name(base, isinstance(t, Float32Type))
                op.callee = SymbolRefAttr(name)
                used.add(name)
    return used


def check_supported(module: ModuleOp) -> None:
    """Reject calls the NVPTX backend cannot compile (it would abort the process)."""
    for op in module.walk():
        if isinstance(op, llvm_dialect.CallIntrinsicOp):
            name = op.intrin.data
            base, _ = _base_and_type(name)
            if not name.startswith("llvm.nvvm.") and base not in NATIVE_INTRINSICS:
                raise LoopoptError(f"cannot compile '{name}' for the GPU", op=op)
        elif isinstance(op, llvm_dialect.FuncOp) and not op.body.blocks:
            name = op.sym_name.data
            if not name.startswith("__nv_") and name not in DEVICE_FUNCTIONS:
                raise LoopoptError(f"kernels cannot call the host function '{name}'", op=op)


def find_libdevice() -> str | None:
    """CUDA's libdevice.10.bc: $CUDA_HOME, /usr/local/cuda*, or an nvidia wheel."""
    roots = [os.environ.get(v, "") for v in ("CUDA_HOME", "CUDA_PATH")]
    roots += ["/usr/local/cuda", *sorted(map(str, Path("/usr/local").glob("cuda-*")), reverse=True)]
    spec = importlib.util.find_spec("nvidia")
    if spec is not None:
        for base in spec.submodule_search_locations or []:
            roots += [str(p) for p in sorted(Path(base).glob("*"))]
    for root in roots:
        if root:
            candidate = Path(root) / "nvvm" / "libdevice" / "libdevice.10.bc"
            if candidate.is_file():
                return str(candidate)
    return None


def link_libdevice(ref: llvm.ModuleRef, used: set[str]) -> None:
    """Link libdevice into `ref`, keeping its functions internal (unused ones are dropped)."""
    if not used:
        return
    path = find_libdevice()
    if path is None:
        names = ", ".join(sorted(used))
        raise LoopoptError(
            f"{names} on the GPU need CUDA's libdevice (install the CUDA toolkit or nvidia-nvvm)"
        )
    library = llvm.parse_bitcode(Path(path).read_bytes())
    library.triple = ref.triple
    library.data_layout = ref.data_layout
    ref.link_in(library)
    for function in ref.functions:
        if function.name.startswith("__nv_") and not function.is_declaration:
            function.linkage = llvm.Linkage.internal
