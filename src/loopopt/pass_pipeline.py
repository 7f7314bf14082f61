"""Pass pipelines as text → pass objects, and applying them, with loopopt's diagnostics.

    passes = parse_pipeline("loop-tile{tile-sizes=32,32},loop-unroll")
    apply_passes(ctx, module, passes)
    pipeline_text(passes) == "loop-tile{tile-sizes=32,32},loop-unroll"

The syntax is MLIR's (`a{opt=v},b`), read by xDSL's parser, with MLIR's anchors
`builtin.module(…)` and `func.func(…)` (pass_nesting.py). A name that is not loopopt's pass is
looked up among xDSL's (`canonicalize,loop-tile{tile-sizes=32},cse`). Every problem with the
text is a `LoopoptError` located in it (`<pipeline>:1:24: error: invalid pass pipeline '…':
…`), never xDSL's own exception (its ArgSpecParseError is a BaseException): a syntax error, an
empty element (`a,,b`, a leading or trailing comma; mlir-opt refuses them too), an anchor other
than those two, an unknown pass, an option the pass does not have, a value of the wrong type.
Passes check the ranges of their option values when they run. `loopopt-opt -p`,
`loopopt.compile(pipeline=…)`, `@loopopt.kernel`'s `schedule=…` and `auto-schedule` all parse
here. `pipeline_text` prints pass objects back as that text (MLIR's spelling: the options that
differ from their defaults, bare boolean flags), so that parsing it gives equal objects."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, PipelineLexer, SpecTokenKind
from xdsl.utils.arg_spec import parse_pipeline as xdsl_parse
from xdsl.utils.exceptions import ArgSpecParseError

from loopopt.diagnostics import LoopoptError, in_stage, op_location
from loopopt.pass_nesting import (
    FUNC_ANCHOR,
    MODULE_ANCHOR,
    Anchored,
    Flat,
    NestingError,
    OnEachFunction,
    split,
)
from loopopt.progress import phase

LOCATION = "<pipeline>"
"""The file name of locations in pipeline text."""

_XDSL_LOCATION = re.compile(r"pass-pipeline:(\d+):(\d+)")


def parse_pipeline(spec: str) -> list[ModulePass]:
    """The passes of pipeline text `spec` (empty: none); LoopoptError for anything wrong."""
    try:
        nodes = split(spec)
    except NestingError as e:
        raise _error(spec, e.offset, e.message) from None
    return _passes(spec, nodes, ())


def _passes(
    spec: str, nodes: Sequence[Flat | Anchored], anchors: tuple[str, ...]
) -> list[ModulePass]:
    """The passes of `nodes` (see pass_nesting.py), inside `anchors` (outermost first)."""
    passes: list[ModulePass] = []
    for node in nodes:
        if isinstance(node, Flat):
            passes += _flat_passes(spec, node)
        elif node.name == MODULE_ANCHOR and not anchors:
            passes += _passes(spec, node.children, (MODULE_ANCHOR,))
        elif node.name == FUNC_ANCHOR and FUNC_ANCHOR not in anchors:
            passes.append(
                OnEachFunction(tuple(_passes(spec, node.children, (*anchors, FUNC_ANCHOR))))
            )
        else:
            where = f" inside {anchors[-1]}(...)" if anchors else ""
            raise _error(
                spec,
                node.offset,
                f"anchor '{node.name}(...)'{where} is not supported (passes nest under "
                f"{MODULE_ANCHOR}(...) at the top and {FUNC_ANCHOR}(...) in it)",
            )
    return passes


def _flat_passes(spec: str, flat: Flat) -> list[ModulePass]:
    passes: list[ModulePass] = []
    for arg_spec, offset in _parse(spec, flat):
        cls = _pass_class(spec, arg_spec.name, offset)
        try:
            passes.append(cls.from_pass_spec(arg_spec))
        except (ValueError, TypeError, LoopoptError) as e:
            detail = e.message if isinstance(e, LoopoptError) else _first_line(e)
            unknown = _unknown_options(cls, arg_spec) if "not found" in detail else None
            raise _error(spec, offset, unknown or f"{arg_spec.name}: {detail}") from None
        for name, values in arg_spec.parameters.items():
            for value in values:
                if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
                    message = f"{arg_spec.name}: {name}={value} is out of range (64-bit integers)"
                    raise _error(spec, offset, message)
    return passes


def _pass_class(spec: str, name: str, offset: int) -> type[ModulePass]:
    """loopopt's pass of that name, else xDSL's (its registry is read only then)."""
    from loopopt.universe import all_passes

    loader = all_passes().get(name) or xdsl_passes().get(name)
    if loader is None:
        known = [*all_passes(), *xdsl_passes()]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise _error(spec, offset, f"unknown pass '{name}'{hint}")
    return loader()


@functools.cache
def xdsl_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's own passes (`canonicalize`, `cse` …), usable in pipelines; `lower-affine` is
    loopopt's lowering (xDSL's fails on bounds with operands, `min`/`max` bounds, affine.if)."""
    from xdsl.transforms import get_all_passes

    return {**get_all_passes(), "lower-affine": _lower_affine_pass}


