"""Bounds checks: a call whose subscripts could leave an array is refused before it runs.

    def shift(A, B, n):                   shift(A, B, 10) with len(A) == 10 →
        for i in range(n):                LoopoptError: 'A[i + 1]' may index A[10], outside
            B[i] = A[i + 1]               0..9 (at i = 9, n = 10) …

Python wraps negative subscripts around and raises IndexError past the end; compiled code
would touch memory outside the array. For every affine access of a kernel, the values of the
integer arguments (and sizes) for which some iteration indexes outside the array form an isl
set, built once per compilation from the exact access analysis (analysis/access.py). A call
then checks its own values against it (cached per values). Symbols a call does not determine
(a bound read from an array) may take any value: such an access is refused if some value
would put it outside. An access under an if counts only where its branch may run
(guards.py): exactly for affine conditions, approximately where data enters the condition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import islpy as isl
from xdsl.dialects import affine, arith, func, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import BlockArgument, SSAValue

from loopopt.analysis.access import Access, Symbols, collect_accesses, value_aff
from loopopt.analysis.dependence import access_map
from loopopt.diagnostics import LoopoptError, op_location
from loopopt.dialects import affine_ext
from loopopt.frontend.guards import Guard, guards_of
from loopopt.runtime.device_arrays import cuda_array_interface


@dataclass
class _Check:
    access: Access
    bad: isl.Set
    """Parameter values for which the access leaves its array."""
    outside: isl.Map
    """{ iteration -> element } pairs outside the array."""


@dataclass
class BoundsCheck:
    """The bounds condition of one compiled kernel (see the module docstring)."""

    fn: func.FuncOp
    params: list[SSAValue | tuple[int, int]]
    """The isl parameters: index values, or (argument, dimension) for sizes not in the IR."""
    checks: list[_Check]
    _passed: set[tuple[int | None, ...]] = field(default_factory=set)

    def check(self, args: Sequence[Any]) -> None:
        """Raise a LoopoptError if a call with `args` would index outside an array."""
        memo: dict[SSAValue, int | None] = {}
        values = tuple(
            _size(args, *p) if isinstance(p, tuple) else _evaluate(p, args, memo)
            for p in self.params
        )
        if values in self._passed:
            return
        for item in self.checks:
            bad = _fix(item.bad, values)
            if not bad.is_empty():
                raise _error(item, values, self.params, bad)
        self._passed.add(values)


def bounds_check(fn: func.FuncOp) -> BoundsCheck:
    syms = Symbols()
    accesses = [a for a in collect_accesses(fn, syms) if a.affine and a.memref is not None]
    extra: list[tuple[int, int]] = []
    sizes = {a.memref: _sizes(a.memref, syms, extra) for a in accesses if a.memref is not None}
    guards = {a: (Guard(a, syms), guards_of(a)) for a in accesses}
    for guard, ops in guards.values():  # meet their symbols before naming the parameters
        for op, in_then in ops:
            guard.where(op, in_then)
    names = [sym.isl for sym in syms.table.values()] + [f"size{a}_{d}" for a, d in extra]
    params: list[SSAValue | tuple[int, int]] = [*syms.table, *extra]
    checks: list[_Check] = []
    for access in accesses:
        assert access.memref is not None
        amap = access_map(access, names)
        guard, ops = guards[access]
        guard.names = names
        for op, in_then in ops:  # only where the branch may run
            runs = guard.where(op, in_then)
            if runs is not None:
                amap = amap.intersect_domain(runs)
        dims = sizes[access.memref]
        pieces = []
        for k, size in enumerate(dims):
            pieces += [f"o{k} < 0", f"o{k} >= {size}"]
        outs = ", ".join(f"o{k}" for k in range(len(dims)))
        region = isl.Set(f"[{', '.join(names)}] -> {{ M[{outs}] : {' or '.join(pieces)} }}")
        outside = amap.intersect_range(region)
        bad = outside.params()
        if not bad.is_empty():
            checks.append(_Check(access, bad, outside))
    return BoundsCheck(fn, params, checks)


def _sizes(array: SSAValue, syms: Symbols, extra: list[tuple[int, int]]) -> list[str]:
    """Each dimension's size as isl text: a constant, the symbol of its memref.dim, or a new
    parameter (appended to `extra`) for the size of an argument's dimension."""
    t = array.type
    assert isinstance(t, MemRefType)
    result: list[str] = []
    for d, size in enumerate(t.get_shape()):
        if size >= 0:
            result.append(str(size))
            continue
        dim = next((u.operation for u in array.uses if _is_dim(u.operation, d)), None)
        aff = value_aff(dim.results[0], [], syms) if dim is not None else None
        if aff is not None:
            result.append(aff.isl([]))
        else:
            assert isinstance(array, BlockArgument)
            if (array.index, d) not in extra:
                extra.append((array.index, d))
            result.append(f"size{array.index}_{d}")
    return result


