"""Differential fuzzer: random loop nests × random pipelines of loopopt's loop passes, judged
by upstream MLIR 22.

    python tests/fuzz/differential.py --cases 5000 [--seed 0] [--batch 25] [--jobs 1] [-v]

Each case is a nest drawn from a seed (`random_nest`: depth 1–3, constant, symbolic (an index
argument of the function), triangular `l_p + c`, `min(N, l_p + c[, 2 l_p + 1])` and
`max(0, l_p - c[, 2 l_p - 5])` bounds, steps 1–3, the outermost loop an `affine.parallel` at
times, statements between loops (imperfect nests), a second nest after the first (fusion's
input), statements under `affine.if` (two constraints, else branches, one nested in another),
`iter_args` reductions (as `affine.for` or `scf.for` with memref.load/store), f32, f64, i32 or
i64 elements, binary ops, `arith.select`, `math` ops and integer min/max, arrays seen through a
column-major (`memref.transpose`) or dynamic-offset (`memref.cast`) layout) and a pipeline of 1–3
loop passes (`random_pipeline`: tile, strip-mine, unroll, unroll-full, unroll-jam, interchange,
peel, skew, promote under a loop, distribute, fuse, mark-parallel, scalar-replace,
reduction-to-memory, loop-reschedule, hoist-invariants, pad-tiles with scalar-replace and
version-guards). loopopt
applies the pipeline in-process as `loopopt-opt` does (its printed output, buffers hoisted as
upstream needs them); a refusal (`LoopoptError`) is counted and proves nothing. Every applied
case of a batch goes into one module with the original nest, a `main` that runs both on the
same random data and prints every array; `mlir-opt` lowers it (affine, scf, cf, memref, arith,
func → llvm) and `mlir-runner` runs it. A case fails when loopopt crashes (an internal error),
when mlir-opt rejects its output, when the run crashes, or when an array differs from the
original's (relative 1e-5: the passes do not reassociate). A failing batch is split to find
its cases. Without mlir-opt or mlir-runner, `available()` is False.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

import numpy as np

LLVM_BIN = Path("/usr/lib/llvm-22/bin")
LLVM_LIB = Path("/usr/lib/llvm-22/lib")


def _tool(name: str) -> str | None:
    found = shutil.which(f"{name}-22")
    if found is not None:
        return found
    return str(LLVM_BIN / name) if (LLVM_BIN / name).exists() else None


MLIR_OPT = os.environ.get("LOOPOPT_MLIR_OPT") or _tool("mlir-opt")
MLIR_RUNNER = _tool("mlir-runner")
RUNTIME_LIBS = [str(p) for p in sorted(LLVM_LIB.glob("libmlir_c_runner_utils.so*"))[:1]] + [
    str(p) for p in sorted(LLVM_LIB.glob("libmlir_runner_utils.so*"))[:1]
]
LOWERING = [
    "--lower-affine",
    "--convert-scf-to-cf",
    "--expand-strided-metadata",
    "--finalize-memref-to-llvm",
    "--convert-to-llvm",
    "--reconcile-unrealized-casts",
]
"""mlir-opt's lowering of a case module to the llvm dialect (what mlir-runner runs)."""


def available() -> bool:
    return MLIR_OPT is not None and MLIR_RUNNER is not None and len(RUNTIME_LIBS) == 2


@dataclass
class Loop:
    name: str
    lower: str
    """Text of the lower bound: a constant or `max affine_map<...>(...)`."""
    upper: str
    step: int
    max_value: int
    """The largest value the induction variable can take."""
    reduction: bool = False
    scf: bool = False
    """A reduction written as `scf.for` with iter_args (memref.load/store in its body)."""
    parallel: bool = False
    """The outermost loop written as `affine.parallel` (every access's first subscript is its
    induction variable, so that its iterations are independent)."""


@dataclass
class Case:
    seed: int
    text: str
    """The nest: func.func @nest over arrays A, B (and C), all of size `size` per dimension,
    then the index symbols (`%N0`, …) that some bounds use."""
    pipeline: str
    ranks: dict[str, int]
    size: int
    features: set[str] = field(default_factory=set[str])
    element: str = "f32"
    layouts: dict[str, str] = field(default_factory=dict[str, str])
    """Array -> `transpose` (column-major view, strided<[1, n]>) or `offset` (strided with a
    dynamic offset, memref.cast); arrays not named have the identity layout."""
    symbols: dict[str, int] = field(default_factory=dict[str, int])
    """Index arguments of @nest -> the value main passes."""

    def plain_type(self, array: str) -> str:
        return "memref<" + "x".join([str(self.size)] * self.ranks[array]) + f"x{self.element}>"

    def arg_type(self, array: str) -> str:
        """The type @nest takes `array` as (its layout)."""
        return _memref_type(self.size, self.ranks[array], self.element, self.layouts.get(array))


