"""Pad partial tiles to full tiles, guarding the accesses that may leave their arrays (`pad-tiles`).

    pad-tiles{loops=i_t2,j_t2,i,j,k}

Before:  affine.for %k = %k_t to min(%k_t + 32, 1000) {
           C[%i, %j] = C[%i, %j] + A[%i, %k] * B[%k, %j] }
After:   affine.for %k = %k_t to %k_t + 32 {
           %a = affine.if (%k <= 999) -> f32 { A[%i, %k] } else { 0.0 } {loopopt.padded}
           %b = affine.if (%k <= 999) -> f32 { B[%k, %j] } else { 0.0 } {loopopt.padded}
           C[%i, %j] = C[%i, %j] + %a * %b }          (past 1000: C + 0 * 0, proved harmless)

Each named loop (a point or tile loop as loop-tile makes them: an upper bound `lower + N`
among the results of a min) runs its whole tile, so the code of a full tile serves the partial
ones too: constant trip counts that unroll and map onto fixed thread blocks (Triton's masked
tiles). Loads that may leave their array read 0.0 there, stores that may leave it are skipped,
and a store in the extension of a loop keeps that loop's original bound in its guard unless
islpy proves it harmless (loops/pad.py). `promote` turns padded loads into reads of a buffer
that holds zeros outside the array; `scalar-replace` keeps padded accumulators in registers.
Refused: loops that carry values, calls or other effects under them, dynamic shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin

from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import find_loops, functions, named_loops
from loopopt.loops.pad import pad_tiles
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class PadTilesPass(LoopoptPass):
    """Run partial tiles as full tiles, with guarded accesses (over-computation)."""

    name = "pad-tiles"

    loops: tuple[str, ...] = ()
    """The tile and point loops to pad, by loopopt.name (each must exist somewhere)."""

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if not self.loops:
            raise LoopoptError(f"{self.name}: missing option loops=NAME,... (loops to pad)")
        for fn in functions(op, self.func):
            targets = [loop for name in self.loops for loop in find_loops(fn, name)]
            if targets:
                pad_tiles(targets, self.name)
        for name in self.loops:
            named_loops(op, name, self.name)  # each name must exist
