"""The facts of one perfect affine nest that the schedule space and the cost model read.

    func.func @mm(%A: memref<64x32xf32>, ...) {       NestSummary(func="mm",
      affine.for %i = 0 to 64 {                          loops=(Loop(i, 64, parallel),
        affine.for %j = 0 to 48 {                               Loop(j, 48, parallel),
          affine.for %k = 0 to 32 {                             Loop(k, 32, sequential)),
            C[i, j] += A[i, k] * B[k, j]         →       accesses=(A[(1,0,0),(0,0,1)] + (0,0),
    } } } }                                                        B ..., C read, C write),
                                                         flops=2)

The nest is the perfect band of the function's only outermost loop; where the band's last
loop holds stores of constants and one loop (`O[i, j] = 0` ahead of the filter loops of a
convolution), the band goes on into that loop and those arrays are `initialized` (each access
of theirs in the body must be the initialized element). An access is an
affine.load or affine.store of the innermost body, as one coefficient per band loop and a
constant per array dimension, over *iteration numbers*: loop d runs t_d = 0 .. trip_d - 1 and
its IV is lower_d + step_d * t_d, so `A[%i - 1]` with `%i = 1 to 9` is A[t_i + 0]. Floating-point
operations count per innermost iteration: arith.addf/subf/mulf/divf one each, math.fma two.

Refused with a diagnostic (located at the offending op): no loop or several nests, an
imperfect nest (loops beside other ops, iter_args, affine.if), unnamed or equally named loops,
non-constant trip counts, memory ops other than affine.load/store, indices that are not
affine functions of the band's IVs alone (symbols, floordiv/mod), dynamic shapes.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, arith, func
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, ModuleOp
from xdsl.ir import Operation

from loopopt.analysis.access import Aff, Dim, Symbols, map_results, memref_name
from loopopt.analysis.box import band_box
from loopopt.analysis.nest import body_block
from loopopt.analysis.parallel import parallel_loops
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import (
    body_ops,
    constant_bounds,
    constant_trip_count,
    functions,
    loop_name,
    outermost_loops,
    perfect_band,
    step_of,
)
from loopopt.schedule.types import Access, Loop, NestSummary

FLOPS = {"arith.addf": 1, "arith.subf": 1, "arith.mulf": 1, "arith.divf": 1, "math.fma": 2}
"""Floating-point operations per op."""


def summarize(fn: Operation) -> NestSummary:
    """The summary of the perfect nest of `fn` (a func.func); a LoopoptError otherwise."""
    if not isinstance(fn, func.FuncOp):
        raise LoopoptError(f"summarize: expected a func.func, got '{fn.name}'", op=fn)
    name = fn.sym_name.data
    _check_top_level(fn, name)
    nests = outermost_loops(fn)
    if not nests:
        raise LoopoptError(f"summarize: @{name} has no loop nest", op=fn)
    if len(nests) > 1:
        raise LoopoptError(
            f"summarize: @{name} holds {len(nests)} loop nests; a schedule covers one",
            op=nests[1],
        )
    band = perfect_band(nests[0])
    inits = _initializations(band[-1])
    if inits:
        band += perfect_band(_only_loop(band[-1]))
    _check_perfect(band)
    parallel = set(parallel_loops(band[0]))
    lowers, trips = _box(band)
    ivs = {loop.body.block.args[0] for loop in band}
    loops = tuple(
        Loop(
            name,
            trip,
            op in parallel,
            constant_bounds(op) is None,
            any(v in ivs for v in op.lowerBoundOperands),
        )
        for name, trip, op in zip(_names(band), trips, band, strict=True)
    )
    accesses = tuple(_access(op, band, lowers) for op in body_ops(band[-1]) if _is_memory(op))
    flops = sum(FLOPS.get(op.name, 0) for op in body_ops(band[-1]))
    initialized = _initialized(inits, accesses, band, lowers)
    return NestSummary(name, loops, accesses, flops, initialized)


def _only_loop(loop: affine.ForOp) -> affine.ForOp:
    [inner] = [op for op in body_ops(loop) if isinstance(op, affine.ForOp)]
    return inner


def _initializations(loop: affine.ForOp) -> list[affine.StoreOp]:
    """The stores of constants ahead of the only loop in `loop`'s body (`O[i, j] = 0`
    before the reduction loops), when the body is just those and the loop."""
    ops = body_ops(loop)
    if loop.inits or len(ops) < 2 or not isinstance(ops[-1], affine.ForOp):
        return []
    stores = [op for op in ops[:-1] if isinstance(op, affine.StoreOp)]
    others = [op for op in ops[:-1] if not isinstance(op, affine.StoreOp)]
    if not stores or not all(isinstance(op, arith.ConstantOp) for op in others):
        return []
    constants = all(isinstance(op.value.owner, arith.ConstantOp) for op in stores)
    return stores if constants else []


def _initialized(
    inits: Sequence[affine.StoreOp],
    accesses: Sequence[Access],
    band: Sequence[affine.ForOp],
    lowers: Sequence[int],
) -> tuple[str, ...]:
    """The arrays of `inits`, each of whose accesses in the body is the initialized element
    (the same indices, no coefficient on the loops inside the initialization)."""
    names: list[str] = []
    for store in inits:
        init = _access(store, band, lowers)
        mine = [a for a in accesses if a.array == init.array]
        if not mine or any((a.coeffs, a.offset) != (init.coeffs, init.offset) for a in mine):
            raise LoopoptError(
                f"summarize: '{init.array}' is initialized at other elements than the nest "
                "accumulates",
                op=store,
            )
        names.append(init.array)
    return tuple(dict.fromkeys(names))


def summarize_module(module: ModuleOp, func_name: str | None = None) -> NestSummary:
    """The summary of function `func_name` of `module` (its only function when None)."""
    fns = functions(module, func_name)
    if len(fns) != 1:
        raise LoopoptError(
            f"summarize: the module holds {len(fns)} functions; name one (func=)", op=module
        )
    return summarize(fns[0])


def _check_top_level(fn: func.FuncOp, name: str) -> None:
    for op in body_block(fn, "summarize").ops:
        if isinstance(op, affine.ForOp | func.ReturnOp):
            continue
        if op.regions or _is_memory(op):
            raise LoopoptError(
                f"summarize: '{op.name}' in @{name} lies outside its loop nest", op=op
            )


def _is_memory(op: Operation) -> bool:
    return isinstance(op, func.CallOp) or any(isinstance(v.type, MemRefType) for v in op.operands)


def _check_perfect(band: Sequence[affine.ForOp]) -> None:
    inner = band[-1]
    if inner.inits:
        raise LoopoptError(
            f"summarize: loop '{_describe(inner)}' has iter_args (a reduction in registers): "
            "not a perfect nest",
            op=inner,
        )
    ops = body_ops(inner)
    loops = [op for op in ops if isinstance(op, affine.ForOp)]
    if len(loops) > 1:
        raise LoopoptError(
            f"summarize: imperfect nest: loop '{_describe(inner)}' holds {len(loops)} loops",
            op=loops[1],
        )
    if loops:
        raise LoopoptError(
            f"summarize: imperfect nest: loop '{_describe(inner)}' holds loop "
            f"'{_describe(loops[0])}' beside other ops",
            op=loops[0],
        )
    for op in ops:
        if op.regions:
            raise LoopoptError(
                f"summarize: '{op.name}' in the innermost body: not a perfect affine nest", op=op
            )


def _describe(loop: affine.ForOp) -> str:
    return loop_name(loop) or "affine.for"


def _names(band: Sequence[affine.ForOp]) -> list[str]:
    named: list[str] = []
    for depth, loop in enumerate(band):
        name = loop_name(loop)
        if name is None:
            raise LoopoptError(
                f"summarize: the loop at depth {depth} has no loopopt.name (run loop-name)",
                op=loop,
            )
        if name in named:
            raise LoopoptError(f"summarize: two loops of the nest are named '{name}'", op=loop)
        named.append(name)
    return named


def _box(band: Sequence[affine.ForOp]) -> tuple[list[int], list[int]]:
    """The lowest IV and the trip count of each loop: its own where its bounds are constant,
    else its bounding box's over the band's iterations (analysis/box.py); a diagnostic for
    bounds that are not affine in the band's outer loops, or for a varying lower bound with
    a step (its iterations do not fall on one grid)."""
    if all(constant_bounds(loop) is not None for loop in band):
        lowers = [_constant_lower(loop) for loop in band]
        return lowers, [constant_trip_count(loop) or 0 for loop in band]
    box = band_box(band)
    for loop in band:
        if constant_bounds(loop) is not None:
            continue
        name = _describe(loop)
        if box is None:
            raise LoopoptError(
                f"summarize: loop '{name}' has bounds that are not affine in the nest's outer "
                "loops (or it runs no iteration)",
                op=loop,
            )
        if step_of(loop) > 1 and loop.lowerBoundMap.data.num_dims:
            raise LoopoptError(
                f"summarize: loop '{name}' has a step and a lower bound that varies", op=loop
            )
    assert box is not None
    steps = [step_of(loop) for loop in band]
    return [lo for lo, _ in box], [
        (hi - lo) // st + 1 for (lo, hi), st in zip(box, steps, strict=True)
    ]


def _constant_lower(loop: affine.ForOp) -> int:
    bounds = constant_bounds(loop)
    assert bounds is not None
    return bounds[0]


def _access(op: Operation, band: Sequence[affine.ForOp], lowers: Sequence[int]) -> Access:
    if not isinstance(op, affine.LoadOp | affine.StoreOp):
        raise LoopoptError(f"summarize: '{op.name}' is not an affine.load or affine.store", op=op)
    array = memref_name(op.memref)
    typ = op.memref.type
    assert isinstance(typ, MemRefType)
    shape = tuple(typ.get_shape())
    if any(size == DYNAMIC_INDEX for size in shape):
        raise LoopoptError(f"summarize: array '{array}' has a dynamic shape", op=op)
    bits = getattr(typ.element_type, "bitwidth", None)
    if not isinstance(bits, int) or bits % 8:
        raise LoopoptError(f"summarize: array '{array}' has no byte-sized elements", op=op)
    coeffs: list[tuple[int, ...]] = []
    offset: list[int] = []
    for dim, index in enumerate(map_results(op.map.data, op.indices, band, Symbols())):
        row = _row(index, band, lowers)
        if row is None:
            raise LoopoptError(
                f"summarize: index {dim} of '{array}' is not an affine function of the loop IVs",
                op=op,
            )
        coeffs.append(row[0])
        offset.append(row[1])
    write = isinstance(op, affine.StoreOp)
    return Access(array, write, tuple(coeffs), tuple(offset), shape, bits // 8)


def _row(
    index: Aff | None, band: Sequence[affine.ForOp], lowers: Sequence[int]
) -> tuple[tuple[int, ...], int] | None:
    """(coefficients over iteration numbers, constant) of one index; None if not affine."""
    if index is None:
        return None
    coeffs = [0] * len(band)
    const = index.const
    for term, c in index.terms:
        if not isinstance(term, Dim):
            return None
        coeffs[term.depth] += c * step_of(band[term.depth])
        const += c * lowers[term.depth]
    return tuple(coeffs), const
