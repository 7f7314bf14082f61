"""The xDSL context loopopt works in, and a parser that records where each op came from."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects import arith, builtin, cf, func, math, memref, scf, vector
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FusedLoc,
    IndexType,
    IntAttr,
    LocationAttr,
    ModuleOp,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.affine_ext import AFFINE
from loopopt.dialects.gpu_ext import GPU
from loopopt.dialects.layout import LAYOUT
from loopopt.dialects.llvm_ext import LLVM
from loopopt.dialects.nvgpu import NVGPU
from loopopt.dialects.nvvm import NVVM
from loopopt.input_checks import check_input
from loopopt.iteration_buffers import sink_iteration_buffers


def make_context(allow_unregistered: bool = False) -> Context:
    """A context with every dialect loopopt reads or produces (and, if `allow_unregistered`,
    ops of any other: xDSL's UnregisteredOp, printed in the generic form)."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for dialect in (
        builtin.Builtin,
        func.Func,
        AFFINE,
        scf.Scf,
        arith.Arith,
        math.Math,
        memref.MemRef,
        cf.Cf,
        GPU,
        NVVM,
        NVGPU,
        LAYOUT,
        LLVM,
        vector.Vector,  # vector.extract of tensor-core fragments (passes/gpu_mma.py)
    ):
        ctx.load_dialect(dialect)
    return ctx


MLIRLexer._unescaped_characters_regex = re.compile(  # pyright: ignore[reportPrivateUsage]
    r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'
)
"""xDSL's string-literal pattern with possessive repeats: its `(?:[^"…]+|…)*"` backtracks through
every split of a line that has no closing quote (`%f = affi"ne.load %F[0, 0] : …` took minutes);
the strings it accepts are the same."""

_LOCATION_ALIAS = re.compile(r"^(#[\w$.-]+)\s*=\s*loc\(", re.MULTILINE)
"""A location alias definition: `mlir-opt --mlir-print-debuginfo` prints them after their uses."""


class _LocationParser(Parser):
    """xDSL's parser, reading MLIR's fused locations with metadata too, and the subscripts of
    affine.load/store (`%A[%i, %j + 1]`) as MLIR does: each SSA id a dimension of the map
    (xDSL makes them symbols, `()[s0, s1] -> (s0, s1 + 1)`, which `--mlir-print-op-generic`
    then printed and mlir-opt refuses: "operand cannot be used as a symbol" for a loop index)."""

    def parse_affine_map_of_ssa_ids(self) -> tuple[AffineMap, Sequence[SSAValue[IndexType]]]:
        amap, operands = super().parse_affine_map_of_ssa_ids()
        dims = [AffineExpr.dimension(k) for k in range(amap.num_symbols)]
        as_dims = amap.replace_dims_and_symbols((), dims, amap.num_symbols, 0)
        return as_dims, operands

    def _parse_location(self) -> LocationAttr:
        """xDSL's, plus MLIR's fused locations with metadata: `fused<"a">[loc, …]`."""
        if self._current_token.text == "fused":
            start = self._current_token.span.start
            self._consume_token()
            if self.parse_optional_punctuation("<") is not None:
                metadata = self.parse_attribute()
                self.parse_punctuation(">")
                locations = self.parse_comma_separated_list(
                    self.Delimiter.SQUARE, self._parse_location
                )
                return FusedLoc(tuple(locations), metadata)
            self._resume_from(start)
        return super()._parse_location()


