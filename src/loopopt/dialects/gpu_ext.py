"""xDSL's gpu dialect with upstream MLIR 22's custom syntax (xDSL 0.74 prints and reads only the
generic form of gpu ops).

    gpu.module @kernels {
      gpu.func @k(%A: memref<64xf32>, %n: index) kernel
          attributes {known_block_size = array<i32: 64, 1, 1>} {
        %tx = gpu.thread_id x                       %l = gpu.lane_id upper_bound 32
        gpu.barrier
        gpu.return
      }
    }
    gpu.launch_func @kernels::@k blocks in (%g, %c1, %c1) threads in (%c64, %c1, %c1)
        dynamic_shared_memory_size %s args(%A : memref<64xf32>, %n : index)

Ops with MLIR's syntax here: gpu.module (offloading handler, targets, `attributes`), gpu.func
(argument and result attributes, workgroup/private attributions, `kernel`, `attributes`),
gpu.return, gpu.thread_id/block_id/block_dim/grid_dim/global_id (`x|y|z`, `upper_bound`),
gpu.lane_id, gpu.subgroup_id/subgroup_size/num_subgroups, gpu.barrier, gpu.launch_func (clusters,
dynamic shared memory, `: i32` sizes, async tokens, async object), gpu.wait; and the
`#gpu.address_space<workgroup>` attribute. As in MLIR, `gpu.kernel` is an attribute of gpu.func
(xDSL had a `kernel` property; its generic form still parses) and `known_block_size` /
`known_grid_size` are properties.

Each op here subclasses xDSL's class of the same name, and `extend` puts it in xDSL's own
`gpu` dialect object in its place (with `#gpu.address_space`): every context, plain `xdsl-opt`
through the plugin included, reads this syntax with these classes, and no name is registered
twice. loopopt builds ops with this module's classes (they print MLIR's syntax) and matches
them with xDSL's (`isinstance(op, xdsl.dialects.gpu.FuncOp)`), so that ops built by xDSL's
classes, which print the generic form, are accepted too; `workgroup_args`/`private_args` read
the attributions of either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, Self, cast

from xdsl.dialects import gpu as xgpu
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    LocationAttr,
    MemRefType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    UnitAttr,
    i32,
    i64,
)
from xdsl.dialects.gpu import (
    AllocOp,
    AllReduceOp,
    AllReduceOpAttr,
    AllReduceOpEnum,
    AsyncTokenType,
    DeallocOp,
    DimensionAttr,
    DimensionEnum,
    HostRegisterOp,
    HostUnregisterOp,
    LaunchOp,
    LoopDimMapAttr,
    MemcpyOp,
    ProcessorAttr,
    ProcessorEnum,
    SetDefaultDeviceOp,
    TerminatorOp,
    YieldOp,
)
from xdsl.dialects.utils import print_func_argument, print_func_output
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    AnyOf,
    IRDLOperation,
    attr_def,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    region_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from loopopt.dialects.extend import RestatedFields, extend
from loopopt.target import LOCAL_SPACE, SHARED_SPACE

__all__ = [
    "GPU",
    "AddressSpaceAttr",
    "AddressSpaceEnum",
    "AllReduceOp",
    "AllReduceOpAttr",
    "AllReduceOpEnum",
    "AllocOp",
    "AsyncTokenType",
    "BarrierOp",
    "BlockDimOp",
    "BlockIdOp",
    "DeallocOp",
    "DimensionAttr",
    "DimensionEnum",
    "FuncOp",
    "GlobalIdOp",
    "GridDimOp",
    "HostRegisterOp",
    "HostUnregisterOp",
    "LaneIdOp",
    "LaunchFuncOp",
    "LaunchOp",
    "LoopDimMapAttr",
    "MemcpyOp",
    "ModuleOp",
    "NumSubgroupsOp",
    "ProcessorAttr",
    "ProcessorEnum",
    "ReturnOp",
    "SetDefaultDeviceOp",
    "SubgroupIdOp",
    "SubgroupSizeOp",
    "TerminatorOp",
    "ThreadIdOp",
    "WaitOp",
    "YieldOp",
]

KERNEL_ATTR = "gpu.kernel"
"""Marks a gpu.func as a kernel (an attribute, as in MLIR; printed as the `kernel` keyword)."""
WORKGROUP_ATTRIBUTIONS = "workgroup_attributions"
CONTAINER_ATTR = "gpu.container_module"
LAUNCH_DIM_TYPES = AnyOf.get(IndexType, i32, i64)


class AddressSpaceEnum(StrEnum):
    GLOBAL = "global"
    WORKGROUP = "workgroup"
    PRIVATE = "private"


NVVM_ADDRESS_SPACES = {
    SHARED_SPACE: AddressSpaceEnum.WORKGROUP,
    LOCAL_SPACE: AddressSpaceEnum.PRIVATE,
}
"""The gpu address spaces that NVVM numbers stand for in a memref type."""


@irdl_attr_definition
class AddressSpaceAttr(EnumAttribute[AddressSpaceEnum]):
    """`#gpu.address_space<workgroup>`: the memory space of a memref (MLIR's gpu address space)."""

    name = "gpu.address_space"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> AddressSpaceEnum:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(AddressSpaceEnum)

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data.value)


