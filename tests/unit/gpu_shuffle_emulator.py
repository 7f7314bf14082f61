"""Warp shuffles in the GPU emulator (gpu_emulator.py): each `nvvm.shfl.sync` becomes an
exchange through per-thread buffers between two barriers, checked as PTX specifies it.

    %r = nvvm.shfl.sync MODE %mask, %a, %b, %c
→   vals[tid] = %a; masks[tid] = %mask; gpu.barrier          (every thread sends)
    j = the source lane (PTX's formula for MODE, from %b and the clamp and segment mask of %c;
        j = the thread's own lane where PTX's predicate is false)
    %r = vals[warp base + j]; gpu.barrier                    (every thread receives)

Warps are the block's threads in linear order (x fastest), 32 at a time; the last warp of a
block whose size is no multiple of 32 has absent lanes. Where PTX leaves the result undefined,
the emulator calls `loopopt_emulator_error(code)`, which records `code` in `ERRORS` (every test
fails on a recorded error unless it takes them, conftest.py):
  1  the thread is not in its own member mask;
  2  the source lane is absent (past the block's last thread);
  3  the source lane is not in the member mask (it need not run the shuffle: inactive);
  4  a lane of the member mask is absent or ran the shuffle with another mask.
Shuffles under a thread-dependent branch are not emulated (the barriers would not be reached
alike): `emulate_shuffles` refuses them. `gpu.lane_id` becomes the linear thread id mod 32.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import llvmlite.binding as llvm
from xdsl.dialects import affine, arith, func, gpu, memref, scf
from xdsl.dialects.builtin import AffineMapAttr, IndexType, IntegerAttr, ModuleOp, i1, i32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from loopopt.analysis.divergence import Divergence
from loopopt.dialects import gpu_ext
from loopopt.dialects.nvvm import ShflSyncOp

WARP = 32
ERROR_FUNCTION = "loopopt_emulator_error"
ERRORS: list[int] = []
"""Codes of the undefined shuffles run so far (see the module docstring)."""
MESSAGES = {
    1: "the thread is not in its member mask",
    2: "the source lane is absent",
    3: "the source lane is not in the member mask",
    4: "a lane of the member mask is absent or ran the shuffle with another mask",
}


@ctypes.CFUNCTYPE(None, ctypes.c_int32)
def _record(code: int) -> None:
    ERRORS.append(code)


llvm.add_symbol(ERROR_FUNCTION, ctypes.cast(_record, ctypes.c_void_p).value)


def take_errors() -> list[str]:
    """The messages of the errors recorded so far (then forgotten)."""
    taken = [MESSAGES[code] for code in ERRORS]
    ERRORS.clear()
    return taken


def check_convergent(kernel: gpu.FuncOp) -> None:
    """Refuse shuffles under thread-dependent control (see the module docstring)."""
    divergence = Divergence(kernel)
    for op in kernel.walk():
        if isinstance(op, ShflSyncOp) and divergence.divergent_parent(op) is not None:
            raise NotImplementedError("the emulator runs no shuffle under a thread branch")


def declare_error_function(module: ModuleOp) -> None:
    if any(isinstance(op, func.FuncOp) and op.sym_name.data == ERROR_FUNCTION for op in module.ops):
        return
    declaration = func.FuncOp.external(ERROR_FUNCTION, [i32], [])
    module.body.block.add_op(declaration)


class _Ops:
    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def apply(self, expr: AffineExpr, operands: Sequence[SSAValue]) -> SSAValue:
        amap = AffineMap(len(operands), 0, (expr,))
        return self.add(affine.ApplyOp(list(operands), AffineMapAttr(amap)))

    def i32(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, i32)))

    def index(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr.from_index_int_value(value)))

    def to_i32(self, value: SSAValue) -> SSAValue:
        return self.add(arith.IndexCastOp(value, i32))

    def to_index(self, value: SSAValue) -> SSAValue:
        return self.add(arith.IndexCastOp(value, IndexType()))

    def bit(self, mask: SSAValue, lane: SSAValue) -> SSAValue:
        """Is bit `lane` (i32) of `mask` set? (i1)"""
        shifted = self.add(arith.ShRUIOp(mask, lane))
        one = self.i32(1)
        return self.add(arith.CmpiOp(self.add(arith.AndIOp(shifted, one)), one, "eq"))

    def fail_if(self, bad: SSAValue, code: int) -> None:
        constant = arith.ConstantOp(IntegerAttr(code, i32))
        then = Block()
        then.add_ops([constant, func.CallOp(ERROR_FUNCTION, [constant.result], []), scf.YieldOp()])
        self.ops.append(scf.IfOp(bad, [], Region(then)))


def emulate_shuffles(entry: Block, sizes: dict[str, int]) -> None:
    """Rewrite the shuffles (and lane ids) of the kernel body `entry`, launched on blocks of
    `sizes` threads per axis, into checked exchanges (module docstring)."""
    shuffles = [op for op in entry.walk() if isinstance(op, ShflSyncOp)]
    lane_ids = [op for op in entry.walk() if isinstance(op, gpu.LaneIdOp)]
    if not shuffles and not lane_ids:
        return
    x, y, z = sizes["x"], sizes["y"], sizes["z"]
    threads = x * y * z
    top = _Ops()
    ids = [top.add(gpu_ext.ThreadIdOp(axis)) for axis in "xyz"]
    d = [AffineExpr.dimension(k) for k in range(3)]
    tid = top.apply(d[0] + x * (d[1] + y * d[2]), ids)
    lane = top.apply(AffineExpr.dimension(0) % WARP, [tid])
    for op in lane_ids:
        op.results[0].replace_all_uses_with(lane)
        op.detach()
        op.erase()
    masks = top.add(memref.AllocaOp.get(i32, shape=[threads]))
    buffers: dict[object, SSAValue] = {}
    for shuffle in shuffles:
        t = shuffle.val.type
        if t not in buffers:
            buffers[t] = top.add(memref.AllocaOp.get(t, shape=[threads]))
    assert entry.first_op is not None
    entry.insert_ops_before(top.ops, entry.first_op)
    for shuffle in shuffles:
        _exchange(shuffle, tid, lane, threads, masks, buffers[shuffle.val.type])


def _exchange(
    op: ShflSyncOp,
    tid: SSAValue,
    lane: SSAValue,
    threads: int,
    masks: SSAValue,
    values: SSAValue,
) -> None:
    send = [
        memref.StoreOp.get(op.val, values, [tid]),
        memref.StoreOp.get(op.thread_mask, masks, [tid]),
        gpu_ext.BarrierOp(),
    ]
    o = _Ops()
    mask = op.thread_mask
    lane32 = o.to_i32(lane)
    base = o.apply((AffineExpr.dimension(0) // WARP) * WARP, [tid])
    o.fail_if(o.add(arith.XOrIOp(o.bit(mask, lane32), o.add(_true()))), 1)
    source = _source_lane(o, op.kind.data, lane32, op.offset, op.mask_and_clamp)
    src = o.apply(AffineExpr.dimension(0) + AffineExpr.dimension(1), [base, o.to_index(source)])
    present = o.add(arith.CmpiOp(src, o.index(threads), "ult"))
    o.fail_if(o.add(arith.XOrIOp(present, o.add(_true()))), 2)
    o.fail_if(o.add(arith.XOrIOp(o.bit(mask, source), o.add(_true()))), 3)
    o.fail_if(_others_disagree(o, mask, base, tid, threads, masks), 4)
    valid = o.add(arith.AndIOp(present, o.bit(mask, source)))
    read_at = o.add(arith.SelectOp(valid, src, tid))
    result = o.add(memref.LoadOp.get(values, [read_at]))
    block = op.parent_block()
    assert block is not None
    block.insert_ops_before([*send, *o.ops, gpu_ext.BarrierOp()], op)
    op.res.replace_all_uses_with(result)
    op.detach()
    op.erase()


def _true() -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(1, i1))


def _source_lane(o: _Ops, mode: str, lane: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
    """PTX's j: the lane whose value a thread reads (its own where the predicate is false)."""
    thirty_one = o.i32(WARP - 1)
    bval = o.add(arith.AndIOp(b, thirty_one))
    cval = o.add(arith.AndIOp(c, thirty_one))
    segmask = o.add(arith.AndIOp(o.add(arith.ShRUIOp(c, o.i32(8))), thirty_one))
    outside = o.add(arith.XOrIOp(segmask, o.i32(-1)))
    max_lane = o.add(
        arith.OrIOp(o.add(arith.AndIOp(lane, segmask)), o.add(arith.AndIOp(cval, outside)))
    )
    min_lane = o.add(arith.AndIOp(lane, segmask))
    if mode == "up":
        j = o.add(arith.SubiOp(lane, bval))
        valid = o.add(arith.CmpiOp(j, max_lane, "sge"))
    else:
        if mode == "down":
            j = o.add(arith.AddiOp(lane, bval))
        elif mode == "bfly":
            j = o.add(arith.XOrIOp(lane, bval))
        else:  # idx
            j = o.add(arith.OrIOp(min_lane, o.add(arith.AndIOp(bval, outside))))
        valid = o.add(arith.CmpiOp(j, max_lane, "sle"))
    return o.add(arith.SelectOp(valid, j, lane))


