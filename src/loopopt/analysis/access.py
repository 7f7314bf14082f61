"""The memory accesses of a loop nest, as affine functions of the enclosing loops' IVs.

    affine.for %i = 1 to 8 {                      Access(store C[i - 1, 2*i], loops=(i,),
      %t = affine.apply (d0) -> (d0 * 2)(%i)  →          indices=(i - 1, 2*i),
      affine.store %v, %C[%i - 1, %t]                     domain={i - 1 >= 0, 7 - i >= 0})
    }

Every affine.load/store (and memref.load/store, atomic_rmw, copy, func.call) under a root op
becomes an `Access`: the memref, read or write, the enclosing affine.for loops (outermost
first), one affine index per memref dimension (None where an index is not an affine function of
IVs and symbols: a loaded value, an scf IV …), its pre-order position (textual order) and its
iteration domain as affine constraints (loop bounds, strides, affine.if conditions). Whatever
cannot be expressed is left out of the domain, which only over-approximates the dependences.
affine.vector_load/store have their last index unknown (a vector covers a range); any other op
with memref operands reads and/or writes the whole memref, as its memory effects say (both when
they are unknown).

Symbols are index values defined outside every affine.for (function arguments; constants are
folded; affine.apply and arith.addi/subi/muli on affine values are composed). A func.call is an
opaque access (memref None) that may read and write any memory, and so is an op of a dialect
loopopt does not know (`--allow-unregistered-dialect`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import affine, arith, func, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, UnregisteredOp
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.ir.affine.affine_set import AffineConstraintKind
from xdsl.traits import IsTerminator, MemoryEffectKind, get_effects

from loopopt.analysis.nest import enclosing_loops, loop_name
from loopopt.dialects import affine_ext


@dataclass(frozen=True)
class Dim:
    """The IV of the enclosing loop at `depth` (0 = outermost)."""

    depth: int


@dataclass(frozen=True)
class Sym:
    """A loop-invariant index value: `isl` is its parameter name, `pretty` its SSA name."""

    isl: str
    pretty: str


@dataclass(frozen=True)
class Div:
    """`floor`, `ceil` or `mod` of an affine expression by a positive constant."""

    kind: str
    arg: Aff
    divisor: int


Term = Dim | Sym | Div


@dataclass(frozen=True)
class Aff:
    """sum(coefficient * term) + const."""

    terms: tuple[tuple[Term, int], ...] = ()
    const: int = 0

    def __add__(self, other: Aff) -> Aff:
        coeffs = dict(self.terms)
        for term, c in other.terms:
            coeffs[term] = coeffs.get(term, 0) + c
        return Aff(tuple((t, c) for t, c in coeffs.items() if c), self.const + other.const)

    def scale(self, k: int) -> Aff:
        if k == 0:
            return Aff()
        return Aff(tuple((t, c * k) for t, c in self.terms), self.const * k)

    def is_const(self) -> bool:
        return not self.terms

    def isl(self, dims: Sequence[str]) -> str:
        parts = [f"{c}*({_term_isl(t, dims)})" for t, c in self.terms]
        return " + ".join([*parts, str(self.const)])

    def pretty(self, dims: Sequence[str]) -> str:
        text = ""
        for term, c in self.terms:
            name = _term_pretty(term, dims)
            mag = name if abs(c) == 1 else f"{abs(c)}*{name}"
            text += ("-" if c < 0 else "") + mag if not text else (" - " if c < 0 else " + ") + mag
        if not text:
            return str(self.const)
        if self.const:
            text += f" - {-self.const}" if self.const < 0 else f" + {self.const}"
        return text


def _term_isl(term: Term, dims: Sequence[str]) -> str:
    if isinstance(term, Dim):
        return dims[term.depth]
    if isinstance(term, Sym):
        return term.isl
    inner = term.arg.isl(dims)
    if term.kind == "mod":
        return f"(({inner}) mod {term.divisor})"
    return f"{term.kind}(({inner})/{term.divisor})"


def _term_pretty(term: Term, dims: Sequence[str]) -> str:
    if isinstance(term, Dim):
        return dims[term.depth]
    if isinstance(term, Sym):
        return term.pretty
    op = {"mod": "mod", "floor": "floordiv", "ceil": "ceildiv"}[term.kind]
    return f"({term.arg.pretty(dims)} {op} {term.divisor})"


def _var(term: Term) -> Aff:
    return Aff(((term, 1),))


def _addends(expr: AffineExpr) -> list[AffineExpr]:
    """The terms of a chain of additions, left to right."""
    found: list[AffineExpr] = []
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, AffineBinaryOpExpr) and e.kind == AffineBinaryOpKind.Add:
            todo += [e.rhs, e.lhs]
        else:
            found.append(e)
    return found


def aff_sum(parts: Sequence[Aff]) -> Aff:
    """The sum of `parts`, in one pass."""
    coeffs: dict[Term, int] = {}
    const = 0
    for part in parts:
        for term, c in part.terms:
            coeffs[term] = coeffs.get(term, 0) + c
        const += part.const
    return Aff(tuple((t, c) for t, c in coeffs.items() if c), const)


def expr_aff(
    expr: AffineExpr, dims: Sequence[Aff | None], syms: Sequence[Aff | None]
) -> Aff | None:
    """`expr` with its dims/symbols replaced by the given affine forms; None if not affine."""
    if isinstance(expr, AffineConstantExpr):
        return Aff((), expr.value)
    if isinstance(expr, AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, AffineSymExpr):
        return syms[expr.position]
    assert isinstance(expr, AffineBinaryOpExpr)
    if expr.kind == AffineBinaryOpKind.Add:  # a sum of n terms at once (pairwise: n² work)
        parts = [expr_aff(e, dims, syms) for e in _addends(expr)]
        known = [p for p in parts if p is not None]
        return aff_sum(known) if len(known) == len(parts) else None
    lhs, rhs = expr_aff(expr.lhs, dims, syms), expr_aff(expr.rhs, dims, syms)
    if lhs is None or rhs is None:
        return None
    if expr.kind == AffineBinaryOpKind.Mul:
        if rhs.is_const():
            return lhs.scale(rhs.const)
        return rhs.scale(lhs.const) if lhs.is_const() else None
    if not rhs.is_const() or rhs.const <= 0:
        return None
    kind = {
        AffineBinaryOpKind.Mod: "mod",
        AffineBinaryOpKind.FloorDiv: "floor",
        AffineBinaryOpKind.CeilDiv: "ceil",
    }[expr.kind]
    if lhs.is_const():
        d, v = rhs.const, lhs.const
        return Aff((), {"mod": v % d, "floor": v // d, "ceil": -(-v // d)}[kind])
    return _var(Div(kind, lhs, rhs.const))


@dataclass
class Symbols:
    """Loop-invariant index values met while collecting, shared by all accesses of one nest."""

    table: dict[SSAValue, Sym] = field(default_factory=dict[SSAValue, Sym])

    def get(self, value: SSAValue) -> Sym:
        if value not in self.table:
            n = len(self.table)
            self.table[value] = Sym(f"p{n}", value.name_hint or f"s{n}")
        return self.table[value]


def _defined_in_loop(value: SSAValue) -> bool:
    op = value.owner if isinstance(value, OpResult) else value.owner.parent_op()
    while op is not None:
        if isinstance(op, affine.ForOp):
            return True
        op = op.parent_op()
    return False


def value_aff(value: SSAValue, loops: Sequence[affine.ForOp], syms: Symbols) -> Aff | None:
    """`value` as an affine form over the IVs of `loops` and symbols; None if it is not one."""
    if isinstance(value, BlockArgument):
        owner = value.owner.parent_op()
        if isinstance(owner, affine.ForOp) and value.index == 0:
            for depth, loop in enumerate(loops):
                if loop is owner:
                    return _var(Dim(depth))
            return None
    elif isinstance(value.owner, affine.ApplyOp):
        apply = value.owner
        return map_results(apply.map.data, apply.mapOperands, loops, syms)[0]
    elif isinstance(value.owner, arith.AddiOp | arith.SubiOp | arith.MuliOp):
        return _arith_aff(value.owner, loops, syms)
    elif isinstance(value.owner, arith.ConstantOp):
        attr = value.owner.value
        return Aff((), attr.value.data) if isinstance(attr, IntegerAttr) else None
    if _defined_in_loop(value):
        return None
    return _var(syms.get(value))


def _arith_aff(
    op: arith.AddiOp | arith.SubiOp | arith.MuliOp, loops: Sequence[affine.ForOp], syms: Symbols
) -> Aff | None:
    lhs, rhs = value_aff(op.lhs, loops, syms), value_aff(op.rhs, loops, syms)
    if lhs is None or rhs is None:
        return None
    if isinstance(op, arith.AddiOp):
        return lhs + rhs
    if isinstance(op, arith.SubiOp):
        return lhs + rhs.scale(-1)
    if rhs.is_const():
        return lhs.scale(rhs.const)
    return rhs.scale(lhs.const) if lhs.is_const() else None


def map_results(
    amap: AffineMap,
    operands: Sequence[SSAValue],
    loops: Sequence[affine.ForOp],
    syms: Symbols,
) -> list[Aff | None]:
    """The results of `amap` applied to `operands`, each an affine form or None."""
    vals = [value_aff(v, loops, syms) for v in operands]
    dims, symbols = vals[: amap.num_dims], vals[amap.num_dims :]
    return [expr_aff(r, dims, symbols) for r in amap.results]


@dataclass(frozen=True)
class Constraint:
    """`aff >= 0`, or `aff == 0` when `eq`."""

    aff: Aff
    eq: bool = False

    def isl(self, dims: Sequence[str]) -> str:
        return f"{self.aff.isl(dims)} {'=' if self.eq else '>='} 0"


@dataclass(frozen=True, eq=False)
class Access:
    """One memory access of a loop nest."""

    op: Operation
    memref: SSAValue | None
    """The memref accessed; None for an opaque op (a call) that may touch any memory."""
    is_write: bool
    loops: tuple[affine.ForOp, ...]
    indices: tuple[Aff | None, ...]
    order: int
    domain: tuple[Constraint, ...]

    @property
    def affine(self) -> bool:
        return self.memref is not None and all(i is not None for i in self.indices)

    def loop_names(self) -> list[str]:
        return [loop_name(loop) or f"i{d}" for d, loop in enumerate(self.loops)]

    def render(self) -> str:
        """`A[i - 1, j + 1]`, with loops by name and `?` for a non-affine index."""
        if self.memref is None:
            return (
                f"call @{self.op.callee.string_value()}"
                if isinstance(self.op, func.CallOp)
                else self.op.name
            )
        names = self.loop_names()
        index = ", ".join("?" if i is None else i.pretty(names) for i in self.indices)
        return f"{memref_name(self.memref)}[{index}]"


def memref_name(value: SSAValue) -> str:
    if value.name_hint:
        return value.name_hint
    if isinstance(value, BlockArgument):
        return f"arg{value.index}"
    return "memref"


def _bound_results(
    loop: affine.ForOp, upper: bool, syms: Symbols, loops: Sequence[affine.ForOp]
) -> list[Aff | None]:
    """Results of a loop bound (`loops`: those around `loop`); an operand from affine.min (upper)
    / affine.max (lower) that is a whole result is expanded into that op's results."""
    amap = (loop.upperBoundMap if upper else loop.lowerBoundMap).data
    operands = loop.upperBoundOperands if upper else loop.lowerBoundOperands
    results: list[Aff | None] = []
    for expr in amap.results:
        pos = None
        if isinstance(expr, AffineDimExpr):
            pos = expr.position
        elif isinstance(expr, AffineSymExpr):
            pos = amap.num_dims + expr.position
        owner = operands[pos].owner if pos is not None else None
        if isinstance(owner, affine.MinOp if upper else affine_ext.MaxOp):
            results += map_results(owner.map.data, owner.operands, loops, syms)
        else:
            dims = [value_aff(v, loops, syms) for v in operands[: amap.num_dims]]
            symbols = [value_aff(v, loops, syms) for v in operands[amap.num_dims :]]
            results.append(expr_aff(expr, dims, symbols))
    return results