def _memref_type(size: int, rank: int, element: str, layout: str | None) -> str:
    shape = "x".join([str(size)] * rank) + f"x{element}"
    if layout == "transpose":
        return f"memref<{shape}, strided<[1, {size}]>>"
    if layout == "offset":
        strides = ", ".join(str(size ** (rank - 1 - d)) for d in range(rank))
        return f"memref<{shape}, strided<[{strides}], offset: ?>>"
    return f"memref<{shape}>"


ELEMENTS = ("f32", "f32", "f32", "f64", "i32", "i64")
"""Element types drawn per case (one for all its arrays)."""


def _loops(r: random.Random, depth: int, features: set[str], symbols: dict[str, int]) -> list[Loop]:
    loops: list[Loop] = []
    for k in range(depth):
        step = r.choice([1, 1, 1, 2, 3])
        lower, low_value = "0", 0
        if k > 0 and r.random() < 0.2:
            p, c = r.randrange(k), r.randint(1, 2)
            extra = ", d0 * 2 - 5" if r.random() < 0.3 else ""
            lower = f"max affine_map<(d0) -> (0, d0 - {c}{extra})>(%{loops[p].name})"
            features.add("max-bound")
            if extra:
                features.add("multi-result")
        elif r.random() < 0.3:
            lower, low_value = "1", 1
        shape = r.random()
        n = r.randint(low_value + 1, low_value + 7 - depth)
        if k > 0 and shape < 0.25:
            p, c = r.randrange(k), r.randint(1, 3)
            upper = f"affine_map<(d0) -> (d0 + {c})>(%{loops[p].name})"
            max_value = loops[p].max_value + c - 1
            features.add("triangular")
        elif k > 0 and shape < 0.45:
            p, c, n = r.randrange(k), r.randint(1, 3), r.randint(2, 6)
            extra = ", d0 * 2 + 1" if r.random() < 0.3 else ""
            symbol = r.random() < 0.3
            if symbol:
                name = f"N{len(symbols)}"
                symbols[name] = n
                upper = (
                    f"min affine_map<(d0)[s0] -> (s0, d0 + {c}{extra})>(%{loops[p].name})[%{name}]"
                )
                features.add("symbol")
            else:
                upper = f"min affine_map<(d0) -> ({n}, d0 + {c}{extra})>(%{loops[p].name})"
            max_value = min(n, loops[p].max_value + c) - 1
            features.add("min-bound")
            if extra:
                features.add("multi-result")
        elif shape < 0.6:
            name = f"N{len(symbols)}"
            symbols[name] = n
            upper, max_value = f"affine_map<()[s0] -> (s0)>()[%{name}]", n - 1
            features.add("symbol")
        else:
            upper, max_value = str(n), n - 1
        if step > 1:
            features.add("step")
        loops.append(Loop(f"l{k}", lower, upper, step, max(max_value, low_value)))
    return loops


