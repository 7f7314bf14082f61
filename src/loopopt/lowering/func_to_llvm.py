"""Lower func.func / func.call / func.return to the llvm dialect (loopopt's calling convention).

Before:  func.func @f(%A: memref<?x8xf32>, %n: index) -> f32
After:   llvm.func @f(%A: !llvm.ptr, %A_d0: i64, %n: i64) -> f32

Every memref argument becomes ONE bare pointer followed by one i64 per dynamic dimension (in
order); index becomes i64. Block arguments of every block are converted in place (after scf →
cf lowering, loop induction variables are block arguments). A memref flowing through a
non-entry block argument cannot be lowered.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import IndexType, MemRefType, VectorType, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from loopopt.diagnostics import LoopoptError
from loopopt.lowering.llvm_common import (
    PTR,
    LoweringState,
    MemrefInfo,
    check_memref_type,
    convert_scalar_type,
    dynamic_dims,
)


def signature_inputs(inputs: tuple[Attribute, ...], op: Operation) -> list[Attribute]:
    """The llvm argument types for func argument types `inputs`."""
    result: list[Attribute] = []
    for t in inputs:
        if isinstance(t, MemRefType):
            check_memref_type(t, op)
            result += [PTR] + [i64] * len(dynamic_dims(t))
        else:
            result.append(convert_scalar_type(t, op))
    return result


def result_type(outputs: tuple[Attribute, ...], op: Operation) -> Attribute:
    if not outputs:
        return llvm.LLVMVoidType()
    if len(outputs) > 1 or isinstance(outputs[0], MemRefType):
        raise LoopoptError("cannot lower a function returning several values or a memref", op=op)
    return convert_scalar_type(outputs[0], op)


@dataclass
class FuncLowering(RewritePattern):
    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter, /) -> None:
        fn_type = op.function_type
        inputs = signature_inputs(fn_type.inputs.data, op)
        output = result_type(fn_type.outputs.data, op)
        body = rewriter.move_region_contents_to_new_regions(op.body)
        for index, block in enumerate(body.blocks):
            self.convert_block_args(block, rewriter, entry=index == 0, op=op)
        new = llvm.FuncOp(
            op.sym_name,
            llvm.LLVMFunctionType(inputs, output),
            linkage=llvm.LinkageAttr("external"),
            body=body,
        )
        new.location = op.location
        rewriter.replace(op, new)

    def convert_block_args(
        self, block: Block, rewriter: PatternRewriter, entry: bool, op: Operation
    ) -> None:
        for arg in list(block.args):
            t = arg.type
            if isinstance(t, MemRefType):
                if not entry:
                    raise LoopoptError("cannot lower a memref passed between blocks", op=op)
                ptr = rewriter.replace_value_with_new_type(arg, PTR)
                dims = dynamic_dims(t)
                sizes: dict[int, SSAValue] = {}
                for k, dim in enumerate(dims):
                    position = block.args.index(ptr) + 1 + k
                    size = rewriter.insert_block_argument(block, position, i64)
                    if ptr.name_hint is not None:
                        size.name_hint = f"{ptr.name_hint}_d{dim}"
                    sizes[dim] = size
                self.state.memrefs[ptr] = MemrefInfo(t, sizes)
            elif isinstance(t, IndexType):
                rewriter.replace_value_with_new_type(arg, i64)
            elif not isinstance(t, VectorType):  # tensor-core fragments: lowering/mma.py
                convert_scalar_type(t, op)


@dataclass
class CallLowering(RewritePattern):
    state: LoweringState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter, /) -> None:
        args: list[SSAValue] = []
        for value in op.arguments:
            info = self.state.memrefs.get(value)
            if info is not None:
                args += [value, *(info.dynamic_sizes[d] for d in sorted(info.dynamic_sizes))]
            elif isinstance(value.type, MemRefType):
                raise LoopoptError("cannot lower a call with a memref of unknown origin", op=op)
            else:
                args.append(value)
        outputs = tuple(op.res.types)
        returned = None if not outputs else result_type(outputs, op)
        call = llvm.CallOp(op.callee.string_value(), *args, return_type=returned)
        rewriter.replace(op, call, [call.returned] if outputs else [])


class ReturnLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter, /) -> None:
        if len(op.arguments) > 1:
            raise LoopoptError("cannot lower a return of several values", op=op)
        value = op.arguments[0] if op.arguments else None
        rewriter.replace(op, llvm.ReturnOp(value))
