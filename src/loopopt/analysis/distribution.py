"""The statement groups of a loop body that loop distribution may give loops of their own.

    affine.for %i = 1 to 8 {                         distribution_groups(i) == [
      S0: tmp[i] = 0.0                                 [S0], [S1], [S2]
      S1: affine.for %j … { tmp[i] += A[i, j] * x[j] } ]
      S2: affine.for %j … { y[j] += A[i, j] * tmp[i] }   (S0 → S1 → S2, no cycle: three loops)
    }

The statements are the top-level ops of the body that are not pure (loads, stores, inner loops,
ifs, calls …). A pure op (constants, index arithmetic, arithmetic on loaded values) that uses
no statement's result is *free*: loop distribution duplicates it into each group that uses it. A
pure op that does use one is *anchored*: it joins that statement, and the statements it uses
are tied together. Statements tied by scalar SSA values (one uses what another computes) stay in
one group, as do all those that use the loop's iter_args or compute what it yields: splitting
them would need scalar expansion.

Between these units, the memory dependences of `loopopt.analysis.dependence` that the loop
carries or that are loop-independent within it are edges (dependences carried by outer loops
are kept by those loops whatever happens inside). The groups are the strongly connected
components of that graph (units tied by a dependence cycle stay together), in a topological
order that keeps the original order where the graph allows it (among the groups whose
predecessors are all placed, the one with the earliest op goes first). Each group lists its ops
(statements and anchored pure ops) in their original order; free ops belong to no group.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence

from xdsl.dialects import affine
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.traits import IsTerminator, get_effects

from loopopt.analysis.dependence import Dependence, dependences
from loopopt.analysis.nest import body_ops

Group = list[Operation]


def is_pure(op: Operation) -> bool:
    """An op without regions, memory effects or control flow: duplicating it changes nothing."""
    return not op.regions and not op.has_trait(IsTerminator) and get_effects(op) == set()


def used_values(op: Operation) -> Iterator[SSAValue]:
    """The operands of `op` and of every op nested in it."""
    for inner in op.walk():
        yield from inner.operands


def statement_of(op: Operation, loop: affine.ForOp) -> Operation | None:
    """The top-level op of `loop`'s body that is or holds `op` (None when `op` is not inside)."""
    block = loop.body.block
    current: Operation | None = op
    while current is not None and current.parent_block() is not block:
        current = current.parent_op()
    return current


def loop_dependences(loop: affine.ForOp) -> list[Dependence]:
    """The dependences under `loop` that it carries or that are loop-independent within it,
    between two different top-level ops of its body."""
    found: list[Dependence] = []
    for dep in dependences(loop):
        position = next((k for k, common in enumerate(dep.loops) if common is loop), None)
        if position is None or dep.level < position:
            continue
        if statement_of(dep.source.op, loop) is not statement_of(dep.sink.op, loop):
            found.append(dep)
    return found


class _Units:
    """Union-find over the body's statements (and a pseudo-unit for the iter_args)."""

    def __init__(self) -> None:
        self.parent: dict[Operation | None, Operation | None] = {}

    def add(self, unit: Operation | None) -> None:
        self.parent.setdefault(unit, unit)

    def find(self, unit: Operation | None) -> Operation | None:
        while self.parent[unit] is not unit:
            self.parent[unit] = self.parent[self.parent[unit]]
            unit = self.parent[unit]
        return unit

    def union(self, a: Operation | None, b: Operation | None) -> None:
        self.parent[self.find(a)] = self.find(b)


CARRIER = None
"""The pseudo-unit of the loop's iter_args (and what its yield uses)."""


def _scalar_units(loop: affine.ForOp) -> tuple[_Units, dict[Operation, Operation | None]]:
    """Statements tied by scalar values, and the unit of each anchored pure op."""
    ops = body_ops(loop)
    top = set(ops)
    iter_args = set(loop.body.block.args[1:])
    units = _Units()
    if iter_args:
        units.add(CARRIER)
    anchor: dict[Operation, Operation | None] = {}

    def sources(values: Iterator[SSAValue]) -> set[Operation | None]:
        found: set[Operation | None] = set()
        for value in values:
            if value in iter_args:
                found.add(CARRIER)
            elif isinstance(value, OpResult) and value.op in top:
                if value.op in anchor:
                    found.add(anchor[value.op])
                elif not is_pure(value.op):
                    found.add(value.op)
        return found

    for op in ops:
        used = sources(used_values(op))
        if is_pure(op):
            if not used:
                continue  # free
            first = next(iter(used))
            for other in used:
                units.union(other, first)
            anchor[op] = first
            continue
        units.add(op)
        for other in used:
            units.union(op, other)
    terminator = loop.body.block.last_op
    if iter_args and isinstance(terminator, affine.YieldOp):
        for other in sources(iter(terminator.operands)):
            units.union(other, CARRIER)
    return units, anchor