class _Writer:
    """The text of one nest."""

    def __init__(self, r: random.Random, loops: list[Loop], case: Case):
        self.r = r
        self.loops = loops
        self.ranks = case.ranks
        self.element = case.element
        self.types = {a: case.arg_type(a) for a in case.ranks}
        self.count = 0
        self.scf_level = len(loops)
        """Loops at this depth and deeper are scf.for: their indices are not affine."""

    def fresh(self) -> str:
        self.count += 1
        return f"%v{self.count}"

    @property
    def is_float(self) -> bool:
        return self.element.startswith("f")

    def constant(self, indent: str, lines: list[str], choices: Sequence[float]) -> str:
        value = self.fresh()
        number = self.r.choice(choices)
        text = str(number) if self.is_float else str(int(number * 2))
        lines.append(f"{indent}{value} = arith.constant {text} : {self.element}")
        return value

    def access(self, level: int) -> tuple[str, list[tuple[int, int]]]:
        """An array and its subscript, `l_q + (0..2)` per dimension with q <= level."""
        array = self.r.choice(sorted(self.ranks))
        parts = [(self.r.randint(0, level), self.r.randint(0, 2)) for _ in range(self.ranks[array])]
        if self.loops[0].parallel:
            parts[0] = (0, 0)
        return array, parts

    def subscript(self, parts: list[tuple[int, int]], indent: str, lines: list[str]) -> str:
        """Affine subscript text, or (under an scf.for) index values computed with arith."""
        if not any(q >= self.scf_level for q, _ in parts):
            names = [f"%{self.loops[q].name}" for q, _ in parts]
            return ", ".join(
                f"{n} + {s}" if s else n for n, (_, s) in zip(names, parts, strict=True)
            )
        values = []
        for q, shift in parts:
            value = f"%{self.loops[q].name}"
            if shift:
                c, total = self.fresh(), self.fresh()
                lines.append(f"{indent}{c} = arith.constant {shift} : index")
                lines.append(f"{indent}{total} = arith.addi {value}, {c} : index")
                value = total
            values.append(value)
        return ", ".join(values)

    def _memory(self, parts: list[tuple[int, int]]) -> str:
        return "memref" if any(q >= self.scf_level for q, _ in parts) else "affine"

    def load(self, level: int, indent: str, lines: list[str]) -> str:
        array, parts = self.access(level)
        sub = self.subscript(parts, indent, lines)
        value = self.fresh()
        kind = self._memory(parts)
        lines.append(f"{indent}{value} = {kind}.load %{array}[{sub}] : {self.types[array]}")
        return value

    def store(self, value: str, level: int, indent: str, lines: list[str]) -> None:
        array, parts = self.access(level)
        sub = self.subscript(parts, indent, lines)
        kind = self._memory(parts)
        lines.append(f"{indent}{kind}.store {value}, %{array}[{sub}] : {self.types[array]}")

    def combine(self, a: str, b: str, indent: str, lines: list[str], features: set[str]) -> str:
        """One of the element type's binary ops, a select, a min/max, or a math op, of a, b."""
        out = self.fresh()
        t = self.element
        kind = self.r.random()
        if kind < 0.15:
            features.add("select")
            cond = self.fresh()
            cmp = "arith.cmpf olt" if self.is_float else "arith.cmpi slt"
            lines.append(f"{indent}{cond} = {cmp}, {a}, {b} : {t}")
            lines.append(f"{indent}{out} = arith.select {cond}, {a}, {b} : {t}")
        elif kind < 0.25 and self.is_float:
            features.add("math")
            op = self.r.choice(["math.absf", "math.floor", "math.sqrt"])
            inner = self.fresh()
            lines.append(f"{indent}{inner} = arith.addf {a}, {b} : {t}")
            if op == "math.sqrt":
                positive = self.fresh()
                lines.append(f"{indent}{positive} = math.absf {inner} : {t}")
                inner = positive
            lines.append(f"{indent}{out} = {op} {inner} : {t}")
        elif kind < 0.25:
            features.add("minmax")
            lines.append(
                f"{indent}{out} = {self.r.choice(['arith.maxsi', 'arith.minsi'])} {a}, {b} : {t}"
            )
        else:
            ops = ["mul", "add", "mul", "sub"] if kind < 0.9 else ["add"]
            op = f"arith.{self.r.choice(ops)}{'f' if self.is_float else 'i'}"
            lines.append(f"{indent}{out} = {op} {a}, {b} : {t}")
        return out

    def statement(self, level: int, indent: str, features: set[str]) -> list[str]:
        """B[..] = A[..] ⊕ c (⊕ A[..]) at loop depth `level`."""
        lines: list[str] = []
        acc = self.constant(indent, lines, [0.5, 1.5, -0.75])
        for _ in range(self.r.randint(1, 2)):
            value = self.load(level, indent, lines)
            acc = self.combine(value, acc, indent, lines, features)
        self.store(acc, level, indent, lines)
        return lines

    def guarded(self, level: int, indent: str, features: set[str], nesting: int = 0) -> list[str]:
        """A statement, under an affine.if on the loops around it one time in four (with an
        else branch, a second constraint or a nested affine.if at times)."""
        if self.r.random() >= 0.25 or level < 0:
            return self.statement(level, indent, features)
        features.add("affine.if")
        p, q = self.r.randint(0, level), self.r.randint(0, level)
        c = self.r.randint(-1, 2)
        if self.r.random() < 0.7:
            sign = "+" if c >= 0 else "-"
            constraints = [f"d0 - d1 {sign} {abs(c)} >= 0"]
        else:
            constraints = [f"d0 - {c + 1} == 0"]
        if self.r.random() < 0.2:
            constraints.append(f"d1 - {self.r.randint(1, 2)} >= 0")
        condition = f"affine_set<(d0, d1) : ({', '.join(constraints)})>"
        names = f"%{self.loops[p].name}, %{self.loops[q].name}"
        inner = indent + "  "
        lines = [f"{indent}affine.if {condition}({names}) {{"]
        if nesting == 0 and self.r.random() < 0.2:
            features.add("nested-if")
            lines += self.guarded(level, inner, features, nesting + 1)
        else:
            lines += self.statement(level, inner, features)
        if self.r.random() < 0.35:
            features.add("else")
            lines.append(f"{indent}}} else {{")
            lines += self.statement(level, inner, features)
        lines.append(f"{indent}}}")
        return lines

    def nest(self, k: int, indent: str, features: set[str]) -> list[str]:
        loop = self.loops[k]
        step = f" step {loop.step}" if loop.step != 1 else ""
        head = f"affine.for %{loop.name} = {loop.lower} to {loop.upper}{step}"
        if loop.reduction:
            return self.reduction(k, head, indent, features)
        if loop.parallel:
            features.add("affine.parallel")
            upper = re.sub(r"affine_map<\(\)\[s0\] -> \(s0\)>\(\)\[(%\w+)\]", r"\1", loop.upper)
            step = f" step ({loop.step})" if loop.step != 1 else ""
            head = f"affine.parallel (%{loop.name}) = ({loop.lower}) to ({upper}){step}"
        lines = [f"{indent}{head} {{"]
        inner = indent + "  "
        before = k + 1 < len(self.loops) and self.r.random() < 0.2
        after = k + 1 < len(self.loops) and self.r.random() < 0.2
        if before or after:
            features.add("imperfect")
        if before:
            lines += self.guarded(k, inner, features)
        if k + 1 < len(self.loops):
            lines += self.nest(k + 1, inner, features)
        else:
            for _ in range(self.r.randint(1, 2)):
                lines += self.guarded(k, inner, features)
        if after:
            lines += self.guarded(k, inner, features)
        lines.append(
            f'{indent}}} {{loopopt.name = "{loop.name}"}}' if not loop.parallel else f"{indent}}}"
        )
        return lines

    def reduction(self, k: int, head: str, indent: str, features: set[str]) -> list[str]:
        """acc = B[..]; for l_k: acc += A[..] * c; B[..] = acc (the innermost loop, k); as an
        scf.for when the loop says so."""
        lines: list[str] = []
        init = self.load(k - 1, indent, lines) if k > 0 else self._first(indent, lines)
        result = self.fresh()
        acc = self.fresh()
        t = self.element
        loop = self.loops[k]
        if loop.scf:
            features.add("scf.for")
            bounds = [
                self._index(loop.lower, indent, lines),
                self._index(loop.upper, indent, lines),
            ]
            step = self.fresh()
            lines.append(f"{indent}{step} = arith.constant {loop.step} : index")
            self.scf_level = k
            lines.append(
                f"{indent}{result} = scf.for %{loop.name} = {bounds[0]} to {bounds[1]} step {step} "
                f"iter_args({acc} = {init}) -> ({t}) {{"
            )
        else:
            lines.append(f"{indent}{result} = {head} iter_args({acc} = {init}) -> ({t}) {{")
        inner = indent + "  "
        value = self.load(k, inner, lines)
        c = self.constant(inner, lines, [0.5, 1.5])
        product, total = self.fresh(), self.fresh()
        suffix = "f" if self.is_float else "i"
        lines.append(f"{inner}{product} = arith.mul{suffix} {value}, {c} : {t}")
        lines.append(f"{inner}{total} = arith.add{suffix} {acc}, {product} : {t}")
        if loop.scf:
            lines.append(f"{inner}scf.yield {total} : {t}")
            lines.append(f"{indent}}}")
            self.scf_level = len(self.loops)
        else:
            lines.append(f"{inner}affine.yield {total} : {t}")
            lines.append(f'{indent}}} {{loopopt.name = "{loop.name}"}}')
        if k > 0:
            self.store(result, k - 1, indent, lines)
        else:
            array = sorted(self.ranks)[0]
            sub = ", ".join(["0"] * self.ranks[array])
            lines.append(f"{indent}affine.store {result}, %{array}[{sub}] : {self.types[array]}")
        return lines

    def _index(self, bound: str, indent: str, lines: list[str]) -> str:
        """An affine bound's text as an index value (for scf.for)."""
        value = self.fresh()
        if bound.isdigit():
            lines.append(f"{indent}{value} = arith.constant {bound} : index")
        elif bound.startswith(("min ", "max ")):
            lines.append(f"{indent}{value} = affine.{bound[:3]} {bound[4:]}")
        else:
            lines.append(f"{indent}{value} = affine.apply {bound}")
        return value

    def _first(self, indent: str, lines: list[str]) -> str:
        array = sorted(self.ranks)[0]
        value = self.fresh()
        zeros = ", ".join(["0"] * self.ranks[array])
        lines.append(f"{indent}{value} = affine.load %{array}[{zeros}] : {self.types[array]}")
        return value


