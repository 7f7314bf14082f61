"""When an array can be expanded over loops: each of their iterations gets its own copy.

    affine.for %r = 0 to 4 {                          doitgen's `sum`: every iteration (r, q)
      affine.for %q = 0 to 5 {                        writes sum[0..6] before it reads it, so
        affine.for %p = 0 to 6 { sum[p] = 0.0         the iterations only reuse the memory:
          affine.for %s = ... { sum[p] += … } }       expandable(sum, (r, q)) == Expansion(
        affine.for %p = 0 to 6 { A[r, q, p] = sum[p] }    trips=(4, 5), written=((0, 6),))
    } }

An array X is expandable over a band of loops L0 ⊃ … ⊃ Ln-1 (each the only loop around the
next one's accesses of X, not necessarily a perfect band) when, exactly (islpy):
  - every access of X under L0 is an affine load or store inside Ln-1, nothing else under L0
    may touch X (no other view of it, no call), and the band's loops have constant bounds;
  - every read of X is *covered*: the element it reads was written earlier in the same
    iteration of the band (no value flows into an iteration from another, or from before L0);
  - every iteration of the band writes the same elements, a box of X (`written`): after the
    band, X holds what the last iteration wrote, so copying that box back restores it.
Then the dependences the band's loops carry through X are all false (anti and output) and
disappear when X becomes X'[t0, …, tn-1, …] (the iteration numbers in front of X's indices).
The transformation is `loopopt.loops.expand`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import islpy as isl
from xdsl.dialects import affine
from xdsl.ir import SSAValue

from loopopt.analysis.access import Access, Symbols, collect_accesses, memref_name
from loopopt.analysis.dependence import access_map, alias
from loopopt.analysis.nest import constant_bounds, describe_loop, enclosing_loops, step_of


@dataclass(frozen=True)
class Expansion:
    """X expandable over a band: its trip counts, and the box [lo, hi) each iteration writes."""

    trips: tuple[int, ...]
    written: tuple[tuple[int, int], ...]


def _names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(n)]


def _before(write: Access, read: Access, band: int, params: Sequence[str]) -> isl.Map:
    """{ S[w] -> S[r] }: the write instance runs before the read instance in the same
    iteration of the band's `band` loops."""
    common = 0
    for x, y in zip(write.loops, read.loops, strict=False):
        if x is not y:
            break
        common += 1
    w, r = _names("w", len(write.loops)), _names("r", len(read.loops))
    same = [f"{w[k]} = {r[k]}" for k in range(band)]
    disjuncts: list[list[str]] = []
    for level in range(band, common):
        disjuncts.append(
            [*(f"{w[k]} = {r[k]}" for k in range(band, level)), f"{w[level]} < {r[level]}"]
        )
    if write.order < read.order:
        disjuncts.append([f"{w[k]} = {r[k]}" for k in range(band, common)])
    if not disjuncts:
        return isl.Map(
            f"[{', '.join(params)}] -> {{ S[{', '.join(w)}] -> S[{', '.join(r)}] : false }}"
        )
    ors = " or ".join("(" + " and ".join(d or ["true"]) + ")" for d in disjuncts)
    cons = " and ".join([*same, f"({ors})"])
    return isl.Map(
        f"[{', '.join(params)}] -> {{ S[{', '.join(w)}] -> S[{', '.join(r)}] : {cons} }}"
    )


def _touching(array: SSAValue, accesses: Sequence[Access]) -> tuple[list[Access], str | None]:
    """The accesses of `array` among `accesses`, or why the array cannot be followed."""
    own: list[Access] = []
    for access in accesses:
        if access.memref is array:
            own.append(access)
        elif access.memref is None or alias(access, _probe(array, access)) is not None:
            return [], f"'{access.op.name}' may touch it too"
    return own, None


def _probe(array: SSAValue, like: Access) -> Access:
    """An access of `array` to ask `alias` with (only the memref matters to it)."""
    return Access(like.op, array, False, (), (), 0, ())


