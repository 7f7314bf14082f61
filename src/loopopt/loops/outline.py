"""Outlining a loop nest into a GPU kernel, and launching it (NUDA's `nuwork`).

Before:  func.func @f(%A: memref<64xf32>, %n: index) {
           %c2 = arith.constant 2.0 : f32
           affine.for %i = 0 to %n { ... %A ... %c2 ... }
After:   module attributes {gpu.container_module} {
           gpu.module @kernels {
             gpu.func @f_k0(%A: memref<64xf32>, %n: index) kernel {
               %c2 = arith.constant 2.0 : f32              (constants are rematerialized)
               affine.for %i = 0 to %n { ... }
               gpu.return } }
           func.func @f(%A: memref<64xf32>, %n: index) {
             gpu.launch_func @kernels::@f_k0 blocks in (...) threads in (...)
                 args(%A : memref<64xf32>, %n : index) } }

Every value the nest uses and does not define becomes a kernel argument (the function's
arguments first, in their order, then others in order of first use), except `arith.constant`s,
which are cloned into the kernel. Kernels go into the module's `gpu.module @kernels` (created
when missing), named `<func>_k<n>`. Not checked here: that the captured values can live on the
device (memrefs must be device-accessible when the launch runs).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, gpu, scf
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from loopopt.diagnostics import LoopoptError
from loopopt.dialects import gpu_ext

KERNEL_MODULE = "kernels"
CONTAINER = "gpu.container_module"


def defined_outside(value: SSAValue, root: Operation) -> bool:
    """`value` is not defined by `root` or an op (block) nested in it."""
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    return op is None or not root.is_ancestor(op)


def captured_values(root: Operation) -> list[SSAValue]:
    """The values used under `root` and defined outside it, in order of first use."""
    seen: dict[SSAValue, None] = {}
    for op in root.walk():
        for value in op.operands:
            if value not in seen and defined_outside(value, root):
                seen[value] = None
    return list(seen)


def argument_order(value: SSAValue) -> tuple[int, int]:
    """Function arguments first, by position; then the rest (stable sort keeps first use)."""
    if isinstance(value, BlockArgument) and value.owner.parent_op() is not None:
        parent = value.owner.parent_op()
        if parent is not None and parent.name in ("func.func", "gpu.func"):
            return 0, value.index
    return 1, 0


def kernel_module(module: ModuleOp) -> gpu.ModuleOp:
    """The module's `gpu.module @kernels`, created (and the module marked) when missing."""
    module.attributes[CONTAINER] = UnitAttr()
    for op in module.ops:
        if isinstance(op, gpu.ModuleOp) and op.sym_name.data == KERNEL_MODULE:
            return op
    gmod = gpu_ext.ModuleOp(KERNEL_MODULE)
    module.body.block.add_op(gmod)
    return gmod


def kernel_name(gmod: gpu.ModuleOp, base: str) -> str:
    """`<base>_k<n>` with the smallest n not taken in `gmod`."""
    taken = {op.sym_name.data for op in gmod.body.block.ops if isinstance(op, gpu.FuncOp)}
    n = 0
    while f"{base}_k{n}" in taken:
        n += 1
    return f"{base}_k{n}"


def rename_kernel(module: ModuleOp, old: str, new: str) -> None:
    """Rename kernel `old` of the module's `gpu.module @kernels` to `new`, and its launches."""
    gmod = kernel_module(module)
    for op in gmod.body.block.ops:
        if isinstance(op, gpu.FuncOp) and op.sym_name.data == old:
            op.sym_name = StringAttr(new)
    for op in module.walk():
        if isinstance(op, gpu.LaunchFuncOp) and op.kernel.nested_references.data[-1].data == old:
            op.kernel = SymbolRefAttr(KERNEL_MODULE, [new])


def outline(
    root: Operation,
    gmod: gpu.ModuleOp,
    name: str,
    grid: Sequence[SSAValue],
    block: Sequence[SSAValue],
    nonempty: SSAValue | None = None,
) -> tuple[gpu.FuncOp, gpu.LaunchFuncOp]:
    """Move `root` into a new kernel `name` of `gmod` and launch it where `root` was, with
    the given grid and block sizes (x, y, z host values), under `scf.if nonempty` when given
    (a grid with a zero dimension must not be launched)."""
    args, constants = outside_values(root)
    launch = _launch(root, gmod, name, grid, block, args, nonempty)
    kernel = gpu_ext.FuncOp(name, ([v.type for v in args], []), kernel=True)
    kernel.location = root.location
    move_into(root, kernel.body.block, args, constants, gpu_ext.ReturnOp([]))
    gmod.body.block.add_op(kernel)
    return kernel, launch


def outside_values(root: Operation) -> tuple[list[SSAValue], list[SSAValue]]:
    """What `root` uses from outside it, for outlining: the values an outlined body takes as
    arguments (in `argument_order`), and the constants it clones instead."""
    captured = captured_values(root)
    constants = [v for v in captured if isinstance(v.owner, arith.ConstantOp)]
    args = sorted((v for v in captured if v not in constants), key=argument_order)
    return args, constants


def move_into(
    root: Operation,
    body: Block,
    args: Sequence[SSAValue],
    constants: Sequence[SSAValue],
    terminator: Operation,
) -> None:
    """Move `root` into `body` (whose arguments stand for `args`), after clones of
    `constants` and before `terminator`; its uses of those values become the new ones."""
    mapping: dict[SSAValue, SSAValue] = {}
    for value, arg in zip(args, body.args, strict=True):
        arg.name_hint = value.name_hint
        mapping[value] = arg
    for value in constants:
        owner = value.owner
        assert isinstance(owner, Operation)
        copy = owner.clone()
        copy.results[0].name_hint = value.name_hint
        body.add_op(copy)
        mapping[value] = copy.results[0]
    root.detach()
    body.add_ops([root, terminator])
    for op in root.walk():
        for index, operand in enumerate(op.operands):
            if operand in mapping:
                op.operands[index] = mapping[operand]


def _launch(
    before: Operation,
    gmod: gpu.ModuleOp,
    name: str,
    grid: Sequence[SSAValue],
    block: Sequence[SSAValue],
    args: Sequence[SSAValue],
    nonempty: SSAValue | None,
) -> gpu.LaunchFuncOp:
    """A `gpu.launch_func` of kernel `name` inserted before `before`."""
    host = before.parent_block()
    if host is None:
        raise LoopoptError("internal: cannot outline a detached op", op=before)
    op = gpu_ext.LaunchFuncOp(
        SymbolRefAttr(gmod.sym_name.data, [name]), grid, block, kernelOperands=args
    )
    op.location = before.location
    if nonempty is None:
        host.insert_op_before(op, before)
    else:
        host.insert_op_before(scf.IfOp(nonempty, [], [op, scf.YieldOp()]), before)
    return op