def _loop_domain(
    loop: affine.ForOp, syms: Symbols, outer: Sequence[affine.ForOp]
) -> list[Constraint]:
    """The constraints on the IV of `loop` (`outer`: the loops around it, outermost first)."""
    iv = _var(Dim(len(outer)))
    lower = _bound_results(loop, False, syms, outer)
    upper = _bound_results(loop, True, syms, outer)
    cons = [Constraint(iv + lb.scale(-1)) for lb in lower if lb is not None]
    cons += [Constraint(ub + iv.scale(-1) + Aff((), -1)) for ub in upper if ub is not None]
    step = loop.step.value.data
    if step > 1 and len(lower) == 1 and lower[0] is not None:
        cons.append(Constraint(_var(Div("mod", iv + lower[0].scale(-1), step)), eq=True))
    return cons


def negatable(op: affine.IfOp) -> bool:
    """The condition is one inequality, so its else-region has an exact condition too."""
    constraints = op.condition.data.constraints
    return len(constraints) == 1 and constraints[0].kind != AffineConstraintKind.eq


def _if_domain(op: Operation, loops: Sequence[affine.ForOp], syms: Symbols) -> list[Constraint]:
    """Conditions of the affine.if ops whose then-region holds `op`, and the negated condition
    of those whose else-region holds it where the condition is one inequality (`negatable`;
    other else-regions: none)."""
    cons: list[Constraint] = []
    child, parent = op, op.parent_op()
    while parent is not None:
        if isinstance(parent, affine.IfOp):
            region = child.parent_region()
            negated = region is parent.else_region and negatable(parent)
            if region is parent.then_region or negated:
                cons += _conditions(parent, loops, syms, negated)
        child, parent = parent, parent.parent_op()
    return cons