def _lower_affine_pass() -> type[ModulePass]:
    from loopopt.lowering.affine_to_scf import LowerAffinePass

    return LowerAffinePass


def pass_text(p: ModulePass) -> str:
    """`p` as pipeline text: `name{opt=v ...}` with the options that differ from their defaults
    and those it spells out (the pass's `option_order` first, then in field order), `name`
    alone without any. Memoized for hashable passes (frozen dataclasses: the schedule space
    prints the same pass objects for many candidates)."""
    try:
        return _memo_text(p)
    except TypeError:  # not hashable
        return _pass_text(p)


@functools.lru_cache(maxsize=4096)
def _memo_text(p: ModulePass) -> str:
    return _pass_text(p)


def _pass_text(p: ModulePass) -> str:
    from loopopt.passes import LoopoptPass

    if isinstance(p, OnEachFunction):
        return f"{FUNC_ANCHOR}({pipeline_text(p.passes)})"
    order: tuple[str, ...] = getattr(p, "option_order", ())
    spelled: dict[str, str] = getattr(p, "option_names", {})
    shown: tuple[str, ...] = p.spelled_out() if isinstance(p, LoopoptPass) else ()
    fields = sorted(
        dataclasses.fields(p),
        key=lambda f: order.index(f.name) if f.name in order else len(order),
    )
    options: list[str] = []
    for f in fields:
        value = getattr(p, f.name)
        if value == _default(f) and f.name not in shown:
            continue
        key = spelled.get(f.name, f.name.replace("_", "-"))
        if value is True:
            options.append(key)
        else:
            options.append(f"{key}={_value_text(value)}")
    return f"{p.name}{{{' '.join(options)}}}" if options else p.name


def pipeline_text(passes: Sequence[ModulePass]) -> str:
    """The pipeline text of `passes` (`pass_text` of each, comma-separated)."""
    return ",".join(pass_text(p) for p in passes)


def _default(f: dataclasses.Field[object]) -> object:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


_BARE = re.compile(r"[\w.-]+")


