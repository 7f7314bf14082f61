"""The library API: `loopopt.passes` exports the pass classes, and the README's example of
another compiler using them runs as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import loopopt.passes
from loopopt.universe import PASSES

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_pass_class_is_exported_with_typed_options() -> None:
    for name, (_, cls_name) in PASSES.items():
        cls = getattr(loopopt.passes, cls_name)
        assert cls.name == name and cls_name in dir(loopopt.passes)
    assert loopopt.passes.LoopTilePass(tile_sizes=(32, 16)).tile_sizes == (32, 16)


def test_readme_example_runs() -> None:
    text = README.read_text()
    found = re.search(r"<!-- library-example -->\n```python\n(.*?)```", text, re.DOTALL)
    assert found is not None, "README lost its library example"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(found.group(1), "README.md", "exec"), {})
    printed = out.getvalue()
    assert "affine.for %i_t = 0 to 100 step 32" in printed
    assert "affine.for %j_t = 0 to 70 step 16" in printed
    assert "%A[%i, %j + 3]" in printed and "scf.for" not in printed