def random_nest(seed: int) -> Case:
    """The nest and pipeline of case `seed`."""
    r = random.Random(seed)
    features: set[str] = set()
    depth = r.choice([1, 2, 2, 3, 3, 3])
    symbols: dict[str, int] = {}
    loops = _loops(r, depth, features, symbols)
    if r.random() < 0.2:
        loops[-1].reduction = True
        loops[-1].scf = depth > 1 and r.random() < 0.3
        features.add("iter_args")
    loops[0].parallel = not loops[0].reduction and r.random() < 0.15
    size = max(loop.max_value for loop in loops) + 3
    names = ["A", "B"] + (["C"] if r.random() < 0.3 else [])
    ranks = {name: r.randint(1, min(3, depth + 1)) for name in names}
    element = r.choice(ELEMENTS)
    if element != "f32":
        features.add(element)
    layouts: dict[str, str] = {}
    for name in names:
        if r.random() < 0.15:
            layouts[name] = "transpose" if ranks[name] == 2 and r.random() < 0.5 else "offset"
            features.add("layout")
    case = Case(seed, "", "", ranks, size, features, element, layouts, symbols)
    writer = _Writer(r, loops, case)
    args = ", ".join(
        [f"%{a}: {case.arg_type(a)}" for a in sorted(ranks)]
        + [f"%{s}: index" for s in sorted(symbols)]
    )
    body = writer.nest(0, "  ", features)
    if r.random() < 0.25:
        features.add("sequence")
        body += writer.nest(0, "  ", features)  # a second nest after the first (same loop names)
    case.text = "\n".join([f"func.func @nest({args}) {{", *body, "  return", "}"]) + "\n"
    case.pipeline = random_pipeline(r, loops)
    if loops[0].parallel and r.random() < 0.5:
        case.pipeline = "raise-scf-to-affine," + case.pipeline
    if "promote" in case.pipeline:
        features.add("promote")
    return case


