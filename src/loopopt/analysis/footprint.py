"""Footprints: the box of an array's elements that the accesses under a loop touch.

For a loop `L` and a memref, every affine access to it inside `L` touches, over all iterations
of the loops inside `L`, a set of elements that depends on the *context*: the IVs of `L` and the
loops around it, and index values defined outside `L` (symbols). The footprint is a bounding box
of that set with a per-dimension affine origin over the context and a constant extent:

    affine.for %it = 0 to 37 step 32 {                      // context: %it, %kt
      affine.for %kt = 0 to 23 step 8 {                     // L = %kt
        affine.for %i = %it to min(%it + 32, 37) {
          affine.for %k = %kt to min(%kt + 8, 23) { ... %A[%i, %k] ... }
    ==> A: origin (%it, %kt), extents (32, 8)
        copy_in: %it <= x0 < min(%it + 32, 37), %kt <= x1 < min(%kt + 8, 23)

The exact sets are built with islpy (an existential variable per inner IV or affine.apply/min/
max result inside `L`), projected on the array's dimensions; the origin is an affine piece of
the per-dimension minimum and the extent the maximum of (max - origin + 1) over the context;
where no piece is a lower bound over the whole context (`min(%j, 3)`), the origin is the least
value the minimum takes anywhere, a constant (a larger box, still exact in its copy regions).
`copy_in` and `copy_out` are the regions a promotion must copy: every region is clamped to the
box and to the array's bounds, so copy loops never leave either, even where the inner loops are
empty. `copy_out` covers the written elements; when it is larger than them (`copy_out_exact` is
False), `copy_in` covers the whole box so that unwritten elements are written back unchanged.
Conditions (affine.if) are ignored: their accesses count as executed, so the footprint is a
superset, and the written region of a conditional store is never taken as exact. The box of
an array with padded loads (loops/padded_access.py) covers them where they leave the array.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import islpy as isl
from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.ir.affine.affine_expr import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineSymExpr,
)

from loopopt.analysis.nest import describe_loop
from loopopt.analysis.padded import padded_load
from loopopt.diagnostics import LoopoptError

Access = affine.LoadOp | affine.StoreOp
_DERIVED = ("affine.apply", "affine.min", "affine.max")
_VIEWS = (
    "memref.subview",
    "memref.cast",
    "memref.reinterpret_cast",
    "memref.expand_shape",
    "memref.collapse_shape",
    "memref.view",
    "memref.transpose",
    "memref.memory_space_cast",
)


@dataclass(frozen=True)
class Region:
    """Elements x with max(lowers[d]) <= x[d] < min(uppers[d]) in every dimension d.

    Terms are affine over the footprint's context (dims) and the array's sizes (symbol d is the
    size of dimension d; only dynamic sizes appear). Every region lies in the box and in the
    array, on the whole context domain; terms that others imply are left out.
    """

    lowers: tuple[tuple[AffineExpr, ...], ...]
    uppers: tuple[tuple[AffineExpr, ...], ...]


@dataclass(frozen=True)
class Footprint:
    """The box an array's accesses under a loop touch, and the regions to copy in and out."""

    memref: SSAValue
    context: tuple[SSAValue, ...]
    """Dim i of every expression below is context[i] (IVs of L and outer loops, symbols)."""
    origin: tuple[AffineExpr, ...]
    extents: tuple[int, ...]
    accesses: tuple[Access, ...]
    copy_in: Region | None
    """What to copy into the buffer before L's body (None: nothing is read)."""
    copy_out: Region | None
    """What to copy back after L's body (None: nothing is written)."""
    copy_out_exact: bool
    """copy_out is exactly the set of elements written under L."""


def array_name(memref: SSAValue) -> str:
    """The name `arrays=` uses: the SSA name hint (`%A` -> "A"), else `arg<N>`/`<op name>`."""
    if memref.name_hint:
        return memref.name_hint
    if isinstance(memref, BlockArgument):
        return f"arg{memref.index}"
    return memref.owner.name if isinstance(memref.owner, Operation) else "memref"


def arrays_under(loop: affine.ForOp) -> list[SSAValue]:
    """Memrefs defined outside `loop` and used inside it, in order of first use."""
    found: list[SSAValue] = []
    for op in loop.body.walk():
        for operand in op.operands:
            memref = isinstance(operand.type, MemRefType)
            if memref and not _inside(loop, operand) and operand not in found:
                found.append(operand)
    return found