def _dimension(dim: DimensionAttr | DimensionEnum | str) -> DimensionAttr:
    return dim if isinstance(dim, DimensionAttr) else DimensionAttr(DimensionEnum(dim))


def _index_attr(value: int | IntegerAttr[IndexType]) -> IntegerAttr[IndexType]:
    return value if isinstance(value, IntegerAttr) else IntegerAttr(value, IndexType())


def _parse_upper_bound(parser: Parser) -> int | None:
    if parser.parse_optional_keyword("upper_bound") is None:
        return None
    return parser.parse_integer(allow_boolean=False, allow_negative=False)


def _print_upper_bound(printer: Printer, bound: IntegerAttr[IndexType] | None) -> None:
    if bound is not None:
        printer.print_string(f" upper_bound {bound.value.data}")


class _DimensionOp(RestatedFields, IRDLOperation):
    """An index along x, y or z: `%t = gpu.thread_id x (upper_bound N)? attr-dict`."""

    dimension = prop_def(DimensionAttr)
    upper_bound = opt_prop_def(IntegerAttr[IndexType])
    result = result_def(IndexType)

    def __init__(
        self,
        dim: DimensionAttr | DimensionEnum | str,
        upper_bound: int | IntegerAttr[IndexType] | None = None,
    ):
        properties: dict[str, Attribute] = {"dimension": _dimension(dim)}
        if upper_bound is not None:
            properties["upper_bound"] = _index_attr(upper_bound)
        IRDLOperation.__init__(self, result_types=[IndexType()], properties=properties)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        dim = parser.parse_optional_identifier()
        if dim not in ("x", "y", "z"):
            parser.raise_error("expected a dimension: x, y or z", pos, parser.pos)
        op = cls(dim, _parse_upper_bound(parser))
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.dimension.data.value}")
        _print_upper_bound(printer, self.upper_bound)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class ThreadIdOp(_DimensionOp, xgpu.ThreadIdOp):
    name = "gpu.thread_id"


@irdl_op_definition
class BlockIdOp(_DimensionOp, xgpu.BlockIdOp):
    name = "gpu.block_id"


@irdl_op_definition
class BlockDimOp(_DimensionOp, xgpu.BlockDimOp):
    name = "gpu.block_dim"


@irdl_op_definition
class GridDimOp(_DimensionOp, xgpu.GridDimOp):
    name = "gpu.grid_dim"


@irdl_op_definition
class GlobalIdOp(_DimensionOp, xgpu.GlobalIdOp):
    name = "gpu.global_id"


class _BoundedIndexOp(RestatedFields, IRDLOperation):
    """An index of the thread's warp: `%l = gpu.lane_id (upper_bound N)? attr-dict`; the
    subgroup ops end with `: index`."""

    upper_bound = opt_prop_def(IntegerAttr[IndexType])
    result = result_def(IndexType)
    TYPED: ClassVar[bool] = False

    def __init__(self, upper_bound: int | IntegerAttr[IndexType] | None = None):
        properties = {} if upper_bound is None else {"upper_bound": _index_attr(upper_bound)}
        IRDLOperation.__init__(self, result_types=[IndexType()], properties=properties)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        op = cls(_parse_upper_bound(parser))
        op.attributes |= parser.parse_optional_attr_dict()
        if cls.TYPED:
            parser.parse_punctuation(":")
            pos = parser.pos
            if not isinstance(parser.parse_type(), IndexType):
                parser.raise_error(f"{cls.name} has type index", pos, parser.pos)
        return op

    def print(self, printer: Printer) -> None:
        _print_upper_bound(printer, self.upper_bound)
        printer.print_op_attributes(self.attributes)
        if self.TYPED:
            printer.print_string(" : index")


@irdl_op_definition
class LaneIdOp(_BoundedIndexOp, xgpu.LaneIdOp):
    name = "gpu.lane_id"


