"""Skew the inner loop of a pair by the outer one (`loop-skew{loops=i,j factor=2}`).

Before:  affine.for %i = 1 to 9 { affine.for %j = 1 to 7 { A[i, j] … } {loopopt.name = "j"} }
             {loopopt.name = "i"}
After:   affine.for %i = 1 to 9 {
           affine.for %j_sk = (d0) -> (d0 * 2 + 1)(%i) to (d0) -> (d0 * 2 + 7)(%i) {
             A[i, j_sk - 2 * i] … } {loopopt.name = "j_sk"}
         } {loopopt.name = "i"}                                                   factor=2

The inner IV becomes j_sk = j + factor * i. Skewing alone is always legal: it renames the
iterations without changing their order (a distance (di, dj) becomes (di, dj + factor * di)), so
no dependence is checked for it; what it enables is checked by the passes that follow. The
classic use is a wavefront: skew by a factor that makes dj + factor * di >= 1 for every
dependence the outer loop carries, then interchange the pair
(`loop-interchange{loops=i,j_sk permutation=1,0}`, which checks that and recomputes the skewed
bounds exactly): the skewed loop, now outside, carries every dependence and the original outer
loop is parallel, so `gpu-map-loops` makes the skewed loop a host loop around kernels over i.
seidel-2d's 9-point stencil (distances (1, -1), (1, 0), (1, 1), (0, 1)) needs factor=2; a
5-point Gauss-Seidel (distances (1, 0), (0, 1)) factor=1.

`factor=auto` takes the smallest factor that does so (analysis.legality.wavefront_factor, on
the exact distances); `wavefront` also interchanges the pair here, refused (with the
dependence, and the factor that would do) unless the interchange is legal and leaves the
original outer loop parallel: `loop-skew{loops=i,j factor=auto wavefront},gpu-map-loops` is
the whole wavefront. `loops=OUTER,INNER` names the pair (required; every pair so named is
skewed, the skewed loop renamed `<inner>_sk`, unique within its function). With a numeric
factor and no `wavefront`, INNER may share OUTER's body with other ops (an imperfect nest:
skewing renames INNER's iterations alone); `auto` and `wavefront` need a perfect pair. Every
pair is checked before any is changed. Mechanics: `loopopt.loops.skew`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin
from xdsl.ir import Operation

from loopopt.analysis.legality import MAX_SKEW_FACTOR, require_wavefront, wavefront_factor
from loopopt.diagnostics import IllegalTransformError, LoopoptError
from loopopt.loops.nest import bands_by_names, functions, loop_name, named_loops
from loopopt.loops.skew import check_wavefront, skew, wavefront
from loopopt.passes import LoopoptPass


@dataclass(frozen=True)
class LoopSkewPass(LoopoptPass):
    """Skew the inner loop of a perfect pair by the outer: j becomes j + factor * i."""

    name = "loop-skew"

    loops: tuple[str, ...] = ()
    """The pair, outer loop first (required)."""

    factor: int | str = 1
    """The skew factor: a positive integer, or `auto`: the smallest that makes the wavefront
    legal with the outer loop parallel (from the exact dependence distances)."""

    wavefront: bool = False
    """Then interchange the pair: the skewed loop outside, the original outer loop inside
    (refused unless that loop is then parallel)."""

    func: str | None = None
    """Only this function."""

    def pairs(self, module: builtin.ModuleOp) -> list[tuple[affine.ForOp, affine.ForOp]]:
        """The pairs to skew, each perfect (options are checked first)."""
        if len(self.loops) != 2:
            got = f" ({', '.join(self.loops)})" if self.loops else ""
            raise LoopoptError(
                f"{self.name}: loops= needs two loop names (outer, inner), got "
                f"{len(self.loops)}{got}",
                op=module,
            )
        if self.factor != "auto" and (not isinstance(self.factor, int) or self.factor < 1):
            raise LoopoptError(
                f"{self.name}: factor must be a positive integer or auto, got {self.factor}",
                op=module,
            )
        roots = functions(module, self.func) if self.func else [module]
        if self.wavefront or self.factor == "auto":
            found = [b for root in roots for b in bands_by_names(root, self.loops, self.name)]
            return [(outer, inner) for outer, inner in found]
        return [pair for root in roots for pair in self._nested_pairs(root)]

    def _nested_pairs(self, root: Operation) -> list[tuple[affine.ForOp, affine.ForOp]]:
        """Each loop named INNER directly in the body of a loop named OUTER."""
        outer_name, inner_name = self.loops
        named_loops(root, inner_name, self.name)  # a diagnostic if there is none
        pairs: list[tuple[affine.ForOp, affine.ForOp]] = []
        for outer in named_loops(root, outer_name, self.name):
            inner = [
                op
                for op in outer.body.block.ops
                if isinstance(op, affine.ForOp) and loop_name(op) == inner_name
            ]
            if not inner:
                raise LoopoptError(
                    f"{self.name}: no loop named '{inner_name}' directly in '{outer_name}'",
                    op=outer,
                )
            pairs += [(outer, loop) for loop in inner]
        return pairs

    def factor_of(self, outer: affine.ForOp, inner: affine.ForOp) -> int:
        if isinstance(self.factor, int):
            return self.factor
        factor = wavefront_factor([outer, inner])
        if factor is None:
            require_wavefront([outer, inner], MAX_SKEW_FACTOR, self.name)  # names the dependence
            raise IllegalTransformError(
                f"{self.name}: no factor up to {MAX_SKEW_FACTOR} makes a wavefront of "
                f"({', '.join(self.loops)})",
                op=outer,
            )
        return factor

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        pairs = [(outer, inner, self.factor_of(outer, inner)) for outer, inner in self.pairs(op)]
        if self.wavefront:
            for outer, inner, factor in pairs:
                require_wavefront([outer, inner], factor, self.name)
                check_wavefront(outer, inner, factor, self.name)
        for outer, inner, factor in pairs:
            if self.wavefront:
                wavefront(outer, inner, factor, self.name)
            else:
                skew(outer, inner, factor, self.name)
