"""Run loopopt functions on the host: lower to LLVM, JIT with llvmlite (MCJIT, O3), call via ctypes.

    run_function(text, "matmul", [A, B, C])   # C is updated in place

Arguments follow the lowered calling convention: each memref is one pointer (the array's
data) followed by its dynamic sizes (taken from the array's shape); index is i64. Arrays are
checked against the memref type (dtype, rank, static sizes); a non-contiguous array is copied
into a contiguous one and copied back after the call. Compiled engines are cached by IR text,
and their machine code on disk by LLVM IR and host CPU (cache.py: a later process skips LLVM's
O3 pipeline and code generation). f16 and bf16 arrays are numpy float16 and ml_dtypes
bfloat16 arrays (element_types.py); the float conversions x86 lacks come with the module
(soft_float.py).

The functions a module defines are JIT-compiled under prefixed names (`@exp` → `loopopt.exp`),
which no C library function has: a function named after one (`exp`, `fmod`, `malloc`) must not
take the place of the library function that its own code calls (math.exp lowers to a call of
`exp`, float remainder to `fmod`, memref.alloc to `malloc`).
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
import numpy as np
from xdsl.dialects.builtin import (
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Attribute

from loopopt import cache as disk_cache
from loopopt.backend.llvm_ir import module_to_llvmlite
from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.element_types import SCALAR_TYPES, c_type, numpy_dtype
from loopopt.lowering.to_llvm import lower_to_llvm
from loopopt.progress import phase
from loopopt.runtime.scalars import scalar_argument
from loopopt.runtime.soft_float import host_conversions

Scalar = int | float | np.integer[Any] | np.floating[Any]


def _ctype(t: Attribute, what: str) -> type[Any]:
    found = c_type(t)
    if found is None:
        raise LoopoptError(f"{what} of type {t} is not supported on the CPU ({SCALAR_TYPES})")
    return found


def _element_dtype(t: Attribute, what: str) -> np.dtype[Any]:
    dtype = numpy_dtype(t)
    if dtype is None:
        raise LoopoptError(f"{what} of type {t} are not supported on the CPU")
    return dtype


def _target_machine() -> llvm.TargetMachine:
    """A new host target machine. Each MCJIT engine takes ownership of (and frees) the machine
    it is created with, so machines are never shared between engines."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=3,
        jit=True,
    )


Signature = tuple[tuple[Attribute, ...], Attribute | None]


@dataclass
class _Engine:
    engine: llvm.ExecutionEngine
    module: llvm.ModuleRef
    llvm_ir: str
    signatures: dict[str, Signature]
    symbols: dict[str, str]
    """Function name → the symbol it is compiled under (see the module docstring)."""
    functions: dict[str, CpuFunction]


_ENGINES: OrderedDict[tuple[str, str], _Engine] = OrderedDict()
CACHE_SIZE = 256
"""Compiled modules kept (least recently used dropped; functions in use keep theirs alive)."""


JIT_PREFIX = "loopopt."
"""Prefix of the symbols of defined functions in the JIT (no C identifier contains a dot)."""


def _prefix_symbols(module: ModuleOp) -> dict[str, str]:
    """Rename the functions `module` defines to `JIT_PREFIX + name`, and the references to them
    (func.call callees); declarations keep their names (the JIT resolves them from the process).
    Returns name → new name."""
    renamed = {
        op.sym_name.data: JIT_PREFIX + op.sym_name.data
        for op in module.ops
        if isinstance(op, FuncOp) and op.body.blocks
    }
    taken = {
        name.data
        for op in module.ops
        if isinstance(name := op.properties.get("sym_name"), StringAttr)
    }
    for old, new in renamed.items():
        if new in taken:
            raise LoopoptError(f"cannot JIT-compile @{old}: the module also defines @{new}")
    for op in module.walk():
        if isinstance(op, FuncOp) and op.sym_name.data in renamed and op.parent_op() is module:
            op.sym_name = StringAttr(renamed[op.sym_name.data])
        for attributes in (op.properties, op.attributes):
            for key, value in attributes.items():
                if (
                    isinstance(value, SymbolRefAttr)
                    and not value.nested_references.data
                    and value.root_reference.data in renamed
                ):
                    attributes[key] = SymbolRefAttr(renamed[value.root_reference.data])
    return renamed


