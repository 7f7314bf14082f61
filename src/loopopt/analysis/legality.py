"""Legality checks used by the loop passes: each raises IllegalTransformError naming the pass,
the loops and one offending dependence with its direction vector, or returns None when legal.

    require_permutation_legal([i, j], [1, 0], "loop-interchange") on a wavefront raises
    loop-interchange: illegal: permuting loops (i, j) reverses A[i, j] → A[i - 1, j + 1] (RAW)
    with direction (<, >)
    require_fusion_legal(a, b, "loop-fuse") where b reads x[i + 1] after a writes x[i] raises
    loop-fuse: illegal: fusing loops (i, i) reverses x[i] → x[i + 1] (RAW) at distance -1

The checks are exact on the isl distance sets of `loopopt.analysis.dependence` (a dependence with
direction (<, *) is refused only if some distance in it really goes wrong). Dependences carried
by loops outside the band are unaffected by what happens inside it and are ignored. A loop with
iter_args carries a scalar reduction: it may not move within a band, and is not unroll-jammed.

A wavefront (skewing j by factor * i, then interchanging i and j) keeps a dependence of
distance (di, dj) in order and off the moved-in loop i iff di = 0 or dj + factor * di >= 1
(`wavefront_blockers`, `wavefront_factor`, `require_wavefront`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import islpy as isl
from xdsl.dialects import affine
from xdsl.ir import Block, Operation

from loopopt.analysis.access import Access, Symbols, collect_accesses
from loopopt.analysis.dependence import (
    Dependence,
    access_map,
    alias,
    carried_by,
    dependence_kind,
    dependences,
    relation,
)
from loopopt.analysis.distribution import loop_dependences, statement_of
from loopopt.analysis.nest import enclosing_loops, loop_name, step_of
from loopopt.diagnostics import IllegalTransformError, LoopoptError


def loop_label(loop: affine.ForOp) -> str:
    """A loop's name for messages: `loopopt.name`, else `i<depth>` as in access renderings."""
    return loop_name(loop) or f"i{len(enclosing_loops(loop))}"


def _labels(loops: Sequence[affine.ForOp]) -> str:
    return ", ".join(loop_label(loop) for loop in loops)


def _position(dep: Dependence, loop: affine.ForOp) -> int | None:
    for k, common in enumerate(dep.loops):
        if common is loop:
            return k
    return None


def _constraint_set(dep: Dependence, disjuncts: Sequence[Sequence[str]]) -> isl.Set:
    """{ D[d0, …] : OR of ANDs } in the space of `dep.deltas` (an empty list: the empty set)."""
    return _parsed_set(len(dep.loops), tuple(tuple(conj) for conj in disjuncts))


@functools.lru_cache(maxsize=4096)
def _parsed_set(dimensions: int, disjuncts: tuple[tuple[str, ...], ...]) -> isl.Set:
    """The set of `_constraint_set`, parsed once per (dimensions, disjuncts): the dependences of
    a deep nest ask for the same ones (isl takes 0.2 s to parse 60 disjuncts of 60 dims)."""
    dims = ", ".join(f"d{k}" for k in range(dimensions))
    parts = [" and ".join(conj) if conj else "true" for conj in disjuncts]
    body = " or ".join(f"({p})" for p in parts) if parts else "false"
    return isl.Set(f"{{ D[{dims}] : {body} }}")


def _lex_negative(positions: Sequence[int]) -> list[list[str]]:
    """Disjuncts saying the components at `positions` (in this order) are lexicographically < 0."""
    return [
        [f"d{q} = 0" for q in positions[:m]] + [f"d{positions[m]} < 0"]
        for m in range(len(positions))
    ]


def _meets(dep: Dependence, disjuncts: Sequence[Sequence[str]]) -> bool:
    return not dep.deltas.intersect(_constraint_set(dep, disjuncts)).is_empty()


def _relevant(band: Sequence[affine.ForOp]) -> list[tuple[Dependence, int]]:
    """Dependences inside band[0] not carried outside the band, with band[0]'s position."""
    result: list[tuple[Dependence, int]] = []
    for dep in dependences(band[0]):
        p = _position(dep, band[0])
        if p is not None and dep.level >= p:
            result.append((dep, p))
    return result