KINDS = (
    "tile",
    "tile",
    "strip-mine",
    "unroll",
    "unroll-full",
    "unroll-jam",
    "interchange",
    "peel",
    "full-tiles",
    "promote",
    "promote",
    "mark-parallel",
    "skew",
    "distribute",
    "fuse",
    "scalar-replace",
    "demote",
    "reschedule",
    "hoist",
    "pad",
)
"""The pipeline steps `random_pipeline` draws from (`--kinds` narrows them)."""


def random_pipeline(r: random.Random, loops: list[Loop], kinds: Sequence[str] = KINDS) -> str:
    names = [loop.name for loop in loops if not loop.scf]

    def one() -> str:
        loop = r.choice(names)
        factor = r.randint(2, 4)
        kind = r.choice(list(kinds))
        if kind == "tile":
            sizes = [r.choice([0, 2, 3, 4]) for _ in range(r.randint(1, len(names)))]
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
            perm = list(range(r.randint(2, max(2, len(names)))))
            r.shuffle(perm)
            return f"loop-interchange{{permutation={','.join(map(str, perm))}}}"
        if kind == "peel":
            return f"loop-peel{{loop={loop} count={r.choice([-2, -1, 1, 2])}}}"
        if kind == "full-tiles":
            return "loop-tile{tile-sizes=2},loop-peel{full-tiles}"
        if kind == "skew" and len(names) >= 2:
            k = r.randrange(len(names) - 1)
            option = r.choice([f"factor={factor}", "factor=auto wavefront"])
            return f"loop-skew{{loops={names[k]},{names[k + 1]} {option}}}"
        if kind == "promote":
            return f"promote{{loop={loop}}}"
        if kind == "distribute":
            return f"loop-distribute{{loop={loop}}}"
        if kind == "fuse":
            return "loop-fuse"
        if kind == "scalar-replace":
            return "scalar-replace"
        if kind == "hoist":
            return r.choice(["hoist-invariants", "hoist-invariants{min-reuse=3}"])
        if kind == "demote":
            return r.choice(["reduction-to-memory", "reduction-to-memory{scratch}"])
        if kind == "pad":  # padded tiles of a loop, unrolled, their guards versioned
            return (
                f"loop-tile{{loops={loop} tile-sizes={factor}}},pad-tiles{{loops={loop}_t,{loop}}},"
                f"loop-unroll{{unroll-full loop={loop}}},scalar-replace{{loop={loop}_t}},"
                f"version-guards{{loop={loop}_t}}"
            )
        if kind == "reschedule":
            return r.choice(
                [
                    "loop-reschedule{force}",
                    "reduction-to-memory,loop-reschedule",
                    "reduction-to-memory,loop-reschedule{split force}",
                    "reduction-to-memory,loop-reschedule{wavefront force}",
                ]
            )
        return "loop-mark-parallel"

    return ",".join(one() for _ in range(r.randint(1, 3)))