@irdl_op_definition
class SubgroupIdOp(_BoundedIndexOp, xgpu.SubgroupIdOp):
    name = "gpu.subgroup_id"
    TYPED: ClassVar[bool] = True


@irdl_op_definition
class SubgroupSizeOp(_BoundedIndexOp, xgpu.SubgroupSizeOp):
    name = "gpu.subgroup_size"
    TYPED: ClassVar[bool] = True


@irdl_op_definition
class NumSubgroupsOp(_BoundedIndexOp, xgpu.NumSubgroupsOp):
    name = "gpu.num_subgroups"
    TYPED: ClassVar[bool] = True


@irdl_op_definition
class BarrierOp(RestatedFields, xgpu.BarrierOp):
    """`gpu.barrier`: every thread of the block waits for the others."""

    name = "gpu.barrier"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class ModuleOp(RestatedFields, xgpu.ModuleOp):
    """`gpu.module @name (<handler>)? ([targets])? (attributes {...})? { ... }`."""

    name = "gpu.module"

    body = region_def("single_block")
    sym_name = prop_def(SymbolNameConstraint())
    targets = opt_prop_def(ArrayAttr)
    offloadingHandler = opt_prop_def(Attribute)

    def __init__(
        self,
        name: str | StringAttr | SymbolRefAttr,
        body: Region | None = None,
        targets: Sequence[Attribute] | None = None,
    ):
        if isinstance(name, SymbolRefAttr):
            name = name.root_reference
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(name) if isinstance(name, str) else name
        }
        if targets is not None:
            properties["targets"] = ArrayAttr(targets)
        IRDLOperation.__init__(self, properties=properties, regions=[body or Region(Block())])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name()
        properties: dict[str, Attribute] = {"sym_name": name}
        if parser.parse_optional_punctuation("<") is not None:
            properties["offloadingHandler"] = parser.parse_attribute()
            parser.parse_punctuation(">")
        targets = parser.parse_optional_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_attribute
        )
        if targets is not None:
            properties["targets"] = ArrayAttr(targets)
        attrs = parser.parse_optional_attr_dict_with_keyword(properties)
        body = parser.parse_region()
        if not body.blocks:
            body.add_block(Block())
        op = cls.build(properties=properties, regions=[body])
        op.attributes |= attrs.data if attrs is not None else {}
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        if self.offloadingHandler is not None:
            printer.print_string(" <")
            printer.print_attribute(self.offloadingHandler)
            printer.print_string(">")
        if self.targets is not None:
            printer.print_string(" [")
            printer.print_list(self.targets.data, printer.print_attribute)
            printer.print_string("]")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, False, False)


def _parse_function_argument(parser: Parser) -> tuple[Parser.Argument, dict[str, Attribute]]:
    arg = parser.parse_argument()
    attrs = parser.parse_optional_dictionary_attr_dict()
    location = parser.parse_optional_location()
    if location is not None:
        arg.location = cast(LocationAttr, location)
    return arg, attrs


def _parse_results(parser: Parser) -> tuple[list[Attribute], list[dict[str, Attribute]]]:
    """`-> type` or `-> (type {attrs}, ...)`, or nothing."""
    if parser.parse_optional_punctuation("->") is None:
        return [], []
    results = parser.parse_optional_comma_separated_list(
        parser.Delimiter.PAREN,
        lambda: (parser.parse_type(), parser.parse_optional_dictionary_attr_dict()),
    )
    if results is None:
        return [parser.parse_type()], [{}]
    return [t for t, _ in results], [attrs for _, attrs in results]


def _parse_attributions(
    parser: Parser, keyword: str
) -> tuple[list[Parser.Argument], list[dict[str, Attribute]]]:
    """`workgroup(%a : memref<...> {llvm.align = 16 : i64}, ...)` / `private(...)`, or
    nothing: the arguments and their attributes."""
    if parser.parse_optional_keyword(keyword) is None:
        return [], []
    found = parser.parse_comma_separated_list(
        parser.Delimiter.PAREN,
        lambda: (parser.parse_argument(), parser.parse_optional_dictionary_attr_dict()),
    )
    return [arg for arg, _ in found], [attrs for _, attrs in found]


def _dict_array(dicts: Sequence[Mapping[str, Attribute]]) -> ArrayAttr[DictionaryAttr] | None:
    if not any(dicts):
        return None
    return ArrayAttr(DictionaryAttr(dict(d)) for d in dicts)