def _in_common(dep: Dependence, band: Sequence[affine.ForOp], p: int) -> list[int]:
    """Positions in dep.loops of the band loops common to source and sink (a prefix of band)."""
    positions: list[int] = []
    for d, loop in enumerate(band):
        if p + d >= len(dep.loops) or dep.loops[p + d] is not loop:
            break
        positions.append(p + d)
    return positions


def _reverses(dep: Dependence) -> str:
    return f"{dep.source.render()} → {dep.sink.render()} ({dep.kind}) with direction " + (
        dep.direction_text()
    )


def require_fully_permutable(band: Sequence[affine.ForOp], pass_name: str) -> None:
    """Tiling precondition: every dependence carried in the band has all components >= 0."""
    if not band:
        return
    for d, loop in enumerate(band[1:], start=1):
        if loop.inits:
            raise IllegalTransformError(
                f"{pass_name}: illegal: band ({_labels(band)}) is not fully permutable: loop "
                f"{loop_label(loop)} at depth {d} carries iter_args (a scalar reduction)",
                op=band[0],
            )
    for dep, p in _relevant(band):
        negative = [[f"d{q} < 0"] for q in _in_common(dep, band, p)]
        if _meets(dep, negative):
            raise IllegalTransformError(
                f"{pass_name}: illegal: band ({_labels(band)}) is not fully permutable: "
                + dep.describe(),
                op=band[0],
            )


def _check_permutation(band: Sequence[affine.ForOp], permutation: Sequence[int], name: str) -> None:
    if sorted(permutation) != list(range(len(band))):
        raise LoopoptError(
            f"{name}: permutation={','.join(map(str, permutation))} is not a permutation of "
            f"0..{len(band) - 1} for the band ({_labels(band)})",
            op=band[0] if band else None,
        )


def require_permutation_legal(
    band: Sequence[affine.ForOp], permutation: Sequence[int], pass_name: str
) -> None:
    """Interchange precondition: permuting the band (loop at depth d to depth permutation[d])
    keeps every dependence lexicographically positive."""
    _check_permutation(band, permutation, pass_name)
    if list(permutation) == list(range(len(band))):
        return
    for d, loop in enumerate(band):
        if loop.inits and permutation[d] != d:
            raise IllegalTransformError(
                f"{pass_name}: illegal: permuting loops ({_labels(band)}) moves loop "
                f"{loop_label(loop)}, which carries iter_args (a scalar reduction)",
                op=band[0],
            )
    inverse = [0] * len(band)
    for d, target in enumerate(permutation):
        inverse[target] = d
    for dep, p in _relevant(band):
        common = len(_in_common(dep, band, p))
        new_order = [p + d for d in inverse if d < common]
        if _meets(dep, _lex_negative(new_order)):
            raise IllegalTransformError(
                f"{pass_name}: illegal: permuting loops ({_labels(band)}) reverses "
                + _reverses(dep),
                op=band[0],
            )


MAX_SKEW_FACTOR = 1 << 16
"""The largest factor `wavefront_factor` tries (distances that grow with the problem size need
more than any constant factor)."""


def _pair_positions(dep: Dependence, pair: Sequence[affine.ForOp], p: int) -> tuple[int, int]:
    positions = _in_common(dep, pair, p)
    if len(positions) != 2:
        raise LoopoptError(
            "internal: a dependence of a perfect pair outside its inner loop", op=pair[0]
        )
    return positions[0], positions[1]


def wavefront_blockers(
    pair: Sequence[affine.ForOp], factor: int
) -> tuple[Dependence | None, Dependence | None]:
    """(reversed, carried): a dependence within the perfect `pair` (i, j) that skewing j by
    `factor` * i and interchanging would reverse (dj + factor * di < 0 for some distance with
    di >= 1), and one that would leave i carrying it (dj + factor * di = 0); None where none."""
    reversed_dep: Dependence | None = None
    carried_dep: Dependence | None = None
    for dep, p in _relevant(pair):
        pi, pj = _pair_positions(dep, pair, p)
        skewed = f"d{pj} + {factor} * d{pi}"
        if reversed_dep is None and _meets(dep, [[f"d{pi} >= 1", f"{skewed} < 0"]]):
            reversed_dep = dep
        if carried_dep is None and _meets(dep, [[f"d{pi} >= 1", f"{skewed} = 0"]]):
            carried_dep = dep
    return reversed_dep, carried_dep