def footprint(
    loop: affine.ForOp,
    memref: SSAValue,
    pass_name: str = "promote",
    selected: Sequence[Access] | None = None,
) -> Footprint:
    """The footprint of `memref` under `loop`; a diagnostic when it is not a constant box.
    `selected`: only those of its accesses (loads: a subset of the reads of an array that is
    not written under `loop`, such as syrk's A[i, k] apart from its A[j, k])."""
    what = f"{pass_name}: '{array_name(memref)}' under loop '{describe_loop(loop)}'"
    accesses = _accesses(loop, memref, what)
    if selected is not None:
        if any(isinstance(a, affine.StoreOp) for a in accesses):
            raise LoopoptError(
                f"{what} is written there: a part of its accesses cannot be promoted apart",
                op=loop,
            )
        accesses = [a for a in accesses if a in selected]
        if not accesses:
            raise LoopoptError(f"{what}: none of the selected accesses is there", op=loop)
    _require_no_alias(loop, memref, accesses, what)
    memref_type = memref.type
    assert isinstance(memref_type, MemRefType)
    shape = [int(n) for n in memref_type.get_shape()]
    space = _Space(loop, what, shape)
    reads = [space.access_set(a) for a in accesses if isinstance(a, affine.LoadOp)]
    writes = [space.access_set(a) for a in accesses if isinstance(a, affine.StoreOp)]
    box = _Box(space, shape)
    # Padded loads (pad-tiles) may leave the array: their elements outside it are in the box
    # too (the buffer holds zeros there), so the box is fitted to the unclipped accesses.
    padded = any(_padded(a) for a in accesses)
    origin, extents = box.fit(box.known(space.parse_union(reads + writes, clip=not padded)), what)
    copy_in = box.region(box.known(space.parse_union(reads))) if reads else None
    copy_out, exact = None, True
    if writes:
        written = box.known(space.parse_union(writes))
        copy_out = box.region(written)
        stores = [a for a in accesses if isinstance(a, affine.StoreOp)]
        modeled = all(_only_loops_between(loop, store) for store in stores)
        exact = modeled and box.is_exact(copy_out, written)
    if not exact:
        copy_in = box.region(None)
    context = tuple(space.params)
    return Footprint(memref, context, origin, extents, tuple(accesses), copy_in, copy_out, exact)


def _padded(access: Access) -> bool:
    parent = access.parent_op()
    return parent is not None and padded_load(parent) is access


def _inside(loop: affine.ForOp, value: SSAValue) -> bool:
    """`value` is defined inside `loop`'s body (`loop`'s own IV is not: it is context)."""
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    return op is not None and op is not loop and loop.is_ancestor(op)


def view_base(value: SSAValue) -> SSAValue:
    """The memref that `value` is a view of (through subview, cast …), or itself."""
    while isinstance(value.owner, Operation) and value.owner.name in _VIEWS:
        value = value.owner.operands[0]
    return value


def _require_no_alias(
    loop: affine.ForOp, memref: SSAValue, accesses: Sequence[Access], what: str
) -> None:
    """Refuse when another memref under `loop` is a view of the same base and either is
    written. Distinct function arguments and allocations are assumed not to alias."""
    written = any(isinstance(a, affine.StoreOp) for a in accesses)
    for other in arrays_under(loop):
        if other is memref or view_base(other) is not view_base(memref):
            continue
        uses = [use.operation for use in other.uses if loop.is_ancestor(use.operation)]
        if written or any(not isinstance(op, affine.LoadOp) for op in uses):
            raise LoopoptError(
                f"{what} may alias '{array_name(other)}' (a view of the same memref), "
                "and one of them is written",
                op=uses[0] if uses else loop,
            )


def _accesses(loop: affine.ForOp, memref: SSAValue, what: str) -> list[Access]:
    accesses: list[Access] = []
    for use in memref.uses:
        op = use.operation
        if not loop.is_ancestor(op):
            continue
        if isinstance(op, affine.LoadOp | affine.StoreOp) and op.memref is memref:
            accesses.append(op)
        else:
            raise LoopoptError(f"{what} is accessed by '{op.name}', not an affine access", op=op)
    if not accesses:
        raise LoopoptError(f"{what} is not accessed", op=loop)
    order = {op: n for n, op in enumerate(loop.walk())}
    return sorted(accesses, key=order.__getitem__)


