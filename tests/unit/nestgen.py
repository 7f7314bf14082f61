"""Random affine loop nests and random pass pipelines, for the property tests (hypothesis).

A nest has depth 1–4, loops `l0 … l3` (named), constant or triangular bounds (`l_p + c`), steps 1
or 2, and statements that read and write 1- to 3-D arrays at `l_q + offset` (offsets −1…1, shifted
into range), placed in the innermost loop or, for imperfect nests, between loops.
`distribution_nests` gives one loop a body of several statements (loop-distribute);
`sibling_loops` two adjacent loops over the same iterations (loop-fuse);
`invariant_nests` a read at only some of the loops (hoist-invariants).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from hypothesis import strategies as st

Subscript = list[tuple[int, int]]
"""(loop index, offset) per dimension of an array."""


@dataclass
class Loop:
    name: str
    lower: int
    upper: int | tuple[int, int]
    """A constant, or (outer loop index p, c) for the bound `l_p + c`."""
    step: int
    max_value: int


@dataclass
class Statement:
    level: int
    """Index of the innermost enclosing loop."""
    reads: list[tuple[str, list[tuple[int, int]]]]
    write: tuple[str, list[tuple[int, int]]]
    """(array, [(loop index, offset) per dimension])."""
    scale: float
    after: bool = False
    """For a statement around an inner loop: placed after it (else before)."""


@dataclass
class Nest:
    loops: list[Loop]
    statements: list[Statement]
    ranks: dict[str, int]
    size: int
    perfect_depth: int
    """Depth of the outermost perfect band."""
    notes: list[str] = field(default_factory=list)

    def arrays(self, seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [
            rng.standard_normal((self.size,) * self.ranks[name]).astype(np.float32)
            for name in sorted(self.ranks)
        ]

    def mlir(self) -> str:
        names = sorted(self.ranks)
        types = {n: "memref<" + "x".join([str(self.size)] * self.ranks[n]) + "xf32>" for n in names}
        args = ", ".join(f"%{n}: {types[n]}" for n in names)
        lines = [f"func.func @nest({args}) {{"]
        lines += self._loop(0, types, "  ")
        lines += ["  return", "}"]
        return "\n".join(lines) + "\n"

    def _loop(self, k: int, types: dict[str, str], indent: str) -> list[str]:
        loop = self.loops[k]
        if isinstance(loop.upper, int):
            upper = str(loop.upper)
        else:
            p, c = loop.upper
            upper = f"affine_map<(d0) -> (d0 + {c})>(%{self.loops[p].name})"
        step = f" step {loop.step}" if loop.step != 1 else ""
        lines = [f"{indent}affine.for %{loop.name} = {loop.lower} to {upper}{step} {{"]
        inner = indent + "  "
        here = [stmt for stmt in self.statements if stmt.level == k]
        for index, stmt in enumerate(here):
            if not stmt.after:
                lines += self._statement(stmt, f"s{k}_{index}", types, inner)
        if k + 1 < len(self.loops):
            lines += self._loop(k + 1, types, inner)
        for index, stmt in enumerate(here):
            if stmt.after:
                lines += self._statement(stmt, f"s{k}_{index}", types, inner)
        lines.append(f'{indent}}} {{loopopt.name = "{loop.name}"}}')
        return lines

    def _statement(self, stmt: Statement, tag: str, types: dict[str, str], ind: str) -> list[str]:
        def subscript(dims: list[tuple[int, int]]) -> str:
            parts = []
            for q, off in dims:
                shift = off + 1
                parts.append(
                    f"%{self.loops[q].name} + {shift}" if shift else f"%{self.loops[q].name}"
                )
            return ", ".join(parts)

        lines = [f"{ind}%{tag}_c = arith.constant {stmt.scale!r} : f32"]
        acc = f"%{tag}_c"
        for index, (array, dims) in enumerate(stmt.reads):
            lines.append(
                f"{ind}%{tag}_r{index} = affine.load %{array}[{subscript(dims)}] : {types[array]}"
            )
            lines.append(f"{ind}%{tag}_m{index} = arith.mulf %{tag}_r{index}, {acc} : f32")
            acc = f"%{tag}_m{index}"
        array, dims = stmt.write
        lines.append(f"{ind}affine.store {acc}, %{array}[{subscript(dims)}] : {types[array]}")
        return lines


def _loops(draw: st.DrawFn, depth: int) -> list[Loop]:
    """`depth` nested loops l0 … with constant or triangular bounds and steps 1 or 2."""
    loops: list[Loop] = []
    for k in range(depth):
        lower = draw(st.integers(0, 1))
        step = draw(st.sampled_from([1, 1, 1, 2]))
        if k > 0 and draw(st.booleans()):
            p = draw(st.integers(0, k - 1))
            c = draw(st.integers(1, 3))
            upper: int | tuple[int, int] = (p, c)
            max_value = loops[p].max_value + c - 1
        else:
            upper = draw(st.integers(lower + 1, lower + 7 - depth))
            max_value = upper - 1
        loops.append(Loop(f"l{k}", lower, upper, step, max(max_value, lower)))
    return loops


def _access(draw: st.DrawFn, ranks: dict[str, int], level: int) -> tuple[str, Subscript]:
    """An array and its subscript `l_q + offset` (q <= level) per dimension."""
    array = draw(st.sampled_from(sorted(ranks)))
    dims = [(draw(st.integers(0, level)), draw(st.integers(-1, 1))) for _ in range(ranks[array])]
    return array, dims


@st.composite
def nests(draw: st.DrawFn) -> Nest:
    depth = draw(st.integers(1, 4))
    loops = _loops(draw, depth)
    size = max(loop.max_value for loop in loops) + 3
    ranks = {"A": draw(st.integers(1, 3)), "B": draw(st.integers(1, 3))}

    def access(level: int) -> tuple[str, Subscript]:
        return _access(draw, ranks, level)

    statements = [
        Statement(
            depth - 1,
            [access(depth - 1) for _ in range(draw(st.integers(1, 2)))],
            access(depth - 1),
            draw(st.sampled_from([0.5, 1.5])),
        )
    ]
    perfect_depth = depth
    for level in range(depth - 1):
        if draw(st.integers(0, 4)) == 0:  # an imperfect nest: a statement around loop level+1
            after = draw(st.booleans())
            statements.append(Statement(level, [access(level)], access(level), 0.25, after))
            perfect_depth = min(perfect_depth, level + 1)
    return Nest(loops, statements, ranks, size, perfect_depth)


@st.composite
def invariant_nests(draw: st.DrawFn) -> Nest:
    """A nest of depth 2–4 whose statement updates B (at the innermost loops) with a scaled
    read of A at only some of the loops: `scale * A[…]` is the same for every iteration of
    the others (hoist-invariants)."""
    depth = draw(st.integers(2, 4))
    loops = _loops(draw, depth)
    size = max(loop.max_value for loop in loops) + 3
    used = draw(
        st.lists(st.integers(0, depth - 1), min_size=1, max_size=min(depth - 1, 3), unique=True)
    )
    a = [(q, draw(st.integers(-1, 1))) for q in sorted(used)]
    b = [(q, draw(st.integers(-1, 1))) for q in range(max(0, depth - 3), depth)]
    scale = draw(st.sampled_from([0.5, 1.5]))
    statement = Statement(depth - 1, [("A", a), ("B", b)], ("B", b), scale)
    return Nest(loops, [statement], {"A": len(a), "B": len(b)}, size, depth)


@st.composite
def distribution_nests(draw: st.DrawFn) -> tuple[Nest, str]:
    """A nest of depth 1–3 over arrays A, B, C (rank 1–2) and the name of one of its loops
    whose body holds 2–4 statements (around its inner loop, if any): for `loop-distribute`."""
    depth = draw(st.integers(1, 3))
    loops = _loops(draw, depth)
    size = max(loop.max_value for loop in loops) + 3
    ranks = {name: draw(st.integers(1, 2)) for name in "ABC"}
    level = draw(st.integers(0, depth - 1))
    statements = [
        Statement(
            level,
            [_access(draw, ranks, level) for _ in range(draw(st.integers(0, 2)))],
            _access(draw, ranks, level),
            draw(st.sampled_from([0.5, 1.5, 2.0])),
            draw(st.booleans()),
        )
        for _ in range(draw(st.integers(2, 4)))
    ]
    if level < depth - 1:
        inner = _access(draw, ranks, depth - 1)
        statements.append(Statement(depth - 1, [_access(draw, ranks, depth - 1)], inner, 0.75))
    return Nest(loops, statements, ranks, size, level + 1), loops[level].name


@dataclass
class Siblings:
    """Two sibling loops `a` and `b` over the same iterations (or, with `upper_b`, not), each
    with 1–2 statements, optionally inside an outer loop `o` that they may depend on."""

    outer: Loop | None
    inner: Loop
    upper_b: int | None
    """A different upper bound for `b` (a constant), or None."""
    first: list[Statement]
    second: list[Statement]
    ranks: dict[str, int]
    size: int

    def arrays(self, seed: int) -> list[np.ndarray]:
        return Nest([], [], self.ranks, self.size, 0).arrays(seed)

    def mlir(self) -> str:
        outer = [self.outer] if self.outer is not None else []
        level = len(outer)
        nest_a = Nest([*outer, replace(self.inner, name="a")], self.first, self.ranks, self.size, 0)
        inner_b = replace(self.inner, name="b")
        if self.upper_b is not None:
            inner_b.upper = self.upper_b
        nest_b = Nest([*outer, inner_b], self.second, self.ranks, self.size, 0)
        names = sorted(self.ranks)
        types = {n: "memref<" + "x".join([str(self.size)] * self.ranks[n]) + "xf32>" for n in names}
        args = ", ".join(f"%{n}: {types[n]}" for n in names)
        indent = "  " * (level + 1)
        lines = [f"func.func @siblings({args}) {{"]
        if self.outer is not None:
            o = self.outer
            step = f" step {o.step}" if o.step != 1 else ""
            lines.append(f"  affine.for %{o.name} = {o.lower} to {o.upper}{step} {{")
        lines += nest_a._loop(level, types, indent)
        lines += nest_b._loop(level, types, indent)
        if self.outer is not None:
            lines.append(f'  }} {{loopopt.name = "{self.outer.name}"}}')
        lines += ["  return", "}"]
        return "\n".join(lines) + "\n"


@st.composite
def sibling_loops(draw: st.DrawFn) -> Siblings:
    """Two adjacent sibling loops for `loop-fuse`: same bounds (triangular on the outer loop
    when there is one) in 9 cases out of 10, statements reading and writing A and B (rank 1–2)
    at offsets −1…1 of both loops."""
    loops = _loops(draw, draw(st.integers(1, 2)))
    outer, inner = (loops[0], loops[1]) if len(loops) == 2 else (None, loops[0])
    if outer is not None:
        outer.name = "o"
    level = len(loops) - 1
    upper_b = None
    if draw(st.integers(0, 9)) == 0:
        upper_b = inner.max_value + draw(st.sampled_from([1, 2]))
    size = max(loop.max_value for loop in loops) + 5
    ranks = {name: draw(st.integers(1, 2)) for name in "AB"}

    def statements() -> list[Statement]:
        return [
            Statement(
                level,
                [_access(draw, ranks, level) for _ in range(draw(st.integers(1, 2)))],
                _access(draw, ranks, level),
                draw(st.sampled_from([0.5, 1.5, 2.0])),
            )
            for _ in range(draw(st.integers(1, 2)))
        ]

    return Siblings(outer, inner, upper_b, statements(), statements(), ranks, size)


@st.composite
def pipelines(draw: st.DrawFn, nest: Nest) -> str:
    names = [loop.name for loop in nest.loops]
    band = nest.perfect_depth

    def one() -> str:
        loop = draw(st.sampled_from(names))
        factor = draw(st.integers(2, 4))
        kind = draw(
            st.sampled_from(
                [
                    "tile",
                    "strip-mine",
                    "unroll",
                    "unroll-full",
                    "unroll-jam",
                    "interchange",
                    "peel",
                    "promote",
                    "mark-parallel",
                    "skew",
                    "distribute",
                    "fuse",
                ]
            )
        )
        if kind == "tile":
            sizes = [draw(st.sampled_from([0, 2, 3, 4])) for _ in range(draw(st.integers(1, band)))]
            return f"loop-tile{{tile-sizes={','.join(map(str, sizes))}}}"
        if kind == "strip-mine":
            return f"loop-strip-mine{{factor={factor} loop={loop}}}"
        if kind == "unroll":
            return f"loop-unroll{{unroll-factor={factor} loop={loop}}}"
        if kind == "unroll-full":
            return f"loop-unroll{{unroll-full loop={loop}}}"
        if kind == "unroll-jam":
            return f"loop-unroll-jam{{unroll-jam-factor={factor} loop={loop}}}"
        if kind == "interchange":
            perm = draw(st.permutations(list(range(band))))
            return f"loop-interchange{{permutation={','.join(map(str, perm))}}}"
        if kind == "peel":
            return f"loop-peel{{loop={loop} count={draw(st.sampled_from([-2, -1, 1, 2]))}}}"
        if kind == "full-tiles":
            return "loop-peel{full-tiles}"
        if kind == "skew" and band >= 2:
            k = draw(st.integers(0, band - 2))
            option = draw(st.sampled_from([f"factor={factor}", "factor=auto wavefront"]))
            return f"loop-skew{{loops={names[k]},{names[k + 1]} {option}}}"
        if kind == "promote":
            return f"promote{{loop={loop}}}"
        if kind == "distribute":
            return f"loop-distribute{{loop={loop}}}"
        if kind == "fuse":
            return "loop-fuse"
        return "loop-mark-parallel"

    return ",".join(one() for _ in range(draw(st.integers(1, 3))))