def apply_loopopt(text: str, pipeline: str) -> str:
    """What `loopopt-opt -p PIPELINE` prints for `text` (LoopoptError when refused)."""
    return apply_traced(text, pipeline)[0]


def apply_traced(text: str, pipeline: str) -> tuple[str, list[str]]:
    """`apply_loopopt`, one pass at a time: the output and the names of the passes that left
    the module as they found it (a refusal's LoopoptError carries `refused_by`)."""
    from xdsl.printer import Printer

    from loopopt.context import make_context, parse_chunk, verify_ir
    from loopopt.diagnostics import LoopoptError
    from loopopt.iteration_buffers import hoist_iteration_buffers
    from loopopt.pass_pipeline import apply_passes, parse_pipeline

    def printed() -> str:
        out = StringIO()
        Printer(stream=out).print_op(module)
        return out.getvalue()

    ctx = make_context()
    module = parse_chunk(ctx, text, "case.mlir")
    unchanged: list[str] = []
    before = printed()
    for p in parse_pipeline(pipeline):
        try:
            with contextlib.redirect_stderr(StringIO()):  # the passes' warnings
                apply_passes(
                    ctx, module, [p], lambda p, m: verify_ir(m, f"{p.name} produced invalid IR")
                )
        except LoopoptError as e:
            e.refused_by = p.name  # type: ignore[attr-defined]
            raise
        after = printed()
        if after == before:
            unchanged.append(p.name)
        before = after
    hoist_iteration_buffers(module)
    return printed(), unchanged


def _function(module_text: str, name: str) -> str:
    """The body of a printed module (its ops) with @nest renamed `@name`."""
    body = module_text.strip()
    body = body.removeprefix("builtin.module {").removesuffix("}")
    return re.sub(r"@nest\b", f"@{name}", body)


_PRINT = {"f32": "F32", "f64": "F64", "i32": "I32", "i64": "I64"}
"""The runner library's printMemref<suffix> for each element type."""


def _globals_and_main(cases: list[tuple[Case, int]]) -> tuple[list[str], list[str]]:
    """memref.globals with each case's random data; main's lines that copy them into fresh
    arrays, view them with the case's layouts, run the original and the transformed nest, and
    print every array."""
    globals_: list[str] = []
    main: list[str] = []
    for case, index in cases:
        rng = np.random.default_rng(case.seed)
        for array in sorted(case.ranks):
            shape = (case.size,) * case.ranks[array]
            if case.element.startswith("f"):
                data = rng.uniform(-1, 1, shape).astype(np.float32).astype(np.float64)
            else:
                data = rng.integers(-4, 5, shape)
            values = json.dumps(data.tolist())
            globals_.append(
                f'memref.global "private" constant @g{index}_{array} : '
                f"{case.plain_type(array)} = dense<{values}>"
            )
        symbols = []
        for name, value in sorted(case.symbols.items()):
            main.append(f"  %s{index}_{name} = arith.constant {value} : index")
            symbols.append(f"%s{index}_{name}")
        for which in ("orig", "xf"):
            args, types, printed = [], [], []
            for array in sorted(case.ranks):
                t, view_t = case.plain_type(array), case.arg_type(array)
                g, m = f"%g{index}_{which}_{array}", f"%m{index}_{which}_{array}"
                main.append(f"  {g} = memref.get_global @g{index}_{array} : {t}")
                main.append(f"  {m} = memref.alloc() : {t}")
                main.append(f"  memref.copy {g}, {m} : {t} to {t}")
                view = m
                if case.layouts.get(array) == "transpose":
                    view = f"{m}_v"
                    main.append(
                        f"  {view} = memref.transpose {m} (d0, d1) -> (d1, d0) : {t} to {view_t}"
                    )
                elif case.layouts.get(array) == "offset":
                    view = f"{m}_v"
                    main.append(f"  {view} = memref.cast {m} : {t} to {view_t}")
                args.append(view)
                types.append(view_t)
                printed.append((m, t))
            args += symbols
            types += ["index"] * len(symbols)
            main.append(
                f"  func.call @{which}{index}({', '.join(args)}) : ({', '.join(types)}) -> ()"
            )
            suffix = _PRINT[case.element]
            for m, t in printed:
                u = f"{m}_u"
                unranked = f"memref<*x{case.element}>"
                main.append(f"  {u} = memref.cast {m} : {t} to {unranked}")
                main.append(f"  func.call @printMemref{suffix}({u}) : ({unranked}) -> ()")
    return globals_, main