def _others_disagree(
    o: _Ops, mask: SSAValue, base: SSAValue, tid: SSAValue, threads: int, masks: SSAValue
) -> SSAValue:
    """Some lane named in `mask` is absent or sent another mask (i1)."""
    body = Block(arg_types=[IndexType(), i1])
    inner = _Ops()
    lane, seen = body.args
    member = inner.bit(mask, inner.to_i32(lane))
    other = inner.apply(AffineExpr.dimension(0) + AffineExpr.dimension(1), [base, lane])
    present = inner.add(arith.CmpiOp(other, inner.index(threads), "ult"))
    theirs = inner.add(memref.LoadOp.get(masks, [inner.add(arith.SelectOp(present, other, tid))]))
    same = inner.add(arith.CmpiOp(theirs, mask, "eq"))
    fine = inner.add(arith.AndIOp(present, same))
    wrong = inner.add(arith.AndIOp(member, inner.add(arith.XOrIOp(fine, inner.add(_true())))))
    any_wrong = inner.add(arith.OrIOp(seen, wrong))
    body.add_ops([*inner.ops, affine.YieldOp.get(any_wrong)])
    false = o.add(arith.ConstantOp(IntegerAttr(0, i1)))
    loop = affine.ForOp.from_region([], [], [false], [i1], 0, WARP, Region(body))
    return o.add(loop)
