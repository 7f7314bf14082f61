"""The package's structure rules (DESIGN.md): each fact defined once, layers import downwards."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import loopopt
from loopopt.dialects import loopopt as attrs

PACKAGE = Path(loopopt.__file__).parent
ATTRIBUTE_NAME = re.compile(r"loopopt\.[a-z_]+")


def _parsed(folder: str = "") -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text())) for p in sorted((PACKAGE / folder).rglob("*.py"))]


def _is_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def test_loopopt_attribute_names_are_spelled_in_the_dialect_module_only() -> None:
    """A string `loopopt.<name>` that is not a module of the package is an attribute name:
    only dialects/loopopt.py may spell one (docstrings aside)."""
    spelled = []
    for path, tree in _parsed():
        if path == PACKAGE / "dialects" / "loopopt.py":
            continue
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            if id(node) in docstrings or not ATTRIBUTE_NAME.fullmatch(node.value):
                continue
            if not _is_module(node.value):
                spelled.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value}")
    assert spelled == []


def test_the_dialect_module_lists_every_attribute_it_defines() -> None:
    defined = {
        value
        for name, value in vars(attrs).items()
        if name.isupper() and isinstance(value, str) and value != attrs.PREFIX
    }
    assert defined == set(attrs.ATTRIBUTES)
    assert all(name.startswith(attrs.PREFIX) for name in attrs.ATTRIBUTES)


def _imported_modules(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_analysis_imports_nothing_from_loops() -> None:
    """analysis/ proves, loops/ does (DESIGN.md): the read-only queries live in analysis/, and
    no analysis module imports a loops/ module (at the top or inside a function)."""
    offending = [
        f"{path.relative_to(PACKAGE)}: {module}"
        for path, tree in _parsed("analysis")
        for module in sorted(_imported_modules(tree))
        if module == "loopopt.loops" or module.startswith("loopopt.loops.")
    ]
    assert offending == []
