"""Run a GPU program: kernels as PTX on the device, the host function JIT-compiled on the CPU.

Before:  func.func @jacobi(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %T: index) {
           affine.for %t = 0 to %T {
             gpu.launch_func @kernels::@sweep blocks in (...) threads in (...) args(%A, %B ...) } }
After:   func.func private @__loopopt_launch_3_0(index, index, index, index, index, index, i32,
                                                 memref<?x?xf32>, memref<?x?xf32>, ...)
         func.func @jacobi(...) { affine.for %t = 0 to %T { func.call @__loopopt_launch_3_0(...) } }

Each gpu.launch_func becomes a call of an external function whose address is a ctypes callback
into runtime/cuda.py (cuLaunchKernel); the host function is then lowered and JIT-compiled like
any CPU function, so loops around launches (time steps) run natively. Its memref arguments
are device pointers (+ sizes): the host code may compute sizes and launch, but not touch array
elements. A static `memref.alloc` in the function's body (an expanded array the kernels share)
is a device buffer: a callback allocates it on the first call and hands the same buffer to every
later call (the n-th allocation of a site in a call gets that site's n-th buffer), and its
`memref.dealloc` frees nothing; the buffers live as long as the compiled function.
Launches are asynchronous on the default stream; a call synchronizes once at the end
and raises the first launch error. `compile_gpu` returns a `GpuFunction` taking numpy arrays
(copied to the device and back) or `__cuda_array_interface__` objects (used in place).
"""

from __future__ import annotations

import ctypes
import itertools
from dataclasses import dataclass, field
from typing import Any

import llvmlite.binding as llvm
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import (
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import Rewriter

from loopopt.analysis.nest import host_buffer_op
from loopopt.backend.ptx import gpu_module_to_ptx, gpu_modules
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import (
    ALLOCATOR,
    CONSTANT_ARGS_ATTR,
    DYNAMIC_SHARED_ATTR,
    POINTER_ALIGN_ATTR,
)
from loopopt.element_types import SCALAR_TYPES, c_type
from loopopt.lowering.func_to_llvm import signature_inputs
from loopopt.lowering.gpu_to_nvvm import KERNEL_ATTR, lower_gpu_to_nvvm
from loopopt.lowering.llvm_common import element_bytes
from loopopt.progress import phase
from loopopt.runtime import cuda, native_launch
from loopopt.runtime.cpu import compile_cpu
from loopopt.runtime.gpu_args import Arguments

HOST_MEMORY_OPS = {
    "memref.load",
    "memref.store",
    "memref.alloc",
    "memref.alloca",
    "memref.dealloc",
    "memref.copy",
    "affine.load",
    "affine.store",
}
"""Ops a host function may not contain: its arrays live on the device."""

_PROGRAM_IDS = itertools.count()


@dataclass
class KernelInfo:
    ptx: str
    name: str
    params: list[Attribute]
    dynamic_shared_bytes: int
    pointer_align: int = 0
    """Bytes every array argument must be aligned to (0: any)."""
    constant_args: dict[int, str] = field(default_factory=dict[int, str])
    """Argument index → constant-memory global to copy it into before each launch."""


@dataclass
class _Launch:
    kernel: KernelInfo
    param_types: list[type[Any]]
    constants: list[tuple[int, str, int]] = field(default_factory=list[tuple[int, str, int]])
    """(parameter position, global, bytes) of the arguments copied into constant memory."""
    site: str = ""
    """The launch site's symbol when later launches of a call go native (native_launch)."""


@dataclass
class GpuProgram:
    """Kernels (PTX), the launch sites of the host code, and the first launch error."""

    kernels: dict[tuple[str, str], KernelInfo] = field(default_factory=dict)
    callbacks: list[Any] = field(default_factory=list)
    error: BaseException | None = None
    buffers: dict[str, list[cuda.DeviceBuffer]] = field(default_factory=dict)
    """The device buffers of each allocation site (by its allocator symbol), kept across calls."""
    allocated: dict[str, int] = field(default_factory=dict)
    """How many buffers each site has handed out in the current call."""
    prefix: str = ""
    """The program's symbol prefix (launch sites are `<prefix>_<n>`)."""
    launchers: list[str] = field(default_factory=list)
    """LLVM IR of the native launchers (runtime/native_launch.py), one per fast site."""
    sites: list[tuple[str, str]] = field(default_factory=list)
    """(site symbol, kernel name) of the fast sites; a launcher's error number indexes it."""
    slots: dict[str, int] = field(default_factory=dict)
    """Host address of each fast site's CUfunction global, and of the program's cuLaunchKernel
    pointer (under the prefix), once the host code is compiled."""

    def begin_call(self) -> None:
        """A new call: allocation sites start again at their first buffer, and each fast site's
        first launch goes through Python's checks again."""
        self.allocated.clear()
        for site, _ in self.sites:
            ctypes.c_void_p.from_address(self.slots[site]).value = None

    def go_native(self, site: str, function: int) -> None:
        """After a checked launch: the site's later launches of this call are native."""
        for slot, value in ((site, function), (self.prefix, cuda.launch_kernel_address())):
            ctypes.c_void_p.from_address(self.slots[slot]).value = value

    def failure(self) -> Any:
        """The C function pointer a native launch calls when cuLaunchKernel fails."""

        def failed(code: int, number: int) -> None:
            if self.error is None:
                name = self.sites[number][1] if 0 <= number < len(self.sites) else "?"
                self.error = LoopoptError(f"launch of @{name}: {cuda.result_text(code)}")

        pointer = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32)(failed)
        self.callbacks.append(pointer)
        return pointer

    def allocator(self, site: str) -> Any:
        """A C function pointer that returns the site's next device buffer of `nbytes`."""

        def allocate(nbytes: int) -> int:
            if self.error is not None:
                return 0
            try:
                pool = self.buffers.setdefault(site, [])
                n = self.allocated.get(site, 0)
                self.allocated[site] = n + 1
                if n == len(pool):
                    pool.append(cuda.DeviceBuffer(nbytes))
                return pool[n].ptr
            except BaseException as e:  # a ctypes callback must not raise
                self.error = e
                return 0

        pointer = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64)(allocate)
        self.callbacks.append(pointer)
        return pointer

    def callback(self, launch: _Launch, argtypes: list[type[Any]]) -> Any:
        """A C function pointer that launches `launch.kernel` (errors are kept for later)."""

        def run(*args: Any) -> None:
            if self.error is not None:
                return
            try:
                grid, block, shared = args[0:3], args[3:6], args[6]
                if min(grid) <= 0:
                    return  # an empty iteration space: nothing to launch
                kernel = cuda.get_kernel(launch.kernel.ptx, launch.kernel.name)
                params = list(zip(args[7:], launch.param_types, strict=True))
                if launch.kernel.pointer_align:
                    cuda.require_aligned(kernel.name, params, launch.kernel.pointer_align)
                total = shared + launch.kernel.dynamic_shared_bytes
                for position, name, nbytes in launch.constants:  # ordered before the launch
                    cuda.copy_to_global(launch.kernel.ptx, name, params[position][0], nbytes)
                cuda.launch(kernel, grid, block, params, total)
                handle = cuda.function_handle(kernel)
                if launch.site and handle is not None:
                    self.go_native(launch.site, handle)
            except LoopoptError as e:
                shape = f"grid {'x'.join(map(str, grid))}, block {'x'.join(map(str, block))}"
                self.error = LoopoptError(f"launch of @{launch.kernel.name} ({shape}): {e.message}")
            except BaseException as e:  # a ctypes callback must not raise
                self.error = e

        pointer = ctypes.CFUNCTYPE(None, *argtypes)(run)
        self.callbacks.append(pointer)
        return pointer

    def raise_pending(self) -> None:
        error, self.error = self.error, None
        if error is not None:
            raise error


