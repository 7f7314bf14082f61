"""loopopt's passes, one per file, each file named after its CLI name; and `LoopoptPass`, the
base they share (MLIR-style option parsing: bare boolean flags such as `unroll-full`)."""

from __future__ import annotations

import dataclasses
from typing import Any, Self, get_type_hints

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec


class LoopoptPass(ModulePass):
    """Base of loopopt's passes.

    MLIR lets a boolean option be given bare (`loop-unroll{unroll-full}`); xDSL wants `=true`.
    This accepts both, so the same pipeline string works in `loopopt-opt`, `xdsl-opt` and tests.
    """

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