class LocatingParser(_LocationParser):
    """An xDSL parser that gives each parsed op a `file:line:col` location (unless it has one).

    Diagnostics of later passes can then point at the input text, as mlir-opt's do.
    `line_offset` shifts line numbers for the chunks of `--split-input-file`. It also reads what
    `mlir-opt --mlir-print-debuginfo` prints and xDSL's parser does not: location aliases used
    before the end of the file that defines them (read first), and fused locations with metadata
    (`loc(fused<"a">[#loc1, #loc2])`).
    """

    def __init__(self, ctx: Context, text: str, name: str = "<stdin>", line_offset: int = 0):
        super().__init__(ctx, text, name)
        self._text = text
        self._name = name
        self._line_offset = line_offset
        self._line_starts: list[int] | None = None
        """Offsets where lines begin (made on first use: counting newlines per op is quadratic)."""
        self._location_aliases = self._read_location_aliases()

    def _read_location_aliases(self) -> set[str]:
        """Define the location aliases of the text before parsing it (each in its own parser
        sharing this one's aliases); one that does not parse is left to the main parse."""
        names: set[str] = set()
        for found in _LOCATION_ALIAS.finditer(self._text):
            line_end = self._text.find("\n", found.start())
            line = self._text[found.start() : line_end if line_end >= 0 else len(self._text)]
            reader = _LocationParser(self.ctx, line, self._name)
            reader.attribute_aliases = self.attribute_aliases
            try:
                reader._parse_alias_def()  # pyright: ignore[reportPrivateUsage]
            except ParseError:
                continue
            names.add(found.group(1))
        return names

    def _parse_alias_def(self) -> None:
        name = self._current_token.text
        if name in self._location_aliases:  # read ahead: read again where it is defined
            self._location_aliases.discard(name)
            del self.attribute_aliases[name]
        super()._parse_alias_def()

    def _line_and_column(self, offset: int) -> tuple[int, int]:
        """1-based line and column of `offset` in the text."""
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self._text)]
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def _at_op_name(self, e: ParseError) -> ParseError:
        """xDSL reports an unregistered op at the token after its name; point at the name."""
        found = re.match(r"Operation (\S+) is not registered", e.msg)
        if found is None:
            return e
        name = found.group(1)
        begin = self._text.rfind(name, 0, e.span.start + len(name))
        if begin < 0:
            return e
        span = Span(begin, begin + len(name), e.span.input)
        return ParseError(span, e.msg)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """As xDSL's, but empty input (nothing or only comments) is an empty module, as in MLIR,
        and an implicit module is located at the whole input (`whole_input`)."""
        if self._current_token.kind == MLIRTokenKind.EOF:
            module = ModuleOp([])
        else:
            module = super().parse_module(allow_implicit_module)
        if isinstance(module.location, UnknownLoc):
            module.location = whole_input(self._name)
        return module

    def _unsupported(self, e: NotImplementedError) -> ParseError:
        """What xDSL cannot represent, at the token after it (the end of the expression)."""
        if "semi-affine" in str(e):
            message = (
                "semi-affine expression: affine maps can multiply, divide and take the remainder "
                "by constants only (compute the index with arith ops and use memref.load/store)"
            )
        else:
            message = f"not supported: {_first_line(e)}"
        return ParseError(self._current_token.span, message)

    def pos_location(self) -> str:
        """`name:line:col` of the parser's current position."""
        loc = self._current_token.span.get_location()
        return f"{self._name}:{loc.line + self._line_offset}:{loc.col}"

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            op = super().parse_operation()
        except ParseError as e:
            raise self._at_op_name(e) from None
        except NotImplementedError as e:  # xDSL's affine expressions: semi-affine products
            raise self._unsupported(e) from None
        except VerifyException as e:  # an op constructor refused it: at the op's start
            span = Span(start, start + 1, self._current_token.span.input)
            raise ParseError(span, f"invalid IR: {_first_line(e)}") from None
        except ValueError as e:  # xDSL's parse of an op with a region of several blocks
            if _MULTI_BLOCK not in str(e):
                raise
            span = Span(start, start + 1, self._current_token.span.input)
            name = _op_name_at(self._text, start)
            raise ParseError(
                span, f"invalid IR: '{name}' takes a region of one block (no ^bb labels in it)"
            ) from None
        if isinstance(op.location, UnknownLoc):
            line, column = self._line_and_column(start)
            line += self._line_offset
            op.location = FileLineColLoc(StringAttr(self._name), IntAttr(line), IntAttr(column))
        return op