def _address_space(t: Attribute) -> AddressSpaceEnum | None:
    """The gpu address space of a memref type: `#gpu.address_space<...>`, or NVVM's number of
    it (3: workgroup, 5: private), which upstream's lowering also reads."""
    if not isinstance(t, MemRefType):
        return None
    space = t.memory_space
    if isinstance(space, AddressSpaceAttr):
        return space.data
    if isinstance(space, IntegerAttr):
        return NVVM_ADDRESS_SPACES.get(space.value.data)
    return None


def _entry_args(func: xgpu.FuncOp) -> tuple[SSAValue, ...]:
    return func.body.blocks.first.args if func.body.blocks.first is not None else ()


def _num_workgroup(func: xgpu.FuncOp) -> int:
    count = func.attributes.get(WORKGROUP_ATTRIBUTIONS)
    return count.value.data if isinstance(count, IntegerAttr) else 0


def workgroup_args(func: xgpu.FuncOp) -> tuple[SSAValue, ...]:
    """The entry block's arguments for the workgroup attributions of a gpu.func (of xDSL's
    class or this module's; xDSL's has none)."""
    first = len(func.function_type.inputs)
    return _entry_args(func)[first : first + _num_workgroup(func)]


def private_args(func: xgpu.FuncOp) -> tuple[SSAValue, ...]:
    """The entry block's arguments for the private attributions of a gpu.func."""
    return _entry_args(func)[len(func.function_type.inputs) + _num_workgroup(func) :]