def isl_expr(expr: AffineExpr, dims: Sequence[str], symbols: Sequence[str]) -> str:
    """An affine expression in isl syntax, dims and symbols replaced by the given names."""
    if isinstance(expr, AffineConstantExpr):
        return str(expr.value)
    if isinstance(expr, AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, AffineSymExpr):
        return symbols[expr.position]
    assert isinstance(expr, AffineBinaryOpExpr)
    lhs, rhs = isl_expr(expr.lhs, dims, symbols), isl_expr(expr.rhs, dims, symbols)
    match expr.kind:
        case AffineBinaryOpKind.Add:
            return f"({lhs} + {rhs})"
        case AffineBinaryOpKind.Mul:  # isl wants a bare constant factor: `-2 * (x)`
            if isinstance(expr.lhs, AffineConstantExpr):
                return f"{expr.lhs.value} * ({rhs})"
            if isinstance(expr.rhs, AffineConstantExpr):
                return f"{expr.rhs.value} * ({lhs})"
            raise ValueError(f"semi-affine product {expr}")
        case AffineBinaryOpKind.FloorDiv:
            return f"floor(({lhs}) / {rhs})"
        case AffineBinaryOpKind.CeilDiv:
            return f"ceil(({lhs}) / {rhs})"
        case AffineBinaryOpKind.Mod:
            return f"(({lhs}) mod {rhs})"