def compile_gpu(module: ModuleOp, func_name: str, arch: str = "sm_90") -> GpuFunction:
    """Compile the kernels of `module` to PTX and its host function `func_name` for the CPU."""
    module = module.clone()
    kernels = build_kernels(module, arch)
    find_host(module, func_name)
    return bind_host(module, func_name, kernels, program_prefix())


def program_prefix() -> str:
    """A prefix of launch callback symbols that no other program of this process has."""
    return f"__loopopt_launch_{next(_PROGRAM_IDS)}"


def build_kernels(module: ModuleOp, arch: str) -> dict[tuple[str, str], KernelInfo]:
    """Lower `module`'s kernels to PTX and take them out of it (in place): what each launch of
    the host code needs, by (gpu.module, kernel) name. The build half of `compile_gpu`, which
    needs no GPU (the tuner runs it in other processes)."""
    with phase("lowering the kernels to NVVM"):
        lower_gpu_to_nvvm(module)
    kernels: dict[tuple[str, str], KernelInfo] = {}
    for gmod in gpu_modules(module):
        with phase(f"PTX of @{gmod.sym_name.data} for {arch}"):
            ptx = gpu_module_to_ptx(gmod, arch)
        for op in gmod.body.block.ops:
            if isinstance(op, llvm_dialect.FuncOp) and KERNEL_ATTR in op.attributes:
                dynamic = op.attributes.get(DYNAMIC_SHARED_ATTR)
                dynamic_bytes = dynamic.value.data if isinstance(dynamic, IntegerAttr) else 0
                inputs = list(op.function_type.inputs.data)
                align = op.attributes.get(POINTER_ALIGN_ATTR)
                align_bytes = align.value.data if isinstance(align, IntegerAttr) else 0
                info = KernelInfo(ptx, op.sym_name.data, inputs, dynamic_bytes, align_bytes)
                info.constant_args = _constant_args(op.attributes.get(CONSTANT_ARGS_ATTR))
                kernels[(gmod.sym_name.data, op.sym_name.data)] = info
        gmod.detach()
    module.attributes.pop("gpu.container_module", None)
    return kernels


