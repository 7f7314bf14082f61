"""loopopt's passes, one per file, each file named after its CLI name; and `LoopoptPass`, the
base they share (MLIR-style option parsing: bare boolean flags such as `unroll-full`)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Self, get_type_hints

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec


class LoopoptPass(ModulePass):
    """Base of loopopt's passes.

    MLIR lets a boolean option be given bare (`loop-unroll{unroll-full}`); xDSL wants `=true`.
    This accepts both, so the same pipeline string works in `loopopt-opt`, `xdsl-opt` and tests.
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