def expandable(array: SSAValue, band: Sequence[affine.ForOp]) -> Expansion | str:
    """An `Expansion` of `array` over `band` (outermost first), or why it is not one."""
    name = memref_name(array)
    bounds = [constant_bounds(loop) for loop in band]
    if enclosing_loops(band[0]):
        return f"loop '{describe_loop(band[0])}' is inside another loop"
    if any(b is None for b in bounds):
        return "the loops do not all have constant bounds"
    trips = tuple(
        max(0, -(-(hi - lo) // step_of(loop)))
        for (lo, hi), loop in zip(bounds, band, strict=True)  # type: ignore[misc]
    )
    if min(trips) <= 0:
        return "a loop runs no iteration"
    syms = Symbols()
    every = collect_accesses(band[0], syms)
    own, why = _touching(array, every)
    if why is not None:
        return why
    if not any(a.is_write for a in own):
        return f"'{name}' is not written there"
    for access in own:
        if tuple(access.loops[: len(band)]) != tuple(band):
            return f"'{name}' is accessed outside loop '{describe_loop(band[-1])}'"
        if not isinstance(access.op, affine.LoadOp | affine.StoreOp) or None in access.indices:
            return f"'{access.render()}' is not an affine load or store"
    params = [sym.isl for sym in syms.table.values()]
    if params:
        return "the accesses depend on values other than the loops' IVs"
    n = len(band)
    writes = [a for a in own if a.is_write]
    for read in (a for a in own if not a.is_write):
        target = access_map(read, params)
        covered = target.domain().subtract(target.domain())
        for write in writes:
            pairs = access_map(write, params).apply_range(target.reverse())
            covered = covered.union(pairs.intersect(_before(write, read, n, params)).range())
        if not target.domain().is_subset(covered):
            return (
                f"'{read.render()}' may read a value written in another iteration or before "
                f"loop '{describe_loop(band[0])}'"
            )
    per_iteration: isl.Map | None = None
    for write in writes:
        m = access_map(write, params)
        m = m.project_out(isl.dim_type.in_, n, m.dim(isl.dim_type.in_) - n)
        m = m.set_tuple_name(isl.dim_type.in_, "S")
        per_iteration = m if per_iteration is None else per_iteration.union(m)
    assert per_iteration is not None
    box = _box(per_iteration.range())
    if box is None:
        return f"the elements of '{name}' written in one iteration are not a box"
    iterations = isl.Set(
        "{ S["
        + ", ".join(_names("s", n))
        + "] : "
        + " and ".join(
            f"{lo} <= s{k} < {hi} and (s{k} - {lo}) mod {step_of(loop)} = 0"
            for k, ((lo, hi), loop) in enumerate(zip(bounds, band, strict=True))  # type: ignore[misc]
        )
        + " }"
    )
    every_iteration = isl.Map.from_domain_and_range(iterations, per_iteration.range())
    if not per_iteration.is_equal(every_iteration):
        return f"the iterations do not all write the same elements of '{name}'"
    return Expansion(trips, box)


def _box(elements: isl.Set) -> tuple[tuple[int, int], ...] | None:
    """[lo, hi) per dimension when `elements` is exactly a box with constant corners."""
    box: list[tuple[int, int]] = []
    cons: list[str] = []
    for k in range(elements.dim(isl.dim_type.set)):
        lo, hi = elements.dim_min_val(k), elements.dim_max_val(k)
        if not (lo.is_int() and hi.is_int()):
            return None
        box.append((int(lo.to_python()), int(hi.to_python()) + 1))
        cons.append(f"{box[-1][0]} <= e{k} < {box[-1][1]}")
    dims = ", ".join(_names("e", len(box)))
    whole = isl.Set(f"{{ M[{dims}] : {' and '.join(cons) or 'true'} }}")
    return tuple(box) if elements.is_equal(whole) else None
