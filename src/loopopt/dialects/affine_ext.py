"""What xDSL's affine dialect lacks to read and write affine IR as upstream MLIR 22 prints it.

- `affine.if` with MLIR's custom syntax (xDSL only has the generic form):
      affine.if #set(%i)[%n] { ... } else { ... }
      %r = affine.if #set(%i) -> f32 { affine.yield %a : f32 } else { affine.yield %b : f32 }
- `affine.max`, the mirror of `affine.min`:
      %m = affine.max affine_map<(d0) -> (d0, 3)>(%j)
- `affine.parallel` with MLIR's custom syntax (bounds are affine expressions of SSA values, a
  `max(…)`/`min(…)` group where a dimension has several; `symbol(%n)` reads as `%n`: every
  bound operand is a dimension, which MLIR takes of any valid symbol):
      affine.parallel (%i, %j) = (0, max(0, %n - 8)) to (%n, min(%n, 16)) step (1, 2) { ... }
      %s = affine.parallel (%i) = (0) to (8) reduce ("addf") -> (f32) { ...; affine.yield %v : f32 }

`IfOp` subclasses xDSL's `affine.if`; both go into xDSL's own affine dialect (`extend`), which
is then the one every context loads (`AFFINE`). loopopt builds this module's ops and matches
xDSL's `affine.IfOp`, so ops that xDSL code builds are accepted too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from xdsl.dialects import affine
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    ArrayAttr,
    DenseIntElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.parser.affine_parser import AffineParser
from xdsl.parser.core import UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from loopopt.dialects.extend import RestatedFields, extend


def _parse_dims_and_symbols(parser: Parser) -> list[SSAValue]:
    dims = parser.parse_optional_comma_separated_list(
        parser.Delimiter.PAREN, lambda: parser.parse_operand(IndexType())
    )
    syms = parser.parse_optional_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_operand(IndexType())
    )
    return [*(dims or []), *(syms or [])]


def _print_dims_and_symbols(printer: Printer, operands: Sequence[SSAValue], num_dims: int) -> None:
    printer.print_string("(")
    printer.print_list(operands[:num_dims], printer.print_operand)
    printer.print_string(")")
    if len(operands) > num_dims:
        printer.print_string("[")
        printer.print_list(operands[num_dims:], printer.print_operand)
        printer.print_string("]")


def _with_terminator(region: Region) -> Region:
    if not region.blocks:
        region.add_block(Block())
    block = region.block
    if block.last_op is None or not isinstance(block.last_op, affine.YieldOp):
        block.add_op(affine.YieldOp.get())
    return region


@irdl_op_definition
class IfOp(RestatedFields, affine.IfOp):
    """`affine.if` with upstream MLIR's custom assembly (xDSL's op, whose fields it restates)."""

    name = "affine.if"

    args = var_operand_def(IndexType)
    res = var_result_def()
    condition = prop_def(AffineSetAttr)
    then_region = region_def("single_block")
    else_region = region_def()

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        condition = parser.parse_attribute()
        if not isinstance(condition, AffineSetAttr):
            parser.raise_error("expected an integer set (affine_set<...>)", pos, parser.pos)
        operands = _parse_dims_and_symbols(parser)
        result_types: list[Attribute] = []
        if parser.parse_optional_punctuation("->") is not None:
            if parser.parse_optional_punctuation("(") is not None:
                result_types = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, parser.parse_type
                )
                parser.parse_punctuation(")")
            else:
                result_types = [parser.parse_type()]
        then_region = parser.parse_region()
        else_region = Region()
        if parser.parse_optional_keyword("else") is not None:
            else_region = parser.parse_region()
        if not result_types:
            _with_terminator(then_region)
            if else_region.blocks:
                _with_terminator(else_region)
        op = cls.build(
            operands=[operands],
            result_types=[result_types],
            properties={"condition": condition},
            regions=[then_region, else_region],
        )
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.condition)
        _print_dims_and_symbols(printer, self.args, self.condition.data.num_dims)
        if self.res:
            printer.print_string(" -> (")
            printer.print_list(self.res.types, printer.print_attribute)
            printer.print_string(")")
        terminators = bool(self.res)
        printer.print_string(" ")
        printer.print_region(
            self.then_region, print_entry_block_args=False, print_block_terminators=terminators
        )
        if self.else_region.blocks and (terminators or list(self.else_region.block.ops)[:-1]):
            printer.print_string(" else ")
            printer.print_region(
                self.else_region, print_entry_block_args=False, print_block_terminators=terminators
            )
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class MaxOp(IRDLOperation):
    """`affine.max`: the maximum of the results of an affine map."""

    name = "affine.max"
    arguments = var_operand_def(IndexType())
    result = result_def(IndexType())
    map = prop_def(AffineMapAttr)

    traits = traits_def(Pure())

    def __init__(self, map_operands: Sequence[SSAValue | Operation], affine_map: AffineMapAttr):
        super().__init__(
            operands=[map_operands], properties={"map": affine_map}, result_types=[IndexType()]
        )

    def verify_(self) -> None:
        m = self.map.data
        if len(self.arguments) != m.num_dims + m.num_symbols:
            expected = m.num_dims + m.num_symbols
            raise VerifyException(
                f"affine.max expects {expected} operands, got {len(self.arguments)}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        m = parser.parse_attribute()
        if not isinstance(m, AffineMapAttr):
            parser.raise_error("expected an affine map", pos, parser.pos)
        return cls(_parse_dims_and_symbols(parser), m)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.map)
        _print_dims_and_symbols(printer, list(self.arguments), self.map.data.num_dims)


@irdl_op_definition
class ParallelOp(RestatedFields, affine.ParallelOp):
    """`affine.parallel` with upstream MLIR's custom assembly (xDSL's op, whose fields it
    restates, and verifier)."""

    name = "affine.parallel"

    map_operands = var_operand_def(IndexType)
    reductions = prop_def(ArrayAttr[StringAttr])
    lowerBoundsMap = prop_def(AffineMapAttr)
    lowerBoundsGroups = prop_def(DenseIntElementsAttr)
    upperBoundsMap = prop_def(AffineMapAttr)
    upperBoundsGroups = prop_def(DenseIntElementsAttr)
    steps = prop_def(ArrayAttr[IntegerAttr[IntegerType]])
    res = var_result_def()
    body = region_def("single_block")

    def verify_(self) -> None:
        """MLIR's checks (xDSL's count the results among the operands)."""
        lower, upper = self.lowerBoundsMap.data, self.upperBoundsMap.data
        expected = lower.num_dims + lower.num_symbols + upper.num_dims + upper.num_symbols
        if len(self.map_operands) != expected:
            raise VerifyException(f"affine.parallel: expected {expected} bound operands")
        ivs = len(self.body.block.args)
        for amap, groups in ((lower, self.lowerBoundsGroups), (upper, self.upperBoundsGroups)):
            sizes = list(groups.get_values())
            if len(sizes) != ivs or sum(sizes) != len(amap.results):
                raise VerifyException("affine.parallel: a bound group for each dimension")
        if len(self.steps) != ivs:
            raise VerifyException("affine.parallel: a step for each dimension")
        if len(self.reductions) != len(self.res):
            raise VerifyException("affine.parallel: a reduction for each result")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        ivs = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False)
        )
        parser.parse_punctuation("=")
        lower, lower_groups, lower_operands = _parse_bounds(parser, "max")
        parser.parse_keyword("to")
        upper, upper_groups, upper_operands = _parse_bounds(parser, "min")
        for groups, which in ((lower_groups, "lower"), (upper_groups, "upper")):
            if len(groups) != len(ivs):
                parser.raise_error(f"expected {len(ivs)} {which} bounds, got {len(groups)}")
        steps = [1] * len(ivs)
        if parser.parse_optional_keyword("step") is not None:
            steps = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_integer)
            if len(steps) != len(ivs):
                parser.raise_error(f"expected {len(ivs)} steps, got {len(steps)}")
        reductions: list[str] = []
        result_types: list[Attribute] = []
        if parser.parse_optional_keyword("reduce") is not None:
            reductions = parser.parse_comma_separated_list(
                parser.Delimiter.PAREN, parser.parse_str_literal
            )
            parser.parse_punctuation("->")
            result_types = parser.parse_comma_separated_list(
                parser.Delimiter.PAREN, parser.parse_type
            )
        args = [iv.resolve(IndexType()) for iv in ivs]
        body = parser.parse_region(args)
        if not result_types:
            _with_terminator(body)
        op = cls.build(
            operands=[[*lower_operands, *upper_operands]],
            result_types=[result_types],
            properties={
                "reductions": ArrayAttr([StringAttr(r) for r in reductions]),
                "lowerBoundsMap": AffineMapAttr(lower),
                "lowerBoundsGroups": _groups(lower_groups),
                "upperBoundsMap": AffineMapAttr(upper),
                "upperBoundsGroups": _groups(upper_groups),
                "steps": ArrayAttr([IntegerAttr(s, 64) for s in steps]),
            },
            regions=[body],
        )
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(") = ")
        lower, upper = self.lowerBoundsMap.data, self.upperBoundsMap.data
        num_lower = lower.num_dims + lower.num_symbols
        operands = list(self.map_operands)
        _print_bounds(printer, lower, self.lowerBoundsGroups, operands[:num_lower], "max")
        printer.print_string(" to ")
        _print_bounds(printer, upper, self.upperBoundsGroups, operands[num_lower:], "min")
        steps = [s.value.data for s in self.steps]
        if any(s != 1 for s in steps):
            printer.print_string(f" step ({', '.join(map(str, steps))})")
        if self.res:
            printer.print_string(" reduce (")
            printer.print_list(self.reductions, lambda r: printer.print_string(f'"{r.data}"'))
            printer.print_string(") -> (")
            printer.print_list(self.res.types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(
            self.body, print_entry_block_args=False, print_block_terminators=bool(self.res)
        )
        printer.print_op_attributes(self.attributes)


def _parse_bounds(parser: Parser, group: str) -> tuple[AffineMap, list[int], list[SSAValue]]:
    """`(b, group(b, b), …)` of one side of an affine.parallel: the map of all its expressions
    (every SSA value a dimension), the group sizes and the operands."""
    names: dict[str, int] = {}
    unresolved: list[UnresolvedOperand] = []
    affine_parser = AffineParser(parser._parser_state)  # pyright: ignore[reportPrivateUsage]

    def ssa_value() -> AffineExpr | None:
        symbol = parser.parse_optional_keyword("symbol") is not None
        if symbol:
            parser.parse_punctuation("(")
        operand = parser.parse_optional_unresolved_operand()
        if operand is None:
            if symbol:
                parser.raise_error("expected an SSA value in symbol(...)")
            return None
        if symbol:
            parser.parse_punctuation(")")
        key = f"{operand.span.text}#{operand.index}"
        if key not in names:
            names[key] = len(names)
            unresolved.append(operand)
        return AffineExpr.dimension(names[key])

    def expr() -> AffineExpr:
        return affine_parser._parse_affine_expr(ssa_value)  # pyright: ignore[reportPrivateUsage]

    def one() -> list[AffineExpr]:
        if parser.parse_optional_keyword(group) is not None:
            return parser.parse_comma_separated_list(parser.Delimiter.PAREN, expr)
        return [expr()]

    groups = parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
    results = tuple(e for g in groups for e in g)
    operands = [parser.resolve_operand(operand, IndexType()) for operand in unresolved]
    return AffineMap(len(names), 0, results), [len(g) for g in groups], operands


def _groups(sizes: Sequence[int]) -> DenseIntElementsAttr:
    """MLIR's `tensor<Nxi32>` of group sizes."""
    return DenseIntElementsAttr.from_list(TensorType(i32, [len(sizes)]), sizes)


def _print_bounds(
    printer: Printer,
    amap: AffineMap,
    groups: DenseIntElementsAttr,
    operands: Sequence[SSAValue],
    group: str,
) -> None:
    dims = [AffineExpr.dimension(d) for d in range(amap.num_dims)]
    symbols = [AffineExpr.dimension(amap.num_dims + s) for s in range(amap.num_symbols)]
    results = [e.replace_dims_and_symbols(dims, symbols) for e in amap.results]

    def one(expr: AffineExpr) -> None:
        affine._print_affine_expr_of_ssa_ids(  # pyright: ignore[reportPrivateUsage]
            printer, expr, operands
        )

    printer.print_string("(")
    start = 0
    for k, size in enumerate(groups.get_values()):
        if k:
            printer.print_string(", ")
        part = results[start : start + size]
        start += size
        if len(part) == 1:
            one(part[0])
        else:
            printer.print_string(f"{group}(")
            printer.print_list(part, one)
            printer.print_string(")")
    printer.print_string(")")


extend(affine.Affine, [IfOp, MaxOp, ParallelOp])
AFFINE = affine.Affine
"""xDSL's affine dialect, with this module's `affine.if` in place of xDSL's, `affine.max` and
`affine.parallel`'s custom syntax."""