def _is_dim(op: Any, d: int) -> bool:
    return isinstance(op, memref.DimOp) and _constant(op.index) == d


def _constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


_INT_OPS = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.FloorDivSIOp: lambda a, b: a // b if b else None,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
}


def _evaluate(value: SSAValue, args: Sequence[Any], memo: dict[SSAValue, int | None]) -> int | None:
    """The value of a top-level index value for these arguments, if the call determines it."""
    if value in memo:
        return memo[value]
    result: int | None = None
    owner = value.owner
    if isinstance(value, BlockArgument):
        arg = args[value.index] if value.index < len(args) else None
        result = int(arg) if isinstance(arg, int) or hasattr(arg, "__index__") else None
    elif isinstance(owner, memref.DimOp) and isinstance(owner.source, BlockArgument):
        d = _constant(owner.index)
        result = _size(args, owner.source.index, d) if d is not None else None
    elif isinstance(owner, arith.ConstantOp):
        result = _constant(value)
    elif type(owner) in _INT_OPS:
        a, b = (_evaluate(v, args, memo) for v in owner.operands)
        result = None if a is None or b is None else _INT_OPS[type(owner)](a, b)
    elif isinstance(owner, affine.ApplyOp | affine.MinOp | affine_ext.MaxOp):
        operands = [_evaluate(v, args, memo) for v in owner.operands]
        if all(v is not None for v in operands):
            amap = owner.map.data
            ints = [v for v in operands if v is not None]
            results = amap.eval(ints[: amap.num_dims], ints[amap.num_dims :])
            result = max(results) if isinstance(owner, affine_ext.MaxOp) else min(results)
    memo[value] = result
    return result


def _size(args: Sequence[Any], index: int, dim: int) -> int | None:
    shape = _shape(args[index]) if index < len(args) else None
    return int(shape[dim]) if shape is not None and dim < len(shape) else None


def _shape(arg: Any) -> tuple[int, ...] | None:
    interface = None if hasattr(arg, "__loopopt_array__") else cuda_array_interface(arg)
    if isinstance(interface, dict):
        return tuple(interface["shape"])
    shape = getattr(arg, "shape", None)
    return tuple(shape) if shape is not None else None


def _fix(bad: isl.Set, values: Sequence[int | None]) -> isl.Set:
    for k, value in enumerate(values):
        if value is not None:
            bad = bad.fix_val(isl.dim_type.param, k, isl.Val.int_from_si(bad.get_ctx(), value))
    return bad


def _error(
    item: _Check,
    values: Sequence[int | None],
    params: Sequence[SSAValue | tuple[int, int]],
    bad: isl.Set,
) -> LoopoptError:
    outside = item.outside.intersect_params(bad)
    for k, value in enumerate(values):
        if value is not None:
            ctx = outside.get_ctx()
            outside = outside.fix_val(isl.dim_type.param, k, isl.Val.int_from_si(ctx, value))
    point = outside.wrap().sample_point()
    loops = item.access.loop_names()
    coords = [
        point.get_coordinate_val(isl.dim_type.set, k).to_python()
        for k in range(len(loops) + len(item.access.indices))
    ]
    at = [f"{name} = {v}" for name, v in zip(loops, coords, strict=False)]
    at += [
        f"{p.name_hint} = {v}"
        for p, v in zip(params, values, strict=True)
        if v is not None and isinstance(p, BlockArgument) and p.name_hint
    ]
    element = ", ".join(str(v) for v in coords[len(loops) :])
    memref_type = item.access.memref.type if item.access.memref is not None else None
    shape = memref_type.get_shape() if isinstance(memref_type, MemRefType) else ()
    name = item.access.render().split("[")[0]
    return LoopoptError(
        f"'{item.access.render()}' may index {name}[{element}] outside its shape "
        f"{tuple(shape) if all(s >= 0 for s in shape) else '(dynamic)'}"
        f"{' (at ' + ', '.join(at) + ')' if at else ''}: Python would wrap around or raise "
        "IndexError; subscripts must stay inside the array",
        location=op_location(item.access.op),
    )
