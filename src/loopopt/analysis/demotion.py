"""Where a loop's iter_arg can live in memory: the element its result is stored to.

    %0 = affine.load %A[%i, %j]                        home(k, 0) == Home(
    %1 = affine.for %k = 0 to %j iter_args(%w = %0) {      store=<affine.store %7, %A[%i, %j]>,
      … A[i, k] … A[k, j] …                                init_load=<affine.load %A[%i, %j]>)
      affine.yield %5 : f64
    }                                                  (k < j < i: neither A[i, k] nor A[k, j]
    %6 = affine.load %A[%j, %j]                         is A[i, j] in the same iteration (i, j);
    %7 = arith.divf %1, %6 : f64                        nor is A[j, j])
    affine.store %7, %A[%i, %j]

An iter_arg of an affine.for has a *home* X[f] when, in the loop's block after the loop, an
affine.store to X[f] stores the loop's result or a value computed from it (through ops without
regions or side effects; the first such store), the indices f are defined before the loop and
affine, and no other access from the loop to that store (the loop's body included) may touch
X[f] in the same iteration of the loops around (exactly, with islpy; a memref that may alias X,
an opaque op or a non-affine index counts as touching; aliasing as in analysis/dependence.py).
Then X[f] can hold the iter_arg across the loop: whatever the loop leaves there is overwritten
by the store, and nothing between reads or writes it. When the init value is a load of X[f] in
the same block before the loop with nothing between touching X[f] (`init_load`), X[f] already
holds it; otherwise it must be stored there before the loop.

Any iter_arg of a type memory holds (`storable`) can also live in a fresh scratch buffer.
The transformation is `loopopt.loops.demote`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import islpy as isl
from xdsl.dialects import affine
from xdsl.dialects.builtin import AnyFloat, IndexType, IntegerType
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.traits import is_side_effect_free

from loopopt.analysis.access import Access, Symbols, collect_accesses
from loopopt.analysis.dependence import access_map, alias


@dataclass(frozen=True)
class Home:
    """The element X[f] that can hold one iter_arg of a loop."""

    store: affine.StoreOp
    """The store to X[f] after the loop (of the result or a value computed from it)."""
    init_load: affine.LoadOp | None
    """The load of X[f] that gives the init value, when X[f] still holds it at the loop
    (no store is needed before the loop); else None."""


def storable(type_: Attribute) -> bool:
    """Whether a value of this type can be kept in a memref element."""
    return isinstance(type_, AnyFloat | IntegerType | IndexType)


def result_store(loop: affine.ForOp, position: int) -> affine.StoreOp | None:
    """The first affine.store after `loop` in its block whose value is result `position` or is
    computed from it by ops without regions or side effects; None if there is none."""
    block = loop.parent_block()
    assert block is not None
    derived: set[SSAValue] = {loop.results[position]}
    op = loop.next_op
    while op is not None:
        if isinstance(op, affine.StoreOp) and op.value in derived:
            return op
        if not op.regions and is_side_effect_free(op) and any(v in derived for v in op.operands):
            derived.update(op.results)
        op = op.next_op
    return None


def _ops_between(first: Operation, last: Operation) -> list[Operation]:
    """The ops of one block from `first` (included) to `last` (excluded)."""
    found: list[Operation] = []
    op: Operation | None = first
    while op is not None and op is not last:
        found.append(op)
        op = op.next_op
    return found


def _defined_after(value: SSAValue, loop: affine.ForOp) -> bool:
    """Whether `value` is defined by an op after `loop` in its block."""
    if not isinstance(value, OpResult):
        return False
    block: Block | None = loop.parent_block()
    if value.op.parent_block() is not block:
        return False
    op = loop.next_op
    while op is not None:
        if op is value.op:
            return True
        op = op.next_op
    return False


def _same_outer_iteration(outer: int, nt: int, params: Sequence[str]) -> isl.Map:
    """{ S[s] -> S[t] : s = t_0..t_outer-1 } (s: the `outer` loops around both)."""
    s = [f"s{k}" for k in range(outer)]
    t = [f"t{k}" for k in range(nt)]
    cons = " and ".join([f"{s[k]} = {t[k]}" for k in range(outer)] or ["true"])
    return isl.Map(
        f"[{', '.join(params)}] -> {{ S[{', '.join(s)}] -> S[{', '.join(t)}] : {cons} }}"
    )


def touching(home: Access, others: Sequence[Access], params: Sequence[str]) -> Access | None:
    """The first of `others` that may touch the element `home` accesses in the same iteration
    of the loops around `home` (each of `others` lies under those loops), or None."""
    outer = len(home.loops)
    home_map = access_map(home, params)
    for other in others:
        how = alias(home, other)
        if how is None:
            continue
        if how == "may":
            return other
        assert tuple(other.loops[:outer]) == home.loops
        pairs = home_map.apply_range(access_map(other, params).reverse())
        same = _same_outer_iteration(outer, len(other.loops), params)
        if not pairs.intersect(same).is_empty():
            return other
    return None


def home(loop: affine.ForOp, position: int) -> Home | str:
    """The `Home` of iter_arg `position` of `loop`, or why it has none (see the module
    docstring)."""
    store = result_store(loop, position)
    if store is None:
        return "its result is not stored to memory after the loop in the same block"
    if any(_defined_after(v, loop) for v in store.indices):
        return "the indices of the store of its result are computed after the loop"
    syms = Symbols()
    home_access = collect_accesses(store, syms)[0]
    between = [a for op in _ops_between(loop, store) for a in collect_accesses(op, syms)]
    init = loop.inits[position]
    load = init.op if isinstance(init, OpResult) else None
    before: list[Access] = []
    load_access: Access | None = None
    if isinstance(load, affine.LoadOp) and load.parent_block() is loop.parent_block():
        load_access = collect_accesses(load, syms)[0]
        if load.next_op is not None:
            before = [
                a for op in _ops_between(load.next_op, loop) for a in collect_accesses(op, syms)
            ]
    params = [sym.isl for sym in syms.table.values()]
    if not home_access.affine:
        return f"'{home_access.render()}', where its result is stored, is not an affine element"
    other = touching(home_access, between, params)
    if other is not None:
        how = "written" if other.is_write else "read"
        where = "in the loop" if loop.is_ancestor(other.op) else "after the loop"
        return (
            f"'{other.render()}' {how} {where} may be '{home_access.render()}', where its "
            "result is stored"
        )
    same_element = (
        load_access is not None
        and load_access.memref is home_access.memref
        and load_access.loops == home_access.loops
        and access_map(load_access, params).is_equal(access_map(home_access, params))
    )
    if same_element and touching(home_access, before, params) is None:
        assert isinstance(load, affine.LoadOp)
        return Home(store, load)
    return Home(store, None)
