"""Workgroup (shared-memory) buffers of a kernel, as upstream MLIR means them: attributions.

Before (what promote and gpu-map-loops build inside a kernel):
    gpu.func @k(%A: memref<128x128xf32>) kernel {
      %A_shared = memref.alloca() : memref<64x36xf32, 3>
      ... }
After `attribute_workgroup_buffers`:
    gpu.func @k(%A: memref<128x128xf32>)
        workgroup(%A_shared : memref<64x36xf32, 3> {llvm.align = 16 : i64}) kernel {
      ... }

A `memref.alloca` in address space 3 is, to upstream MLIR, a thread's own stack buffer (its
lowering gives each thread one in `.local` memory, silently); a workgroup attribution of the
gpu.func is one buffer per block, in `.shared` memory, which is what loopopt's kernels rely on.
gpu-map-loops ends with every static workgroup alloca of its kernels made an attribution, so
its output means the same to any MLIR pipeline. Inside loopopt a workgroup buffer is either
(`workgroup_buffers`): the alloca form while gpu-map-loops builds a kernel, the attribution
form after. `workgroup_buffers_to_allocas` gives the alloca form back (loopopt's lowering, which
places them with lowering/gpu_shared.py, and the test emulator).

Each attribution is aligned to SHARED_ALIGN (16 bytes: ld.shared.v4, 16-byte cp.async), as
loopopt's own lowering places the buffers.
"""

from __future__ import annotations

from xdsl.dialects import gpu, memref
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, MemRefType, i64
from xdsl.ir import Attribute, BlockArgument, SSAValue

from loopopt.dialects import gpu_ext
from loopopt.lowering.gpu_shared import is_shared
from loopopt.target import SHARED_ALIGN

ALIGN_ATTR = "llvm.align"
"""The attribution attribute upstream's convert-gpu-to-nvvm aligns the `.shared` array by."""


def _count(kernel: gpu.FuncOp) -> int:
    return len(gpu_ext.workgroup_args(kernel))


def _set_count(kernel: gpu.FuncOp, count: int) -> None:
    if count:
        kernel.attributes[gpu_ext.WORKGROUP_ATTRIBUTIONS] = IntegerAttr(count, i64)
    else:
        kernel.attributes.pop(gpu_ext.WORKGROUP_ATTRIBUTIONS, None)


def _attrib_attrs(kernel: gpu.FuncOp) -> list[DictionaryAttr]:
    attrs = kernel.properties.get("workgroup_attrib_attrs")
    if isinstance(attrs, ArrayAttr):
        return [d for d in attrs.data if isinstance(d, DictionaryAttr)]
    return [DictionaryAttr({}) for _ in range(_count(kernel))]


def _set_attrib_attrs(kernel: gpu.FuncOp, attrs: list[DictionaryAttr]) -> None:
    if any(d.data for d in attrs):
        kernel.properties["workgroup_attrib_attrs"] = ArrayAttr(attrs)
    else:
        kernel.properties.pop("workgroup_attrib_attrs", None)


def is_workgroup_attribution(value: SSAValue) -> bool:
    """`value` is a workgroup attribution of its gpu.func."""
    if not isinstance(value, BlockArgument):
        return False
    kernel = value.block.parent_op()
    return isinstance(kernel, gpu.FuncOp) and value in gpu_ext.workgroup_args(kernel)


def is_static_workgroup_buffer(value: SSAValue) -> bool:
    """`value` is a workgroup buffer of static shape: an attribution, or a workgroup alloca."""
    if is_workgroup_attribution(value):
        return True
    owner = value.owner
    return isinstance(owner, memref.AllocaOp) and is_shared(value.type) and not owner.operands


def workgroup_buffers(kernel: gpu.FuncOp) -> list[SSAValue]:
    """The workgroup buffers of `kernel`: its attributions, then its workgroup allocas."""
    allocas = [
        op.memref
        for op in kernel.walk()
        if isinstance(op, memref.AllocaOp) and is_shared(op.memref.type)
    ]
    return [*gpu_ext.workgroup_args(kernel), *allocas]


def add_workgroup_attribution(
    kernel: gpu.FuncOp, t: MemRefType[Attribute], name: str | None
) -> BlockArgument:
    """A new workgroup attribution of type `t` (the last one), 16-byte aligned."""
    count = _count(kernel)
    attrs = _attrib_attrs(kernel)
    index = len(kernel.function_type.inputs) + count
    arg = kernel.body.block.insert_arg(t, index)
    arg.name_hint = name
    _set_count(kernel, count + 1)
    aligned = DictionaryAttr({ALIGN_ATTR: IntegerAttr(SHARED_ALIGN, i64)})
    _set_attrib_attrs(kernel, [*attrs, aligned])
    return arg


def erase_workgroup_attribution(kernel: gpu.FuncOp, arg: BlockArgument) -> None:
    """Remove the workgroup attribution `arg` (unused by now)."""
    position = list(gpu_ext.workgroup_args(kernel)).index(arg)
    attrs = _attrib_attrs(kernel)
    del attrs[position]
    kernel.body.block.erase_arg(arg)
    _set_count(kernel, len(attrs))
    _set_attrib_attrs(kernel, attrs)


def attribute_workgroup_buffers(kernel: gpu.FuncOp) -> None:
    """Make each static workgroup alloca of `kernel` a workgroup attribution (in order)."""
    for op in list(kernel.walk()):
        if not isinstance(op, memref.AllocaOp) or op.operands or not is_shared(op.memref.type):
            continue
        t = op.memref.type
        assert isinstance(t, MemRefType)
        arg = add_workgroup_attribution(kernel, t, op.memref.name_hint)
        op.memref.replace_all_uses_with(arg)
        op.detach()
        op.erase()


def workgroup_buffers_to_allocas(kernel: gpu.FuncOp) -> None:
    """Make each workgroup attribution of `kernel` an alloca at its entry (in order), and each
    private attribution too."""
    entry = kernel.body.block
    first = entry.first_op
    for arg in [*gpu_ext.workgroup_args(kernel), *gpu_ext.private_args(kernel)]:
        alloca = memref.AllocaOp.build(operands=[[], []], result_types=[arg.type])
        alloca.memref.name_hint = arg.name_hint
        if first is None:
            entry.add_op(alloca)
        else:
            entry.insert_op_before(alloca, first)
        assert isinstance(arg, BlockArgument)
        arg.replace_all_uses_with(alloca.memref)
        entry.erase_arg(arg)
    _set_count(kernel, 0)
    kernel.properties.pop("workgroup_attrib_attrs", None)
    kernel.properties.pop("private_attrib_attrs", None)
