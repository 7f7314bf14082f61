"""Keep array elements that a loop accesses at fixed indices in registers (`scalar-replace`).

    scalar-replace{loop=k_t arrays=C func=matmul}

Before:  affine.for %k = 0 to 8 {
           %c = affine.load %C[%i, %j]   ...   affine.store %s, %C[%i, %j]
         } {loopopt.name = "k"}
After:   %C_reg = affine.load %C[%i, %j]
         %C_out = affine.for %k = 0 to 8 iter_args(%C_acc = %C_reg) -> (f32) {
           ...   affine.yield %s : f32
         } {loopopt.name = "k"}
         affine.store %C_out, %C[%i, %j]

Every affine.for (or those named by `loop=`) is processed innermost first, so elements kept in
registers across an inner loop may be kept across the loops around it too. In each loop, the
arrays (all, or those named by `arrays=`: SSA names, `%C` -> C) that `replaceable` accepts are
replaced: their accesses sit directly in the loop body at loop-invariant, pairwise equal or
disjoint indices. Others are left alone, except that an array named by `arrays=` in a loop named
by `loop=` must qualify (a diagnostic says why not). Then, in the body of each loop, a load of
an element stored or loaded earlier in the body at equal indices, with no possibly aliasing
store or unknown op between, takes that value (`forward_in_block`). Works in func.func and
gpu.func (`func=` names either). Mechanics and legality: `loopopt.loops.scalar_replace`.

The padded loads and stores of `pad-tiles` (each access of C[%i, %j] under one guard invariant
in the loop) are kept in registers too: the load before the loop and the store after it are
then padded ones (`loopopt.loops.scalar_replace_padded`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin
from xdsl.ir import SSAValue

from loopopt.analysis.footprint import array_name, arrays_under
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import describe_loop, function_ops, loop_name, loops_in
from loopopt.loops.scalar_replace import (
    Replaceable,
    forward_in_block,
    replaceable,
    scalar_replace,
)
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class ScalarReplacePass(LoopoptPass):
    """Keep array elements accessed at loop-invariant indices in registers (loop iter_args)."""

    name = "scalar-replace"

    loop: str | None = None
    """Only the loops of this name (default: every loop, innermost first)."""
    arrays: tuple[str, ...] = ()
    """Only these arrays, by SSA name (default: every array that qualifies)."""
    func: str | None = None
    """Only this function (func.func or gpu.func)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        loops = [
            loop
            for fn in function_ops(op, self.func)
            for loop in reversed(list(loops_in(fn)))
            if self.loop is None or loop_name(loop) == self.loop
        ]
        if self.loop is not None and not loops:
            raise LoopoptError(f"{self.name}: no loop named '{self.loop}'", op=op)
        for loop in loops:
            chosen = self._chosen(loop)
            if chosen:
                loop = scalar_replace(loop, chosen)
            named = [m for m in arrays_under(loop) if array_name(m) in self.arrays]
            forward_in_block(loop.body.block, named if self.arrays else None)

    def _chosen(self, loop: affine.ForOp) -> list[Replaceable]:
        """The arrays of `loop` to keep in registers; a diagnostic for an array named with
        `arrays=` in a loop named with `loop=` that does not qualify."""
        under = arrays_under(loop)
        explicit = self.loop is not None and bool(self.arrays)
        candidates: list[SSAValue] = [
            m for m in under if not self.arrays or array_name(m) in self.arrays
        ]
        if explicit:
            for wanted in self.arrays:
                if not any(array_name(m) == wanted for m in under):
                    raise LoopoptError(
                        f"{self.name}: no array named '{wanted}' is used under loop "
                        f"'{describe_loop(loop)}'",
                        op=loop,
                    )
        chosen: list[Replaceable] = []
        for memref in candidates:
            result = replaceable(loop, memref)
            if isinstance(result, Replaceable):
                chosen.append(result)
            elif explicit:
                raise LoopoptError(
                    f"{self.name}: cannot keep {array_name(memref)} in registers across loop "
                    f"'{describe_loop(loop)}': {result}",
                    op=loop,
                )
        return chosen