@dataclass
class Verdict:
    seed: int
    outcome: str
    """applied (the same results), refused, or failed: <why>."""
    detail: str = ""
    """Why it failed; for a refusal, the refusing pass's name and its message."""
    unchanged: tuple[str, ...] = ()
    """The passes of an applied pipeline that left the nest as they found it."""


def run_batch(cases: list[tuple[Case, str]], workdir: Path) -> list[Verdict]:
    """Judge applied cases (case, loopopt's output) in one mlir-opt + mlir-runner run; a
    failing batch is split until the failing cases are alone."""
    indexed = [(case, index) for index, (case, _) in enumerate(cases)]
    functions = []
    for (case, after), (_, index) in zip(cases, indexed, strict=True):
        functions.append(re.sub(r"@nest\b", f"@orig{index}", case.text))
        functions.append(_function(after, f"xf{index}"))
    globals_, main = _globals_and_main(indexed)
    module = "\n".join(
        [
            *globals_,
            *functions,
            *[
                f"func.func private @printMemref{suffix}(memref<*x{element}>)"
                for element, suffix in _PRINT.items()
            ],
            "func.func @main() {",
            *main,
            "  return",
            "}",
        ]
    )
    problem, output = _lower_and_run(module, workdir)
    if problem is None:
        verdicts = _compare(cases, output)
        if verdicts is not None:
            return verdicts
        problem = "unreadable output"
    if len(cases) == 1:
        return [Verdict(cases[0][0].seed, f"failed: {problem}", output[-1500:])]
    half = len(cases) // 2
    return run_batch(cases[:half], workdir) + run_batch(cases[half:], workdir)


def _lower_and_run(module: str, workdir: Path) -> tuple[str | None, str]:
    assert MLIR_OPT is not None and MLIR_RUNNER is not None
    source = workdir / "batch.mlir"
    source.write_text(module)
    lowered = subprocess.run(
        [MLIR_OPT, str(source), *LOWERING], capture_output=True, text=True, check=False
    )
    if lowered.returncode != 0:
        return "mlir-opt rejects or cannot lower it", lowered.stderr
    ran = subprocess.run(
        [
            MLIR_RUNNER,
            "-e",
            "main",
            "-entry-point-result=void",
            f"-shared-libs={','.join(RUNTIME_LIBS)}",
        ],
        input=lowered.stdout,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if ran.returncode != 0:
        return f"mlir-runner exit {ran.returncode}", ran.stderr
    return None, ran.stdout


_NUMBER = re.compile(r"-?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)", re.IGNORECASE)


def _compare(cases: list[tuple[Case, str]], output: str) -> list[Verdict] | None:
    """Verdicts from the printed arrays (original's, then transformed's, per case)."""
    printed = output.split("Unranked Memref")[1:]
    arrays = []
    for block in printed:
        data = block.split("data =", 1)
        if len(data) != 2:
            return None
        arrays.append(np.array([float(x) for x in _NUMBER.findall(data[1])]))
    expected = sum(2 * len(case.ranks) for case, _ in cases)
    if len(arrays) != expected:
        return None
    verdicts = []
    position = 0
    for case, _ in cases:
        n = len(case.ranks)
        original, transformed = (
            arrays[position : position + n],
            arrays[position + n : position + 2 * n],
        )
        position += 2 * n
        bad = [
            name
            for name, a, b in zip(sorted(case.ranks), original, transformed, strict=True)
            if a.shape != b.shape or not np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
        ]
        if bad:
            verdicts.append(Verdict(case.seed, "failed: wrong result", f"arrays {bad} differ"))
        else:
            verdicts.append(Verdict(case.seed, "applied"))
    return verdicts


def judge(seeds: list[int], workdir: Path) -> list[Verdict]:
    """Generate, transform and judge the cases of `seeds` (one upstream run for all)."""
    from loopopt.diagnostics import LoopoptError, internal_error

    verdicts: list[Verdict] = []
    applied: list[tuple[Case, str]] = []
    unchanged: dict[int, tuple[str, ...]] = {}
    for seed in seeds:
        case = random_nest(seed)
        try:
            after, same = apply_traced(case.text, case.pipeline)
        except LoopoptError as e:
            by = getattr(e, "refused_by", "pipeline")
            verdicts.append(Verdict(seed, "refused", f"{by}: {e.message}"))
            continue
        except Exception as e:  # a crash of loopopt is a failure of the case
            verdicts.append(Verdict(seed, "failed: loopopt crashed", internal_error(e).one_line()))
            continue
        applied.append((case, after))
        unchanged[seed] = tuple(same)
    if applied:
        for verdict in run_batch(applied, workdir):
            verdict.unchanged = unchanged[verdict.seed]
            verdicts.append(verdict)
    return verdicts


@dataclass
class Tally:
    """What a fuzz run found: outcomes, and per pass how often it was drawn, refused, or left
    the nest unchanged (a refusal's first words, `pass: reason`, counted apart)."""

    outcomes: Counter[str] = field(default_factory=Counter[str])
    drawn: Counter[str] = field(default_factory=Counter[str])
    refused: Counter[str] = field(default_factory=Counter[str])
    unchanged: Counter[str] = field(default_factory=Counter[str])
    reasons: Counter[str] = field(default_factory=Counter[str])

    def add(self, verdict: Verdict) -> None:
        self.outcomes[verdict.outcome] += 1
        self.drawn.update(_pass_names(random_nest(verdict.seed).pipeline))
        self.unchanged.update(verdict.unchanged)
        if verdict.outcome == "refused":
            by = verdict.detail.split(":", 1)[0]
            self.refused[by] += 1
            self.reasons[_reason(verdict.detail)] += 1

    def report(self) -> str:
        lines = ["pass: drawn refused unchanged"]
        for name, n in self.drawn.most_common():
            lines.append(f"  {name}: {n} {self.refused[name]} {self.unchanged[name]}")
        lines.append("refusals, most common reasons:")
        lines += [f"  {n} {why}" for why, n in self.reasons.most_common(25)]
        return "\n".join(lines)


def _pass_names(pipeline: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"(?:^|,)([\w-]+)", re.sub(r"\{[^}]*\}", "", pipeline))]