class _Space:
    """IR values as isl names: context values are parameters `c<i>` (with their loops' bounds as
    global constraints), values inside L are existential variables `v<i>` with their own."""

    def __init__(self, loop: affine.ForOp, what: str, shape: Sequence[int]):
        self.loop, self.what = loop, what
        self.extents = [str(n) if n >= 0 else f"n{d}" for d, n in enumerate(shape)]
        self.sizes = [f"n{d}" for d, n in enumerate(shape) if n < 0]
        self.params: list[SSAValue] = []
        self.names: dict[SSAValue, str] = {}
        self.local_defs: dict[SSAValue, tuple[list[str], list[SSAValue]]] = {}
        self.context: list[str] = []
        self.fresh = 0

    def name(self, value: SSAValue, user: Operation) -> str:
        if value in self.names:
            return self.names[value]
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return str(owner.value.value.data)
        if not _inside(self.loop, value):
            name = self.names[value] = f"c{len(self.params)}"
            self.params.append(value)
            self.context.extend(self._definition(value, name, user)[0])
            return name
        if _is_iv(value) or isinstance(owner, Operation) and owner.name in _DERIVED:
            name = self.names[value] = f"v{len(self.local_defs)}"
            self.local_defs[value] = ([], [])
            self.local_defs[value] = self._definition(value, name, user)
            return name
        source = owner.name if isinstance(owner, Operation) else "a block argument"
        raise LoopoptError(f"{self.what} has a non-affine index (defined by {source})", op=user)

    def _definition(
        self, value: SSAValue, name: str, user: Operation
    ) -> tuple[list[str], list[SSAValue]]:
        """Constraints defining `value` (named `name`) and the values they mention."""
        owner = value.owner
        if _is_iv(value):
            loop = owner.parent_op()
            assert isinstance(loop, affine.ForOp)
            lbs = self.results(loop.lowerBoundMap.data, loop.lowerBoundOperands, loop)
            ubs = self.results(loop.upperBoundMap.data, loop.upperBoundOperands, loop)
            constraints = [f"{name} >= {lb}" for lb in lbs] + [f"{name} < {ub}" for ub in ubs]
            step = loop.step.value.data
            if step > 1:  # name = max(lbs) + step * e
                self.fresh += 1
                e, m = f"e{self.fresh}", f"m{self.fresh}"
                start = " and ".join(f"{m} >= {lb}" for lb in lbs)
                pick = " or ".join(f"{m} = {lb}" for lb in lbs)
                constraints.append(
                    f"exists ({e}, {m}: {name} = {m} + {step} * {e} and {start} and ({pick}))"
                )
            operands = [*loop.lowerBoundOperands, *loop.upperBoundOperands]
            return constraints, operands
        if isinstance(owner, Operation) and owner.name in _DERIVED:
            map_attr = owner.properties["map"]
            results = self.results(map_attr.data, owner.operands, owner)  # type: ignore[union-attr]
            if owner.name == "affine.apply":
                return [f"{name} = {results[0]}"], list(owner.operands)
            sign = "<=" if owner.name == "affine.min" else ">="
            pick = " or ".join(f"{name} = {r}" for r in results)
            return [f"{name} {sign} {r}" for r in results] + [f"({pick})"], list(owner.operands)
        return [], []

    def results(self, amap: AffineMap, operands: Sequence[SSAValue], user: Operation) -> list[str]:
        if not all(r.is_pure_affine() for r in amap.results):
            raise LoopoptError(f"{self.what} has a semi-affine index or bound ({amap})", op=user)
        names = [self.name(v, user) for v in operands]
        dims, syms = names[: amap.num_dims], names[amap.num_dims :]
        return [isl_expr(r, dims, syms) for r in amap.results]

    def access_set(self, access: Access) -> tuple[list[str], str]:
        """(the access's own constraints with x<d> = index d, its existential names)."""
        indices = self.results(access.map.data, access.indices, access)
        roots = [loop.body.block.args[0] for loop in _loops_between(self.loop, access)]
        for iv in roots:
            self.name(iv, access)
        constraints = [f"x{d} = {index}" for d, index in enumerate(indices)]
        seen: set[SSAValue] = set()
        todo = [*roots, *access.indices]
        while todo:
            value = todo.pop()
            if value in seen or value not in self.local_defs:
                continue
            seen.add(value)
            own, mentions = self.local_defs[value]
            constraints.extend(own)
            todo.extend(mentions)
        return constraints, ", ".join(self.names[v] for v in seen)

    def header(self) -> str:
        return "[" + ", ".join([*(f"c{i}" for i in range(len(self.params))), *self.sizes]) + "]"

    def context_domain(self) -> str:
        return " and ".join(["0 = 0", *self.context, *(f"{n} >= 0" for n in self.sizes)])

    def parse_union(self, sets: Sequence[tuple[list[str], str]], clip: bool = True) -> isl.Set:
        """The elements the accesses touch; within the array (the program is assumed to
        access in bounds, but for padded loads) unless not `clip`."""
        xs = ", ".join(f"x{d}" for d in range(len(self.extents)))
        inside = [f"0 <= x{d} < {n}" for d, n in enumerate(self.extents)] if clip else []
        parts: list[str] = []
        for constraints, exists in sets:
            body = " and ".join(["0 = 0", *constraints])
            part = f"exists ({exists}: {body})" if exists else body
            if part not in parts:  # a read and a write of the same element: one disjunct
                parts.append(part)
        domain = " and ".join([self.context_domain(), *inside])
        text = f"{self.header()} -> {{ [{xs}] : ({' or '.join(parts)}) and {domain} }}"
        return _parsed_set(text)


@functools.lru_cache(maxsize=1024)
def _parsed_set(text: str) -> isl.Set:
    """isl's parse of `text` (kept: the context domain of a deep nest takes long to parse, and
    the same comparisons come up again and again)."""
    return isl.Set(text)


def _scaled(value: isl.Val, factor: int) -> int:
    return int(Fraction(str(value)) * factor)


def _uses_symbols(expr: AffineExpr) -> bool:
    return any(isinstance(e, AffineSymExpr) for e in expr.dfs())


def _is_iv(value: SSAValue) -> bool:
    return (
        isinstance(value, BlockArgument)
        and value.index == 0
        and isinstance(value.owner.parent_op(), affine.ForOp)
    )


def _only_loops_between(loop: affine.ForOp, op: Operation) -> bool:
    """Only affine.for ops lie between `loop` and `op`: the set of `op`'s executions is exact
    (an affine.if, or any other region, is ignored: a superset)."""
    parent = op.parent_op()
    while parent is not None and parent is not loop:
        if not isinstance(parent, affine.ForOp):
            return False
        parent = parent.parent_op()
    return True


