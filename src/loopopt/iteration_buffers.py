"""Buffers allocated in a loop body, in the MLIR text loopopt writes and reads.

Inside loopopt, a `memref.alloca` in a loop body (promote's buffers) is a buffer of each
iteration: the dependence analysis takes it as private to the iteration, gpu-map-loops moves
workgroup buffers to the kernel entry, and the LLVM lowering allocates it once, at the entry of
the function. Upstream MLIR agrees on the meaning (a loop is an automatic allocation scope) but
its lowering does not: scf-to-cf leaves the `llvm.alloca` in the loop, which grows the stack
every iteration until it overflows, and its canonicalizer inlines any `memref.alloca_scope` put
in a loop body back into the loop. So the text loopopt writes holds such a buffer at the entry
of its function, one buffer reused by every iteration (as loopopt's own lowering has it), and
both the buffer and the loop carry `loopopt.scope = N`, by which loopopt, reading the text back,
puts the buffer in the loop again:

    func.func @f(...) {                                func.func @f(...) {
      affine.for %kt = ... {                             %buf = memref.alloca() {loopopt.scope = 0}
        %buf = memref.alloca() : memref<32x8xf32>  <->   affine.for %kt = ... {
        ...                                                ...
      }                                                  } {loopopt.scope = 0}

Only buffers of static shape move (a size computed in the loop is not known at the entry).
"""

from __future__ import annotations

from xdsl.dialects import affine, func, gpu, memref, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation

from loopopt.dialects.loopopt import SCOPE

_LOOPS = (affine.ForOp, affine.ParallelOp, scf.ForOp, scf.ParallelOp)
_FUNCTIONS = (func.FuncOp, gpu.FuncOp)


def _loop_of(op: Operation) -> Operation | None:
    """The innermost loop around `op` within its function (its allocation scope), or None."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, _FUNCTIONS):
        if isinstance(parent, _LOOPS):
            return parent
        parent = parent.parent_op()
    return None


def _function_of(op: Operation) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, _FUNCTIONS):
        parent = parent.parent_op()
    return parent


def hoist_iteration_buffers(module: ModuleOp) -> None:
    """Move each static `memref.alloca` in a loop body to the entry of its function, pairing it
    with its loop by `loopopt.scope` (for the text handed to upstream MLIR)."""
    ids: dict[int, int] = {}  # id(loop) -> scope number
    for fn in [op for op in module.walk() if isinstance(op, _FUNCTIONS)]:
        region = fn.regions[0]
        if not region.blocks:
            continue
        entry = region.blocks.first
        assert entry is not None
        buffers = [
            op for op in fn.walk() if isinstance(op, memref.AllocaOp) and not op.dynamic_sizes
        ]
        anchor = entry.first_op
        for alloca in buffers:
            loop = _loop_of(alloca)
            if loop is None or SCOPE in alloca.attributes:
                continue
            number = ids.setdefault(id(loop), len(ids))
            loop.attributes[SCOPE] = IntegerAttr(number, i64)
            alloca.attributes[SCOPE] = IntegerAttr(number, i64)
            alloca.detach()
            if anchor is None:
                entry.add_op(alloca)
            else:
                entry.insert_op_before(alloca, anchor)


def sink_iteration_buffers(module: ModuleOp) -> None:
    """Undo `hoist_iteration_buffers`: each buffer marked `loopopt.scope = N` goes back to the
    start of the body of the loop of its function marked so; the marks are dropped (a mark with
    no partner too: the buffer then stays where it is)."""
    for fn in [op for op in module.walk() if isinstance(op, _FUNCTIONS)]:
        loops = {
            op.attributes[SCOPE]: op
            for op in fn.walk()
            if isinstance(op, _LOOPS) and SCOPE in op.attributes
        }
        last: dict[int, Operation] = {}  # id(loop) -> the buffer put in it last (keep order)
        for alloca in [op for op in fn.walk() if isinstance(op, memref.AllocaOp)]:
            mark = alloca.attributes.pop(SCOPE, None)
            loop = loops.get(mark) if mark is not None else None
            if loop is None or _function_of(alloca) is not fn:
                continue
            body = loop.regions[0].blocks.first
            assert body is not None
            alloca.detach()
            if id(loop) in last:
                body.insert_op_after(alloca, last[id(loop)])
            elif body.first_op is None:
                body.add_op(alloca)
            else:
                body.insert_op_before(alloca, body.first_op)
            last[id(loop)] = alloca
        for loop in loops.values():
            loop.attributes.pop(SCOPE, None)
