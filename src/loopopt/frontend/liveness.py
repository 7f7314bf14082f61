"""Which scalar names a loop carries from one iteration to the next, and which an if merges.

    s = 0.0                      carried(for k) == ["s"]: read before written in the body
    for k in range(n):           (and live after the loop)
        t = A[k] * 2             t is not carried: written before read, dead after the loop
        s += t
    C[0] = s

Classic backward liveness over the structured statements of the function: a loop's body may
run any number of times, so the names live at its head are a fixpoint. A name the body assigns
is carried when it is live at the head of the body (read before written: a recurrence) or
live after the loop; an if merges the names its branches assign that are live after it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence


def names_read(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def names_assigned(stmts: Iterable[ast.stmt]) -> set[str]:
    """Names bound by assignments and loop targets anywhere in `stmts`."""
    found: set[str] = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.add(node.id)
    return found


def first_assignments(stmts: Sequence[ast.stmt]) -> list[str]:
    """Names assigned in `stmts`, in order of first assignment (a stable iter_args order)."""
    order: list[str] = []
    for stmt in stmts:
        for node in ast.walk(stmt):
            stored = isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
            if stored and node.id not in order:  # type: ignore[attr-defined]
                order.append(node.id)  # type: ignore[attr-defined]
    return order


class Liveness:
    """Live names after every `for` and `if` of a function, and at the head of each loop body."""

    def __init__(self, body: Sequence[ast.stmt]):
        self.after: dict[ast.stmt, set[str]] = {}
        self.body_entry: dict[ast.For, set[str]] = {}
        self.block(body, set())

    def carried(self, loop: ast.For) -> list[str]:
        """Names `loop` carries (iter_args), in order of first assignment in its body."""
        target = loop.target.id if isinstance(loop.target, ast.Name) else None
        live = self.body_entry[loop] | self.after[loop]
        return [n for n in first_assignments(loop.body) if n in live and n != target]

    def merged(self, stmt: ast.If) -> list[str]:
        """Names an if's branches assign that are live after it."""
        live = self.after[stmt]
        return [n for n in first_assignments([*stmt.body, *stmt.orelse]) if n in live]

    def block(self, stmts: Sequence[ast.stmt], live: set[str]) -> set[str]:
        for stmt in reversed(stmts):
            live = self.stmt(stmt, live)
        return live

    def stmt(self, stmt: ast.stmt, live: set[str]) -> set[str]:
        if isinstance(stmt, ast.For):
            self.after[stmt] = set(live)
            targets = names_assigned([ast.Assign(targets=[stmt.target], value=ast.Constant(0))])
            head = set(live)
            while True:
                entry = self.block(stmt.body, head)
                new_head = head | (entry - targets)
                if new_head == head:
                    break
                head = new_head
            self.body_entry[stmt] = entry
            return head | names_read(stmt.iter)
        if isinstance(stmt, ast.If):
            self.after[stmt] = set(live)
            then = self.block(stmt.body, live)
            orelse = self.block(stmt.orelse, live)
            return names_read(stmt.test) | then | orelse
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            bound = names_assigned([ast.Assign(targets=targets, value=ast.Constant(0))])
            uses = names_read(stmt.value)
            for target in targets:
                uses |= names_read(target)  # subscripts of stored elements
            return (live - bound) | uses
        if isinstance(stmt, ast.AugAssign):
            target = stmt.target
            extra = {target.id} if isinstance(target, ast.Name) else names_read(target)
            return live | extra | names_read(stmt.value)
        return live | names_read(stmt)