def _loops_between(loop: affine.ForOp, op: Operation) -> list[affine.ForOp]:
    loops: list[affine.ForOp] = []
    parent = op.parent_op()
    while parent is not None and parent is not loop:
        if isinstance(parent, affine.ForOp):
            loops.append(parent)
        parent = parent.parent_op()
    return loops


_Combine = Callable[[isl.PwAff, isl.PwAff], isl.PwAff]


def _constant_origin(low: isl.PwAff, high: isl.PwAff) -> tuple[int, AffineExpr] | None:
    """(extent, origin) of the box from the least value `low` takes anywhere to the greatest
    `high` does: the fallback where no piece of `low` is a lower bound everywhere (`min(l1, 3)`).
    Where nothing is accessed (the loops never run), one element at 0."""
    if low.domain().is_empty():
        return 1, AffineExpr.constant(0)
    least, greatest = low.min_val(), high.max_val()
    if not (least.is_int() and greatest.is_int()):
        return None
    first = least.to_python()
    return greatest.to_python() - first + 1, AffineExpr.constant(first)


class _Box:
    """Fits the box and derives clamped copy regions, proving facts over the context domain."""

    def __init__(self, space: _Space, shape: list[int]):
        self.space, self.rank, self.shape = space, len(shape), shape
        self.origin: tuple[AffineExpr, ...] = ()
        self.extents: tuple[int, ...] = ()
        self.sets: list[isl.Set] = []
        self.bounds: dict[tuple[int, int], tuple[isl.PwAff, isl.PwAff]] = {}
        self.regions: dict[int, Region] = {}

    def known(self, accessed: isl.Set) -> isl.Set:
        """`accessed`, or an equal set seen before: the reads and the writes of an update
        (`C[i, j] += …`) touch the same elements, and each set's bounds are worked out once
        (per dimension, they cost a deep nest most of its time)."""
        same = next((s for s in self.sets if s is accessed), None)
        same = same or next((s for s in self.sets if s.is_equal(accessed)), None)
        if same is not None:
            return same
        self.sets.append(accessed)
        return accessed

    def dim_bounds(self, accessed: isl.Set, d: int) -> tuple[isl.PwAff, isl.PwAff]:
        """The least and greatest element of dimension `d` of `accessed` (kept per set)."""
        key = (id(accessed), d)
        if key not in self.bounds:
            self.bounds[key] = (accessed.dim_min(d), accessed.dim_max(d))
        return self.bounds[key]

    def fit(self, whole: isl.Set, what: str) -> tuple[tuple[AffineExpr, ...], tuple[int, ...]]:
        origin: list[AffineExpr] = []
        extents: list[int] = []
        for d in range(self.rank):
            low, high = self.dim_bounds(whole, d)
            best: tuple[int, AffineExpr] | None = None
            unbounded = False
            pieces = low.get_pieces()
            for domain, piece in pieces:
                aff = piece.gist(domain).floor()
                expr, candidate = self.from_aff(aff), isl.PwAff.from_aff(aff)
                if _uses_symbols(expr):
                    continue
                # One piece is the least element itself (no isl question to ask of it).
                if len(pieces) > 1 and not low.sub(candidate).floor().min_val().is_nonneg():
                    continue
                span = high.sub(candidate).floor().max_val()
                unbounded = unbounded or not span.is_int()
                if span.is_int() and (best is None or span.to_python() + 1 < best[0]):
                    best = (span.to_python() + 1, expr)
            if best is None and not unbounded:
                best = _constant_origin(low, high)
            if best is None:
                why = "is not bounded by a constant" if unbounded else "has no affine lower bound"
                raise LoopoptError(
                    f"{what}: the footprint's extent in dimension {d} {why}", op=self.space.loop
                )
            extents.append(best[0])
            origin.append(best[1])
        self.origin, self.extents = tuple(origin), tuple(extents)
        return self.origin, self.extents

    def from_aff(self, aff: isl.Aff) -> AffineExpr:
        """An isl quasi-affine function of the parameters as an AffineExpr: the numerator
        floordiv the denominator (exact where isl's function is integral)."""
        den = aff.get_denominator_val().to_python()
        expr: AffineExpr = AffineExpr.constant(_scaled(aff.get_constant_val(), den))
        for i in range(aff.dim(isl.dim_type.param)):
            value = aff.get_coefficient_val(isl.dim_type.param, i)
            if not value.is_zero():
                coefficient = _scaled(value, den)
                expr = expr + self.term(aff.get_dim_name(isl.dim_type.param, i)) * coefficient
        for i in range(aff.dim(isl.dim_type.div)):
            coefficient = _scaled(aff.get_coefficient_val(isl.dim_type.div, i), den)
            if coefficient:
                expr = expr + self.from_aff(aff.get_div(i)) * coefficient
        return expr // den if den != 1 else expr

    def term(self, name: str) -> AffineExpr:
        if name.startswith("c"):
            return AffineExpr.dimension(int(name[1:]))
        return AffineExpr.symbol(int(name[1:]))

    def text(self, expr: AffineExpr) -> str:
        dims = [f"c{i}" for i in range(len(self.space.params))]
        return isl_expr(expr, dims, [f"n{d}" for d in range(self.rank)])

    def always(self, condition: str) -> bool:
        """`condition` holds on the whole context domain."""
        header = self.space.header()
        context = _parsed_set(f"{header} -> {{ : {self.space.context_domain()} }}")
        failing = _parsed_set(f"{header} -> {{ : not ({condition}) }}")
        return context.intersect(failing).is_empty()

    def region(self, accessed: isl.Set | None) -> Region:
        """The accessed set's bounds (or the whole box if None), clamped to box and array
        (kept per set: see `known`)."""
        key = id(accessed)
        if key not in self.regions:
            self.regions[key] = self._region(accessed)
        return self.regions[key]

    def _region(self, accessed: isl.Set | None) -> Region:
        lowers: list[tuple[AffineExpr, ...]] = []
        uppers: list[tuple[AffineExpr, ...]] = []
        for d in range(self.rank):
            size = (
                AffineExpr.constant(self.shape[d]) if self.shape[d] >= 0 else AffineExpr.symbol(d)
            )
            lows = [self.origin[d], AffineExpr.constant(0)]
            highs = [self.origin[d] + self.extents[d], size]
            if accessed is not None:
                low, high = self.dim_bounds(accessed, d)
                lows += self.pieces(low, accessed, isl.PwAff.max, 0)
                highs += self.pieces(high, accessed, isl.PwAff.min, 1)
            lowers.append(self.prune(lows, ">="))
            uppers.append(self.prune(highs, "<="))
        return Region(tuple(lowers), tuple(uppers))

    def pieces(
        self, bound: isl.PwAff, accessed: isl.Set, combine: _Combine, shift: int
    ) -> list[AffineExpr]:
        """The pieces of `bound` if it is their max (min), each plus `shift`; else none."""
        affs = [aff.gist(domain) for domain, aff in bound.get_pieces()]
        exprs = [self.from_aff(aff) for aff in affs]
        if not affs:
            return []
        if len(affs) == 1:  # the bound on its domain, which is where `accessed` is not empty
            return [e + shift for e in exprs]
        whole = functools.reduce(combine, [isl.PwAff.from_aff(a) for a in affs])
        if not whole.intersect_domain(accessed.params()).is_equal(bound):
            return []
        return [e + shift for e in exprs]

    def prune(self, terms: list[AffineExpr], tighter: str) -> tuple[AffineExpr, ...]:
        """Drop terms implied by others (`tighter` is ">=" for a max of lowers); of equal
        terms the first stays."""
        kept: list[AffineExpr] = []
        for term in terms:
            if any(self.always(f"{self.text(k)} {tighter} {self.text(term)}") for k in kept):
                continue
            kept = [
                k for k in kept if not self.always(f"{self.text(term)} {tighter} {self.text(k)}")
            ]
            kept.append(term)
        return tuple(kept)

    def is_exact(self, region: Region, written: isl.Set) -> bool:
        """The region is exactly the written set, on the whole context domain."""
        xs = ", ".join(f"x{d}" for d in range(self.rank))
        constraints = [self.space.context_domain()]
        for d in range(self.rank):
            constraints += [f"x{d} >= {self.text(t)}" for t in region.lowers[d]]
            constraints += [f"x{d} < {self.text(t)}" for t in region.uppers[d]]
        box = isl.Set(f"{self.space.header()} -> {{ [{xs}] : {' and '.join(constraints)} }}")
        return box.is_equal(written)