_MULTI_BLOCK = "only available for single-block regions"
"""What xDSL's `Region.block` raises for a region of several blocks."""


def _op_name_at(text: str, start: int) -> str:
    """The name of the op whose text starts at `start` (`%r = affine.for …`, `"scf.if"(…)`)."""
    found = re.match(r'(?:[%\w#:, ]+=\s*)?"?([\w.$-]+)', text[start:])
    return found.group(1) if found else "the op"


def whole_input(name: str) -> FileLineColLoc:
    """The location of an implicit module: line 0 of the input, as in MLIR; diagnostics about
    the whole input (a pass's options) name the file alone (`diagnostics.format_location`)."""
    return FileLineColLoc(StringAttr(name), IntAttr(0), IntAttr(0))


def parse_module(text: str, name: str = "<stdin>", ctx: Context | None = None) -> ModuleOp:
    """Parse MLIR text into a verified module; errors become a LoopoptError."""
    ctx = ctx if ctx is not None else make_context()
    return parse_chunk(ctx, text, name)


def parse_chunk(ctx: Context, text: str, name: str, line_offset: int = 0) -> ModuleOp:
    """Parse and verify one input (or one `// -----` chunk starting at `line_offset`), with
    what MLIR refuses and xDSL does not (`input_checks`); buffers that loopopt's text holds at
    a function's entry go back into their loops (`iteration_buffers`)."""
    try:
        parser = LocatingParser(ctx, text, name, line_offset)  # lexes the first token
        module = parser.parse_module()
    except ParseError as e:
        loc = e.span.get_location()
        message = e.msg
        if e.msg.strip() == "in block definition" and not text[e.span.start :].strip():
            message = "unexpected end of input: a '}' is missing"
        raise LoopoptError(message, location=f"{name}:{loc.line + line_offset}:{loc.col}") from None
    except VerifyException as e:  # raised by op constructors while parsing
        loc = parser.pos_location()
        raise LoopoptError(f"invalid IR: {_first_line(e)}", location=loc) from None
    sink_iteration_buffers(module)
    verify_ir(module, "invalid IR")
    check_input(module)
    return module


def verify_ir(module: ModuleOp, what: str) -> None:
    """Verify `module` (op verifiers, and that every value is defined before its uses, which
    xDSL's verifier does not check); on failure, a LoopoptError at the innermost failing op."""
    _check_defined_before_use(module, set(), what)
    try:
        module.verify()
    except Exception as whole:
        if not _is_refusal(whole):
            raise
        for op in module.walk(reverse=True):
            try:
                op.verify(verify_nested_ops=False)
            except Exception as e:
                if not _is_refusal(e):
                    raise
                raise LoopoptError(f"{what}: {_first_line(e)}", op=op) from None
        raise LoopoptError(f"{what}: {_first_line(whole)}") from None


def _is_refusal(e: Exception) -> bool:
    """Whether a verifier's exception says the IR is invalid: xDSL's VerifyException, the
    ValueError of a region with several blocks where one is expected, or the bare `Exception`
    some of its verifiers raise (memref.store: "Expected an index for each dimension")."""
    return isinstance(e, VerifyException | ValueError) or type(e) is Exception


def _check_defined_before_use(op: Operation, visible: set[SSAValue], what: str) -> None:
    """Structured (single-block) regions: an operand must be a value of an enclosing block
    defined earlier. Multi-block regions (after lowering to cf) are not checked."""
    for region in op.regions:
        if len(region.blocks) != 1:
            continue
        block = region.block
        scope = visible | set(block.args)
        for inner in block.ops:
            for operand in inner.operands:
                if operand not in scope:
                    name = f"%{operand.name_hint}" if operand.name_hint else "a value"
                    raise LoopoptError(
                        f"{what}: {inner.name} uses {name} before its definition", op=inner
                    )
            _check_defined_before_use(inner, scope, what)
            scope.update(inner.results)


def _first_line(e: Exception) -> str:
    lines = [line for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__
