"""Pass pipelines as text → pass objects, and applying them, with loopopt's diagnostics.

    passes = parse_pipeline("loop-tile{tile-sizes=32,32},loop-unroll")
    apply_passes(ctx, module, passes)
    pipeline_text(passes) == "loop-tile{tile-sizes=32,32},loop-unroll"

The syntax is MLIR's (`a{opt=v},b`), read by xDSL's parser. Every problem with the text is a
`LoopoptError` located in it (`<pipeline>:1:24: error: invalid pass pipeline '…': …`), never
xDSL's own exception (its ArgSpecParseError is a BaseException): a syntax error, an empty element
(`a,,b`, a leading or trailing comma; mlir-opt refuses them too), MLIR's nested form
(`builtin.module(…)`), an unknown pass, an option the pass does not have, a value of the wrong
type. Passes check the ranges of their option values when they run. `loopopt-opt -p`,
`loopopt.compile(pipeline=…)`, `@loopopt.kernel`'s `schedule=…` and `auto-schedule` all parse
here. `pipeline_text` prints pass objects back as that text (MLIR's spelling: the options that
differ from their defaults, bare boolean flags), so that parsing it gives equal objects.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, PipelineLexer, SpecTokenKind
from xdsl.utils.arg_spec import parse_pipeline as xdsl_parse
from xdsl.utils.exceptions import ArgSpecParseError

from loopopt.diagnostics import LoopoptError, in_stage, op_location
from loopopt.progress import phase

LOCATION = "<pipeline>"
"""The file name of locations in pipeline text."""

_XDSL_LOCATION = re.compile(r"pass-pipeline:(\d+):(\d+)")
_NESTED = re.compile(r"\s*[\w.-]+\s*\(")


def parse_pipeline(spec: str) -> list[ModulePass]:
    """The passes of pipeline text `spec` (empty: none); LoopoptError for anything wrong."""
    from loopopt.universe import all_passes

    available = all_passes()
    passes: list[ModulePass] = []
    for arg_spec, offset in _parse(spec):
        loader = available.get(arg_spec.name)
        if loader is None:
            close = difflib.get_close_matches(arg_spec.name, available, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise _error(spec, offset, f"unknown pass '{arg_spec.name}'{hint}")
        cls = loader()
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


def pass_text(p: ModulePass) -> str:
    """`p` as pipeline text: `name{opt=v ...}` with the options that differ from their defaults
    and those it spells out (the pass's `option_order` first, then in field order), `name`
    alone without any."""
    from loopopt.passes import LoopoptPass

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


def _parse(spec: str) -> list[tuple[ArgSpec, int]]:
    """xDSL's reading of `spec`, each element with the offset of its pass name."""
    try:
        specs = list(xdsl_parse(spec))
    except ArgSpecParseError as e:
        raise _syntax_error(spec, e) from None
    if spec.endswith(","):
        raise _error(spec, len(spec) - 1, "trailing comma (expected a pass name after it)")
    offsets = _pass_name_offsets(spec)
    if len(offsets) != len(specs):  # not expected: then locate every pass at the start
        offsets = [0] * len(specs)
    return list(zip(specs, offsets, strict=True))


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


def _syntax_error(spec: str, e: ArgSpecParseError) -> LoopoptError:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    message = lines[-1] if lines else "syntax error"
    message = message[:1].lower() + message[1:]
    found = _XDSL_LOCATION.search(str(e))
    location = f"{LOCATION}:{found.group(1)}:{found.group(2)}" if found else LOCATION
    if _NESTED.match(spec):
        message = (
            "MLIR's nested pipelines (builtin.module(...), func.func(...)) are not supported: "
            "list the passes, e.g. 'loop-tile{tile-sizes=32,32},loop-unroll'"
        )
    return LoopoptError(f"invalid pass pipeline '{spec}': {message}", location=location)


def _error(spec: str, offset: int, message: str) -> LoopoptError:
    line = spec.count("\n", 0, offset) + 1
    column = offset - (spec.rfind("\n", 0, offset) + 1) + 1
    location = f"{LOCATION}:{line}:{column}"
    return LoopoptError(f"invalid pass pipeline '{spec}': {message}", location=location)


def _first_line(e: Exception) -> str:
    lines = [line for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__