def _reason(detail: str) -> str:
    """A refusal's message with numbers, names and accesses blanked (for counting kinds)."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\([^)]*\)", "_", detail)
    return re.sub(r"\b\d+\b|\bl\d\b", "#", text)[:140]


def _judge_batch(seeds: list[int]) -> list[Verdict]:
    with tempfile.TemporaryDirectory(prefix="loopopt-fuzz-") as tmp:
        return judge(seeds, Path(tmp))


def fuzz(
    first_seed: int, cases: int, batch: int = 25, verbose: bool = False, jobs: int = 1
) -> Counter[str]:
    """Judge `cases` cases from `first_seed` on; the outcomes counted; failures printed."""
    return fuzz_tally(first_seed, cases, batch, verbose, jobs).outcomes


def fuzz_tally(
    first_seed: int, cases: int, batch: int = 25, verbose: bool = False, jobs: int = 1
) -> Tally:
    """`fuzz`, with the per-pass counts of `Tally`; `jobs` batches judged at once."""
    tally = Tally()
    end = first_seed + cases
    batches = [list(range(s, min(s + batch, end))) for s in range(first_seed, end, batch)]
    with contextlib.ExitStack() as stack:
        if jobs > 1:
            import multiprocessing

            pool = stack.enter_context(multiprocessing.get_context("fork").Pool(jobs))
            results = pool.imap(_judge_batch, batches)
        else:
            results = map(_judge_batch, batches)
        for seeds, verdicts in zip(batches, results, strict=True):
            for verdict in verdicts:
                tally.add(verdict)
                if verdict.outcome.startswith("failed"):
                    case = random_nest(verdict.seed)
                    print(f"seed {verdict.seed}: {verdict.outcome}: {case.pipeline}")
                    print(f"  {verdict.detail.strip()[:600]}", flush=True)
            if verbose:
                done = seeds[-1] + 1 - first_seed
                print(f"{done} cases: {dict(tally.outcomes)}", file=sys.stderr, flush=True)
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--batch", type=int, default=25, help="cases per upstream run")
    parser.add_argument("--jobs", type=int, default=1, help="batches judged at once")
    parser.add_argument("--show", type=int, default=None, help="print case SEED and exit")
    parser.add_argument("--passes", action="store_true", help="per-pass counts at the end")
    parser.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    args = parser.parse_args()
    if args.show is not None:
        case = random_nest(args.show)
        print(f"// pipeline: {case.pipeline}\n// features: {sorted(case.features)}")
        print(case.text)
        return 0
    if not available():
        print("needs mlir-opt and mlir-runner 22 (and the MLIR runner libraries)", file=sys.stderr)
        return 1
    tally = fuzz_tally(args.seed, args.cases, args.batch, args.verbose, args.jobs)
    outcomes = tally.outcomes
    if args.passes:
        print(tally.report())
    failed = sum(n for outcome, n in outcomes.items() if outcome.startswith("failed"))
    print(f"{args.cases} cases from seed {args.seed}: {dict(sorted(outcomes.items()))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
