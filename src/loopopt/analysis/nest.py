"""Read-only queries of loop nests: finding, naming and measuring loops (what analysis/ and
every pass share).

Loops are `affine.for` ops; a loop's user-visible name is its `loopopt.name` string attribute
(set by the Python frontend or by `loop-name`). A *band* is a list of loops, outermost first, each
the only op (besides the terminator) in the body of the previous one: a perfect nest.

    perfect_band(i)              # [i, j, k] for a perfect matmul nest
    constant_trip_count(k)       # 1000 for affine.for %k = 0 to 1000
    enclosing_loops(store)       # [i, j, k]

Nothing here changes the IR (loops/nest.py has the naming and marking mutators).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from xdsl.dialects import affine, func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp, NoneAttr, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import LOOP_NAME


def loop_name(loop: Operation) -> str | None:
    attr = loop.attributes.get(LOOP_NAME)
    return attr.data if isinstance(attr, StringAttr) else None


def describe_loop(loop: Operation) -> str:
    """A loop's name for messages: its `loopopt.name`, else `affine.for`."""
    name = loop_name(loop)
    return name if name is not None else "affine.for"


def functions(module: ModuleOp, func_name: str | None = None) -> list[func.FuncOp]:
    """The functions a pass works on: all of them, or the one named by its `func=` option.
    Declarations (`func.func private @f(index)`, no body) have nothing to work on: they are
    left out, and naming one is an error."""
    funcs = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    if func_name is not None:
        funcs = [f for f in funcs if f.sym_name.data == func_name]
        if not funcs:
            raise LoopoptError(f"no function named '{func_name}'", op=module)
        if not funcs[0].body.blocks:
            raise LoopoptError(f"function '{func_name}' is a declaration (no body)", op=funcs[0])
    return [f for f in funcs if f.body.blocks]


def body_block(fn: func.FuncOp, who: str) -> Block:
    """The one block of `fn`'s body; a diagnostic naming `who` (a pass) where the body branches
    between blocks (cf.br after lowering): what maps or schedules a whole function takes
    structured code only."""
    if len(fn.body.blocks) != 1:
        raise LoopoptError(
            f"{who}: @{fn.sym_name.data} has {len(fn.body.blocks)} blocks (cf branches); "
            "it takes structured functions only (scf/affine control flow, one block)",
            op=fn,
        )
    return fn.body.block


def function_ops(module: ModuleOp, name: str | None) -> list[Operation]:
    """The func.func and gpu.func ops of `module` (only those named `name`, when given)."""
    found = [op for op in module.walk() if op.name in ("func.func", "gpu.func")]
    if name is None:
        return found
    chosen = [op for op in found if _symbol(op) == name]
    if not chosen:
        raise LoopoptError(f"no function named '{name}'", op=module)
    return chosen


def _symbol(op: Operation) -> str | None:
    symbol = getattr(op, "sym_name", None)
    return symbol.data if isinstance(symbol, StringAttr) else None


def loops_in(root: Operation) -> Iterator[affine.ForOp]:
    """All affine.for ops under (not including) `root`, in pre-order."""
    for op in root.walk():
        if op is not root and isinstance(op, affine.ForOp):
            yield op


def find_loops(root: Operation, name: str) -> list[affine.ForOp]:
    return [loop for loop in loops_in(root) if loop_name(loop) == name]


def named_loops(root: Operation, name: str, pass_name: str) -> list[affine.ForOp]:
    """Every loop named `name` under `root`, in pre-order; a diagnostic if there is none.

    A name can stand for several loops (the remainder loop of an unroll keeps copies of the inner
    loops, named as the originals): a pass given `loop=NAME` transforms each of them.
    """
    found = find_loops(root, name)
    if not found:
        raise LoopoptError(f"{pass_name}: no loop named '{name}'", op=root)
    return found


def find_loop(root: Operation, name: str, pass_name: str) -> affine.ForOp:
    """The unique loop named `name` under `root`; a diagnostic if there is none or several."""
    found = find_loops(root, name)
    if not found:
        raise LoopoptError(f"{pass_name}: no loop named '{name}'", op=root)
    if len(found) > 1:
        raise LoopoptError(
            f"{pass_name}: {len(found)} loops are named '{name}'; name them apart with "
            "loop-name or restrict the pass with func=",
            op=found[1],
        )
    return found[0]


def outermost_loops(root: Operation) -> list[affine.ForOp]:
    """Loops under `root` that have no enclosing affine.for below `root`."""
    result: list[affine.ForOp] = []
    for loop in loops_in(root):
        parent = loop.parent_op()
        while parent is not None and parent is not root and not isinstance(parent, affine.ForOp):
            parent = parent.parent_op()
        if parent is root or parent is None:
            result.append(loop)
    return result


