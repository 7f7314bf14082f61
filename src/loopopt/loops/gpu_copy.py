"""Spreading a copy nest of `promote` over the threads of a block, coalesced.

Before (block-level code of a kernel, 16x16 threads):
    affine.for %a0 = 0 to min (32, 100 - %i_t) {
      affine.for %a1 = 0 to min (8, 70 - %k_t) {
        %v = affine.load %A[%i_t + %a0, %k_t + %a1]
        affine.store %v, %A_shared[%a0, %a1] } }        (loopopt.copy, 32x8 = 256 elements)
After:
    %l = affine.apply (d0 + d1 * 16)(%tx, %ty)         (256 threads: one element each)
    %a0 = affine.apply (d0 floordiv 8)(%l)
    %a1 = affine.apply (d0 mod 8)(%l)
    affine.if (%a0 < 100 - %i_t, %a1 < 70 - %k_t) {     (loopopt.mapping = "threads")
      %v = affine.load %A[%i_t + %a0, %k_t + %a1]
      affine.store %v, %A_shared[%a0, %a1] }

The box of the copy nest (each loop's trip count bounded by a constant: its extent E_d) is
numbered row-major, l = sum(c_d * prod(E_{>d})), and element l goes to linear thread
l mod T (T threads; the linear id is tx + bdx * ty + bdx * bdy * tz): consecutive threads of a
warp copy consecutive elements of the innermost, contiguous dimension. More elements than
threads: `affine.for %r = 0 to ceildiv(E, T)` with l = tid + r * T (a constant trip count:
`loop-unroll{unroll-full loop=A_copy_in}` issues all of a thread's loads before its stores;
l < E is guarded when T does not divide E). With a vector width V that divides the innermost
extent, thread t takes the V consecutive elements l = (t + r * T) * V + v, v = 0 .. V-1
(a loop the caller unrolls): their loads and stores are adjacent, so LLVM's load-store vectorizer
makes 128-bit accesses of them where it can prove the alignment (kernel pointer parameters
are `align 16` then; the launch checks it). The copy loops' own bounds become the guard (left
out where they always hold). Not checked here: that the copy's iterations are independent (they
are for `promote`'s copies: each element once).
"""

from __future__ import annotations

import math

from xdsl.dialects import affine
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import COPY, LOOP_NAME, MAPPING
from loopopt.loops.affine_maps import Bound, BoundBuilder, lower_bound, upper_bound
from loopopt.loops.bounds import new_loop
from loopopt.loops.gpu_map import KernelIds, affine_if, index_value, move_body
from loopopt.loops.gpu_plan import max_trip_count, upper_always_holds
from loopopt.loops.nest import describe_loop, iv, loop_name, only_child_loop, step_of


def copy_loops(nest: affine.ForOp) -> list[affine.ForOp]:
    """The perfect chain of copy loops starting at `nest`, outermost first."""
    loops = [nest]
    child = only_child_loop(nest)
    while child is not None and COPY in child.attributes:
        loops.append(child)
        child = only_child_loop(child)
    return loops


def copy_name(nest: affine.ForOp) -> str:
    """`A_copy_in` for the nest whose outer loop is `A_copy_in_0`."""
    name = loop_name(nest) or "copy"
    return name[: -len("_0")] if name.endswith("_0") else name