def _conditions(
    op: affine.IfOp, loops: Sequence[affine.ForOp], syms: Symbols, negated: bool
) -> list[Constraint]:
    aset = op.condition.data
    vals = [value_aff(v, loops, syms) for v in op.args]
    dims, symbols = vals[: aset.num_dims], vals[aset.num_dims :]
    cons: list[Constraint] = []
    for c in aset.constraints:
        lhs, rhs = expr_aff(c.lhs, dims, symbols), expr_aff(c.rhs, dims, symbols)
        if lhs is None or rhs is None:
            continue
        if c.kind == AffineConstraintKind.le:
            lhs, rhs = rhs, lhs
        form = lhs + rhs.scale(-1)  # form >= 0 (or == 0)
        if negated:  # not (form >= 0): -form - 1 >= 0
            form = form.scale(-1) + Aff(const=-1)
        cons.append(Constraint(form, c.kind == AffineConstraintKind.eq))
    return cons


_KIND = {False: MemoryEffectKind.READ, True: MemoryEffectKind.WRITE}
READ, WRITE = _KIND[False], _KIND[True]

Touch = tuple[SSAValue | None, bool, Sequence[SSAValue] | None, AffineMap | None]


def _touches(op: Operation) -> list[Touch]:
    """(memref, is_write, index operands, affine map or None) for each access `op` makes."""
    if isinstance(op, affine.LoadOp | affine.StoreOp | affine.VectorLoadOp | affine.VectorStoreOp):
        write = isinstance(op, affine.StoreOp | affine.VectorStoreOp)
        return [(op.memref, write, op.indices, op.map.data)]
    if isinstance(op, memref.LoadOp | memref.StoreOp):
        return [(op.memref, isinstance(op, memref.StoreOp), op.indices, None)]
    if isinstance(op, memref.AtomicRMWOp):
        return [(op.memref, False, op.indices, None), (op.memref, True, op.indices, None)]
    if isinstance(op, memref.CopyOp):
        return [(op.source, False, None, None), (op.destination, True, None, None)]
    if isinstance(op, func.CallOp | UnregisteredOp):  # may read and write any memory
        return [(None, False, None, None), (None, True, None, None)]
    mems = [v for v in op.operands if isinstance(v.type, MemRefType)]
    if op.regions or not mems or op.has_trait(IsTerminator):
        return []
    effects = get_effects(op)  # vector loads/stores, unknown ops: the whole memref
    kinds = {e.kind for e in effects} if effects is not None else {READ, WRITE}
    return [
        (m, write, None, None) for m in mems for write in (False, True) if _KIND[write] in kinds
    ]


