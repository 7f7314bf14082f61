"""The statements of a loop nest as polyhedral objects: iteration domain, accesses, original
schedule (what `loop-reschedule` hands to isl's scheduler).

    affine.for %i = 0 to %n {                  S0[s0, s1] : 0 <= s0 < p0, 0 <= s1 < s0
      affine.for %j = 0 to %i {                  accesses A[s0, s1] (read, write), A[s1, s1]
        %a = affine.load %A[%i, %j]      →       schedule [0, s0, 0, s1, 0]
        %d = affine.load %A[%j, %j]            S1[s0] : 0 <= s0 < p0
        affine.store (%a / %d), %A[%i, %j]       accesses B[s0] (write)
      }                                          schedule [0, s0, 1, 0, 0]
      affine.store %z, %B[%i]
    }

A statement is a maximal run of non-loop ops in one block (affine.if then-regions are entered:
their conditions join the domain; so does the negated condition in else-regions, where the
condition is one inequality). Its domain is the enclosing affine.for bounds (max/min
results, steps) and affine.if conditions, as `loopopt.analysis.access` writes them; its original
schedule is the 2d+1 vector (position, iv, position, iv, …, position), padded with zeros to the
deepest statement's width, positions counted in each loop body with affine.if contents inline.
Loop-invariant index values are parameters (`Symbols`).

`nest_statements` refuses (a one-line `LoopoptError` at the op, with the reason) what this
model cannot describe exactly: a nest inside another affine.for, a loop with iter_args, an
affine.if with results, or with an else region and a condition that is not one inequality, a
region op holding affine loops, a bound or condition that is not affine, a step with a max
lower bound, an SSA value of one statement used by another, an access that is not affine, a
call or an op of unknown effects, and two memrefs that may alias without being the same value
(`dependence.alias`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import affine, func
from xdsl.dialects.builtin import MemRefType, UnregisteredOp
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.traits import IsTerminator, get_effects

from loopopt.analysis.access import (
    Access,
    Constraint,
    Symbols,
    _bound_results,  # pyright: ignore[reportPrivateUsage]
    _if_domain,  # pyright: ignore[reportPrivateUsage]
    _loop_domain,  # pyright: ignore[reportPrivateUsage]
    collect_accesses,
    negatable,
)
from loopopt.analysis.dependence import alias
from loopopt.analysis.nest import enclosing_loops, loop_name
from loopopt.diagnostics import LoopoptError

PASS = "loop-reschedule"


@dataclass(frozen=True, eq=False)
class Statement:
    """One statement: its ops (in order), loops (outermost first), domain, accesses, and the
    positions of its 2d+1 schedule (one more than loops)."""

    name: str
    ops: tuple[Operation, ...]
    loops: tuple[affine.ForOp, ...]
    domain: tuple[Constraint, ...]
    accesses: tuple[Access, ...]
    positions: tuple[int, ...]

    @property
    def dims(self) -> list[str]:
        return [f"s{k}" for k in range(len(self.loops))]

    def domain_text(self, params: Sequence[str]) -> str:
        """`[p0] -> { S0[s0, s1] : … }`."""
        body = " and ".join(c.isl(self.dims) for c in self.domain) or "true"
        return f"[{', '.join(params)}] -> {{ {self.name}[{', '.join(self.dims)}] : {body} }}"

    def schedule_text(self, params: Sequence[str], width: int) -> str:
        """`[p0] -> { S0[s0, s1] -> [b0, s0, b1, s1, b2, 0, …] }` (`width` loops deep)."""
        out: list[str] = []
        for k, position in enumerate(self.positions):
            out.append(str(position))
            if k < len(self.loops):
                out.append(self.dims[k])
        out += ["0"] * (2 * width + 1 - len(out))
        head = f"{self.name}[{', '.join(self.dims)}]"
        return f"[{', '.join(params)}] -> {{ {head} -> [{', '.join(out)}] }}"

    def loop_names(self) -> list[str | None]:
        return [loop_name(loop) for loop in self.loops]


@dataclass(frozen=True)
class NestStatements:
    """The statements of one nest, in textual order, and what their texts share."""

    root: affine.ForOp
    statements: tuple[Statement, ...]
    params: dict[str, SSAValue]
    """isl parameter name -> the loop-invariant value it stands for."""
    memrefs: dict[SSAValue, str]
    """Each memref accessed -> its isl tuple name (M0, M1 …)."""

    @property
    def width(self) -> int:
        return max((len(s.loops) for s in self.statements), default=0)

    def access_text(self, access: Access, stmt: Statement) -> str:
        """`[p0] -> { S0[s0, s1] -> M0[o0, o1] : o0 = s0 and o1 = s1 }`."""
        assert access.memref is not None
        outs = [f"o{k}" for k in range(len(access.indices))]
        eqs = [
            f"{o} = {index.isl(stmt.dims)}"
            for o, index in zip(outs, access.indices, strict=True)
            if index is not None
        ]
        head = f"{stmt.name}[{', '.join(stmt.dims)}] -> {self.memrefs[access.memref]}"
        body = " and ".join(eqs) or "true"
        return f"[{', '.join(self.params)}] -> {{ {head}[{', '.join(outs)}] : {body} }}"


def _refuse(reason: str, op: Operation) -> LoopoptError:
    return LoopoptError(f"{PASS}: {reason}", op=op)


@dataclass
class _Walk:
    """Collects the statement runs of a nest with their loops and schedule positions."""

    runs: list[tuple[list[Operation], list[affine.ForOp], list[int]]]

    def body(self, block: Block, loops: list[affine.ForOp], prefix: list[int]) -> None:
        counter = [0]
        self._ops(block, loops, prefix, counter)

    def _ops(
        self, block: Block, loops: list[affine.ForOp], prefix: list[int], counter: list[int]
    ) -> None:
        run: list[Operation] = []
        for op in block.ops:
            if op.has_trait(IsTerminator):
                continue
            if isinstance(op, affine.ForOp | affine.IfOp):
                self._flush(run, loops, prefix, counter)
                run = []
                if isinstance(op, affine.ForOp):
                    _check_loop(op)
                    self.body(op.body.block, [*loops, op], [*prefix, counter[0]])
                    counter[0] += 1
                else:
                    _check_if(op)
                    self._ops(op.then_region.block, loops, prefix, counter)
                    if op.else_region.blocks:
                        self._ops(op.else_region.block, loops, prefix, counter)
                continue
            for inner in op.walk():
                if inner is not op and isinstance(inner, affine.ForOp | affine.IfOp):
                    raise _refuse(f"'{op.name}' holds affine loops or conditions", op)
            run.append(op)
        self._flush(run, loops, prefix, counter)

    def _flush(
        self, run: list[Operation], loops: list[affine.ForOp], prefix: list[int], counter: list[int]
    ) -> None:
        if run:
            self.runs.append((run, loops, [*prefix, counter[0]]))
            counter[0] += 1


def _check_loop(loop: affine.ForOp) -> None:
    if loop.inits:
        raise _refuse("a loop with iter_args (run reduction-to-memory first)", loop)


def _check_if(op: affine.IfOp) -> None:
    if op.res:
        raise _refuse("an affine.if with results", op)
    if (
        op.else_region.blocks
        and any(not o.has_trait(IsTerminator) for o in op.else_region.block.ops)
        and not negatable(op)
    ):
        raise _refuse(
            "an affine.if with an else region and a condition that is not one inequality", op
        )


def _domain(first: Operation, loops: Sequence[affine.ForOp], syms: Symbols) -> list[Constraint]:
    """The exact domain of the statement starting at `first` (refused where not affine)."""
    cons: list[Constraint] = []
    for depth, loop in enumerate(loops):
        outer = loops[:depth]
        lower = _bound_results(loop, False, syms, outer)
        upper = _bound_results(loop, True, syms, outer)
        if any(b is None for b in [*lower, *upper]):
            raise _refuse("a loop bound that is not affine in the enclosing IVs and symbols", loop)
        if loop.step.value.data > 1 and len(lower) > 1:
            raise _refuse("a stepped loop with a max lower bound", loop)
        cons += _loop_domain(loop, syms, outer)
    conditions = _if_domain(first, loops, syms)
    expected, child, parent = 0, first, first.parent_op()
    while parent is not None:
        if isinstance(parent, affine.IfOp) and (
            child.parent_region() is parent.then_region
            or child.parent_region() is parent.else_region
        ):
            expected += len(parent.condition.data.constraints)
        child, parent = parent, parent.parent_op()
    if len(conditions) != expected:
        raise _refuse("an affine.if condition that is not affine", first)
    return cons + conditions


def _statement_of(op: Operation, owner: dict[Operation, int]) -> int | None:
    current: Operation | None = op
    while current is not None:
        if current in owner:
            return owner[current]
        current = current.parent_op()
    return None


def _unknown_effects(op: Operation) -> bool:
    """Effects unknown and not an access (accesses, calls included, are checked apart)."""
    if op.regions or op.has_trait(IsTerminator) or get_effects(op) is not None:
        return False
    if isinstance(op, func.CallOp | UnregisteredOp):
        return False
    return not any(isinstance(v.type, MemRefType) for v in op.operands)


def _check_values(runs: Sequence[Sequence[Operation]], owner: dict[Operation, int]) -> None:
    """No SSA value crosses statements; no op of unknown effects."""
    for index, run in enumerate(runs):
        for top in run:
            for op in top.walk():
                if _unknown_effects(op):
                    raise _refuse(f"'{op.name}' has unknown memory effects", op)
                for value in op.operands:
                    if not isinstance(value, OpResult):
                        continue
                    source = _statement_of(value.op, owner)
                    if source is not None and source != index:
                        raise _refuse("a value computed in one statement is used in another", op)


def _check_accesses(accesses: Sequence[Access]) -> None:
    for access in accesses:
        if access.memref is None:
            raise _refuse(f"'{access.op.name}' may touch any memory", access.op)
        if not access.affine:
            raise _refuse(f"the access {access.render()} is not affine", access.op)
    for k, a in enumerate(accesses):
        for b in accesses[k + 1 :]:
            if a.memref is not b.memref and alias(a, b) == "may":
                raise _refuse(
                    f"{a.render()} and {b.render()} may alias (distinct values of one buffer)",
                    b.op,
                )


def nest_statements(root: affine.ForOp) -> NestStatements:
    """The statements of the nest `root` (a loop in no other affine.for); see the module
    docstring for what is refused."""
    if enclosing_loops(root):
        raise _refuse("the nest is inside another affine.for", root)
    _check_loop(root)
    walk = _Walk([])
    walk.body(root.body.block, [root], [0])
    owner = {op: k for k, (run, _, _) in enumerate(walk.runs) for op in run}
    _check_values([run for run, _, _ in walk.runs], owner)
    syms = Symbols()
    accesses = collect_accesses(root, syms)
    _check_accesses(accesses)
    by_statement: dict[int, list[Access]] = {}
    for access in accesses:
        index = _statement_of(access.op, owner)
        if index is None:  # an access in a loop bound cannot be: bounds are affine maps
            raise _refuse("an access outside every statement", access.op)
        by_statement.setdefault(index, []).append(access)
    statements = [
        Statement(
            f"S{k}",
            tuple(run),
            tuple(loops),
            tuple(_domain(run[0], loops, syms)),
            tuple(by_statement.get(k, [])),
            tuple(positions),
        )
        for k, (run, loops, positions) in enumerate(walk.runs)
    ]
    memrefs: dict[SSAValue, str] = {}
    for access in accesses:
        assert access.memref is not None
        memrefs.setdefault(access.memref, f"M{len(memrefs)}")
    params = {sym.isl: value for value, sym in syms.table.items()}
    return NestStatements(root, tuple(statements), params, memrefs)
