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
dependences are those within one execution of the outermost affine nest. Nothing is cached; run
the analysis again after changing the IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import islpy as isl
from xdsl.dialects import affine
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from loopopt.analysis.access import Access, Symbols, collect_accesses
from loopopt.loops.nest import enclosing_loops

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

_SYMBOL = {
    frozenset("<"): "<",
    frozenset("="): "=",
    frozenset(">"): ">",
    frozenset("<="): "<=",
    frozenset(">="): ">=",
}


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
    level: int
    directions: tuple[str, ...]
    distances: tuple[int | None, ...]
    deltas: isl.Set
    """{ D[t0 - s0, …] } over the common loops, parametric in the symbols."""
    exact: bool
    """False when some index was non-affine or the memrefs only may alias."""

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


def access_map(access: Access, params: Sequence[str]) -> isl.Map:
    """{ S[s] -> M[o] : s in the domain, o_k = index_k(s) } (a non-affine index: o_k free)."""
    s, o = _names("s", len(access.loops)), _names("o", len(access.indices))
    cons = [c.isl(s) for c in access.domain]
    cons += [f"{ok} = {i.isl(s)}" for ok, i in zip(o, access.indices, strict=True) if i is not None]
    body = " and ".join(cons) if cons else "true"
    return isl.Map(
        f"[{', '.join(params)}] -> {{ S[{', '.join(s)}] -> M[{', '.join(o)}] : {body} }}"
    )


def relation(src: isl.Map, snk: isl.Map, same_memref: bool) -> isl.Map:
    """{ S[s] -> S[t] } of iteration pairs (no order) touching the same element (if
    `same_memref`, else any two iterations of the domains)."""
    if same_memref:
        return src.apply_range(snk.reverse())
    return isl.Map.from_domain_and_range(src.domain(), snk.domain())


@lru_cache(maxsize=1024)
def _level_map(ns: int, nt: int, common: int, level: int) -> isl.Map:
    s, t = _names("s", ns), _names("t", nt)
    cons = [f"{s[k]} = {t[k]}" for k in range(level)]
    if level < common:
        cons.append(f"{s[level]} < {t[level]}")
    body = " and ".join(cons) if cons else "true"
    return isl.Map(f"{{ S[{', '.join(s)}] -> S[{', '.join(t)}] : {body} }}")


@lru_cache(maxsize=1024)
def _delta_map(ns: int, nt: int, common: int) -> isl.Map:
    s, t = _names("s", ns), _names("t", nt)
    diffs = ", ".join(f"{t[k]} - {s[k]}" for k in range(common))
    return isl.Map(f"{{ [S[{', '.join(s)}] -> S[{', '.join(t)}]] -> D[{diffs}] }}")


@lru_cache(maxsize=1024)
def _component(common: int, k: int, rel: str) -> isl.Set:
    return isl.Set(f"{{ D[{', '.join(_names('d', common))}] : d{k} {rel} }}")


def _direction(deltas: isl.Set, common: int, k: int) -> tuple[str, int | None]:
    signs = frozenset(
        sym
        for sym, rel in (("<", "> 0"), ("=", "= 0"), (">", "< 0"))
        if not deltas.intersect(_component(common, k, rel)).is_empty()
    )
    direction = _SYMBOL.get(signs, "*")
    if direction == "=":
        return direction, 0
    value = deltas.sample_point().get_coordinate_val(isl.dim_type.set, k).to_python()
    others = _component(common, k, f"< {value}").union(_component(common, k, f"> {value}"))
    return direction, int(value) if deltas.intersect(others).is_empty() else None


def dependence_kind(src: Access, snk: Access) -> str:
    """RAW, WAR or WAW for a dependence from `src` to `snk`."""
    if src.is_write and snk.is_write:
        return "WAW"
    return "RAW" if src.is_write else "WAR"


def pair_dependences(src: Access, snk: Access, maps: dict[Access, isl.Map]) -> list[Dependence]:
    """The dependences from `src` to `snk`, one per non-empty level (`maps`: access_map of
    each access)."""
    if not (src.is_write or snk.is_write):
        return []
    how = alias(src, snk)
    if how is None:
        return []
    rel = relation(maps[src], maps[snk], how == "same")
    if rel.is_empty():
        return []
    loops = common_loops(src, snk)
    c, ns, nt = len(loops), len(src.loops), len(snk.loops)
    exact = how == "same" and src.affine and snk.affine
    deps: list[Dependence] = []
    for level in range(_private_depth(src, snk), c + 1):
        if level == c and src.order >= snk.order:
            continue
        at_level = rel.intersect(_level_map(ns, nt, c, level))
        if at_level.is_empty():
            continue
        deltas = at_level.wrap().apply(_delta_map(ns, nt, c))
        comps = [_direction(deltas, c, k) for k in range(c)]
        deps.append(
            Dependence(
                dependence_kind(src, snk),
                src,
                snk,
                loops,
                level,
                tuple(d for d, _ in comps),
                tuple(v for _, v in comps),
                deltas,
                exact,
            )
        )
    return deps


def dependences(root: Operation) -> list[Dependence]:
    """All memory dependences between the accesses under `root` (a function, a loop …)."""
    syms = Symbols()
    accesses = collect_accesses(root, syms)
    params = [sym.isl for sym in syms.table.values()]
    maps = {access: access_map(access, params) for access in accesses}
    deps: list[Dependence] = []
    for src in accesses:
        for snk in accesses:
            deps += pair_dependences(src, snk, maps)
    return deps


def carried_by(deps: Sequence[Dependence], loop: affine.ForOp) -> list[Dependence]:
    """The dependences whose first non-`=` component among the common loops is at `loop`."""
    return [dep for dep in deps if dep.carrier is loop]
