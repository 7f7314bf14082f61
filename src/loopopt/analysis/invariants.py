"""Partly invariant expressions: values a nest computes again for every iteration of some loops.

    affine.for %i = 0 to 1000 {
      affine.for %k = 0 to 1200 {
        affine.for %j = 0 to 1100 {
          %a = affine.load %A[%i, %k]
          %p = arith.mulf %alpha, %a          <- depends on (i, k) only: an Invariant over
          %b = affine.load %B[%k, %j]            loops [i, k], computed 1100 times per value
          %q = arith.mulf %p, %b
          C[i, j] += %q } } }

An `Invariant` is a side-effect-free arithmetic op (of a float or integer type of a byte or
more) whose operands are, transitively, constants, values from outside the nest, other such
ops, and `affine.load`s of arrays the nest does not write (no op of the nest but an
affine.load uses them or a view of the same memref), indexed by the IVs of enclosing loops;
its `loops` are the enclosing loops whose IVs those indices use, a proper subset of the loops
around it. Its value at an iteration is then a function
of those loops' IVs alone, and reading it from an array computed before the nest is exact (the
same ops on the same values). Where the bounds of those loops use only each other's IVs, a nest
of them computes exactly the values the nest uses; else (syr2k's `A[j, k] * alpha`, j <= i) a
nest over their box computes a superset. Excluded: integer division and remainder (undefined
on a zero the nest might never divide by), ops under an `affine.if` of the nest, loads whose
indices may leave the array's bounds over the loops' box (a value the nest might never read),
and expressions of the loops' IVs themselves (index casts: nothing read from memory to save).

`invariants(nest)` lists the maximal ones (no user is an Invariant over the same loops),
outermost first; nothing here changes the IR (loops/hoist.py does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import AnyFloat, IntegerType, MemRefType
from xdsl.ir import Attribute, BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineSymExpr,
)
from xdsl.traits import is_side_effect_free

from loopopt.analysis.box import band_box
from loopopt.analysis.footprint import view_base
from loopopt.analysis.nest import defined_inside, enclosing_loops, step_of

UNSAFE = (
    arith.DivSIOp,
    arith.DivUIOp,
    arith.RemSIOp,
    arith.RemUIOp,
    arith.CeilDivSIOp,
    arith.CeilDivUIOp,
    arith.FloorDivSIOp,
)
"""Ops that may trap or be undefined on values the nest never computes with."""
ARITHMETIC_DIALECTS = ("arith.", "math.")


@dataclass(frozen=True)
class Invariant:
    """`op`'s value depends only on the IVs of `loops` (outermost first)."""

    op: Operation
    loops: tuple[affine.ForOp, ...]
    tree: tuple[Operation, ...]
    """The ops (inside the nest) that compute it, in program order, `op` last."""
    box: tuple[tuple[int, int], ...]
    """(lowest, highest) IV of each of `loops` over the nest's iterations."""
    own_bounds: bool
    """Whether the bounds of `loops` use only each other's IVs: a nest of them runs exactly
    their iterations; else a nest over `box` (on their `stride`) runs a superset."""
    executions: int
    """How many times the nest computes it (points of the box of the loops around it)."""

    @property
    def values(self) -> int:
        """How many distinct values it has (points of its loops' box)."""
        return _points(self.loops, self.box)

    @property
    def arithmetic(self) -> int:
        """Arithmetic ops of its tree (what each recomputation costs)."""
        return sum(1 for op in self.tree if not isinstance(op, affine.LoadOp))

    def saved(self) -> int:
        """Arithmetic ops that computing it once per value saves."""
        return self.arithmetic * max(0, self.executions - self.values)


def invariants(nest: affine.ForOp) -> list[Invariant]:
    """The maximal Invariants of `nest` (see the module docstring), in program order."""
    finder = _Finder(nest)
    found: dict[Operation, Invariant] = {}
    for op in nest.walk():
        if not _arithmetic(op) or not _storable(op.results[0].type) or _guarded(op, nest):
            continue
        loops = finder.depends(op.results[0])
        if not loops:
            continue
        around = enclosing_loops(op)
        around = around[around.index(nest) :]
        inner = tuple(loop for loop in around if loop in loops)
        if len(inner) == len(around):
            continue
        tree = _tree(op, nest)
        loads = [t for t in tree if isinstance(t, affine.LoadOp)]
        whole = band_box(around)
        if not loads or whole is None:
            continue
        own = band_box(inner)
        box = own or [span for loop, span in zip(around, whole, strict=True) if loop in loops]
        if not all(_in_bounds(load, inner, box) for load in loads):
            continue
        executions = _points(around, whole)
        found[op] = Invariant(op, inner, tuple(tree), tuple(box), own is not None, executions)
    return [
        inv
        for op, inv in found.items()
        if not any(
            use.operation in found and found[use.operation].loops == inv.loops
            for use in op.results[0].uses
        )
    ]


def stride(loop: affine.ForOp) -> int:
    """The step, where every IV of `loop` is its lowest plus a multiple of it (a constant
    lower bound); else 1 (IVs from a varying lower bound: i, i + 2 … and i + 1, i + 3 …)."""
    lower = loop.lowerBoundMap.data
    constant = not lower.num_dims and not lower.num_symbols and len(lower.results) == 1
    return step_of(loop) if constant else 1