def spread_copy(
    nest: affine.ForOp, ids: KernelIds, pass_name: str, vector: int = 1
) -> affine.ForOp | None:
    """Replace the copy nest `nest` by its iterations spread over the block's threads; with
    `vector` > 1 dividing the innermost extent, each thread takes `vector` consecutive
    elements at a time (see the module docstring) in a loop over them that is returned, for
    the caller to unroll (`unroll_full`) once the barriers are placed."""
    loops = copy_loops(nest)
    extents: list[int] = []
    for loop in loops:
        trip = max_trip_count(loop)
        if trip is None:
            raise LoopoptError(
                f"{pass_name}: cannot spread copy loop '{describe_loop(loop)}' over threads: "
                "its trip count has no constant bound",
                op=loop,
            )
        extents.append(trip)
    width = vector if vector > 1 and extents[-1] % vector == 0 else 1
    total, threads = math.prod(extents), ids.total()
    groups = total // width
    parent = nest.parent_block()
    assert parent is not None
    name = copy_name(nest)
    builder = BoundBuilder()
    linear = ids.linear(builder)
    marked: Operation | None = None
    if groups > threads:
        rounds = -(-groups // threads)
        spread = new_loop(Bound.constant(0), Bound.constant(rounds), 1)
        parent.insert_op_before(spread, nest)
        round_index = iv(spread)
        if SSAValue.is_valid_name(f"{name}_r"):
            round_index.name_hint = f"{name}_r"
        start = index_value(builder, [linear + builder.dim(round_index) * threads], f"{name}_l")
        container, anchor = spread.body.block, spread.body.block.last_op
        assert anchor is not None
        container.insert_op_before(start, anchor)
        element = start.results[0]
        marked = spread
    else:
        start = index_value(builder, [linear], f"{name}_l")
        parent.insert_op_before(start, nest)
        container, anchor, element = parent, nest, start.results[0]
    assert anchor is not None
    lanes: affine.ForOp | None = None
    if width > 1:
        lanes = new_loop(Bound.constant(0), Bound.constant(width), 1)
        container.insert_op_before(lanes, anchor)
        group_builder = BoundBuilder()
        first = index_value(group_builder, [group_builder.dim(element) * width], f"{name}_e")
        container.insert_op_before(first, lanes)
        container, anchor = lanes.body.block, lanes.body.block.last_op
        assert anchor is not None
        element = first.results[0]
    coordinates = _coordinates(loops, extents, element, iv(lanes) if lanes else None)
    for op in coordinates:
        container.insert_op_before(op, anchor)
    guard_builder = BoundBuilder()
    checks: list[AffineExpr] = []
    if groups % threads:
        checks.append(AffineExpr.constant(total - 1) - guard_builder.dim(element))
    for loop, extent, op in zip(loops, extents, coordinates, strict=True):
        here = guard_builder.dim(op.results[0])
        for r, high in enumerate(guard_builder.results_of(upper_bound(loop))):
            if not upper_always_holds(loop, r, extent):
                checks.append(high - here - 1)
    target, before = container, anchor
    if checks:
        guard = affine_if(guard_builder, checks)
        container.insert_op_before(guard, anchor)
        target = guard.then_region.block
        before = target.last_op
        assert before is not None
        marked = marked or guard
    for loop, op in zip(loops[:-1], coordinates[:-1], strict=True):
        iv(loop).replace_all_uses_with(op.results[0])
    move_body(loops[-1], coordinates[-1].results[0], target, before)
    if marked is not None:
        marked.attributes[LOOP_NAME] = StringAttr(name)
        marked.attributes[MAPPING] = StringAttr("threads")
    nest.detach()
    nest.erase()
    return lanes


def _coordinates(
    loops: list[affine.ForOp], extents: list[int], element: SSAValue, lane: SSAValue | None
) -> list[Operation]:
    """c_d = lb_d + ((l floordiv prod(E_{>d})) mod E_d) * step_d, one op per copy loop; a
    `lane` is added to the innermost index (l is then the first element of a vector that
    the innermost extent holds whole, so the lanes share the other coordinates)."""
    ops: list[Operation] = []
    for d, loop in enumerate(loops):
        builder = BoundBuilder()
        index = builder.dim(element)
        stride = math.prod(extents[d + 1 :])
        if stride != 1:
            index = index // stride
        if d > 0:
            index = index % extents[d]
        if lane is not None and d == len(loops) - 1:
            index = index + builder.dim(lane)
        lows = [e + index * step_of(loop) for e in builder.results_of(lower_bound(loop))]
        name = iv(loop).name_hint
        ops.append(index_value(builder, lows, name))
    return ops
