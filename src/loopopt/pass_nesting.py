"""MLIR's nested pipelines: the `builtin.module(...)` and `func.func(...)` anchors.

    builtin.module(func.func(loop-tile{tile-sizes=32}), canonicalize)
    ==  func.func(loop-tile{tile-sizes=32}),canonicalize

`builtin.module(P)` at the top is P (the input is one module). `func.func(P)` runs P on each
function with a body, in order, as MLIR does: a pass with loopopt's `func=` option runs as if
given `func=NAME` (a pass given `func=` already runs on that function only; what it outlines,
gpu-map-loops' kernels, still goes into the module); a pass without it (xDSL's `canonicalize`,
`cse` …) runs on the function alone, moved for that time into a module of its own, so that it
sees no other function. Any other anchor (`gpu.module(...)`, `any(...)`, a module inside a
function, a function inside a function) is refused, naming it and where it is.

`split` reads the anchors and leaves the text between them (flat, comma-separated passes) to
pass_pipeline.py, which reads it with xDSL's parser at its place in the whole text, so that
every location points into what the user wrote.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from loopopt.diagnostics import in_stage

MODULE_ANCHOR = "builtin.module"
FUNC_ANCHOR = "func.func"

_ANCHOR = re.compile(r"([\w.$-]+)\s*\(")


@dataclass(frozen=True)
class Flat:
    """Passes without anchors: `text[start:end]` of the whole pipeline."""

    start: int
    end: int


@dataclass(frozen=True)
class Anchored:
    """`name(children)`, its name at `offset` of the whole pipeline."""

    name: str
    offset: int
    children: tuple[Flat | Anchored, ...]


class NestingError(Exception):
    """What is wrong with the nesting, at `offset` (pass_pipeline.py makes it a diagnostic)."""

    def __init__(self, offset: int, message: str):
        super().__init__(message)
        self.offset, self.message = offset, message


def split(spec: str) -> tuple[Flat | Anchored, ...]:
    """The anchors of `spec` and the flat text between them (one `Flat` of all of it when it
    has none)."""
    nodes, end = _items(spec, 0, closing=None)
    assert end == len(spec)
    return nodes


def _skip_space(spec: str, i: int) -> int:
    while i < len(spec) and spec[i].isspace():
        i += 1
    return i


def _items(spec: str, i: int, closing: int | None) -> tuple[tuple[Flat | Anchored, ...], int]:
    """The items from `i` to the `)` that closes the `(` at `closing` (None: to the end)."""
    nodes: list[Flat | Anchored] = []
    while True:
        j = _skip_space(spec, i)
        if j == len(spec) or spec[j] == ")":
            if j == len(spec) and closing is not None:
                raise NestingError(closing, "this '(' is never closed")
            if j < len(spec) and closing is None:
                raise NestingError(j, "unbalanced ')'")
            if not nodes and closing is None:
                nodes.append(Flat(i, j))  # the whole text: xDSL reads it
            return tuple(nodes), j if closing is None else j + 1
        anchor = _ANCHOR.match(spec, j)
        if anchor is not None:
            children, i = _items(spec, anchor.end(), closing=anchor.end() - 1)
            nodes.append(Anchored(anchor.group(1), j, children))
            i = _after_group(spec, i, anchor.group(1))
            continue
        i = _flat_end(spec, j)
        nodes.append(Flat(j, i))
        if i < len(spec) and spec[i] == ",":  # before an anchor: the comma separates
            i += 1


def _after_group(spec: str, i: int, name: str) -> int:
    """After `name(...)`: a comma (skipped), a `)` or the end."""
    j = _skip_space(spec, i)
    if j < len(spec) and spec[j] == ",":
        following = _skip_space(spec, j + 1)
        if following == len(spec) or spec[following] in "),":
            raise NestingError(j, "expected a pass or an anchor after this comma")
        return j + 1
    if j < len(spec) and spec[j] != ")":
        raise NestingError(j, f"expected ',' or ')' after '{name}(...)'")
    return j


def _flat_end(spec: str, i: int) -> int:
    """Where the flat text from `i` ends: a `)` outside braces and quotes, a comma followed by
    an anchor, or the end."""
    depth, quoted = 0, False
    while i < len(spec):
        c = spec[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
        elif depth == 0 and (
            c == ")" or c == "," and _ANCHOR.match(spec, _skip_space(spec, i + 1))
        ):
            return i
        i += 1
    return i


@dataclass(frozen=True)
class OnEachFunction(ModulePass):
    """Run passes on each function of the module in turn (MLIR's `func.func(...)` anchor)."""

    name = FUNC_ANCHOR
    passes: tuple[ModulePass, ...] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        for function in functions:
            for p in self.passes:
                with in_stage(p.name):  # an internal error names the pass, not the anchor
                    _apply_to_function(ctx, op, function, p)


def _apply_to_function(ctx: Context, module: ModuleOp, function: func.FuncOp, p: ModulePass):
    name = function.sym_name.data
    if any(f.name == "func" for f in dataclasses.fields(p)):
        chosen = getattr(p, "func", None)
        if chosen in (None, name):
            dataclasses.replace(p, func=name).apply(ctx, module)  # pyright: ignore
        return
    block = function.parent_block()
    assert block is not None
    after = function.next_op
    function.detach()
    alone = ModuleOp([function])
    try:
        p.apply(ctx, alone)
    finally:
        for result in list(alone.ops):
            result.detach()
            if after is None:
                block.add_op(result)
            else:
                block.insert_op_before(result, after)
