"""Outlining one nest of a function into a function of its own, and inlining it back.

Before:  func.func @gemm(%alpha: f32, %C: memref<64x64xf32>, %A: …, %B: …) {
           affine.for %i … { C[i, j] *= beta }
           affine.for %i … { affine.for %k … { C[i, j] += alpha * A[i, k] * B[k, j] } } }
After `outline_nest(second nest, "gemm__nest1")`:
         func.func private @gemm__nest1(%alpha: f32, %C: memref<64x64xf32>, %A: …, %B: …) {
           affine.for %i … { affine.for %k … { … } } }
         func.func @gemm(…) {
           affine.for %i … { C[i, j] *= beta }
           func.call @gemm__nest1(%alpha, %C, %A, %B) }
`inline_call` is the inverse: the callee's body (whatever passes made of it) takes the call's
place, with the call's operands for its arguments, and the callee is erased.

This lets a pass that works on whole functions (a schedule's pipeline, with `func=`) work on one
nest of a function. Every value the nest uses and does not define becomes an argument (the
function's arguments first, in order, then others in order of first use); `arith.constant`s are
cloned in. The outlined function returns nothing: a nest with results cannot be outlined.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from loopopt.diagnostics import LoopoptError
from loopopt.loops.outline import move_into, outside_values


def fresh_function_name(module: ModuleOp, base: str) -> str:
    """`base`, or `base_2`, `base_3` … when a symbol of `module` has that name."""
    names = (op.properties.get("sym_name") for op in module.ops)
    taken = {name.data for name in names if isinstance(name, StringAttr)}
    name, counter = base, 2
    while name in taken:
        name, counter = f"{base}_{counter}", counter + 1
    return name


def outline_nest(root: Operation, module: ModuleOp, name: str) -> tuple[func.FuncOp, func.CallOp]:
    """Move `root` (an op of a func.func's body, without results) into a new private function
    `name` of `module`, called where `root` was."""
    if root.results:
        raise LoopoptError(f"cannot outline '{root.name}': it has results", op=root)
    args, constants = outside_values(root)
    callee = func.FuncOp(name, ([v.type for v in args], []), visibility="private")
    callee.location = root.location
    call = func.CallOp(name, args, [])
    Rewriter.insert_op(call, InsertPoint.before(root))
    move_into(root, callee.body.block, args, constants, func.ReturnOp())
    caller = enclosing_function(call)
    if caller.parent_op() is module:
        module.body.block.insert_op_before(callee, caller)
    else:
        module.body.block.add_op(callee)
    return callee, call


def enclosing_function(op: Operation) -> func.FuncOp:
    """The func.func that holds `op`."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    if parent is None:
        raise LoopoptError(f"'{op.name}' is not inside a func.func", op=op)
    return parent


def inline_call(call: func.CallOp, callee: func.FuncOp) -> None:
    """Replace `call` by a copy of `callee`'s body (it returns nothing) and erase `callee`."""
    if call.res or callee.function_type.outputs.data:
        raise LoopoptError(f"cannot inline @{callee.sym_name.data}: it returns values", op=call)
    mapping: dict[SSAValue, SSAValue] = dict(
        zip(callee.body.block.args, call.arguments, strict=True)
    )
    for op in list(callee.body.block.ops):
        if isinstance(op, func.ReturnOp):
            continue
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(call))
        for inner in op.walk():
            for index, operand in enumerate(inner.operands):
                if operand in mapping:
                    inner.operands[index] = mapping[operand]
    call.detach()
    call.erase()
    callee.detach()
    callee.erase()


def callee_of(call: func.CallOp, module: ModuleOp) -> func.FuncOp:
    """The func.func that `call` calls, in `module`."""
    name = call.callee.root_reference.data
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name == StringAttr(name):
            return op
    raise LoopoptError(f"no function @{name} in the module", op=call)
