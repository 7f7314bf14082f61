"""Read-only kernel arrays in constant memory: a global per (kernel, array), loads moved to it.

Before:  gpu.module @kernels {
           gpu.func @k(%I: memref<71x263xf32>, %F: memref<8x8xf32>, ...) kernel {
             %f = affine.load %F[0, 1] : memref<8x8xf32>   ... } }
After:   gpu.module @kernels {
           memref.global "public" @__const_k_F : memref<8x8xf32, 4> = uninitialized
           gpu.func @k(%I: ..., %F: memref<8x8xf32>, ...) kernel
               attributes {loopopt.constant_args = {"1" = "__const_k_F"}} {
             %F_const = memref.get_global @__const_k_F : memref<8x8xf32, 4>
             %f = affine.load %F_const[0, 1] : memref<8x8xf32, 4>   ... } }

The argument stays (the host passes it as before); the runtime copies its bytes into the global
before each launch (`loopopt.constant_args`: argument index → global name), the CPU emulator of
the tests reads the argument itself. Loads (affine.load, memref.load) are the only uses that can
move; `check_constant_candidate` refuses an argument the kernel writes or uses otherwise, or of
a shape that is not static. The 64 KB that one module's constant globals may have is the
caller's to check (`constant_bytes`).
"""

from __future__ import annotations

from xdsl.dialects import affine, gpu, memref
from xdsl.dialects.builtin import (
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, Operation

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import CONSTANT_ARGS_ATTR
from loopopt.lowering.gpu_constant import is_constant_space
from loopopt.lowering.llvm_common import element_bytes
from loopopt.target import CONSTANT_SPACE

_LOADS = (affine.LoadOp, memref.LoadOp)
_STORES = (affine.StoreOp, memref.StoreOp)


def constant_args(kernel: gpu.FuncOp) -> dict[int, str]:
    """Argument index → constant global, as recorded on `kernel`."""
    attr = kernel.attributes.get(CONSTANT_ARGS_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {
        int(key): value.data for key, value in attr.data.items() if isinstance(value, StringAttr)
    }


def kernel_argument(kernel: gpu.FuncOp, name: str) -> BlockArgument | None:
    """The argument of `kernel` whose SSA name is `name` (`%F` → "F"; not an attribution)."""
    for arg in kernel.body.block.args[: len(kernel.function_type.inputs)]:
        if arg.name_hint == name:
            return arg
    return None


def check_constant_candidate(kernel: gpu.FuncOp, arg: BlockArgument) -> int:
    """The bytes of `arg`, an array `kernel` only loads from; a LoopoptError otherwise."""
    where = f"kernel @{kernel.sym_name.data}"
    name = arg.name_hint or f"arg{arg.index}"
    t = arg.type
    if not isinstance(t, MemRefType):
        raise LoopoptError(f"{where}: %{name} is not an array ({t})", op=kernel)
    shape = t.get_shape()
    if any(size < 0 for size in shape) or not isinstance(t.layout, NoneAttr):
        raise LoopoptError(f"{where}: %{name} ({t}) needs a static shape and no layout", op=kernel)
    for use in arg.uses:
        user = use.operation
        if isinstance(user, _STORES) and user.memref is arg:
            raise LoopoptError(f"{where} writes %{name}; constant memory is read-only", op=user)
        if not isinstance(user, _LOADS) or user.memref is not arg:
            raise LoopoptError(f"{where} uses %{name} in '{user.name}', not only in loads", op=user)
    count = 1
    for size in shape:
        count *= size
    if count == 0:
        raise LoopoptError(f"{where}: %{name} ({t}) has no elements", op=kernel)
    return count * element_bytes(t.element_type, kernel)


def constant_bytes(gmod: gpu.ModuleOp) -> int:
    """Bytes of the constant-memory globals `gmod` has."""
    total = 0
    for op in gmod.body.block.ops:
        if isinstance(op, memref.GlobalOp) and is_constant_space(op.type):
            count = 1
            for size in op.type.get_shape():
                count *= size
            total += count * element_bytes(op.type.element_type, op)
    return total


def move_to_constant_memory(kernel: gpu.FuncOp, arg: BlockArgument) -> memref.GlobalOp:
    """Give `arg` (checked by `check_constant_candidate`) a constant-memory global in the
    kernel's gpu.module, load from it, and record the copy on the kernel. Not checked: that the
    global's name (`__const_<kernel>_<array>`) is free."""
    t = arg.type
    assert isinstance(t, MemRefType)
    kernel_name = kernel.sym_name.data
    name = f"__const_{kernel_name}_{arg.name_hint or f'arg{arg.index}'}"
    const_type = MemRefType(t.element_type, t.get_shape(), memory_space=_space())
    global_op = memref.GlobalOp.get(
        StringAttr(name), const_type, UnitAttr(), sym_visibility=StringAttr("public")
    )
    global_op.location = kernel.location
    gmod = kernel.parent_op()
    assert isinstance(gmod, gpu.ModuleOp)
    gmod.body.block.insert_op_before(global_op, kernel)
    read = memref.GetGlobalOp(SymbolRefAttr(name), const_type)
    read.memref.name_hint = f"{arg.name_hint}_const" if arg.name_hint else None
    entry = kernel.body.block
    first: Operation | None = entry.first_op
    if first is None:
        entry.add_op(read)
    else:
        entry.insert_op_before(read, first)
    for use in list(arg.uses):
        use.operation.operands[use.index] = read.memref
    recorded: dict[str, Attribute] = {
        str(k): StringAttr(v) for k, v in constant_args(kernel).items()
    }
    recorded[str(arg.index)] = StringAttr(name)
    ordered = dict(sorted(recorded.items(), key=lambda item: int(item[0])))
    kernel.attributes[CONSTANT_ARGS_ATTR] = DictionaryAttr(ordered)
    return global_op


def _space() -> IntegerAttr:
    return IntegerAttr(CONSTANT_SPACE, i64)