def _rank(value: SSAValue | None) -> int:
    typ = value.type if value is not None else None
    return typ.get_num_dims() if isinstance(typ, MemRefType) else 0


def collect_accesses(root: Operation, syms: Symbols | None = None) -> list[Access]:
    """The accesses under `root` (inclusive), in textual order."""
    syms = syms if syms is not None else Symbols()
    accesses: list[Access] = []
    loop_domains: dict[int, list[Constraint]] = {}  # by id: each loop's, worked out once
    for order, op in enumerate(root.walk()):
        touches = _touches(op)
        if not touches:
            continue
        loops = tuple(enclosing_loops(op))
        domain: list[Constraint] = []
        for depth, loop in enumerate(loops):
            if id(loop) not in loop_domains:
                loop_domains[id(loop)] = _loop_domain(loop, syms, loops[:depth])
            domain += loop_domains[id(loop)]
        domain += _if_domain(op, loops, syms)
        for mem, is_write, operands, amap in touches:
            if amap is not None and operands is not None:
                indices = tuple(map_results(amap, operands, loops, syms))
                if isinstance(op, affine.VectorLoadOp | affine.VectorStoreOp):
                    indices = (*indices[:-1], None)  # a vector covers a range
            elif operands is not None:
                indices = tuple(value_aff(v, loops, syms) for v in operands)
            else:
                indices = (None,) * _rank(mem)
            accesses.append(Access(op, mem, is_write, loops, indices, order, tuple(domain)))
    return accesses