def _points(loops: Sequence[affine.ForOp], box: Sequence[tuple[int, int]]) -> int:
    """Points of `box` on the strides of `loops` (at least their iterations)."""
    pairs = zip(loops, box, strict=True)
    return math.prod((hi - lo) // stride(loop) + 1 for loop, (lo, hi) in pairs)


def _guarded(op: Operation, nest: affine.ForOp) -> bool:
    """Whether something but affine.for ops lies between `op` and `nest`."""
    parent = op.parent_op()
    while parent is not None and parent is not nest:
        if not isinstance(parent, affine.ForOp):
            return True
        parent = parent.parent_op()
    return False


class _Finder:
    """Memoized: for each value of the nest, the loops its value depends on, None when it is
    not invariant material (module docstring)."""

    def __init__(self, nest: affine.ForOp) -> None:
        self.nest = nest
        self.written = _written(nest)
        self.deps: dict[SSAValue, frozenset[affine.ForOp] | None] = {}

    def depends(self, value: SSAValue) -> frozenset[affine.ForOp] | None:
        if not defined_inside(value, self.nest):
            return frozenset()
        if value not in self.deps:
            self.deps[value] = self._depends(value)
        return self.deps[value]

    def _depends(self, value: SSAValue) -> frozenset[affine.ForOp] | None:
        if not isinstance(value, OpResult):
            return None  # an IV or an iter_arg: only load indices may use IVs
        op = value.op
        if isinstance(op, arith.ConstantOp):
            return frozenset()
        if isinstance(op, affine.LoadOp):
            return self._load(op)
        if not _arithmetic(op):
            return None
        loops: frozenset[affine.ForOp] = frozenset()
        for operand in op.operands:
            inner = self.depends(operand)
            if inner is None:
                return None
            loops |= inner
        return loops

    def _load(self, op: affine.LoadOp) -> frozenset[affine.ForOp] | None:
        if view_base(op.memref) in self.written or defined_inside(op.memref, self.nest):
            return None
        loops: set[affine.ForOp] = set()
        for index in op.indices:
            if not defined_inside(index, self.nest):
                continue
            owner = _loop_of(index)
            if owner is None:
                return None
            loops.add(owner)
        return frozenset(loops)


def _loop_of(value: SSAValue) -> affine.ForOp | None:
    """The affine.for whose IV `value` is."""
    if not isinstance(value, BlockArgument) or value.index != 0:
        return None
    owner = value.block.parent_op()
    return owner if isinstance(owner, affine.ForOp) else None


def _storable(t: Attribute) -> bool:
    """Element types a buffer of hoisted values may have: floats and integers of a byte or
    more (not i1: a memref of them is not byte-addressable on every target)."""
    return isinstance(t, AnyFloat) or (isinstance(t, IntegerType) and t.width.data >= 8)


def _arithmetic(op: Operation) -> bool:
    return (
        op.name.startswith(ARITHMETIC_DIALECTS)
        and not op.regions
        and len(op.results) == 1
        and not isinstance(op, UNSAFE)
        and is_side_effect_free(op)
    )


def _written(nest: affine.ForOp) -> set[SSAValue]:
    """The memrefs (through views: their base) that an op of `nest` other than an affine.load
    uses (writes, or may)."""
    return {
        view_base(value)
        for op in nest.walk()
        if not isinstance(op, affine.LoadOp)
        for value in op.operands
        if isinstance(value.type, MemRefType)
    }


def _tree(op: Operation, nest: affine.ForOp) -> list[Operation]:
    """The ops of `nest` that `op`'s value is computed from (loads' indices aside), `op`
    included, in program order."""
    seen: set[Operation] = set()
    stack = [op]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if isinstance(current, affine.LoadOp):
            continue
        for operand in current.operands:
            if isinstance(operand, OpResult) and defined_inside(operand, nest):
                stack.append(operand.op)
    order = {o: n for n, o in enumerate(nest.walk())}
    return sorted(seen, key=order.__getitem__)


def _in_bounds(
    load: affine.LoadOp, loops: Sequence[affine.ForOp], box: Sequence[tuple[int, int]]
) -> bool:
    """Whether every index of `load` stays inside its array over the box of `loops`."""
    memref_type = load.memref.type
    assert isinstance(memref_type, MemRefType)
    ranges: list[tuple[int, int] | None] = []
    for index in load.indices:
        owner = _loop_of(index)
        ranges.append(box[loops.index(owner)] if owner in loops else None)
    amap = load.map.data
    for result, extent in zip(amap.results, memref_type.get_shape(), strict=True):
        interval = _interval(result, ranges, amap.num_dims)
        if interval is None or extent < 0 or interval[0] < 0 or interval[1] >= extent:
            return False
    return True


def _interval(
    expr: AffineExpr, ranges: Sequence[tuple[int, int] | None], num_dims: int
) -> tuple[int, int] | None:
    """The range of `expr` (sums and constant multiples of its operands) over the operands'
    `ranges` (dims, then symbols)."""
    if isinstance(expr, AffineConstantExpr):
        return (expr.value, expr.value)
    if isinstance(expr, AffineDimExpr):
        return ranges[expr.position]
    if isinstance(expr, AffineSymExpr):
        return ranges[num_dims + expr.position]
    if not isinstance(expr, AffineBinaryOpExpr):
        return None
    lhs, rhs = _interval(expr.lhs, ranges, num_dims), _interval(expr.rhs, ranges, num_dims)
    if lhs is None or rhs is None:
        return None
    if expr.kind == AffineBinaryOpKind.Add:
        return (lhs[0] + rhs[0], lhs[1] + rhs[1])
    if expr.kind == AffineBinaryOpKind.Mul:
        products = [a * b for a in lhs for b in rhs]
        return (min(products), max(products))
    return None
