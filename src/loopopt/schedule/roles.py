"""Roles of a nest's loops and arrays, read from its access structure (schedule/recipes.py's input).

    r = matmul_roles(summarize(fn))   # C[i, j] += A[i, k] * B[k, j], whatever the names
    r.i, r.j, r.k, r.a, r.b, r.c      # which loop indexes C's rows, which array is A ...

Each finder returns None when the nest does not have its shape: matmul (a 3-loop perfect nest,
C written at [i, j], A and B read at permutation-like indices), conv (out[o..] += image[o.. + f..]
* filt[f..], 2-D or 3-D), stencil (a 2-D parallel band reading one array at several offsets of
the written index) and map (any nest with a parallel loop: which loops go to x, y, z).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from loopopt.loops.gpu_plan import contiguous_accesses, thread_x_rank
from loopopt.schedule.types import Access, NestSummary, operand_key


def _unit(row: Sequence[int]) -> int | None:
    """The loop an index row is (coefficient 1 on one loop, 0 elsewhere), or None."""
    nonzero = [d for d, c in enumerate(row) if c]
    return nonzero[0] if len(nonzero) == 1 and row[nonzero[0]] == 1 else None


def _groups(summary: NestSummary) -> dict[str, list[Access]]:
    groups: dict[str, list[Access]] = {}
    for access in summary.accesses:
        groups.setdefault(access.array, []).append(access)
    return groups


def _single_map(accesses: Sequence[Access]) -> list[int] | None:
    """The loop of each dimension when every access is the same permutation-like index."""
    first = accesses[0]
    if any(a.coeffs != first.coeffs for a in accesses):
        return None
    dims = [_unit(row) for row in first.coeffs]
    if any(d is None for d in dims) or len(set(dims)) != len(dims):
        return None
    return [d for d in dims if d is not None]


def _output(summary: NestSummary) -> tuple[str, list[int]] | None:
    """The only written array and the loop of each of its dimensions (all parallel)."""
    groups = _groups(summary)
    written = [name for name, accesses in groups.items() if any(a.write for a in accesses)]
    if len(written) != 1:
        return None
    dims = _single_map(groups[written[0]])
    if dims is None or not dims or not all(summary.loops[d].parallel for d in dims):
        return None
    return written[0], dims


@dataclass(frozen=True)
class Operand:
    """One factor of the product: the reads of one array on one side of the contraction (A-like:
    indexed by i and k; B-like: by k and j), all at the same index."""

    array: str
    key: str
    """What stages it (types.operand_key): the array's name, or `A@i` when the array is read
    on both sides (syrk's A[i, k] * A[j, k]: two operands, two shared tiles)."""
    loop: str
    """The side's parallel loop: i for an A-like operand, j for a B-like one."""
    k_last: bool
    """k indexes the array's last dimension (its shared slice is stored transposed, k-major)."""


@dataclass(frozen=True)
class MatmulRoles:
    """C[i, j] += A[.., ..] * B[.., ..] with A indexed by i and k, B by k and j; more than one
    factor on a side (or a sum of products: syr2k's A[j, k] * B[i, k] + B[j, k] * A[i, k]) gives
    that side several operands."""

    i: str
    j: str
    k: str
    c: str
    a_side: tuple[Operand, ...]
    b_side: tuple[Operand, ...]
    batch: tuple[str, ...] = ()
    """Outer parallel loops that index C ahead of i and j (doitgen's r: a batched contraction,
    one matmul per iteration), outermost first; an operand may be indexed by them too."""

    @property
    def operands(self) -> tuple[Operand, ...]:
        return (*self.a_side, *self.b_side)


@functools.lru_cache(maxsize=256)  # per summary: the space asks per candidate
def matmul_roles(summary: NestSummary) -> MatmulRoles | None:
    """The roles of a 3-loop perfect nest whose only written array C is indexed by two parallel
    loops i and j, and whose every other access is a read indexed by (a permutation of) i and
    the remaining sequential loop k, or of k and j; None otherwise. The reads are grouped per
    array and side, each group at one index; the array names may repeat across the sides.
    A batched contraction has more loops: the outermost ones index C ahead of i and j (batch
    loops, which the reads may use too, anywhere in their indices)."""
    out = _output(summary)
    if out is None or len(out[1]) < 2 or len(summary.loops) != len(out[1]) + 1:
        return None
    if summary.initialized:
        return None  # an initialized C (`C[i, j] = 0` ahead of k) is not in the recipe
    c, dims_c = out
    batch, (i, j) = dims_c[:-2], dims_c[-2:]
    if sorted(batch) != list(range(len(batch))):
        return None  # the batch loops are the outermost ones
    (k,) = set(range(len(summary.loops))) - set(dims_c)
    if summary.loops[k].parallel:
        return None
    sides: dict[int, dict[str, list[Access]]] = {i: {}, j: {}}
    for access in summary.accesses:
        if access.array == c:
            continue
        every = _single_map([access])
        dims = [d for d in every or [] if d not in batch]
        if every is None or len(dims) != 2 or k not in dims or not set(dims) & {i, j}:
            return None
        side = i if i in dims else j
        sides[side].setdefault(access.array, []).append(access)
    if (
        not sides[i]
        or not sides[j]
        or any(_single_map(g) is None for s in sides.values() for g in s.values())
    ):
        return None
    names = [loop.name for loop in summary.loops]
    both = set(sides[i]) & set(sides[j])

    def operands(side: int) -> tuple[Operand, ...]:
        found = []
        for array, accesses in sides[side].items():
            key = operand_key(array, names[side]) if array in both else array
            k_last = _unit(accesses[0].coeffs[-1]) == k
            found.append(Operand(array, key, names[side], k_last))
        return tuple(found)

    batched = tuple(names[b] for b in batch)
    return MatmulRoles(names[i], names[j], names[k], c, operands(i), operands(j), batched)


@dataclass(frozen=True)
class ConvRoles:
    """out[o0, o1(, o2)] += image[o0 + f, o1 + f'(, o2 + f'')] * ... (2-D or 3-D)."""

    outs: tuple[str, ...]
    """The loop of each output dimension."""
    filters: tuple[str, ...]
    """The reduction loops, in band order."""
    out: str
    image: str
    """The array read at output + filter offsets."""
    weights: tuple[str, ...] = ()
    """Read-only arrays indexed by the filter loops alone (the same element for every output:
    candidates for constant memory)."""


@functools.lru_cache(maxsize=256)  # per summary: the space asks per candidate
def conv_roles(summary: NestSummary) -> ConvRoles | None:
    out = _output(summary)
    if out is None or len(out[1]) not in (2, 3) or len(summary.loops) != 2 * len(out[1]):
        return None
    array, dims = out
    filters = [d for d in range(len(summary.loops)) if d not in dims]
    if any(summary.loops[d].parallel for d in filters):
        return None
    names = [loop.name for loop in summary.loops]
    for accesses in _groups(summary).values():
        if accesses[0].write or len(accesses[0].coeffs) != len(dims):
            continue
        taps = [_tap(row, o, filters) for row, o in zip(accesses[0].coeffs, dims, strict=True)]
        if None not in taps and len(set(taps)) == len(taps):
            outs = tuple(names[d] for d in dims)
            image = accesses[0].array
            return ConvRoles(
                outs,
                tuple(names[d] for d in filters),
                array,
                image,
                _weights(summary, dims, {array, image}),
            )
    return None


def _weights(summary: NestSummary, outs: Sequence[int], others: set[str]) -> tuple[str, ...]:
    """Arrays only read, at indices that no output loop moves."""
    found = []
    for name, accesses in _groups(summary).items():
        if name in others or any(a.write for a in accesses):
            continue
        if all(row[d] == 0 for a in accesses for row in a.coeffs for d in outs):
            found.append(name)
    return tuple(found)


def _tap(row: Sequence[int], out: int, filters: Sequence[int]) -> int | None:
    """The filter loop f of an image index `out + f` (coefficients 1), else None."""
    nonzero = {d: c for d, c in enumerate(row) if c}
    others = [d for d in nonzero if d != out]
    if nonzero.get(out) != 1 or len(others) != 1 or others[0] not in filters:
        return None
    return others[0] if nonzero[others[0]] == 1 else None


@dataclass(frozen=True)
class StencilRoles:
    """out[y, x] = f(a[y + dy, x + dx] ...) over a 2-D parallel band."""

    y: str
    x: str


@functools.lru_cache(maxsize=256)  # per summary: the space asks per candidate
def stencil_roles(summary: NestSummary) -> StencilRoles | None:
    out = _output(summary)
    if len(summary.loops) != 2 or out is None or len(out[1]) != 2:
        return None
    if not all(loop.parallel for loop in summary.loops):
        return None
    array, (y, x) = out
    coeffs = _groups(summary)[array][0].coeffs
    for accesses in _groups(summary).values():
        offsets = {a.offset for a in accesses if not a.write and a.coeffs == coeffs}
        if len(offsets) >= 2:
            return StencilRoles(summary.loops[y].name, summary.loops[x].name)
    return None


def coalescing_rank(summary: NestSummary, d: int) -> tuple[int, int, int]:
    """gpu-map-loops' rank of band loop `d` for threadIdx.x (loops/gpu_plan.py's own rule,
    `thread_x_rank` of `contiguous_accesses`), over the summary's accesses."""
    terms = [(a.coeffs[-1][d], a.write) for a in summary.accesses if a.coeffs]
    return thread_x_rank(contiguous_accesses(terms), d)


@dataclass(frozen=True)
class MapRoles:
    """The loops `map_nest` maps: up to three of the first run of parallel loops."""

    order: tuple[str, ...]
    """The band order the recipe works in (the mapped loops innermost in the run)."""
    mapped: tuple[str, ...]
    """In band order."""
    axes: tuple[str, ...]
    """The mapped loops on x, y, z."""
    inner: str | None
    """The innermost loop inside the run (unrollable), if any."""
    host: int
    """Sequential loops outside the run (they stay on the host)."""


@functools.lru_cache(maxsize=256)  # per summary: the space asks per candidate
def map_roles(summary: NestSummary) -> MapRoles | None:
    loops = summary.loops
    first = next((d for d, loop in enumerate(loops) if loop.parallel), None)
    if first is None:
        return None
    end = first
    while end < len(loops) and loops[end].parallel:
        end += 1
    run = list(range(first, end))
    x = max(run, key=lambda d: coalescing_rank(summary, d))
    others = [d for d in run if d != x][-2:]
    mapped = sorted([x, *others])
    kept = [d for d in run if d not in mapped]
    order = [*range(first), *kept, *mapped, *range(end, len(loops))]
    names = [loop.name for loop in loops]
    axes = [x, *sorted(others, key=order.index, reverse=True)]
    return MapRoles(
        tuple(names[d] for d in order),
        tuple(names[d] for d in mapped),
        tuple(names[d] for d in axes),
        names[-1] if end < len(loops) else None,
        first,
    )