def bind_host(
    module: ModuleOp, func_name: str, kernels: dict[tuple[str, str], KernelInfo], prefix: str
) -> GpuFunction:
    """The load half of `compile_gpu`: `module` (kernels taken out by `build_kernels`) with its
    launches bound to `kernels` (callbacks named `<prefix>_<n>`), its host function JITted."""
    program = GpuProgram(kernels=dict(kernels), prefix=prefix)
    host = find_host(module, func_name)
    for index, launch in enumerate(_launches(module)):
        _lower_launch(program, launch, f"{prefix}_{index}", host)
    _bind_buffers(program, module, prefix)
    linked = ""
    if program.sites:
        linked = native_launch.program_ir(prefix, program.launchers)
        pointer = ctypes.cast(program.failure(), ctypes.c_void_p).value
        llvm.add_symbol(native_launch.error_symbol(prefix), pointer)
    function = compile_cpu(module, func_name, linked)
    engine = function.engine.engine
    globals_ = [(site, native_launch.function_global(site)) for site, _ in program.sites]
    globals_.append((prefix, native_launch.launch_global(prefix)))
    if program.sites:
        program.slots = {key: engine.get_global_value_address(name) for key, name in globals_}
    return GpuFunction(func_name, host.function_type.inputs.data, function.address, program)


def _bind_buffers(program: GpuProgram, module: ModuleOp, prefix: str) -> None:
    """Point each host allocation at a device-buffer callback, and each dealloc at nothing."""
    sites = [op for op in module.walk() if isinstance(op, memref.AllocOp | memref.DeallocOp)]
    for index, op in enumerate(sites):
        if isinstance(op, memref.AllocOp):
            symbol = f"{prefix}_alloc_{index}"
            pointer = program.allocator(symbol)
        else:
            symbol = f"{prefix}_free"
            pointer = _FREE_NOTHING
        llvm.add_symbol(symbol, ctypes.cast(pointer, ctypes.c_void_p).value)
        op.attributes[ALLOCATOR] = StringAttr(symbol)


_FREE_NOTHING = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda pointer: None)
"""What a host memref.dealloc calls: the buffer stays with the program for its next call."""


def find_host(module: ModuleOp, name: str) -> func.FuncOp:
    host: func.FuncOp | None = None
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            for inner in op.walk():
                if inner.name in HOST_MEMORY_OPS and not host_buffer_op(inner):
                    raise LoopoptError(
                        f"host function @{op.sym_name.data} cannot run '{inner.name}': "
                        "its arrays live on the GPU",
                        op=inner,
                    )
            if op.sym_name.data == name:
                host = op
    if host is None:
        raise LoopoptError(f"no function named '{name}'")
    if host.function_type.outputs.data:
        raise LoopoptError(f"@{name} runs on the GPU and cannot return values", op=host)
    return host


def _launches(module: ModuleOp) -> list[gpu.LaunchFuncOp]:
    return [op for op in module.walk() if isinstance(op, gpu.LaunchFuncOp)]


def _native(launch: gpu.LaunchFuncOp, host: func.FuncOp, constants: list[Any]) -> bool:
    """Whether a launch's later launches in a call may skip Python's checks
    (runtime/native_launch.py): every array it passes is an argument of the host function or
    a buffer of the host's allocator, its dynamic shared memory is the kernel's constant, and
    it copies nothing into constant memory."""
    if launch.dynamicSharedMemorySize is not None or constants:
        return False
    arguments = set(host.body.block.args)
    return all(
        value in arguments or isinstance(value.owner, memref.AllocOp)
        for value in launch.kernelOperands
        if isinstance(value.type, MemRefType)
    )