@irdl_op_definition
class FuncOp(xgpu.FuncOp):
    """`gpu.func @k(%a: t {attrs}, ...) (-> results)? (workgroup(...))? (private(...))? (kernel)?
    (attributes {...})? { ... }`."""

    name = "gpu.func"

    body = region_def()
    sym_name = attr_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    kernel = opt_attr_def(UnitAttr, attr_name=KERNEL_ATTR)
    known_block_size = opt_prop_def(DenseArrayBase.constr(i32))
    known_grid_size = opt_prop_def(DenseArrayBase.constr(i32))
    workgroup_attributions = opt_attr_def(
        IntegerAttr[IntegerType], attr_name=WORKGROUP_ATTRIBUTIONS
    )
    workgroup_attrib_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    """One dictionary per workgroup attribution (`{llvm.align = 16 : i64}`), as in MLIR."""
    private_attrib_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])

    def __init__(
        self,
        name: str,
        function_type: FunctionType | tuple[Sequence[Attribute], Sequence[Attribute]],
        region: Region | type[Region.DEFAULT] = Region.DEFAULT,
        kernel: bool | None = None,
        known_block_size: Sequence[int] | None = None,
        known_grid_size: Sequence[int] | None = None,
        workgroup: Sequence[MemRefType] = (),
        private: Sequence[MemRefType] = (),
    ):
        """As xDSL's gpu.FuncOp; `workgroup`/`private` are the types of the attributions (the
        entry block gets an argument for each, after the inputs, when no region is given)."""
        if isinstance(function_type, tuple):
            function_type = FunctionType.from_lists(*function_type)
        if not isinstance(region, Region):
            region = Region(Block(arg_types=[*function_type.inputs, *workgroup, *private]))
        properties: dict[str, Attribute | None] = {"function_type": function_type}
        attributes: dict[str, Attribute | None] = {"sym_name": StringAttr(name)}
        if known_block_size is not None:
            properties["known_block_size"] = DenseArrayBase.from_list(i32, known_block_size)
        if known_grid_size is not None:
            properties["known_grid_size"] = DenseArrayBase.from_list(i32, known_grid_size)
        if kernel:
            attributes[KERNEL_ATTR] = UnitAttr()
        if workgroup:
            attributes[WORKGROUP_ATTRIBUTIONS] = IntegerAttr(len(workgroup), i64)
        IRDLOperation.__init__(self, properties=properties, attributes=attributes, regions=[region])

    @classmethod
    def create(
        cls,
        *,
        operands: Sequence[SSAValue] = (),
        result_types: Sequence[Attribute] = (),
        properties: Mapping[str, Attribute] = {},
        attributes: Mapping[str, Attribute] = {},
        location: LocationAttr | None = None,
        successors: Sequence[Block] = (),
        regions: Sequence[Region] = (),
    ) -> Self:
        """xDSL's generic form has `kernel` as a property: it becomes the `gpu.kernel` attribute."""
        if "kernel" in properties:
            properties = {k: v for k, v in properties.items() if k != "kernel"}
            attributes = {**attributes, KERNEL_ATTR: UnitAttr()}
        return super().create(
            operands=operands,
            result_types=result_types,
            properties=properties,
            attributes=attributes,
            location=location,
            successors=successors,
            regions=regions,
        )

    @property
    def is_kernel(self) -> bool:
        return self.kernel is not None

    @property
    def num_workgroup_attributions(self) -> int:
        return _num_workgroup(self)

    @property
    def workgroup_args(self) -> tuple[SSAValue, ...]:
        """The entry block's arguments for the workgroup attributions."""
        return workgroup_args(self)

    @property
    def private_args(self) -> tuple[SSAValue, ...]:
        """The entry block's arguments for the private attributions."""
        return private_args(self)

    def _entry_args(self) -> tuple[SSAValue, ...]:
        return _entry_args(self)

    def verify_(self) -> None:
        if not self.body.blocks:
            raise VerifyException("gpu.func needs a body")
        inputs = self.function_type.inputs.data
        args = self.body.block.arg_types
        if args[: len(inputs)] != inputs:
            raise VerifyException(
                "Expected first entry block arguments to have the same types as the "
                "function input types"
            )
        if len(inputs) + self.num_workgroup_attributions > len(args):
            raise VerifyException("gpu.func has fewer workgroup attributions than it says")
        for kind, attrs, values in (
            ("workgroup", self.workgroup_attrib_attrs, self.workgroup_args),
            ("private", self.private_attrib_attrs, self.private_args),
        ):
            if attrs is not None and len(attrs) != len(values):
                raise VerifyException(f"gpu.func: {kind}_attrib_attrs needs one per attribution")
        expected = (
            (self.workgroup_args, AddressSpaceEnum.WORKGROUP),
            (self.private_args, AddressSpaceEnum.PRIVATE),
        )
        for values, space in expected:
            for value in values:
                if _address_space(value.type) != space:
                    raise VerifyException(
                        f"gpu.func: a {space.value} attribution must be a memref in "
                        f"#gpu.address_space<{space.value}> (or NVVM's number of it), "
                        f"not {value.type}"
                    )
        if self.kernel is not None and self.function_type.outputs.data:
            raise VerifyException("Expected void return type for kernel function")
        for name, sizes in (("block", self.known_block_size), ("grid", self.known_grid_size)):
            if sizes is not None and len(sizes.get_values()) != 3:
                raise VerifyException(f"known_{name}_size needs 3 elements, x, y and z")
        if self.arg_attrs is not None and len(self.arg_attrs) != len(inputs):
            raise VerifyException("gpu.func: arg_attrs needs one dictionary per argument")
        outputs = self.function_type.outputs.data
        if self.res_attrs is not None and len(self.res_attrs) != len(outputs):
            raise VerifyException("gpu.func: res_attrs needs one dictionary per result")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name()
        params = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, lambda: _parse_function_argument(parser)
        )
        outputs, result_attrs = _parse_results(parser)
        workgroup, workgroup_attrs = _parse_attributions(parser, "workgroup")
        private, private_attrs = _parse_attributions(parser, "private")
        kernel = parser.parse_optional_keyword("kernel") is not None
        reserved = ("sym_name", "function_type", "arg_attrs", "res_attrs", WORKGROUP_ATTRIBUTIONS)
        extra = parser.parse_optional_attr_dict_with_keyword(reserved)
        args = [arg for arg, _ in params]
        body = parser.parse_region([*args, *workgroup, *private])
        function_type = FunctionType.from_lists([arg.type for arg in args], outputs)
        op = cls(name.data, function_type, body, kernel=kernel)
        if workgroup:
            op.attributes[WORKGROUP_ATTRIBUTIONS] = IntegerAttr(len(workgroup), i64)
        op.arg_attrs = _dict_array([attrs for _, attrs in params])
        op.res_attrs = _dict_array(result_attrs)
        op.workgroup_attrib_attrs = _dict_array(workgroup_attrs)
        op.private_attrib_attrs = _dict_array(private_attrs)
        for key, value in (extra.data if extra is not None else {}).items():
            if key in ("known_block_size", "known_grid_size"):
                op.properties[key] = value
            else:
                op.attributes[key] = value
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        args = self._entry_args()[: len(self.function_type.inputs)]
        arg_attrs = list(self.arg_attrs.data) if self.arg_attrs is not None else []
        arg_attrs += [None] * (len(args) - len(arg_attrs))
        printer.print_string("(")
        printer.print_list(
            zip(args, arg_attrs, strict=False), lambda a: print_func_argument(printer, *a)
        )
        printer.print_string(")")
        self._print_results(printer)
        for keyword, values, attrs in (
            ("workgroup", self.workgroup_args, self.workgroup_attrib_attrs),
            ("private", self.private_args, self.private_attrib_attrs),
        ):
            if values:
                dicts = list(attrs.data) if attrs is not None else [None] * len(values)
                printer.print_string(f" {keyword}(")
                printer.print_list(
                    zip(values, dicts, strict=True), lambda a: _print_attribution(printer, *a)
                )
                printer.print_string(")")
        if self.kernel is not None:
            printer.print_string(" kernel")
        shown = {k: v for k, v in self.properties.items() if k.startswith("known_")}
        hidden = ("sym_name", KERNEL_ATTR, WORKGROUP_ATTRIBUTIONS)
        printer.print_op_attributes(
            {**shown, **self.attributes}, reserved_attr_names=hidden, print_keyword=True
        )
        printer.print_string(" ")
        printer.print_region(self.body, False, False)

    def _print_results(self, printer: Printer) -> None:
        outputs = self.function_type.outputs.data
        if not outputs:
            return
        if self.res_attrs is None and len(outputs) == 1:
            printer.print_string(" -> ")
            printer.print_attribute(outputs[0])
            return
        attrs = list(self.res_attrs.data) if self.res_attrs is not None else []
        attrs += [None] * (len(outputs) - len(attrs))
        printer.print_string(" -> (")
        printer.print_list(
            zip(outputs, attrs, strict=False), lambda r: print_func_output(printer, *r)
        )
        printer.print_string(")")