def _compile_engine(module: ModuleOp, linked: str = "") -> _Engine:
    signatures = _signatures(module)
    calls = _declared_calls(module)
    symbols = _prefix_symbols(module)
    lower_to_llvm(module)
    machine = _target_machine()
    ir_module = module_to_llvmlite(module, llvm.get_process_triple(), str(machine.target_data))
    text = str(ir_module)
    text += host_conversions(text)
    try:
        ref = llvm.parse_assembly(text)
        if linked:
            ref.link_in(llvm.parse_assembly(linked))
        ref.verify()
    except RuntimeError as e:
        first = str(e).strip().splitlines()
        raise LoopoptError(f"LLVM rejected the generated IR: {first[0] if first else e}") from None
    _check_resolved(ref, calls)
    host = (llvm.get_process_triple(), llvm.get_host_cpu_name(), machine.target_data)
    object_key = disk_cache.key("object", text, linked, *map(str, host))
    stored = disk_cache.get("objects", object_key)
    if stored is None:
        with phase("LLVM O3 pipeline (host)"):
            tuning = llvm.create_pipeline_tuning_options(speed_level=3)
            builder = llvm.create_pass_builder(machine, tuning)
            builder.getModulePassManager().run(ref, builder)
    engine = llvm.create_mcjit_compiler(ref, machine)
    if stored is not None:  # MCJIT loads the machine code instead of generating it
        engine.set_object_cache(getbuffer_func=lambda _module: stored)
    else:
        engine.set_object_cache(
            notify_func=lambda _module, code: disk_cache.put("objects", object_key, code)
        )
    with phase("code generation (host)"):
        engine.finalize_object()
    return _Engine(engine, ref, text, signatures, symbols, {})


def _declared_calls(module: ModuleOp) -> dict[str, tuple[CallOp, str]]:
    """The functions `module` calls but only declares, each with its first call and caller."""
    declared = {
        op.sym_name.data for op in module.ops if isinstance(op, FuncOp) and not op.body.blocks
    }
    calls: dict[str, tuple[CallOp, str]] = {}
    for fn in module.ops:
        if not isinstance(fn, FuncOp):
            continue
        for op in fn.walk():
            if isinstance(op, CallOp) and op.callee.root_reference.data in declared:
                calls.setdefault(op.callee.root_reference.data, (op, fn.sym_name.data))
    return calls


def _check_resolved(ref: llvm.ModuleRef, calls: dict[str, tuple[CallOp, str]]) -> None:
    """A function called but defined neither in the module nor in what is linked in must be
    found in the process (the C library): MCJIT would call an unresolved one at address 0 (a
    segfault), so refuse it first."""
    undefined = {fn.name for fn in ref.functions if fn.is_declaration}
    for name, (call, caller) in calls.items():
        if name in undefined and not llvm.address_of_symbol(name):
            raise LoopoptError(
                f"cannot run on the CPU: @{caller} calls @{name}, which is declared but defined "
                "nowhere (not in the module, not in the C library)",
                op=call,
            )


def _signatures(module: ModuleOp) -> dict[str, Signature]:
    result: dict[str, Signature] = {}
    for op in module.ops:
        if isinstance(op, FuncOp) and op.body.blocks:
            outputs = op.function_type.outputs.data
            if len(outputs) > 1:
                raise LoopoptError(f"function '{op.sym_name.data}' returns several values", op=op)
            result[op.sym_name.data] = (
                op.function_type.inputs.data,
                outputs[0] if outputs else None,
            )
    return result


