"""Raising scf loops and memref accesses to their affine forms, when they are affine.

    scf.for %i = %c0 to %n step %c4 iter_args(%a = %z) { …; scf.yield %s }
      → affine.for %i = 0 to %n step 4 iter_args(%a = %z) { …; affine.yield %s }
    scf.parallel (%i, %j) = … { …; scf.reduce }   → affine.for %i { affine.for %j { … } }
    affine.parallel (%i, %j) = … { … }             → affine.for %i { affine.for %j { … } }
    memref.load %A[%i, %j + 1]   (the index an arith.addi of an IV and a constant)
      → affine.load %A[%i, %j + 1]

An index is affine (`affine_expr`) when it is built from index constants, IVs of affine.for
loops, symbols (index values defined at the top level of the function: its arguments and what
its entry block computes), `arith.addi`/`subi`, `arith.muli` by a constant and `affine.apply`.
A bound may also be an `arith.minsi` (upper) or `arith.maxsi` (lower) of affine terms: what
`mlir-opt --lower-affine` makes of `min`/`max` bounds. Each raise function returns the new op or
a one-line reason why it cannot raise; the IR is changed only when it raises.

Not checked: that the loops terminate for a negative step (a non-positive constant step is a
reason, a non-constant one too), or anything about the loop body beyond its terminator.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, arith, func, memref, scf
from xdsl.dialects.builtin import AffineMapAttr, IndexType, IntegerAttr, LocationAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineExpr, AffineMap
from xdsl.rewriter import Rewriter

from loopopt.loops.affine_maps import Bound, BoundKind, MapBuilder, set_bounds
from loopopt.loops.nest import mark_parallel


class NotAffine(Exception):
    """Why a value is not an affine function of IVs and symbols (one line)."""


def _describe(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def is_symbol(value: SSAValue) -> bool:
    """An index value defined at the top level of its function (MLIR's valid symbol)."""
    if not isinstance(value.type, IndexType):
        return False
    if isinstance(value, BlockArgument):
        block = value.block
    elif isinstance(value, OpResult):
        block = value.op.parent_block()
    else:
        return False
    return block is not None and isinstance(block.parent_op(), func.FuncOp)


def _constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def affine_expr(value: SSAValue, builder: MapBuilder) -> AffineExpr:
    """`value` as an affine expression over `builder`'s placeholders; NotAffine if it is not."""
    known = _constant(value)
    if known is not None:
        return AffineExpr.constant(known)
    owner = value.owner
    if isinstance(owner, arith.AddiOp):
        return affine_expr(owner.lhs, builder) + affine_expr(owner.rhs, builder)
    if isinstance(owner, arith.SubiOp):
        return affine_expr(owner.lhs, builder) - affine_expr(owner.rhs, builder)
    if isinstance(owner, arith.MuliOp):
        lhs = builder.simplified(affine_expr(owner.lhs, builder))
        rhs = builder.simplified(affine_expr(owner.rhs, builder))
        if isinstance(lhs, AffineConstantExpr) or isinstance(rhs, AffineConstantExpr):
            return lhs * rhs
        raise NotAffine(f"{_describe(value)} is a product of two non-constants")
    if isinstance(owner, affine.ApplyOp) and len(owner.map.data.results) == 1:
        amap = owner.map.data
        operands = [affine_expr(v, builder) for v in owner.mapOperands]
        dims, syms = operands[: amap.num_dims], operands[amap.num_dims :]
        return amap.results[0].replace_dims_and_symbols(dims, syms)
    is_iv = isinstance(value, BlockArgument) and value.index == 0
    if is_iv and isinstance(value.block.parent_op(), affine.ForOp):
        return builder.value(value)
    if is_symbol(value):
        return builder.value(value, symbol=True)
    if isinstance(value, BlockArgument) and isinstance(value.block.parent_op(), scf.ForOp):
        raise NotAffine(f"{_describe(value)} is the IV of an scf.for that stays scf")
    if isinstance(owner, Operation):
        raise NotAffine(f"{_describe(value)} is computed by {owner.name} inside a loop")
    raise NotAffine(f"{_describe(value)} is not an affine IV or symbol")


def _bound_terms(value: SSAValue, kind: BoundKind) -> list[SSAValue]:
    """The terms of a min (upper) / max (lower) bound: arith.minsi / maxsi trees, flattened."""
    owner = value.owner
    combine = arith.MinSIOp if kind == "min" else arith.MaxSIOp
    if isinstance(owner, combine):
        return _bound_terms(owner.lhs, kind) + _bound_terms(owner.rhs, kind)
    return [value]


def affine_bound(value: SSAValue, kind: BoundKind) -> Bound:
    """A loop bound (`kind` min: upper, max: lower) as a map; NotAffine if it is not affine."""
    builder = MapBuilder()
    results = [affine_expr(term, builder) for term in _bound_terms(value, kind)]
    return builder.build(results, kind)


def affine_step(value: SSAValue) -> int:
    step = _constant(value)
    if step is None:
        raise NotAffine(f"the step {_describe(value)} is not a constant")
    if step <= 0:
        raise NotAffine(f"the step {step} is not positive")
    return step


def _new_for(
    lower: Bound, upper: Bound, step: int, region: Region, inits: Sequence[SSAValue] = ()
) -> affine.ForOp:
    loop = affine.ForOp.from_region(
        [], [], list(inits), [v.type for v in inits], 0, 0, region, step
    )
    set_bounds(loop, lower, upper)
    return loop


def raise_for(loop: scf.ForOp) -> affine.ForOp:
    """`loop` as an affine.for in its place (iter_args kept); NotAffine (IR unchanged) if its
    bounds or step are not affine."""
    if not isinstance(loop.lb.type, IndexType):
        raise NotAffine(f"its induction variable is {loop.lb.type}, not index")
    lower = affine_bound(loop.lb, "max")
    upper = affine_bound(loop.ub, "min")
    step = affine_step(loop.step)
    region = Rewriter.move_region_contents_to_new_regions(loop.body)
    block = region.block
    terminator = block.last_op
    assert isinstance(terminator, scf.YieldOp)  # scf.for's verifier guarantees it
    Rewriter.replace_op(terminator, affine.YieldOp.get(*terminator.operands))
    new = _new_for(lower, upper, step, region, loop.iter_args)
    new.attributes.update(loop.attributes)
    new.location = loop.location
    Rewriter.replace_op(loop, new)
    return new


def _nest(
    bounds: Sequence[tuple[Bound, Bound, int]], body: Block, location: LocationAttr
) -> list[affine.ForOp]:
    """Nested affine.for loops, one per (lower, upper, step), outermost first, the ops of `body`
    (but its terminator) moved into the innermost and its arguments replaced by the IVs."""
    loops: list[affine.ForOp] = []
    for lower, upper, step in bounds:
        loop = _new_for(lower, upper, step, Region(Block(arg_types=[IndexType()])))
        loop.location = location
        if loops:
            loops[-1].body.block.add_op(loop)
        loops.append(loop)
    for arg, loop in zip(body.args, loops, strict=True):
        loop.body.block.args[0].name_hint = arg.name_hint
        arg.replace_all_uses_with(loop.body.block.args[0])
    innermost = loops[-1].body.block
    ops = list(body.ops)
    for op in ops[:-1]:
        op.detach()
        innermost.add_op(op)
    for loop in loops:
        loop.body.block.add_op(affine.YieldOp.get())
    return loops


def raise_scf_parallel(loop: scf.ParallelOp) -> list[affine.ForOp]:
    """`loop` as nested affine.for loops marked parallel; NotAffine (IR unchanged) if it has
    reductions or its bounds or steps are not affine."""
    if loop.initVals:
        raise NotAffine("it has reductions (init values)")
    bounds = [
        (affine_bound(lb, "max"), affine_bound(ub, "min"), affine_step(step))
        for lb, ub, step in zip(loop.lowerBound, loop.upperBound, loop.step, strict=True)
    ]
    return _replace_parallel(loop, bounds)


def _group_bound(
    amap: AffineMap,
    groups: Sequence[int],
    index: int,
    operands: Sequence[SSAValue],
    kind: BoundKind,
) -> Bound:
    start = sum(groups[:index])
    results = amap.results[start : start + groups[index]]
    builder = MapBuilder()
    exprs = builder.exprs(
        Bound(AffineMap(amap.num_dims, amap.num_symbols, results), tuple(operands))
    )
    return builder.build(exprs, kind)


def raise_affine_parallel(loop: affine.ParallelOp) -> list[affine.ForOp]:
    """`loop` as nested affine.for loops marked parallel; NotAffine (IR unchanged) if it has
    reductions."""
    if loop.res:
        raise NotAffine("it has reductions")
    lower_map, upper_map = loop.lowerBoundsMap.data, loop.upperBoundsMap.data
    num_lower = lower_map.num_dims + lower_map.num_symbols
    lower_operands = tuple(loop.map_operands[:num_lower])
    upper_operands = tuple(loop.map_operands[num_lower:])
    lower_groups = list(loop.lowerBoundsGroups.get_values())
    upper_groups = list(loop.upperBoundsGroups.get_values())
    bounds = [
        (
            _group_bound(lower_map, lower_groups, d, lower_operands, "max"),
            _group_bound(upper_map, upper_groups, d, upper_operands, "min"),
            step.value.data,
        )
        for d, step in enumerate(loop.steps)
    ]
    return _replace_parallel(loop, bounds)


def _replace_parallel(
    loop: scf.ParallelOp | affine.ParallelOp, bounds: Sequence[tuple[Bound, Bound, int]]
) -> list[affine.ForOp]:
    loops = _nest(bounds, loop.body.block, loop.location)
    for new in loops:
        mark_parallel(new)
    Rewriter.replace_op(loop, loops[0], new_results=[])
    return loops


def raise_access(op: memref.LoadOp | memref.StoreOp) -> affine.LoadOp | affine.StoreOp:
    """The affine.load/store of `op`, in its place; NotAffine (IR unchanged) if an index is not
    an affine function of IVs and symbols."""
    builder = MapBuilder()
    results = [affine_expr(index, builder) for index in op.indices]
    access = builder.build(results, access=True)
    amap = AffineMapAttr(access.map)
    if isinstance(op, memref.LoadOp):
        new: affine.LoadOp | affine.StoreOp = affine.LoadOp(
            op.memref, access.operands, amap, op.res.type
        )
    else:
        new = affine.StoreOp(op.value, op.memref, access.operands, amap)
    new.location = op.location
    Rewriter.replace_op(op, new)
    return new


_INDEX_ARITH = (
    arith.ConstantOp,
    arith.AddiOp,
    arith.SubiOp,
    arith.MuliOp,
    arith.MinSIOp,
    arith.MaxSIOp,
    affine.ApplyOp,
)


def erase_dead_index_ops(root: Operation) -> None:
    """Erase the unused constants and index arithmetic under `root` (the bounds and indices that
    raising folded into maps), so that raised loops form perfect nests again."""
    changed = True
    while changed:
        changed = False
        for op in list(root.walk()):
            if isinstance(op, _INDEX_ARITH) and all(
                isinstance(r.type, IndexType) and not r.uses for r in op.results
            ):
                Rewriter.erase_op(op)
                changed = True