def _value_text(value: object) -> str:
    if isinstance(value, tuple):
        return ",".join(_value_text(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and not _BARE.fullmatch(value):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _unknown_options(cls: type[ModulePass], arg_spec: ArgSpec) -> str | None:
    """What is wrong with option names the pass does not have, in the pipeline's spelling
    (xDSL names the dataclass fields: `["tile_sizes", ...]`)."""
    spelled: dict[str, str] = getattr(cls, "option_names", {})
    known = [spelled.get(f.name, f.name.replace("_", "-")) for f in dataclasses.fields(cls)]
    for name in arg_spec.parameters:
        if name.replace("_", "-") not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            return (
                f"{arg_spec.name}: unknown option '{name}' ({hint}options: "
                f"{', '.join(known) or 'none'})"
            )
    return None


def apply_passes(
    ctx: Context,
    module: ModuleOp,
    passes: Sequence[ModulePass],
    after: Callable[[ModulePass, ModuleOp], None] | None = None,
) -> None:
    """Apply `passes` in order, calling `after(p, module)` after each (verification, printing).
    An exception that is not a diagnostic carries a note naming the pass (see
    `diagnostics.internal_error`); a diagnostic without a location (a pass's options) gets the
    start of the input (`_input_location`). A pass that runs over 2 s says so (progress.py)."""
    for p in passes:
        with in_stage(p.name), phase(p.name):
            try:
                p.apply(ctx, module)
            except LoopoptError as e:
                e.locate(_input_location(module))
                raise
        if after is not None:
            after(p, module)


def _input_location(module: ModuleOp) -> str | None:
    """Where the input starts: the module's location, else its first op's (a function built
    from Python: its `def` line)."""
    return op_location(module) or next(
        (loc for op in module.ops if (loc := op_location(op)) is not None), None
    )


def _parse(spec: str, flat: Flat) -> list[tuple[ArgSpec, int]]:
    """xDSL's reading of the flat text `flat` of `spec`, each element with the offset of its
    pass name in `spec`. xDSL takes no spaces between passes (MLIR does: `a, b`): those are
    left out of what it reads, and its locations mapped back."""
    text, origin = _without_spaces(spec, flat)
    try:
        specs = list(xdsl_parse(text))
    except ArgSpecParseError as e:
        raise _syntax_error(spec, e, text, origin, flat.end) from None
    if text.endswith(","):
        raise _error(spec, origin[-1], "trailing comma (expected a pass name after it)")
    offsets = [origin[k] for k in _pass_name_offsets(text)]
    if len(offsets) != len(specs):  # not expected: then locate every pass at its text's start
        offsets = [flat.start] * len(specs)
    return list(zip(specs, offsets, strict=True))


def _without_spaces(spec: str, flat: Flat) -> tuple[str, list[int]]:
    """The flat text without the spaces at its ends and around commas outside options, and
    where each of its characters is in `spec`."""
    kept: list[int] = []
    depth, quoted = 0, False
    for k in range(flat.start, flat.end):
        c = spec[k]
        if quoted:
            quoted = not (c == '"' and spec[k - 1] != "\\")
        elif c == '"':
            quoted = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
        elif c.isspace() and depth == 0:
            before = spec[flat.start : k].rstrip()
            after = spec[k : flat.end].lstrip()
            if not before or not after or before.endswith(",") or after.startswith(","):
                continue
        kept.append(k)
    return "".join(spec[k] for k in kept), kept


def _pass_name_offsets(spec: str) -> list[int]:
    """Offsets of the pass names: the identifiers outside braces."""
    lexer = PipelineLexer(spec)
    offsets: list[int] = []
    depth = 0
    while (token := lexer.lex()).kind is not SpecTokenKind.EOF:
        if token.kind is SpecTokenKind.L_BRACE:
            depth += 1
        elif token.kind is SpecTokenKind.R_BRACE:
            depth -= 1
        elif token.kind is SpecTokenKind.IDENT and depth == 0:
            offsets.append(token.span.start)
    return offsets


def _syntax_error(
    spec: str, e: ArgSpecParseError, text: str, origin: list[int], end: int
) -> LoopoptError:
    """xDSL's complaint about `text` (read from `spec` at `origin`), located in `spec`."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    message = lines[-1] if lines else "syntax error"
    message = message[:1].lower() + message[1:]
    found = _XDSL_LOCATION.search(str(e))
    if found is None:
        return LoopoptError(f"invalid pass pipeline '{spec}': {message}", location=LOCATION)
    line, column = int(found.group(1)), int(found.group(2))
    offset = sum(len(t) + 1 for t in text.split("\n")[: line - 1]) + column - 1
    return _error(spec, origin[offset] if offset < len(origin) else end, message)


def _error(spec: str, offset: int, message: str) -> LoopoptError:
    line = spec.count("\n", 0, offset) + 1
    column = offset - (spec.rfind("\n", 0, offset) + 1) + 1
    location = f"{LOCATION}:{line}:{column}"
    return LoopoptError(f"invalid pass pipeline '{spec}': {message}", location=location)


def _first_line(e: Exception) -> str:
    lines = [line for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__