def wavefront_factor(pair: Sequence[affine.ForOp]) -> int | None:
    """The smallest factor >= 1 with which skewing j by factor * i and interchanging the perfect
    `pair` (i, j) is legal and leaves i parallel; None when no factor up to MAX_SKEW_FACTOR is
    (a dependence whose distance along j has no lower bound in terms of its distance along i)."""
    deps = [(dep, *_pair_positions(dep, pair, p)) for dep, p in _relevant(pair)]

    def works(factor: int) -> bool:
        return not any(
            _meets(dep, [[f"d{pi} >= 1", f"d{pj} + {factor} * d{pi} <= 0"]]) for dep, pi, pj in deps
        )

    high = 1
    while not works(high):  # blocked at f means blocked at every smaller f (di >= 1)
        if high >= MAX_SKEW_FACTOR:
            return None
        high *= 2
    low = high // 2  # fails (or is 0)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if works(middle) else (middle, high)
    return high


def require_wavefront(pair: Sequence[affine.ForOp], factor: int, pass_name: str) -> None:
    """Wavefront precondition: skewing j by `factor` * i and interchanging the perfect `pair`
    (i, j) is legal, and i, moved inside, carries no dependence."""
    outer, inner = pair
    if inner.inits:
        raise IllegalTransformError(
            f"{pass_name}: illegal: wavefront ({_labels(pair)}) moves loop {loop_label(inner)}, "
            "which carries iter_args (a scalar reduction)",
            op=outer,
        )
    reversed_dep, carried_dep = wavefront_blockers(pair, factor)
    if reversed_dep is None and carried_dep is None:
        return
    needed = wavefront_factor(pair)
    hint = f"factor={needed} would" if needed is not None else "no factor would"
    if reversed_dep is not None:
        raise IllegalTransformError(
            f"{pass_name}: illegal: skewing ({_labels(pair)}) by {factor} and interchanging "
            f"reverses {_reverses(reversed_dep)}; {hint} make the wavefront legal",
            op=outer,
        )
    assert carried_dep is not None
    raise IllegalTransformError(
        f"{pass_name}: wavefront ({_labels(pair)}) with factor {factor} leaves loop "
        f"{loop_label(outer)} carrying {_reverses(carried_dep)}; {hint} make it parallel",
        op=outer,
    )


def jam_item(block: Block, op: Operation) -> int:
    """Which unit of unroll-and-jam `op` falls in within `block`: each affine.for is one unit,
    each maximal run of other ops another (the units the copies are placed by, as in MLIR)."""
    ancestor: Operation | None = op
    while ancestor is not None and ancestor.parent_block() is not block:
        ancestor = ancestor.parent_op()
    item, previous_loop = -1, True
    for child in block.ops:
        is_loop = isinstance(child, affine.ForOp)
        if is_loop or previous_loop:
            item += 1
        previous_loop = is_loop
        if child is ancestor:
            return item
    raise LoopoptError(f"internal: {op.name} is not inside the block")


def require_unroll_jam_legal(loop: affine.ForOp, pass_name: str, factor: int | None = None) -> None:
    """Unroll-and-jam precondition for `loop` over the loops nested in it.

    Unroll-and-jam by u places iterations t..t+u-1 of `loop` side by side inside each inner
    loop. A dependence carried by `loop` with distance d (0 < d < u) from S(t) to T(t+d) then
    stays in order iff its distances over the inner loops common to S and T are lexicographically
    positive, or all zero with S's unit (see `jam_item`) not after T's in the innermost common
    body. Without `factor` every distance d > 0 is considered (conservative, independent of u);
    with it, only d < factor * step: the distances that can fall within one group of copies.
    """
    if loop.inits:
        raise IllegalTransformError(
            f"{pass_name}: illegal: loop {loop_label(loop)} carries iter_args "
            "(a scalar reduction) and cannot be unroll-jammed",
            op=loop,
        )
    for dep in carried_by(dependences(loop), loop):
        p = dep.level
        bound = [f"d{p} < {factor * step_of(loop)}"] if factor is not None else []
        inner = list(range(p + 1, len(dep.loops)))
        bad = [bound + conj for conj in _lex_negative(inner)]
        innermost = dep.loops[-1].body.block
        if jam_item(innermost, dep.source.op) > jam_item(innermost, dep.sink.op):
            bad.append(bound + [f"d{q} = 0" for q in inner])
        if _meets(dep, bad):
            raise IllegalTransformError(
                f"{pass_name}: illegal: unroll-and-jam of loop {loop_label(loop)} reverses "
                + _reverses(dep),
                op=loop,
            )