def _print_attribution(
    printer: Printer, value: SSAValue, attrs: DictionaryAttr | None = None
) -> None:
    printer.print_ssa_value(value)
    printer.print_string(" : ")
    printer.print_attribute(value.type)
    if attrs is not None and attrs.data:
        printer.print_string(" ")
        printer.print_attr_dict(attrs.data)


@irdl_op_definition
class ReturnOp(xgpu.ReturnOp):
    """`gpu.return (%v, ... : types)?`: the terminator of a gpu.func."""

    name = "gpu.return"

    args = var_operand_def()

    assembly_format = "attr-dict ($args^ `:` type($args))?"

    def __init__(self, operands: Sequence[SSAValue | Operation] = ()):
        IRDLOperation.__init__(self, operands=[operands])

    def verify_(self) -> None:
        func = self.parent_op()
        if isinstance(func, xgpu.FuncOp) and func.function_type.outputs.data != self.args.types:
            raise VerifyException(
                f"gpu.return returns ({', '.join(map(str, self.args.types))}) from a function "
                f"returning ({', '.join(map(str, func.function_type.outputs.data))})"
            )


def _parse_async(parser: Parser) -> tuple[bool, list[SSAValue]]:
    """`(async)? ([%token, ...])?`."""
    is_async = parser.parse_optional_keyword("async") is not None
    deps = parser.parse_optional_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_operand(AsyncTokenType())
    )
    return is_async, list(deps or [])


def _print_async(printer: Printer, is_async: bool, deps: Sequence[SSAValue]) -> None:
    if is_async:
        printer.print_string(" async")
    if deps:
        printer.print_string(" [")
        printer.print_list(deps, printer.print_operand)
        printer.print_string("]")


@irdl_op_definition
class WaitOp(RestatedFields, xgpu.WaitOp):
    """`%t = gpu.wait async [%deps]` / `gpu.wait [%deps]`: wait for async GPU work."""

    name = "gpu.wait"
    asyncDependencies = var_operand_def(AsyncTokenType)
    asyncToken = opt_result_def(AsyncTokenType)

    def __init__(
        self,
        async_dependencies: Sequence[SSAValue | Operation] | None = None,
        is_async: bool = True,
    ):
        """As xDSL's (which always returns a token); `is_async=False` blocks the host."""
        IRDLOperation.__init__(
            self,
            operands=[async_dependencies or []],
            result_types=[[AsyncTokenType()] if is_async else []],
        )

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        is_async, deps = _parse_async(parser)
        op = cls(deps, is_async)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        _print_async(printer, self.asyncToken is not None, self.asyncDependencies)
        printer.print_op_attributes(self.attributes)


def _parse_triple(parser: Parser, keyword: str) -> list[UnresolvedOperand] | None:
    """`keyword in (%x, %y, %z)`, or nothing."""
    if parser.parse_optional_keyword(keyword) is None:
        return None
    parser.parse_keyword("in")
    parser.parse_punctuation("(")
    values = [parser.parse_unresolved_operand()]
    for _ in range(2):
        parser.parse_punctuation(",")
        values.append(parser.parse_unresolved_operand())
    parser.parse_punctuation(")")
    return values


