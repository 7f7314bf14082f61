"""What xDSL's affine dialect lacks to read and write affine IR as upstream MLIR 22 prints it.

- `affine.if` with MLIR's custom syntax (xDSL only has the generic form):
      affine.if #set(%i)[%n] { ... } else { ... }
      %r = affine.if #set(%i) -> f32 { affine.yield %a : f32 } else { affine.yield %b : f32 }
- `affine.max`, the mirror of `affine.min`:
      %m = affine.max affine_map<(d0) -> (d0, 3)>(%j)

`IfOp` subclasses xDSL's `affine.if`; both go into xDSL's own affine dialect (`extend`), which
is then the one every context loads (`AFFINE`). loopopt builds this module's ops and matches
xDSL's `affine.IfOp`, so ops that xDSL code builds are accepted too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, AffineSetAttr, IndexType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
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


extend(affine.Affine, [IfOp, MaxOp])
AFFINE = affine.Affine
"""xDSL's affine dialect, with this module's `affine.if` in place of xDSL's and `affine.max`."""