def require_distribution_legal(
    loop: affine.ForOp, groups: Sequence[Sequence[Operation]], pass_name: str
) -> None:
    """Distribution precondition: `groups` (top-level ops of `loop`'s body, each group to get a
    copy of `loop`, in this order) hold every op of the body that a dependence links, and no
    dependence that `loop` carries or that is loop-independent within it goes from a later group
    to an earlier one (those copies run one after the other)."""
    group_of = {op: k for k, group in enumerate(groups) for op in group}
    for dep in loop_dependences(loop):
        ends = [statement_of(access.op, loop) for access in (dep.source, dep.sink)]
        source, sink = (group_of.get(op) if op is not None else None for op in ends)
        if source is None or sink is None:
            missing = ends[0] if source is None else ends[1]
            raise LoopoptError(
                f"{pass_name}: {missing.name if missing else 'an op'} in loop "
                f"{loop_label(loop)} is in no group",
                op=missing or loop,
            )
        if source > sink:
            raise IllegalTransformError(
                f"{pass_name}: illegal: distributing loop {loop_label(loop)} reverses "
                + _reverses(dep),
                op=loop,
            )


def _reversed_pairs(ns: int, nt: int, depth: int) -> isl.Map:
    """{ S[s] -> S[t] : s and t agree on the loops outside `depth` and t_depth < s_depth }."""
    s, t = [f"s{k}" for k in range(ns)], [f"t{k}" for k in range(nt)]
    cons = [f"s{k} = t{k}" for k in range(depth)] + [f"t{depth} < s{depth}"]
    return isl.Map(f"{{ S[{', '.join(s)}] -> S[{', '.join(t)}] : {' and '.join(cons)} }}")


def _distance_text(pairs: isl.Map, ns: int, nt: int, depth: int) -> str:
    s, t = [f"s{k}" for k in range(ns)], [f"t{k}" for k in range(nt)]
    delta = isl.Map(f"{{ [S[{', '.join(s)}] -> S[{', '.join(t)}]] -> D[t{depth} - s{depth}] }}")
    distances = pairs.wrap().apply(delta)
    value = distances.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python()
    if distances.is_singleton():
        return f"at distance {value}"
    closest = distances.lexmax()
    if closest.is_singleton():
        value = closest.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python()
    return f"at negative distances (e.g. {value})"


def _fusion_reversal(
    source: Access, sink: Access, maps: dict[Access, isl.Map], depth: int
) -> isl.Map | None:
    """The pairs (iteration of `source`, iteration of `sink`) touching the same memory, in the
    same iteration of the outer loops, with the sink's iteration of the fused loop earlier."""
    if not (source.is_write or sink.is_write):
        return None
    how = alias(source, sink)
    if how is None:
        return None
    pairs = relation(maps[source], maps[sink], how == "same")
    pairs = pairs.intersect(_reversed_pairs(len(source.loops), len(sink.loops), depth))
    return None if pairs.is_empty() else pairs


def require_fusion_legal(first: affine.ForOp, second: affine.ForOp, pass_name: str) -> None:
    """Fusion precondition for sibling loops `first` and `second` (right after it) that run the
    same iterations: no access of `first` at iteration i and access of `second` at iteration
    j < i touch the same memory, one of them a write, in one iteration of the loops around them.
    (In the original order all of `first` runs before `second`; fused, iteration j of `second`
    would run before iteration i of `first`.) Exact on the isl access relations; what may alias
    or is not affine is compared conservatively. Not checked: the bounds (loops.fuse)."""
    symbols = Symbols()
    sources = collect_accesses(first, symbols)
    sinks = collect_accesses(second, symbols)
    params = [sym.isl for sym in symbols.table.values()]
    maps = {access: access_map(access, params) for access in [*sources, *sinks]}
    depth = len(enclosing_loops(first))
    for source in sources:
        for sink in sinks:
            pairs = _fusion_reversal(source, sink, maps, depth)
            if pairs is None:
                continue
            distance = _distance_text(pairs, len(source.loops), len(sink.loops), depth)
            raise IllegalTransformError(
                f"{pass_name}: illegal: fusing loops ({loop_label(first)}, {loop_label(second)}) "
                f"reverses {source.render()} → {sink.render()} "
                f"({dependence_kind(source, sink)}) {distance}",
                op=first,
            )