def _lower_launch(
    program: GpuProgram, launch: gpu.LaunchFuncOp, symbol: str, host: func.FuncOp
) -> None:
    """Replace `launch` by a call of `symbol`: a callback that launches the kernel, or a
    native launcher that calls that callback for the first launch of each call."""
    ref = launch.kernel
    key = (ref.root_reference.data, ref.nested_references.data[-1].data)
    kernel = program.kernels.get(key)
    if kernel is None or len(ref.nested_references.data) != 1:
        raise LoopoptError(f"gpu.launch_func: no kernel {ref}", op=launch)
    if launch.asyncDependencies or launch.asyncToken is not None or launch.clusterSizeX:
        raise LoopoptError(
            "gpu.launch_func: async launches and clusters are unsupported", op=launch
        )
    operands = list(launch.kernelOperands)
    passed = signature_inputs(tuple(v.type for v in operands), launch)
    if passed != kernel.params:
        raise LoopoptError(
            f"gpu.launch_func passes ({', '.join(map(str, passed))}) to @{kernel.name}, "
            f"which takes ({', '.join(map(str, kernel.params))})",
            op=launch,
        )
    ops: list[Operation] = []
    shared: SSAValue
    if launch.dynamicSharedMemorySize is not None:
        shared = launch.dynamicSharedMemorySize
    else:
        zero = arith.ConstantOp(IntegerAttr(0, i32))
        ops.append(zero)
        shared = zero.result
    sizes = [launch.gridSizeX, launch.gridSizeY, launch.gridSizeZ]
    sizes += [launch.blockSizeX, launch.blockSizeY, launch.blockSizeZ]
    args = [*sizes, shared, *operands]
    argtypes = [ct for value in args for ct in _ctypes(value.type, launch)]
    record = _Launch(kernel, argtypes[7:], _constant_params(kernel, operands, launch))
    callback = symbol
    if _native(launch, host, record.constants):
        record.site, callback = symbol, native_launch.slow_symbol(symbol)
        program.launchers.append(
            native_launch.launcher_ir(
                program.prefix, symbol, len(program.sites), passed, kernel.dynamic_shared_bytes
            )
        )
        program.sites.append((symbol, kernel.name))
    pointer = program.callback(record, argtypes)
    llvm.add_symbol(callback, ctypes.cast(pointer, ctypes.c_void_p).value)
    module = launch.get_toplevel_object()
    assert isinstance(module, ModuleOp)
    module.body.block.add_op(func.FuncOp.external(symbol, [v.type for v in args], []))
    Rewriter.replace_op(launch, [*ops, func.CallOp(symbol, args, [])], [])


def _constant_args(attr: Attribute | None) -> dict[int, str]:
    """A kernel's `loopopt.constant_args` ({"<argument index>" = "<global>"}) as a dict."""
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {int(k): v.data for k, v in attr.data.items() if isinstance(v, StringAttr)}


def _constant_params(
    kernel: KernelInfo, operands: list[SSAValue], launch: gpu.LaunchFuncOp
) -> list[tuple[int, str, int]]:
    """(parameter position, global, bytes) of each argument the launch copies into constant
    memory (positions count the dynamic sizes that memrefs before it pass)."""
    found: list[tuple[int, str, int]] = []
    for index, name in sorted(kernel.constant_args.items()):
        t = operands[index].type
        if not isinstance(t, MemRefType) or any(size < 0 for size in t.get_shape()):
            raise LoopoptError(f"@{kernel.name}: argument {index} is no static array", op=launch)
        position = sum(len(_ctypes(v.type, launch)) for v in operands[:index])
        count = 1
        for size in t.get_shape():
            count *= size
        found.append((position, name, count * element_bytes(t.element_type, launch)))
    return found


def _ctypes(t: Attribute, op: Operation | None) -> list[type[Any]]:
    """The C types of a value of type `t` after lowering (a memref: pointer + dynamic sizes)."""
    if isinstance(t, MemRefType):
        return [ctypes.c_void_p] + [ctypes.c_int64] * sum(1 for s in t.get_shape() if s < 0)
    found = c_type(t)
    if found is not None:
        return [found]
    raise LoopoptError(f"cannot pass a value of type {t} to a kernel ({SCALAR_TYPES})", op=op)


class GpuFunction:
    """A compiled GPU program: call it with numpy arrays / device arrays and scalars."""

    target = "gpu"

    def __init__(self, name: str, inputs: tuple[Attribute, ...], address: int, program: GpuProgram):
        self.name = name
        self.inputs = inputs
        self.program = program
        argtypes = [ct for t in inputs for ct in _ctypes(t, None)]
        self._cfunc = ctypes.CFUNCTYPE(None, *argtypes)(address)

    def __call__(self, *args: Any) -> None:
        """Run on the device; numpy arrays are copied in and, after the run, back out."""
        cuda.context()
        with Arguments(self.name, self.inputs, args) as prepared:
            self._run(prepared.c_args)
            cuda.synchronize()
            self.program.raise_pending()
            prepared.copy_back()

    def time(self, *args: Any, warmup: int = 3, repeat: int = 20) -> float:
        """Median milliseconds of one run (device-resident data; CUDA events)."""
        cuda.context()
        with Arguments(self.name, self.inputs, args) as prepared:
            ms = cuda.time_kernel(lambda: self._run(prepared.c_args), warmup=warmup, repeat=repeat)
            self.program.raise_pending()
            prepared.copy_back()
        return ms

    def _run(self, c_args: list[Any]) -> None:
        self.program.begin_call()
        self._cfunc(*c_args)
