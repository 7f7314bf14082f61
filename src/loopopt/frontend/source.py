"""A kernel's Python source: its syntax tree, where each node is, and what its names mean.

    src = Source.of(gemm)          # inspect.getsource + ast.parse; the function is not run
    src.location(node)             # 'examples/gemm.py:14:9' (file, line, column in the file)
    src.resolve("math")            # the object a global, closure or builtin name is bound to

Names are resolved by looking them up (closure cells, the function's globals, builtins); user
code is never executed: the front-end only reads modules, functions and numbers bound to them.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

from loopopt.diagnostics import LoopoptError

MISSING = object()
"""`resolve`'s answer for a name bound nowhere."""


@dataclass
class Source:
    """The syntax tree of one Python function and the file position of its first line."""

    function: Callable[..., Any]
    tree: ast.FunctionDef
    filename: str
    first_line: int
    indent: int

    @classmethod
    def of(cls, function: Callable[..., Any]) -> Source:
        name = getattr(function, "__qualname__", repr(function))
        if not inspect.isfunction(function):
            raise LoopoptError(f"@loopopt.kernel needs a Python function, got {name}")
        try:
            lines, first_line = inspect.getsourcelines(function)
            filename = inspect.getsourcefile(function) or inspect.getfile(function)
        except (OSError, TypeError):
            raise LoopoptError(f"cannot read the source of {name} (define it in a file)") from None
        text = "".join(lines)
        indent = len(lines[0]) - len(lines[0].lstrip())
        location = f"{filename}:{first_line}"
        try:
            module = ast.parse(textwrap.dedent(text))
        except SyntaxError as e:
            message = f"cannot parse the source of {name}: {e.msg}"
            raise LoopoptError(message, location=location) from None
        tree = module.body[0] if module.body else None
        if not isinstance(tree, ast.FunctionDef):
            what = "an async function" if isinstance(tree, ast.AsyncFunctionDef) else "a lambda"
            raise LoopoptError(f"@loopopt.kernel needs a def, not {what}", location=location)
        return cls(function, tree, filename, first_line, indent)

    @property
    def name(self) -> str:
        return self.tree.name

    def position(self, node: ast.AST) -> tuple[int, int]:
        """(line, column) of `node` in its file, both counted from 1."""
        line = getattr(node, "lineno", self.tree.lineno)
        column = getattr(node, "col_offset", 0)
        return self.first_line + line - 1, column + 1 + self.indent

    def location(self, node: ast.AST) -> str:
        line, column = self.position(node)
        return f"{self.filename}:{line}:{column}"

    def loc(self, node: ast.AST) -> FileLineColLoc:
        line, column = self.position(node)
        return FileLineColLoc(StringAttr(self.filename), IntAttr(line), IntAttr(column))

    def error(self, node: ast.AST, message: str) -> LoopoptError:
        """A diagnostic at `node` (to be raised)."""
        return LoopoptError(message, location=self.location(node))

    def text(self, node: ast.AST) -> str:
        """The construct as Python code, for messages."""
        return ast.unparse(node)

    def resolve(self, name: str) -> object:
        """What a free name of the function is bound to (closure, globals, builtins)."""
        code = self.function.__code__
        closure = self.function.__closure__ or ()
        if name in code.co_freevars:
            cell = closure[code.co_freevars.index(name)]
            try:
                return cell.cell_contents
            except ValueError:
                return MISSING
        scope = self.function.__globals__
        if name in scope:
            return scope[name]
        return getattr(builtins, name, MISSING)