@dataclass
class CpuFunction:
    """A compiled function: call it with numpy arrays and Python scalars (arrays in place)."""

    name: str
    inputs: tuple[Attribute, ...]
    output: Attribute | None
    address: int
    engine: _Engine

    def __post_init__(self) -> None:
        argtypes: list[type[Any]] = []
        for index, t in enumerate(self.inputs):
            if isinstance(t, MemRefType):
                _element_dtype(t.element_type, f"argument {index} elements")
                argtypes.append(ctypes.c_void_p)
                argtypes += [ctypes.c_int64] * sum(1 for s in t.get_shape() if s < 0)
            else:
                argtypes.append(_ctype(t, f"argument {index}"))
        restype = None if self.output is None else _ctype(self.output, "the result")
        self._cfunc = ctypes.CFUNCTYPE(restype, *argtypes)(self.address)

    @property
    def llvm_ir(self) -> str:
        """The (unoptimized) LLVM IR this function was compiled from."""
        return self.engine.llvm_ir

    def __call__(self, *args: np.ndarray | Scalar) -> int | float | None:
        if len(args) != len(self.inputs):
            raise LoopoptError(
                f"@{self.name} takes {len(self.inputs)} arguments, {len(args)} given"
            )
        c_args: list[Any] = []
        write_back: list[tuple[np.ndarray, np.ndarray]] = []
        for index, (arg, t) in enumerate(zip(args, self.inputs, strict=True)):
            if isinstance(t, MemRefType):
                array = self._array(index, arg, t)
                if array is not arg:
                    assert isinstance(arg, np.ndarray)
                    if arg.flags.writeable:
                        write_back.append((arg, array))
                c_args.append(array.ctypes.data)
                c_args += [array.shape[d] for d, s in enumerate(t.get_shape()) if s < 0]
            else:
                c_args.append(self._scalar(index, arg, t))
        result = self._cfunc(*c_args)
        for original, copy in write_back:
            np.copyto(original, copy)
        return result

    def _array(self, index: int, arg: object, t: MemRefType) -> np.ndarray:
        where = f"@{self.name} argument {index}"
        if not isinstance(arg, np.ndarray):
            raise LoopoptError(f"{where}: expected a numpy array for {t}, got {type(arg).__name__}")
        dtype = numpy_dtype(t.element_type)
        if arg.dtype != dtype:
            raise LoopoptError(f"{where}: expected dtype {dtype} for {t}, got {arg.dtype}")
        shape = t.get_shape()
        if arg.ndim != len(shape):
            raise LoopoptError(f"{where}: expected rank {len(shape)} for {t}, got {arg.ndim}")
        for d, (size, got) in enumerate(zip(shape, arg.shape, strict=True)):
            if size >= 0 and size != got:
                raise LoopoptError(
                    f"{where}: expected size {size} in dimension {d} for {t}, got shape {arg.shape}"
                )
        if arg.flags.c_contiguous and arg.flags.writeable and arg.flags.aligned:
            return arg
        return np.ascontiguousarray(arg).copy()

    def _scalar(self, index: int, arg: object, t: Attribute) -> int | float:
        return scalar_argument(f"@{self.name} argument {index}", arg, t)


def compile_cpu(module: ModuleOp | str, func: str, linked: str = "") -> CpuFunction:
    """Compile (or fetch from the cache) `func` of `module` for the host; `linked`: an LLVM IR
    module linked in (definitions of functions `module` declares)."""
    text = module if isinstance(module, str) else str(module)
    key = (text, linked)
    engine = _ENGINES.get(key)
    if engine is None:
        parsed = parse_module(text, "<cpu>") if isinstance(module, str) else module.clone()
        engine = _compile_engine(parsed, linked)
        _ENGINES[key] = engine
        if len(_ENGINES) > CACHE_SIZE:
            _ENGINES.popitem(last=False)
    else:
        _ENGINES.move_to_end(key)
    function = engine.functions.get(func)
    if function is None:
        if func not in engine.signatures:
            raise LoopoptError(f"no function named '{func}'")
        inputs, output = engine.signatures[func]
        address = engine.engine.get_function_address(engine.symbols[func])
        function = CpuFunction(func, inputs, output, address, engine)
        engine.functions[func] = function
    return function


def run_function(module: ModuleOp | str, func: str, args: Sequence[np.ndarray | Scalar]) -> None:
    """Call `func` on `args`; arrays are modified in place."""
    compile_cpu(module, func)(*args)
