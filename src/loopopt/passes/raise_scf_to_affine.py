"""Raise scf loops with affine bounds, and memref accesses with affine indices, to affine ops.

Before:  scf.for %i = %c0 to %n step %c1 {
           %i1 = arith.addi %i, %c1 : index
           %v = memref.load %A[%i1] : memref<?xf32>  … }
After:   affine.for %i = 0 to %n { %v = affine.load %A[%i + 1] : memref<?xf32> … }
             {loopopt.name = "i"}

`scf.for` (iter_args kept) becomes `affine.for`; `scf.parallel` (without reductions) and
`affine.parallel` (without reductions) become nested `affine.for` loops marked
`loopopt.parallel`; `memref.load/store` whose indices are affine in affine IVs and symbols
become `affine.load/store`. The new loops are named after their induction variables
(`%i` → `i`); mlir-opt's generated names (`%arg3`) and unnamed ones get `loop-name`'s
`i0, i1, …` (the induction variable is renamed too). What cannot be raised stays as it is,
with one warning line on stderr per loop saying why. What "affine" means here:
`loopopt.loops.raise_affine`.
"""

from __future__ import annotations

import re
from contextlib import suppress
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin, memref, scf
from xdsl.ir import Operation

from loopopt.diagnostics import warning
from loopopt.loops.nest import functions, loop_name, loops_in, name_unnamed, set_loop_name
from loopopt.loops.raise_affine import (
    NotAffine,
    erase_dead_index_ops,
    raise_access,
    raise_affine_parallel,
    raise_for,
    raise_scf_parallel,
)
from loopopt.passes import LoopoptPass

_GENERATED_NAME = re.compile(r"arg\d+")
"""mlir-opt's names of block arguments: not the author's, so not a loop name."""


def _ivs(op: Operation) -> str:
    block = op.regions[0].block
    names = [f"%{arg.name_hint}" for arg in block.args if arg.name_hint]
    return ", ".join(names)


@dataclass(frozen=True)
class RaiseScfToAffinePass(LoopoptPass):
    """Raise scf.for/scf.parallel/affine.parallel with affine bounds, and memref.load/store with
    affine indices, to affine.for and affine.load/store."""

    name = "raise-scf-to-affine"
    affine_loops = False

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for fn in functions(op, self.func):
            raised: list[affine.ForOp] = []
            for loop in list(fn.walk()):
                raised.extend(self._raise_loop(loop))
            for access in list(fn.walk()):
                if isinstance(access, memref.LoadOp | memref.StoreOp):
                    with suppress(NotAffine):  # an access that is not affine stays memref
                        raise_access(access)
            erase_dead_index_ops(fn)
            for loop in raised:
                hint = loop.body.block.args[0].name_hint
                if loop_name(loop) is None and hint and not _GENERATED_NAME.fullmatch(hint):
                    set_loop_name(loop, hint)
            taken = {n for n in map(loop_name, loops_in(fn)) if n is not None}
            name_unnamed(raised, taken)
            for loop in raised:
                loop.body.block.args[0].name_hint = loop_name(loop)

    def _raise_loop(self, loop: Operation) -> list[affine.ForOp]:
        try:
            if isinstance(loop, scf.ForOp):
                return [raise_for(loop)]
            if isinstance(loop, scf.ParallelOp):
                return raise_scf_parallel(loop)
            if isinstance(loop, affine.ParallelOp):
                return raise_affine_parallel(loop)
        except NotAffine as e:
            warning(
                f"{self.name}: {loop.name} {_ivs(loop)} stays {loop.dialect_name()}: {e}", op=loop
            )
        return []
