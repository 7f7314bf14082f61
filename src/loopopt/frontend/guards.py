"""Where the branch of an if may run, as an isl set over the loops around an access.

    for i in range(n):
        if i == 0 or i == n - 1 or A[i] < 0:  the then branch may run for any i (A[i] < 0
            ...                               is data); the else branch only where i != 0
        else:                                 and i != n - 1: B[i] reads A in bounds
            B[i] = A[i - 1] + A[i + 1]

The exact access analysis puts the conditions of affine.if then-branches into an access's
domain; this adds the others: scf.if conditions built of cmpi on affine values with and/or/
not, also through the ifs that short-circuit them, and affine.if else-branches. Each
condition is approximated from both sides (where it surely holds, where it may hold), so a
data-dependent part never makes a branch look narrower than it is.
"""

from __future__ import annotations

import islpy as isl
from xdsl.dialects import affine, arith, scf
from xdsl.dialects.arith import CMPI_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, OpResult, SSAValue

from loopopt.analysis.access import Access, Aff, Symbols, expr_aff, value_aff

_RELATIONS = {"eq": "=", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">="}


def guards_of(access: Access) -> list[tuple[Operation, bool]]:
    """The ifs around an access whose condition the exact access analysis leaves out: scf.if
    (then or else branch) and affine.if else branches; with True for a then branch."""
    found: list[tuple[Operation, bool]] = []
    child, parent = access.op, access.op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.IfOp):
            found.append((parent, child.parent_region() is parent.true_region))
        elif isinstance(parent, affine.IfOp) and child.parent_region() is parent.else_region:
            found.append((parent, False))
        child, parent = parent, parent.parent_op()
    return found


Approx = tuple[isl.Set, isl.Set]
"""Where a condition surely holds (a subset) and where it may hold (a superset)."""


class Guard:
    """Conditions of ifs as isl sets over an access's loops: exact where they are affine
    comparisons combined with and/or/not (also through the ifs that short-circuit them),
    approximated from both sides where data enters. With `names` None, it only meets the
    symbols the conditions use (to name the parameters before building sets)."""

    def __init__(self, access: Access, syms: Symbols):
        self.access, self.syms = access, syms
        self.loops = [f"s{k}" for k in range(len(access.loops))]
        self.names: list[str] | None = None

    def aff(self, value: SSAValue) -> Aff | None:
        return value_aff(value, self.access.loops, self.syms)

    def space(self, text: str) -> isl.Set:
        names = ", ".join(self.names or [])
        return isl.Set(f"[{names}] -> {{ S[{', '.join(self.loops)}] : {text} }}")

    def unknown(self) -> Approx:
        return self.space("false"), self.space("true")

    def where(self, op: Operation, in_then: bool) -> isl.Set | None:
        """Where the branch of `op` that holds the access may run (None: first pass)."""
        if isinstance(op, scf.IfOp):
            holds = self.i1(op.cond)
        else:
            assert isinstance(op, affine.IfOp)
            holds = self.affine_set(op)
        if holds is None:
            return None
        surely, maybe = holds
        return maybe if in_then else self.space("true").subtract(surely)

    def affine_set(self, op: affine.IfOp) -> Approx | None:
        iset = op.condition.data
        values = [self.aff(v) for v in op.args]
        dims, symbols = values[: iset.num_dims], values[iset.num_dims :]
        parts: list[str] = []
        for c in iset.constraints:
            lhs, rhs = expr_aff(c.lhs, dims, symbols), expr_aff(c.rhs, dims, symbols)
            if lhs is None or rhs is None:
                return None if self.names is None else self.unknown()
            relation = {"==": "=", ">=": ">=", "<=": "<="}[c.kind.value]
            parts.append(f"{lhs.isl(self.loops)} {relation} {rhs.isl(self.loops)}")
        if self.names is None:
            return None
        exact = self.space(" and ".join(parts) or "true")
        return exact, exact

    def i1(self, value: SSAValue) -> Approx | None:
        """Where an i1 surely / maybe holds."""
        owner = value.owner
        if isinstance(owner, arith.CmpiOp):
            lhs, rhs = self.aff(owner.lhs), self.aff(owner.rhs)
            relation = _RELATIONS.get(CMPI_COMPARISON_OPERATIONS[owner.predicate.value.data])
            if self.names is None:
                return None
            if lhs is None or rhs is None or relation is None:
                return self.unknown()
            a, b = lhs.isl(self.loops), rhs.isl(self.loops)
            text = f"{a} < {b} or {a} > {b}" if relation == "!=" else f"{a} {relation} {b}"
            exact = self.space(text)
            return exact, exact
        if isinstance(owner, arith.AndIOp | arith.OrIOp | arith.XOrIOp):
            lhs, rhs = self.i1(owner.lhs), self.i1(owner.rhs)
            if lhs is None or rhs is None:
                return None
            if isinstance(owner, arith.AndIOp):
                return lhs[0].intersect(rhs[0]), lhs[1].intersect(rhs[1])
            if isinstance(owner, arith.OrIOp):
                return lhs[0].union(rhs[0]), lhs[1].union(rhs[1])
            if rhs[0].is_equal(rhs[1]) and rhs[0].is_equal(self.space("true")):  # not
                everything = self.space("true")
                return everything.subtract(lhs[1]), everything.subtract(lhs[0])
            return self.unknown()
        if isinstance(owner, scf.IfOp | affine.IfOp) and isinstance(value, OpResult):
            return self.merged(owner, value.index)
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            if self.names is None:
                return None
            exact = self.space("true" if owner.value.value.data else "false")
            return exact, exact
        return None if self.names is None else self.unknown()

    def merged(self, op: scf.IfOp | affine.IfOp, index: int) -> Approx | None:
        """An i1 result of an if: the then value where the condition holds, else the other."""
        cond = self.i1(op.cond) if isinstance(op, scf.IfOp) else self.affine_set(op)
        regions = (
            (op.true_region, op.false_region)
            if isinstance(op, scf.IfOp)
            else (
                op.then_region,
                op.else_region,
            )
        )
        yields = [r.block.last_op if r.blocks else None for r in regions]
        values = [self.i1(y.operands[index]) if y is not None else None for y in yields]
        if cond is None or values[0] is None or values[1] is None:
            return None
        (c_lo, c_hi), (t_lo, t_hi), (e_lo, e_hi) = cond, values[0], values[1]
        everything = self.space("true")
        surely = c_lo.intersect(t_lo).union(everything.subtract(c_hi).intersect(e_lo))
        maybe = c_hi.intersect(t_hi).union(everything.subtract(c_lo).intersect(e_hi))
        return surely, maybe