def _print_triple(printer: Printer, keyword: str, values: Sequence[SSAValue]) -> None:
    printer.print_string(f" {keyword} in (")
    printer.print_list(values, printer.print_operand)
    printer.print_string(")")


def _parse_kernel_operand(parser: Parser) -> SSAValue:
    operand = parser.parse_unresolved_operand()
    parser.parse_punctuation(":")
    return parser.resolve_operand(operand, parser.parse_type())


@irdl_op_definition
class LaunchFuncOp(xgpu.LaunchFuncOp):
    """`gpu.launch_func (async)? ([deps])? (<%obj : t>)? @mod::@k (clusters in (..))?
    blocks in (x, y, z) threads in (x, y, z) (: i32|i64)? (dynamic_shared_memory_size %s)?
    (args(%a : t, ...))? attr-dict`: launch kernel @k of gpu.module @mod."""

    name = "gpu.launch_func"
    asyncDependencies = var_operand_def(AsyncTokenType)
    gridSizeX = operand_def(LAUNCH_DIM_TYPES)
    gridSizeY = operand_def(LAUNCH_DIM_TYPES)
    gridSizeZ = operand_def(LAUNCH_DIM_TYPES)
    blockSizeX = operand_def(LAUNCH_DIM_TYPES)
    blockSizeY = operand_def(LAUNCH_DIM_TYPES)
    blockSizeZ = operand_def(LAUNCH_DIM_TYPES)
    clusterSizeX = opt_operand_def(LAUNCH_DIM_TYPES)
    clusterSizeY = opt_operand_def(LAUNCH_DIM_TYPES)
    clusterSizeZ = opt_operand_def(LAUNCH_DIM_TYPES)
    dynamicSharedMemorySize = opt_operand_def(i32)
    kernelOperands = var_operand_def()
    asyncObject = opt_operand_def()

    asyncToken = opt_result_def(AsyncTokenType)

    kernel = prop_def(SymbolRefAttr)

    def __init__(
        self,
        func: SymbolRefAttr,
        gridSize: Sequence[SSAValue | Operation],
        blockSize: Sequence[SSAValue | Operation],
        clusterSize: Sequence[SSAValue | Operation] | None = None,
        kernelOperands: Sequence[SSAValue | Operation] | None = None,
        async_launch: bool = False,
        asyncDependencies: Sequence[SSAValue | Operation] | None = None,
        dynamicSharedMemorySize: SSAValue | Operation | None = None,
        asyncObject: SSAValue | Operation | None = None,
    ):
        if len(gridSize) != 3 or len(blockSize) != 3:
            raise ValueError("gpu.launch_func needs 3 grid sizes and 3 block sizes")
        if clusterSize is not None and len(clusterSize) != 3:
            raise ValueError("gpu.launch_func needs 3 cluster sizes, if any")
        clusters = [[], [], []] if clusterSize is None else [[v] for v in clusterSize]
        IRDLOperation.__init__(
            self,
            operands=[
                asyncDependencies or [],
                *gridSize,
                *blockSize,
                *clusters,
                dynamicSharedMemorySize,
                kernelOperands or [],
                asyncObject,
            ],
            result_types=[[AsyncTokenType()] if async_launch else []],
            properties={"kernel": func},
        )

    @property
    def sizes(self) -> list[SSAValue]:
        """Grid, block and (if any) cluster sizes."""
        sizes = [self.gridSizeX, self.gridSizeY, self.gridSizeZ]
        sizes += [self.blockSizeX, self.blockSizeY, self.blockSizeZ]
        clusters = (self.clusterSizeX, self.clusterSizeY, self.clusterSizeZ)
        return sizes + [v for v in clusters if v is not None]

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        is_async, deps = _parse_async(parser)
        async_object = None
        if parser.parse_optional_punctuation("<") is not None:
            async_object = _parse_kernel_operand(parser)
            parser.parse_punctuation(">")
        pos = parser.pos
        kernel = parser.parse_attribute()
        if not isinstance(kernel, SymbolRefAttr) or len(kernel.nested_references) != 1:
            parser.raise_error("expected a kernel symbol: @module::@kernel", pos, parser.pos)
        clusters = _parse_triple(parser, "clusters")
        blocks = _parse_triple(parser, "blocks")
        if blocks is None:
            parser.raise_error("expected 'blocks in (%x, %y, %z)'")
        threads = _parse_triple(parser, "threads")
        if threads is None:
            parser.raise_error("expected 'threads in (%x, %y, %z)'")
        size_type: Attribute = IndexType()
        if parser.parse_optional_punctuation(":") is not None:
            size_type = parser.parse_type()
        shared = None
        if parser.parse_optional_keyword("dynamic_shared_memory_size") is not None:
            shared = parser.parse_operand(i32)
        operands: list[SSAValue] = []
        if parser.parse_optional_keyword("args") is not None:
            operands = parser.parse_comma_separated_list(
                parser.Delimiter.PAREN, lambda: _parse_kernel_operand(parser)
            )
        resolved = [parser.resolve_operand(v, size_type) for v in blocks + threads]
        op = cls(
            kernel,
            resolved[:3],
            resolved[3:6],
            None if clusters is None else [parser.resolve_operand(v, size_type) for v in clusters],
            operands,
            is_async,
            deps,
            shared,
            async_object,
        )
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        _print_async(printer, self.asyncToken is not None, self.asyncDependencies)
        if self.asyncObject is not None:
            printer.print_string(" <")
            printer.print_operand(self.asyncObject)
            printer.print_string(" : ")
            printer.print_attribute(self.asyncObject.type)
            printer.print_string(">")
        printer.print_string(" ")
        printer.print_attribute(self.kernel)
        sizes = self.sizes
        if len(sizes) == 9:
            _print_triple(printer, "clusters", sizes[6:])
        _print_triple(printer, "blocks", sizes[:3])
        _print_triple(printer, "threads", sizes[3:6])
        if not isinstance(self.gridSizeX.type, IndexType):
            printer.print_string(" : ")
            printer.print_attribute(self.gridSizeX.type)
        if self.dynamicSharedMemorySize is not None:
            printer.print_string(" dynamic_shared_memory_size ")
            printer.print_operand(self.dynamicSharedMemorySize)
        if self.kernelOperands:
            printer.print_string(" args(")
            printer.print_list(self.kernelOperands, lambda v: _print_attribution(printer, v))
            printer.print_string(")")
        printer.print_op_attributes(self.attributes)

    def verify_(self) -> None:
        types = {v.type for v in self.sizes}
        if len(types) != 1:
            raise VerifyException("gpu.launch_func: grid, block and cluster sizes need one type")
        clusters = [self.clusterSizeX, self.clusterSizeY, self.clusterSizeZ]
        if any(v is None for v in clusters) and any(v is not None for v in clusters):
            raise VerifyException("gpu.launch_func: 3 cluster sizes or none")
        self._verify_kernel()

    def _verify_kernel(self) -> None:
        """As MLIR: the module has `gpu.container_module`, the kernel exists, and a gpu.func
        kernel takes what is passed. Unchecked while the launch is outside a module."""
        module = self.parent_op()
        while module is not None and module.name != "builtin.module":
            module = module.parent_op()
        if module is None:
            return
        if CONTAINER_ATTR not in module.attributes:
            raise VerifyException(
                "gpu.launch_func: expected the closest surrounding module to have the "
                f"'{CONTAINER_ATTR}' attribute"
            )
        target = SymbolTable.lookup_symbol(module, self.kernel)
        if target is None:
            raise VerifyException(f"gpu.launch_func: kernel {self.kernel} is undefined")
        if not isinstance(target, xgpu.FuncOp):
            return  # already lowered (an llvm.func with nvvm.kernel)
        if target.kernel is None:
            raise VerifyException(
                f"gpu.launch_func: {self.kernel} is missing the '{KERNEL_ATTR}' attribute"
            )
        expected = target.function_type.inputs.data
        passed = self.kernelOperands.types
        if passed != expected:
            raise VerifyException(
                f"gpu.launch_func passes ({', '.join(map(str, passed))}) to "
                f"@{target.sym_name.data}, which takes ({', '.join(map(str, expected))})"
            )


extend(
    xgpu.GPU,
    [
        BarrierOp,
        BlockDimOp,
        BlockIdOp,
        FuncOp,
        GlobalIdOp,
        GridDimOp,
        LaneIdOp,
        LaunchFuncOp,
        ModuleOp,
        NumSubgroupsOp,
        ReturnOp,
        SubgroupIdOp,
        SubgroupSizeOp,
        ThreadIdOp,
        WaitOp,
    ],
    [AddressSpaceAttr],
)
GPU = xgpu.GPU
"""xDSL's gpu dialect, with this module's classes in place of xDSL's of the same names."""
