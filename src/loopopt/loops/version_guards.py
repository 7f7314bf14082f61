"""Versioning a loop body on the guards of a padded reduction (`version-guards`).

`pad-tiles` runs a reduction loop past its original bound by zeroing the factors of the
accumulation there: `arith.select (%k < %i), %a, 0.0` (loops/pad.py, tagged `loopopt.padded`).
In a triangle (symm's `k < i`, trmm's `k > i`) every factor of every step carries one, about two
instructions per FMA, although only the tiles on the diagonal need them. Between two barriers
of a loop body, the ops holding such selects are copied under an `affine.if` on their
conditions, all of them at once, without the selects; the original ops run where that does not
hold:

Before (the body of k_t, unrolled):
    %c0 = arith.cmpi slt, %k0, %i0 ...  %a0 = arith.select %c0, %x0, %zero {loopopt.padded}
    %c1 = arith.cmpi slt, %k1, %i1 ...  %a1 = arith.select %c1, %x1, %zero {loopopt.padded}
    %s = arith.addf %acc, (%a0 * %b0 + %a1 * %b1 ...)
After:
    %s2 = affine.if (%i0 - %k1 - 1 >= 0) -> f32 {      (the tightest of the conditions)
      ... %s = arith.addf %acc, (%x0 * %b0 + %x1 * %b1 ...)   affine.yield %s
    } else { ...the original ops...   affine.yield %s }

Each condition `%u < %v` (`%u >= %v`) is an affine form over values defined before the ops
(affine.apply ops and constants composed in); conditions that differ only by a constant keep
the tightest. Where the `affine.if` holds, every select would have taken its first operand, so
both versions compute the same values (exact). Where none holds and every value the ops pass
on is a chain of terms with such a select as a factor (`x + a * b`: the accumulators of the
tiles past the diagonal, which the bounding box runs), a third version runs nothing and passes
the chain's start on: the terms would all be ±0, and the original loops never ran these
iterations. The conditions may differ between the threads of a block; no barrier is ever
inside them. Selects whose condition is not of that form stay in every version.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, arith, gpu
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.traits import IsTerminator, is_side_effect_free

from loopopt.analysis.affine_maps import MapBuilder, composed, constant_difference
from loopopt.dialects.loopopt import PADDED
from loopopt.loops.guard import Guard, new_if

_SLT, _SGE = 2, 5
"""arith.cmpi predicates of the guards `pad-tiles` makes (`iv < end`, `iv >= start`)."""


def guard_select(op: Operation) -> bool:
    """An `arith.select` that `pad-tiles` made to zero a factor past a loop's bound."""
    return isinstance(op, arith.SelectOp) and PADDED in op.attributes


def _fence(op: Operation) -> bool:
    """An op no versioned copy may hold: a barrier (also nested), a GPU or async-copy op, the
    terminator."""
    if op.has_trait(IsTerminator) or op.name.startswith(("gpu.", "nvgpu.", "nvvm.")):
        return True
    return any(isinstance(inner, gpu.BarrierOp) for inner in op.walk())


def _runs(block: Block) -> list[list[Operation]]:
    """The block's ops between fences, in order."""
    runs: list[list[Operation]] = [[]]
    for op in block.ops:
        if _fence(op):
            runs.append([])
        else:
            runs[-1].append(op)
    return [run for run in runs if run]


def _condition(
    select: arith.SelectOp, builder: MapBuilder, inside: set[Operation]
) -> AffineExpr | None:
    """The select's condition as `expr >= 0` over `builder`'s placeholders, when it is a
    comparison of index values whose affine forms use nothing computed by `inside`."""
    compare = select.cond.owner
    if not isinstance(compare, arith.CmpiOp):
        return None
    predicate = compare.predicate.value.data
    if predicate not in (_SLT, _SGE) or not isinstance(compare.lhs.type, IndexType):
        return None
    known = len(builder.values)
    lhs, rhs = composed(builder, AffineMap.identity(2), [compare.lhs, compare.rhs])
    if any(v.owner in inside or not isinstance(v.type, IndexType) for v in builder.values[known:]):
        return None
    return rhs - lhs - 1 if predicate == _SLT else lhs - rhs


def _tightest(exprs: Sequence[AffineExpr], count: int) -> list[AffineExpr]:
    """`exprs` (each `>= 0`) without those implied by another that differs by a constant."""
    kept: list[AffineExpr] = []
    for expr in exprs:
        for k, other in enumerate(kept):
            difference = constant_difference(expr, other, count)
            if difference is not None:
                if difference < 0:
                    kept[k] = expr
                break
        else:
            kept.append(expr)
    return kept


def _escaping(run: Sequence[Operation], block: Block) -> list[SSAValue]:
    """The values `run` defines that ops after it use."""
    members = set(run)
    found: list[SSAValue] = []
    for op in run:
        for result in op.results:
            for use in result.uses:
                user = use.operation
                while user.parent_block() is not block:
                    parent = user.parent_op()
                    assert parent is not None
                    user = parent
                if user not in members:
                    found.append(result)
                    break
    return found