def _components(nodes: Sequence[int], edges: dict[int, set[int]]) -> list[set[int]]:
    """Strongly connected components (mutual reachability; the graphs are small)."""

    def reach(start: int) -> set[int]:
        seen, stack = {start}, [start]
        while stack:
            for succ in edges[stack.pop()]:
                if succ not in seen:
                    seen.add(succ)
                    stack.append(succ)
        return seen

    reachable = {n: reach(n) for n in nodes}
    components: list[set[int]] = []
    placed: set[int] = set()
    for n in nodes:
        if n not in placed:
            component = {m for m in reachable[n] if n in reachable[m]}
            placed |= component
            components.append(component)
    return components


def statement_units(loop: affine.ForOp) -> list[Group]:
    """The statements of `loop`'s body with their anchored pure ops, those tied by scalar
    values or iter_args together: the units that distribution never splits, each in original
    order, ordered by their first op. Free pure ops are in none."""
    ops = body_ops(loop)
    units, anchor = _scalar_units(loop)
    members: dict[Operation | None, Group] = {}
    for op in ops:
        if op in anchor:
            members.setdefault(units.find(anchor[op]), []).append(op)
        elif op in units.parent:
            members.setdefault(units.find(op), []).append(op)
    return list(members.values())


def backward_dependence(loop: affine.ForOp) -> Dependence | None:
    """A dependence of `loop_dependences` from a unit of `statement_units` to an earlier one
    (every dependence cycle between units has one): what names a cycle in messages."""
    unit_of = {op: k for k, unit in enumerate(statement_units(loop)) for op in unit}
    for dep in loop_dependences(loop):
        source, sink = statement_of(dep.source.op, loop), statement_of(dep.sink.op, loop)
        if source in unit_of and sink in unit_of and unit_of[source] > unit_of[sink]:
            return dep
    return None


def distribution_groups(loop: affine.ForOp) -> list[Group]:
    """The finest legal partition of `loop`'s body into groups of ops, in execution order
    (see the module docstring). A body without statements is one group of all its ops."""
    ops = body_ops(loop)
    units = statement_units(loop)
    if not units:
        return [ops]
    position = {op: k for k, op in enumerate(ops)}
    unit_of = {op: k for k, unit in enumerate(units) for op in unit}
    edges: dict[int, set[int]] = {k: set() for k in range(len(units))}
    for dep in loop_dependences(loop):
        source, sink = statement_of(dep.source.op, loop), statement_of(dep.sink.op, loop)
        if source is None or sink is None:
            continue
        a, b = unit_of[source], unit_of[sink]
        if a != b:
            edges[a].add(b)
    return _ordered(dict(enumerate(units)), edges, position)


def _ordered(
    members: dict[int, Group], edges: dict[int, set[int]], position: dict[Operation, int]
) -> list[Group]:
    """Merge the strongly connected components and order them topologically, earliest op first
    where the dependences leave a choice."""
    nodes = sorted(members)
    component_of: dict[int, int] = {}
    components = _components(nodes, edges)
    for c, component in enumerate(components):
        for n in component:
            component_of[n] = c
    groups: list[Group] = [
        sorted((op for n in component for op in members[n]), key=position.__getitem__)
        for component in components
    ]
    succs: list[set[int]] = [set() for _ in components]
    preds = [0] * len(components)
    for n in nodes:
        for m in edges[n]:
            a, b = component_of[n], component_of[m]
            if a != b and b not in succs[a]:
                succs[a].add(b)
                preds[b] += 1
    first = [position[group[0]] if group else -1 for group in groups]
    ready = [(first[c], c) for c in range(len(groups)) if preds[c] == 0]
    heapq.heapify(ready)
    order: list[Group] = []
    while ready:
        _, c = heapq.heappop(ready)
        if groups[c]:
            order.append(groups[c])
        for d in succs[c]:
            preds[d] -= 1
            if preds[d] == 0:
                heapq.heappush(ready, (first[d], d))
    return order
