"""What MLIR 22's verifiers refuse in input IR and xDSL's accept: checked once, after parsing.

- an `affine.load`/`affine.store` whose map has not one result per dimension of the memref
  (`affine.load %A[0] : memref<4x4xf32>`);
- an index of an affine op that is neither a dimension nor a symbol: a value computed inside a
  loop (`%i = affine.load %I[%j]` then `affine.load %A[%i]`); the dependence analysis would take
  it for an affine function of the loops (MLIR: "operand cannot be used as a dimension id");
- an `affine.for` with a step that is not positive, or whose `affine.yield` does not return
  one value of each `iter_args` type;
- a function body whose last op is not `func.return`.

Valid indices are induction variables, values defined at the top of a function (arguments and
ops directly in its body: MLIR's symbols), and what ops without regions compute from valid
indices: everything but values read from memory inside a loop or carried by one (iter_args).
That is more than MLIR's `isValidDim` takes (affine.apply only; loopopt's own passes write
`arith.addi`, `affine.min`, thread ids and `memref.dim` of loop values), but never an index the
dependence analysis could not see. Only loopopt's input is checked (and what the CPU JIT
re-reads); what its passes write is verified by the op verifiers and read by mlir-opt in tests.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from loopopt.diagnostics import LoopoptError
from loopopt.dialects import affine_ext

_READS = {"affine.load", "memref.load", "memref.atomic_rmw", "llvm.load", "affine.vector_load"}
"""Ops whose results come from memory."""
_SCOPES = ("func.func", "gpu.func", "builtin.module", "gpu.module", "memref.alloca_scope")
"""Ops whose body's values are symbols (MLIR's AffineScope)."""


def check_input(module: ModuleOp) -> None:
    """Raise a LoopoptError at the first op that MLIR would refuse (see the module docstring)."""
    for op in module.walk():
        if isinstance(op, affine.LoadOp | affine.StoreOp):
            rank = len(op.memref.type.get_shape())  # type: ignore[union-attr]
            results = len(op.map.data.results) if op.map is not None else rank
            if results != rank:
                raise LoopoptError(
                    f"{op.name}: the map has {results} result(s) but the memref has rank {rank}",
                    op=op,
                )
            _require_affine_operands(op, op.indices)
        elif isinstance(op, affine.ForOp):
            _check_for(op)
        elif isinstance(op, affine.ApplyOp | affine.MinOp | affine_ext.MaxOp | affine.IfOp):
            _require_affine_operands(op, op.operands)
        elif isinstance(op, func.FuncOp) and op.body.blocks:
            last = op.body.blocks[-1].last_op
            if not isinstance(last, func.ReturnOp):
                raise LoopoptError(
                    f"func.func @{op.sym_name.data}: its body must end with func.return", op=op
                )


def _check_for(op: affine.ForOp) -> None:
    step = op.step.value.data
    if step <= 0:
        raise LoopoptError(f"affine.for: the step must be positive, got {step}", op=op)
    _require_affine_operands(op, op.lowerBoundOperands)
    _require_affine_operands(op, op.upperBoundOperands)
    yielded = op.body.block.last_op
    expected = [v.type for v in op.inits]
    got = [v.type for v in yielded.operands] if isinstance(yielded, affine.YieldOp) else []
    if got != expected:
        shown = ", ".join(map(str, expected)) or "nothing"
        raise LoopoptError(
            f"affine.for: its iter_args need affine.yield of ({shown}), "
            f"got ({', '.join(map(str, got)) or 'nothing'})",
            op=yielded if isinstance(yielded, affine.YieldOp) else op,
        )


def _require_affine_operands(op: Operation, operands: Sequence[SSAValue]) -> None:
    """Every operand a dimension (symbols are dimensions too; xDSL's parser makes the bare
    operands of `affine.load %A[%i]` symbols of the map, so the two are not told apart)."""
    for value in operands:
        if not _is_dim(value):
            name = f"%{value.name_hint}" if value.name_hint else "an operand"
            raise LoopoptError(
                f"{op.name}: {name} cannot be an index of an affine map: it is computed inside "
                "a loop (use memref.load/store for indirect indices)",
                op=op,
            )


def _top_level(value: SSAValue) -> bool:
    block = value.block if isinstance(value, BlockArgument) else value.op.parent_block()
    if not isinstance(block, Block):
        return False
    parent = block.parent_op()
    return parent is None or parent.name in _SCOPES


def _is_dim(value: SSAValue) -> bool:
    """Not read from memory inside a loop, nor carried by one (see the module docstring)."""
    if _top_level(value):
        return True
    if isinstance(value, BlockArgument):
        parent = value.block.parent_op()
        if isinstance(parent, affine.ForOp | scf.ForOp):
            return value.index == 0  # the induction variable, not an iter_arg
        return not isinstance(parent, scf.WhileOp)  # affine.parallel, gpu ids, ...
    op = value.op
    if op.regions or op.name in _READS:
        return False
    return all(_is_dim(v) for v in op.operands)
