"""`#loopopt.swizzle<chunk, period>`: the XOR-swizzled layout of a shared tile's memref type.

    %B_shared = memref.alloca() : memref<8x128xf32, #loopopt.swizzle<4, 8>, 3 : i64>

Element (r, c) of a buffer with this layout is stored at column c ^ ((r mod period) * chunk)
of its row (its 16-byte chunk c / chunk XOR r mod period, the offset within the chunk kept):
loops/promote.py's `swizzled_column` defines it, for `promote{swizzle}`. Accesses keep the
logical indices through every loop pass; the lowering (lowering/swizzle.py) rewrites them to
the physical ones and drops the layout before anything computes an address. Only the last
two dimensions take part (a cp.async ring's leading stage dimension does not).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntAttr, MemRefLayoutAttr
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute
from xdsl.ir.affine import AffineMap
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

from loopopt.dialects.loopopt import SWIZZLE_LAYOUT


@irdl_attr_definition
class SwizzleLayoutAttr(MemRefLayoutAttr, ParametrizedAttribute):
    """XOR swizzle of `chunk`-element pieces by the row index modulo `period`."""

    name = SWIZZLE_LAYOUT

    chunk: IntAttr
    period: IntAttr

    def __init__(self, chunk: int, period: int):
        super().__init__(IntAttr(chunk), IntAttr(period))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        chunk = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation(",")
        period = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation(">")
        return [IntAttr(chunk), IntAttr(period)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.chunk.data}, {self.period.data}>")

    @property
    def params(self) -> tuple[int, int]:
        return self.chunk.data, self.period.data

    def get_affine_map(self) -> AffineMap:
        """The logical (row-major) index map: what the accesses index by. The physical
        offsets are not affine (an XOR); lowering/swizzle.py computes them."""
        raise NotImplementedError("a swizzled layout has no affine map (lowering/swizzle.py)")

    def get_strides(self) -> Sequence[int | None] | None:
        return None


LAYOUT = Dialect("loopopt", [], [SwizzleLayoutAttr])
