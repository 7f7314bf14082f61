"""Exact memory dependences between the accesses of a loop nest, with islpy.

    affine.for %i = 1 to 8 {                          dependences(f) == [
      affine.for %j = 0 to 7 {                          A[i, j] → A[i - 1, j + 1] (RAW)
        %u = affine.load %A[%i - 1, %j + 1]               has direction (<, >)
        affine.store %v, %A[%i, %j]                   ]
      }                                               (A[i - 1, j + 1] reads what an earlier
    }                                                  iteration (i - 1, j + 1) wrote)

For every ordered pair of accesses (source, sink) that may touch the same memory, at least one of
them a write, the dependence relation is the isl map

    [params] -> { S[s] -> S[t] : s ∈ dom(source), t ∈ dom(sink), f_source(s) = f_sink(t),
                                 s executes before t }

"Executes before" is split by *level*: at level l < c (c = number of common loops) the common
IVs are equal before l and s_l < t_l (the dependence is carried by loop l); at level c all common
IVs are equal and the source is textually first (loop-independent). Each non-empty level is one
`Dependence`, with the set of distances t - s over the common loops, a direction per common loop
(`<`, `=`, `>`, `<=`, `>=` or `*` for anything wider) and a distance where it is constant.

Aliasing: the same SSA memref is compared element by element. Distinct function arguments,
distinct allocations and distinct globals are assumed NOT to alias (like `restrict` in C); two
values reaching the same root through view ops (subview, cast …), or any unknown root, may alias,
and so are compared without the same-element constraint, as are index positions that are not
affine and calls (memref None): conservative dependences with every direction the order allows.

A buffer allocated (memref.alloc/alloca) inside loops is private to each of their iterations:
no dependence through it is carried by those loops (promoted tiles stay parallel).

Values defined outside every affine.for are parameters, the same for source and sink: the
dependences are those within one execution of the outermost affine nest. Run the analysis again
after changing the IR: only the isl computations are kept, by the text of the access maps they
start from (a pure function of it), so that asking again about an unchanged nest, or about each
loop of a deep nest in turn, costs no isl work; directions and distances are worked out when
first asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import islpy as isl
from xdsl.dialects import affine
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from loopopt.analysis.access import Access, Symbols, collect_accesses
from loopopt.analysis.nest import enclosing_loops

VIEW_OPS = frozenset(
    {
        "memref.subview",
        "memref.cast",
        "memref.reinterpret_cast",
        "memref.expand_shape",
        "memref.collapse_shape",
        "memref.view",
        "memref.transpose",
        "memref.memory_space_cast",
        "memref.assume_alignment",
    }
)
ALLOC_OPS = frozenset({"memref.alloc", "memref.alloca"})
FUNC_OPS = frozenset({"func.func", "gpu.func"})


@dataclass(frozen=True, eq=False)
class Distances:
    """The distances t - s of the dependences of one pair of accesses carried at one level (see
    `Dependence`), with their directions worked out once, when first asked for."""

    level: int
    deltas: isl.Set
    _known: dict[int, tuple[str, int | None]] = field(default_factory=dict, repr=False)

    def component(self, k: int) -> tuple[str, int | None]:
        """(direction, constant distance or None) of common loop k: two isl optima, worked out
        once. Ask for the components you need: all of them cost a deep nest's every
        dependence as many optima as it has loops."""
        if k not in self._known:
            self._known[k] = _direction(self.deltas, k, self.level)
        return self._known[k]

    @cached_property
    def components(self) -> tuple[tuple[str, int | None], ...]:
        """(direction, constant distance or None) per common loop."""
        return tuple(self.component(k) for k in range(self.deltas.dim(_DIM)))


@dataclass(frozen=True, eq=False)
class Dependence:
    """`sink` must execute after `source`; carried by `loops[level]` (level == len(loops):
    loop-independent)."""

    kind: str
    """RAW (flow), WAR (anti) or WAW (output)."""
    source: Access
    sink: Access
    loops: tuple[affine.ForOp, ...]
    """The loops common to source and sink, outermost first."""
    carried: Distances
    """The level and the distance set (shared by every analysis of the same accesses)."""
    exact: bool
    """False when some index was non-affine or the memrefs only may alias."""

    @property
    def level(self) -> int:
        return self.carried.level

    @property
    def deltas(self) -> isl.Set:
        """{ D[t0 - s0, …] } over the common loops, parametric in the symbols."""
        return self.carried.deltas

    @property
    def directions(self) -> tuple[str, ...]:
        """Per common loop, outermost first: `<`, `=`, `>`, `<=`, `>=` or `*`."""
        return tuple(direction for direction, _ in self.carried.components)

    @property
    def distances(self) -> tuple[int | None, ...]:
        """Per common loop: the distance where it is constant, else None."""
        return tuple(distance for _, distance in self.carried.components)

    def direction(self, k: int) -> str:
        """The direction of common loop k alone (see `Distances.component`)."""
        return self.carried.component(k)[0]

    def distance(self, k: int) -> int | None:
        """The constant distance of common loop k alone, else None."""
        return self.carried.component(k)[1]

    @property
    def carrier(self) -> affine.ForOp | None:
        return self.loops[self.level] if self.level < len(self.loops) else None

    def direction_text(self) -> str:
        return f"({', '.join(self.directions)})"

    def describe(self) -> str:
        """`A[i, j] → A[i - 1, j + 1] (RAW) has direction (<, >)`."""
        return (
            f"{self.source.render()} → {self.sink.render()} ({self.kind}) "
            f"has direction {self.direction_text()}"
        )


def common_loops(a: Access, b: Access) -> tuple[affine.ForOp, ...]:
    common: list[affine.ForOp] = []
    for x, y in zip(a.loops, b.loops, strict=False):
        if x is not y:
            break
        common.append(x)
    return tuple(common)


def _root(value: SSAValue) -> SSAValue:
    while isinstance(value, OpResult) and value.op.name in VIEW_OPS:
        value = value.op.operands[0]
    return value


def _identity(root: SSAValue) -> object | None:
    """A key that tells memory known to be distinct apart; None for an unknown root."""
    if isinstance(root, BlockArgument):
        owner = root.owner
        parent = owner.parent_op() if isinstance(owner, Block) else None
        if parent is not None and parent.name in FUNC_OPS:
            return root
        return None
    if root.op.name in ALLOC_OPS:
        return root
    if root.op.name == "memref.get_global":
        return ("global", str(root.op.properties.get("name")))
    return None


def alias(a: Access, b: Access) -> str | None:
    """'same' (one SSA memref), 'may' (compare conservatively) or None (never the same memory)."""
    if a.memref is None or b.memref is None:
        return "may"
    if a.memref is b.memref:
        return "same"
    ra, rb = _root(a.memref), _root(b.memref)
    if ra is rb:
        return "may"
    ka, kb = _identity(ra), _identity(rb)
    if ka is None or kb is None or ka == kb:
        return "may"
    return None


def _private_depth(a: Access, b: Access) -> int:
    """How many loops enclose the allocation both access (0 if none): each iteration of those
    gets a fresh buffer, so no dependence through it is carried by them."""
    if a.memref is None or b.memref is None:
        return 0
    root = _root(a.memref)
    if root is not _root(b.memref) or not isinstance(root, OpResult):
        return 0
    return len(enclosing_loops(root.op)) if root.op.name in ALLOC_OPS else 0


def _names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(n)]


def access_map_text(access: Access, params: Sequence[str]) -> str:
    """`access_map` as isl text."""
    s, o = _names("s", len(access.loops)), _names("o", len(access.indices))
    cons = [c.isl(s) for c in access.domain]
    cons += [f"{ok} = {i.isl(s)}" for ok, i in zip(o, access.indices, strict=True) if i is not None]
    body = " and ".join(cons) if cons else "true"
    return f"[{', '.join(params)}] -> {{ S[{', '.join(s)}] -> M[{', '.join(o)}] : {body} }}"


@lru_cache(maxsize=4096)
def _parsed_map(text: str) -> isl.Map:
    return isl.Map(text)


def access_map(access: Access, params: Sequence[str]) -> isl.Map:
    """{ S[s] -> M[o] : s in the domain, o_k = index_k(s) } (a non-affine index: o_k free)."""
    return _parsed_map(access_map_text(access, params))


def relation(src: isl.Map, snk: isl.Map, same_memref: bool) -> isl.Map:
    """{ S[s] -> S[t] } of iteration pairs (no order) touching the same element (if
    `same_memref`, else any two iterations of the domains)."""
    if same_memref:
        return src.apply_range(snk.reverse())
    return isl.Map.from_domain_and_range(src.domain(), snk.domain())


@lru_cache(maxsize=1024)
def _delta_map(ns: int, nt: int, common: int) -> isl.Map:
    s, t = _names("s", ns), _names("t", nt)
    diffs = ", ".join(f"{t[k]} - {s[k]}" for k in range(common))
    return isl.Map(f"{{ [S[{', '.join(s)}] -> S[{', '.join(t)}]] -> D[{diffs}] }}")


_DIM = isl.dim_type.set


def _positive_somewhere(deltas: isl.Set, k: int) -> bool:
    """Whether component k of `deltas` is > 0 anywhere (one optimum: cheaper than emptiness)."""
    upper = deltas.dim_max_val(k)
    return upper.is_infty() or (upper.is_int() and upper.is_pos())


def _direction(deltas: isl.Set, k: int, level: int) -> tuple[str, int | None]:
    """The direction and constant distance (or None) of component k of the distances of a
    dependence carried at `level` (the components before it are 0 by construction).

    From the least and greatest value of the component (exact integer optima over every value
    of the parameters; infinite where unbounded): two isl calls, where testing each sign and the
    distance took six emptiness tests, each costly in a deep nest."""
    if k < level:
        return "=", 0
    lower, upper = deltas.dim_min_val(k), deltas.dim_max_val(k)
    if lower.is_pos():
        direction = "<"
    elif upper.is_neg():
        direction = ">"
    elif lower.is_zero():
        direction = "=" if upper.is_zero() else "<="
    elif upper.is_zero():
        direction = ">="
    else:
        direction = "*"
    if lower.is_int() and upper.is_int() and lower.eq(upper):
        return direction, int(lower.to_python())
    return direction, None


def dependence_kind(src: Access, snk: Access) -> str:
    """RAW, WAR or WAW for a dependence from `src` to `snk`."""
    if src.is_write and snk.is_write:
        return "WAW"
    return "RAW" if src.is_write else "WAR"


def pair_dependences(src: Access, snk: Access, maps: dict[Access, str]) -> list[Dependence]:
    """The dependences from `src` to `snk`, one per non-empty level (`maps`: access_map_text of
    each access)."""
    if not (src.is_write or snk.is_write):
        return []
    how = alias(src, snk)
    if how is None:
        return []
    loops = common_loops(src, snk)
    levels = _levels(
        maps[src],
        maps[snk],
        how == "same",
        (len(src.loops), len(snk.loops), len(loops)),
        _private_depth(src, snk),
        src.order < snk.order,
    )
    exact = how == "same" and src.affine and snk.affine
    kind = dependence_kind(src, snk)
    return [Dependence(kind, src, snk, loops, carried, exact) for carried in levels]


@lru_cache(maxsize=4096)
def _all_distances(src: str, snk: str, same: bool, dims: tuple[int, int, int]) -> isl.Set | None:
    """The distances t - s over the common loops of every pair of iterations that touch the
    same memory (in either order; None: no pair), kept apart from the levels: a source before
    its sink and one after it (`_levels`' `independent`) ask for the same.

    "s executes before t at level l" is a condition on t - s alone (components before l are 0,
    the one at l is > 0), so it is the same taken before or after projecting the pairs onto
    their distances; taken after, the projection (the costly part in a deep nest) is done once
    for every level, and each level adds one constraint to the previous one's zero prefix."""
    rel = relation(_parsed_map(src), _parsed_map(snk), same)
    if rel.is_empty():
        return None
    ns, nt, c = dims
    return rel.wrap().apply(_delta_map(ns, nt, c))


@lru_cache(maxsize=4096)
def _levels(
    src: str, snk: str, same: bool, dims: tuple[int, int, int], first: int, independent: bool
) -> tuple[Distances, ...]:
    """The distance sets of the levels at which the pair of accesses with access maps `src`,
    `snk` (isl text) depends: from level `first` on (see `_private_depth`), and the
    loop-independent level if `independent` (the source comes first in the text). `dims`: the
    loops around the source, around the sink, and common to both."""
    zero_prefix = _all_distances(src, snk, same, dims)
    if zero_prefix is None:
        return ()
    c = dims[2]
    found: list[Distances] = []
    for level in range(c):
        if level >= first and _positive_somewhere(zero_prefix, level):
            found.append(Distances(level, zero_prefix.lower_bound_val(_DIM, level, 1)))
        zero_prefix = zero_prefix.fix_val(_DIM, level, 0)
        if zero_prefix.plain_is_empty():
            return tuple(found)
    if independent and not zero_prefix.is_empty():
        found.append(Distances(c, zero_prefix))
    return tuple(found)


def dependences(root: Operation) -> list[Dependence]:
    """All memory dependences between the accesses under `root` (a function, a loop …)."""
    syms = Symbols()
    accesses = collect_accesses(root, syms)
    params = [sym.isl for sym in syms.table.values()]
    maps = {access: access_map_text(access, params) for access in accesses}
    deps: list[Dependence] = []
    for src in accesses:
        for snk in accesses:
            deps += pair_dependences(src, snk, maps)
    return deps


def carried_by(deps: Sequence[Dependence], loop: affine.ForOp) -> list[Dependence]:
    """The dependences whose first non-`=` component among the common loops is at `loop`."""
    return [dep for dep in deps if dep.carrier is loop]