def body_ops(loop: affine.ForOp) -> list[Operation]:
    """The ops of a loop body, without its terminator."""
    ops = list(loop.body.block.ops)
    if ops and isinstance(ops[-1], affine.YieldOp):
        ops.pop()
    return ops


def only_child_loop(loop: affine.ForOp) -> affine.ForOp | None:
    """The loop that is alone in `loop`'s body (a perfect nest step), if any."""
    ops = body_ops(loop)
    if len(ops) == 1 and isinstance(ops[0], affine.ForOp):
        return ops[0]
    return None


def perfect_band(loop: affine.ForOp, max_depth: int | None = None) -> list[affine.ForOp]:
    """`loop` and the loops perfectly nested in it, outermost first.

    Loops carrying iter_args end the band (their body is not a plain nest).
    """
    band = [loop]
    while max_depth is None or len(band) < max_depth:
        if band[-1].inits:
            break
        child = only_child_loop(band[-1])
        if child is None:
            break
        band.append(child)
    return band


def enclosing_loops(op: Operation) -> list[affine.ForOp]:
    """The affine.for ops around `op`, outermost first."""
    loops: list[affine.ForOp] = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, affine.ForOp):
            loops.append(parent)
        parent = parent.parent_op()
    return loops[::-1]


def bands_by_names(
    root: Operation, names: Sequence[str], pass_name: str
) -> list[list[affine.ForOp]]:
    """Every band whose loops are named `names` in that order, outermost first: one per loop
    named `names[0]`. Each must be a perfect nest."""
    for name in names[1:]:
        named_loops(root, name, pass_name)  # each name must exist
    bands: list[list[affine.ForOp]] = []
    for outermost in named_loops(root, names[0], pass_name):
        band = [outermost]
        for name in names[1:]:
            outer = band[-1]
            inner = only_child_loop(outer)
            if inner is None or loop_name(inner) != name or outer.inits:
                raise LoopoptError(
                    f"{pass_name}: loops {', '.join(names)} do not form a perfect nest "
                    f"('{name}' is not the only op in '{describe_loop(outer)}')",
                    op=outer,
                )
            band.append(inner)
        bands.append(band)
    return bands


def constant_bounds(loop: affine.ForOp) -> tuple[int, int] | None:
    """(lower, upper) when both bounds are single constants."""
    lb, ub = loop.lowerBoundMap.data, loop.upperBoundMap.data
    if lb.num_dims or lb.num_symbols or ub.num_dims or ub.num_symbols:
        return None
    if len(lb.results) != 1 or len(ub.results) != 1:
        return None
    lbv, ubv = lb.eval([], []), ub.eval([], [])
    return lbv[0], ubv[0]


def step_of(loop: affine.ForOp) -> int:
    return loop.step.value.data


def constant_trip_count(loop: affine.ForOp) -> int | None:
    bounds = constant_bounds(loop)
    if bounds is None:
        return None
    lb, ub = bounds
    step = step_of(loop)
    return max(0, (ub - lb + step - 1) // step)


def iv(loop: affine.ForOp) -> SSAValue:
    """The induction variable of `loop`."""
    return loop.body.block.args[0]


def innermost_loops(root: Operation) -> list[affine.ForOp]:
    """The loops under `root` that contain no other loop, in pre-order."""
    return [loop for loop in loops_in(root) if next(loops_in(loop), None) is None]


def defined_inside(value: SSAValue, loop: Operation) -> bool:
    """Whether `value` is defined in `loop`'s regions (its IV and iter_args included)."""
    if isinstance(value, OpResult):
        op: Operation | None = value.op
    elif isinstance(value, BlockArgument):
        op = value.block.parent_op()
    else:
        return False
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op()
    return False


def host_buffer_op(op: Operation) -> bool:
    """A `memref.alloc` of static shape in the default memory space, or a `memref.dealloc`,
    directly in a function's body: on the GPU, the host allocates it on the device (a buffer
    kernels share, such as an expanded array) and the op stays on the host."""
    if not isinstance(op.parent_op(), func.FuncOp):
        return False
    if isinstance(op, memref.DeallocOp):
        owner = op.memref.owner
        return isinstance(owner, Operation) and host_buffer_op(owner)
    if not isinstance(op, memref.AllocOp) or op.operands:
        return False
    t = op.memref.type
    return isinstance(t, MemRefType) and t.memory_space == NoneAttr() and t.has_static_shape()
