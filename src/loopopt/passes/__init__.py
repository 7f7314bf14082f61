"""loopopt's passes, one per file, each file named after its CLI name; and `LoopoptPass`, the
base they share (MLIR-style option parsing: bare boolean flags such as `unroll-full`; a warning
where a loop pass finds only scf loops).

Every pass class is importable from here (`from loopopt.passes import LoopTilePass`), loaded
when first asked for; its options are typed dataclass fields (`LoopTilePass(tile_sizes=(32, 32))`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar, Self, get_type_hints

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec


class LoopoptPass(ModulePass):
    """Base of loopopt's passes.

    MLIR lets a boolean option be given bare (`loop-unroll{unroll-full}`); xDSL wants `=true`.
    This accepts both, so the same pipeline string works in `loopopt-opt`, `xdsl-opt` and tests.

    A pass that works on affine loops (`affine_loops`, the default) first says on stderr, once per
    function it works on, when that function holds scf loops and no affine.for (it would match
    nothing there): `loop-tile: no affine.for in @f (it holds scf.for loops: run
    raise-scf-to-affine first)`.

    `pass_pipeline.pass_text` prints a pass the same way: the options that differ from their
    defaults (and those `spelled_out` names), `option_order` first, spelled as `option_names`
    says (else `a_b` → `a-b`).
    """

    option_order: ClassVar[tuple[str, ...]] = ()
    """Fields printed before the others (in this order), as the pass's users write them."""
    option_names: ClassVar[dict[str, str]] = {}
    """Option spellings that are not the field's name with `-` for `_`."""

    def spelled_out(self) -> tuple[str, ...]:
        """Fields printed even at their default value (a factor that says what the pass does)."""
        return ()

    affine_loops: ClassVar[bool] = True
    """Whether the pass transforms affine.for loops (False: lowerings, raise-scf-to-affine)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        apply = cls.__dict__.get("apply")
        if apply is None or not cls.affine_loops:
            return

        @functools.wraps(apply)
        def checked_apply(self: LoopoptPass, ctx: Context, op: ModuleOp) -> None:
            from loopopt.loops.nest import warn_if_only_scf_loops

            warn_if_only_scf_loops(op, getattr(self, "func", None), self.name)
            apply(self, ctx, op)

        cls.apply = checked_apply  # pyright: ignore[reportAttributeAccessIssue]

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        hints = get_type_hints(cls)
        bools = {f.name for f in dataclasses.fields(cls) if hints.get(f.name) is bool}
        params: dict[str, Any] = {}
        for key, value in spec.parameters.items():
            if key.replace("-", "_") in bools and value == ():
                value = (True,)
            params[key] = value
        return super().from_spec(ArgSpec(spec.name, params))


def _pass_classes() -> dict[str, tuple[str, str]]:
    """Class name -> (module, class) of every registered pass."""
    from loopopt.universe import PASSES

    return {cls: (module, cls) for module, cls in PASSES.values()}


def __getattr__(name: str) -> type[ModulePass]:
    found = _pass_classes().get(name)
    if found is None:
        raise AttributeError(f"module 'loopopt.passes' has no attribute '{name}'")
    import importlib

    return getattr(importlib.import_module(f"loopopt.passes.{found[0]}"), found[1])


def __dir__() -> list[str]:
    return sorted([*globals(), *_pass_classes()])