def _version(
    block: Block,
    run: Sequence[Operation],
    escaping: Sequence[SSAValue],
    guard: Guard,
    drop: set[Operation],
    skip: tuple[Guard, list[SSAValue]] | None,
) -> None:
    """Put `run` under an affine.if on `guard`: a copy without the selects `drop` (each replaced
    by its first operand) where it holds, the original ops elsewhere; with `skip` (a guard and
    the value each escaping value is where it holds), an inner affine.if on it that runs
    nothing. `escaping`: the values of `run` that ops after it use (`_escaping`)."""
    after = run[-1].next_op
    assert after is not None  # the terminator at least
    mapper: dict[SSAValue, SSAValue] = {}
    then_block = Block()
    for op in run:
        if op in drop:
            assert isinstance(op, arith.SelectOp)
            mapper[op.result] = mapper.get(op.lhs, op.lhs)
            continue
        then_block.add_op(op.clone(value_mapper=mapper))
    then_block.add_op(affine.YieldOp.get(*(mapper.get(v, v) for v in escaping)))
    _prune(then_block)
    slow = Block()
    for op in run:
        op.detach()
        slow.add_op(op)
    slow.add_op(affine.YieldOp.get(*escaping))
    else_block = slow
    if skip is not None:
        nothing = Block([affine.YieldOp.get(*skip[1])])
        inner = new_if(skip[0], nothing, slow)
        else_block = Block([inner, affine.YieldOp.get(*inner.results)])
    if_op = new_if(guard, then_block, else_block)
    block.insert_op_before(if_op, after)
    for value, result in zip(escaping, if_op.results, strict=True):
        result.name_hint = value.name_hint
        for use in list(value.uses):
            if not if_op.is_ancestor(use.operation):
                use.operation.operands[use.index] = result


def _zero_terms(value: SSAValue, drop: set[Operation], members: set[Operation]) -> SSAValue | None:
    """Where every select of `drop` yields 0, `value` equals the value this returns: a chain of
    `x + p` (ops of the run, `members`) whose terms `p` are products with a factor that is such a
    select, down to a value from outside the run; None for any other form. Adding those terms
    adds ±0; the original program, which never ran these iterations, added nothing."""
    while isinstance(value.owner, Operation) and value.owner in members:
        add = value.owner
        if not isinstance(add, arith.AddfOp | arith.AddiOp):
            return None
        for acc, term in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
            if _zeroed(term, drop):
                value = acc
                break
        else:
            return None
    return value


def _zeroed(value: SSAValue, drop: set[Operation]) -> bool:
    """`value` is a product (a tree of multiplications) with a factor among the selects `drop`."""
    owner = value.owner
    if owner in drop:
        return True
    if isinstance(owner, arith.MulfOp | arith.MuliOp):
        return _zeroed(owner.lhs, drop) or _zeroed(owner.rhs, drop)
    return False


def _skip(
    run: Sequence[Operation],
    escaping: Sequence[SSAValue],
    conditions: Sequence[AffineExpr],
    drop: set[Operation],
    builder: MapBuilder,
) -> tuple[Guard, list[SSAValue]] | None:
    """Where every condition fails (each select of `drop` yields 0), what each escaping value of
    `run` is without running it, when each is a chain of zero terms on a value from before the
    run (`_zero_terms`: trmm's and symm's tiles past the diagonal); None otherwise."""
    members = set(run)
    before: list[SSAValue] = []
    for value in escaping:
        start = _zero_terms(value, drop, members)
        if start is None:
            return None
        before.append(start)
    failing = _tightest([-c - 1 for c in conditions], len(builder.values))
    bound = builder.build(failing)
    return Guard(bound.map, bound.operands), before


def _prune(block: Block) -> None:
    """Drop the pure ops of `block` that nothing uses (the dropped selects' conditions)."""
    for op in reversed(list(block.ops)):
        if op.regions or op.has_trait(IsTerminator) or not is_side_effect_free(op):
            continue
        if not any(r.uses for r in op.results):
            op.detach()
            op.erase()


def version_guards(loop: affine.ForOp) -> int:
    """Version each run of `loop`'s body between fences that holds guard selects (see the
    module docstring); how many runs were versioned."""
    block = loop.body.block
    versioned = 0
    for run in _runs(block):
        selects = [op for op in run if guard_select(op)]
        if not selects:
            continue
        builder = MapBuilder()
        inside = {inner for op in run for inner in op.walk()}
        conditions: list[AffineExpr] = []
        drop: set[Operation] = set()
        for select in selects:
            assert isinstance(select, arith.SelectOp)
            condition = _condition(select, builder, inside)
            if condition is not None:
                conditions.append(condition)
                drop.add(select)
        if not conditions:
            continue
        escaping = _escaping(run, block)
        skip = _skip(run, escaping, conditions, drop, builder)
        bound = builder.build(_tightest(conditions, len(builder.values)))
        _version(block, run, escaping, Guard(bound.map, bound.operands), drop, skip)
        versioned += 1
    return versioned
