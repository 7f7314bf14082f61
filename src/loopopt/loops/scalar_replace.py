"""Scalar replacement: array elements a loop accesses at fixed indices, kept in registers.

Before (C[%i, %j] does not depend on %k):
    affine.for %k = 0 to 8 {
      %c = affine.load %C[%i, %j]   %s = arith.addf %c, %p   affine.store %s, %C[%i, %j]
    }
After:
    %C_reg = affine.load %C[%i, %j]
    %C_out = affine.for %k = 0 to 8 iter_args(%C_acc = %C_reg) -> (f32) {
      %s = arith.addf %C_acc, %p   affine.yield %s
    }
    affine.store %C_out, %C[%i, %j]

`replaceable` decides whether a memref qualifies for a loop L (or says why not, one line):
every use inside L is an affine.load/store directly in L's body, whose indices (composed with
the affine.apply ops inside L that compute them) are over values defined outside L; any two
index tuples are equal or differ by a nonzero constant in some dimension; the elements are
scalars (float, integer, index); the memref is not in GPU shared or private memory; and no
other memref under L is a view of the same base unless both are only read.

`scalar_replace` loads each element once before L, carries each element stored in L as a new
iter_arg (existing ones are kept first), replaces the loads in L by the element's current value
in program order, drops the stores, and stores the final values after L. Read-only elements are
just the loads hoisted before L. Where L is not proved to run at least once, the loads before
and the stores after it sit under an `affine.if` on its bounds, so no element is touched that
the original loop would not touch.

Padded accesses (the guarded loads/stores of `pad-tiles`) directly in L's body count as
accesses of their element when all its accesses are padded under one condition invariant in L
and, if L stores it, the values read from it reach only pure ops in L, iter_args of loops in L
and its padded stores. The load before L and the store after it are then padded too (inside
the `affine.if` on L's bounds where there is one). Before/after and soundness:
`loops/scalar_replace_padded.py`.

`forward_in_block` is the same idea within one block, for any array that is not shared or
private: a load of an element stored or loaded earlier in the block (at equal indices, with no
store that may write it and no unknown op between) takes the known value. A padded load takes
only the value of an earlier padded load of the element on the same condition (a padded store's
value is not what a later padded load gives where the condition is false); a padded store
forgets what it may write, like a store.

Correct for a sequential, single-thread view of the program: distinct function arguments and
allocations are assumed not to alias (as promote assumes). In a GPU kernel the elements of a
global array that one thread's loop reads and writes are private to that thread, because
gpu-map-loops maps only dependence-free loops onto threads; shared and private buffers, which
other threads or barriers involve, are never touched.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineExpr, AffineMap
from xdsl.ir.affine.affine_expr import AffineConstantExpr, AffineDimExpr, AffineSymExpr
from xdsl.traits import is_side_effect_free

from loopopt.analysis.dependence import dependences
from loopopt.analysis.footprint import array_name, arrays_under
from loopopt.dialects.gpu_ext import AddressSpaceAttr, AddressSpaceEnum
from loopopt.loops.affine_maps import (
    Bound,
    MapBuilder,
    composed,
    constant_difference,
    linear_form,
    lower_bound,
    upper_bound,
)
from loopopt.loops.bounds import append_iter_args
from loopopt.loops.guard import Guard, IterationDomain, new_if
from loopopt.loops.nest import defined_inside, describe_loop, enclosing_loops, trip_count
from loopopt.loops.pad import new_padded_load, new_padded_store
from loopopt.loops.padded_access import guard_map, zero_of
from loopopt.loops.scalar_replace_padded import (
    escape,
    padded_access,
    same_conditions,
    same_guard,
    wrapper,
)
from loopopt.target import LOCAL_SPACE, SHARED_SPACE

Access = affine.LoadOp | affine.StoreOp
Form = dict[SSAValue | None, int]
SHARED, PRIVATE = SHARED_SPACE, LOCAL_SPACE
"""NVVM address spaces of GPU workgroup (shared) and private (local) memory."""


@dataclass
class Element:
    """One array element accessed in the loop: its indices (over the builder's placeholders,
    all defined outside the loop) and the accesses to it, in program order."""

    indices: list[AffineExpr]
    forms: list[Form | None]
    """Each index as a linear form, where it is one."""
    accesses: list[Access] = field(default_factory=list[Access])
    guard: list[AffineExpr] | None = None
    """For padded accesses, their condition (each expression `>= 0`) over the builder's
    placeholders; None for plain ones."""
    wrappers: list[affine.IfOp | None] = field(default_factory=list[affine.IfOp | None])
    """The padded load or store around each access (None: a plain one), as found once."""

    @property
    def stored(self) -> bool:
        return any(isinstance(a, affine.StoreOp) for a in self.accesses)


@dataclass
class Replaceable:
    """A memref whose elements in a loop can live in registers."""

    memref: SSAValue
    builder: MapBuilder
    elements: list[Element]

    def bound(self, element: Element) -> Bound:
        """The element's indices as an access map over values defined outside the loop."""
        return self.builder.build(element.indices, access=True)

    def guard(self, element: Element) -> Guard | None:
        """The condition of a padded element over values defined outside the loop."""
        bound = None if element.guard is None else self.builder.build(element.guard)
        return None if bound is None else Guard(bound.map, bound.operands)


def describe_access(access: Access) -> str:
    """`C[%i, %k + 1]`: an access as a message shows it."""
    amap = access.map.data
    names = [f"%{v.name_hint}" if v.name_hint else "%?" for v in access.indices]
    rendered = [_render(r, names, amap.num_dims) for r in amap.results]
    return f"{array_name(access.memref)}[{', '.join(rendered)}]"


def _render(expr: AffineExpr, names: Sequence[str], num_dims: int) -> str:
    if isinstance(expr, AffineConstantExpr):
        return str(expr.value)
    if isinstance(expr, AffineDimExpr):
        return names[expr.position]
    if isinstance(expr, AffineSymExpr):
        return names[num_dims + expr.position]
    assert isinstance(expr, AffineBinaryOpExpr)
    lhs, rhs = _render(expr.lhs, names, num_dims), _render(expr.rhs, names, num_dims)
    if expr.kind == AffineBinaryOpKind.Add:
        if isinstance(expr.rhs, AffineConstantExpr) and expr.rhs.value < 0:
            return f"{lhs} - {-expr.rhs.value}"
        return f"{lhs} + {rhs}"
    if isinstance(expr.lhs, AffineBinaryOpExpr):
        lhs = f"({lhs})"
    if isinstance(expr.rhs, AffineBinaryOpExpr):
        rhs = f"({rhs})"
    return f"{lhs} {expr.kind.get_token()} {rhs}"


def _memory(memref: SSAValue) -> str | None:
    """'shared' or 'private' for a memref in GPU workgroup or private memory, else None."""
    memref_type = memref.type
    assert isinstance(memref_type, MemRefType)
    space = memref_type.memory_space
    if isinstance(space, IntegerAttr) and space.value.data in (SHARED, PRIVATE):
        return "shared" if space.value.data == SHARED else "private"
    if isinstance(space, AddressSpaceAttr) and space.data != AddressSpaceEnum.GLOBAL:
        return "shared" if space.data == AddressSpaceEnum.WORKGROUP else "private"
    return None


def _scalar(element_type: Attribute) -> bool:
    return isinstance(element_type, AnyFloat | IntegerType | IndexType)


def _base(memref: SSAValue) -> SSAValue:
    """The memref that `memref` is a view of (through subview, cast ...), or itself."""
    while isinstance(memref, OpResult) and memref.op.operands:
        source = memref.op.operands[0]
        if not isinstance(source.type, MemRefType):
            break
        memref = source
    return memref


def _indices(bound: Bound, loop: affine.ForOp, builder: MapBuilder) -> list[AffineExpr] | None:
    """The results of `bound` over values defined outside `loop` (composing the affine.apply
    ops and constants inside it); None when one of them varies in the loop."""
    replacements: list[AffineExpr] = []
    for position, value in enumerate(bound.operands):
        owner = value.op if isinstance(value, OpResult) else None
        if not defined_inside(value, loop):
            replacements.append(builder.value(value, symbol=position >= bound.map.num_dims))
        elif isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            replacements.append(AffineExpr.constant(owner.value.value.data))
        elif isinstance(owner, affine.ApplyOp):
            inner = _indices(Bound(owner.map.data, tuple(owner.mapOperands)), loop, builder)
            if inner is None:
                return None
            replacements.append(inner[0])
        else:
            return None
    num_dims = bound.map.num_dims
    dims, syms = replacements[:num_dims], replacements[num_dims:]
    results = [r.replace_dims_and_symbols(dims, syms) for r in bound.map.results]
    return [builder.simplified(r) for r in results]


def _form(expr: AffineExpr, builder: MapBuilder) -> Form | None:
    values = tuple(builder.values)
    form = linear_form(Bound(AffineMap(len(values), 0, (expr,)), values), 0)
    return None if form is None else {k: c for k, c in form.items() if c != 0}


def _difference(a: Element, b: Element, dim: int, count: int) -> int | None:
    """`a - b` in dimension `dim` when it is a constant."""
    form_a, form_b = a.forms[dim], b.forms[dim]
    if form_a is None or form_b is None:
        return constant_difference(a.indices[dim], b.indices[dim], count)
    if any(form_a.get(k, 0) != form_b.get(k, 0) for k in form_a.keys() | form_b.keys() if k):
        return None
    return form_a.get(None, 0) - form_b.get(None, 0)


def _same(a: Element, b: Element, count: int) -> bool | None:
    """True: the same element; False: provably distinct ones; None: cannot tell."""
    differences = [_difference(a, b, dim, count) for dim in range(len(a.indices))]
    if any(d is not None and d != 0 for d in differences):
        return False
    return True if all(d == 0 for d in differences) else None


Signature = tuple[frozenset[tuple[SSAValue, int]], ...]
"""The variable part of each index's linear form (what two elements' indices differ by a
constant in, when they share it)."""


class _Elements:
    """The distinct elements found so far (any two provably differ, as `_same` proves), indexed
    so that finding an access's element does not compare it with each: elements whose indices
    are all linear forms are kept by their variable parts (`Signature`) and constants. Two
    such elements of one signature are the same iff their constants are; of two signatures,
    they provably differ iff their constants differ in a dimension where the variable parts
    agree (elsewhere `_difference` cannot tell). Other elements are compared one by one."""

    def __init__(self) -> None:
        self.exact: dict[tuple[Signature, tuple[int, ...]], Element] = {}
        self.groups: dict[Signature, list[Element]] = {}
        self.projections: dict[tuple[Signature, tuple[int, ...]], set[tuple[int, ...]]] = {}
        """Per (signature, dimensions): the constants of its elements in those dimensions."""
        self.others: list[Element] = []

    def add(self, element: Element) -> None:
        split = _split(element)
        if split is None:
            self.others.append(element)
            return
        signature, constants = split
        self.exact[(signature, constants)] = element
        self.groups.setdefault(signature, []).append(element)
        for (group, dims), seen in self.projections.items():
            if group == signature:
                seen.add(tuple(constants[d] for d in dims))

    def find(self, access: Element, count: int) -> tuple[Element | None, Element | None]:
        """(the element `access` is, if found; an element it may or may not be, if any)."""
        match: Element | None = None
        split = _split(access)
        pairwise = self.others if split is not None else [*self.others, *self._known()]
        for element in pairwise:
            same = _same(access, element, count)
            if same is None:
                return None, element
            if same:
                match = element
        if split is None:
            return match, None
        signature, constants = split
        for group, members in self.groups.items():
            if group == signature:
                continue
            dims = tuple(d for d, part in enumerate(group) if part == signature[d])
            seen = self.projections.get((group, dims))
            if seen is None:
                seen = {tuple(_split_constants(e)[d] for d in dims) for e in members}
                self.projections[(group, dims)] = seen
            if tuple(constants[d] for d in dims) in seen:
                unsure = next(e for e in members if _same(access, e, count) is None)
                return None, unsure
        return match or self.exact.get((signature, constants)), None

    def _known(self) -> list[Element]:
        return [e for members in self.groups.values() for e in members]


def _split(element: Element) -> tuple[Signature, tuple[int, ...]] | None:
    """(signature, constants) of an element whose indices are all linear forms, else None."""
    if any(form is None for form in element.forms):
        return None
    signature = tuple(
        frozenset((k, c) for k, c in form.items() if k is not None)
        for form in element.forms
        if form is not None
    )
    return signature, _split_constants(element)


def _split_constants(element: Element) -> tuple[int, ...]:
    return tuple(form.get(None, 0) if form is not None else 0 for form in element.forms)


def replaceable(loop: affine.ForOp, memref: SSAValue) -> Replaceable | str:
    """Whether `memref`'s elements can be kept in registers across `loop`; if not, why."""
    name = array_name(memref)
    memory = _memory(memref)
    if memory is not None:
        return f"{name} is in GPU {memory} memory"
    memref_type = memref.type
    assert isinstance(memref_type, MemRefType)
    if not _scalar(memref_type.element_type):
        return f"its elements are not scalars ({memref_type.element_type})"
    uses = [use.operation for use in memref.uses if loop.is_ancestor(use.operation)]
    order = {op: n for n, op in enumerate(loop.walk())}
    builder = MapBuilder()
    elements: list[Element] = []
    found = _Elements()
    varying: dict[Operation, str] = {}
    """Accesses left in memory, and why: they must touch no element kept in registers."""
    for op in sorted(uses, key=order.__getitem__):
        if not isinstance(op, Access) or op.memref is not memref:
            return f"{name} is used by '{op.name}'"
        padded = wrapper(op)
        parent = (padded or op).parent_op()
        if parent is not loop:
            where = (
                f"loop '{describe_loop(parent)}'"
                if isinstance(parent, affine.ForOp)
                else (f"'{parent.name}'" if parent is not None else "another block")
            )
            varying[op] = f"{describe_access(op)} is inside {where}, not directly in the loop"
            continue
        indices = _indices(Bound(op.map.data, tuple(op.indices)), loop, builder)
        if indices is None:
            varying[op] = f"{describe_access(op)} varies with the loop"
            continue
        guard = None if padded is None else _indices(guard_map(padded), loop, builder)
        if padded is not None and guard is None:
            return f"the guard of padded {describe_access(op)} varies with the loop"
        forms = [_form(index, builder) for index in indices]
        access = Element(indices, forms, [op], guard, [padded])
        match, unsure = found.find(access, len(builder.values))
        if unsure is not None:
            first = describe_access(unsure.accesses[0])
            return f"{first} and {describe_access(op)} may or may not be the same element"
        if match is None:
            elements.append(access)
            found.add(access)
            continue
        mismatch = _guard_mismatch(match, access, len(builder.values))
        if mismatch is not None:
            return mismatch
        match.accesses.append(op)
        match.wrappers.append(padded)
    if not elements:
        return next(iter(varying.values()), f"{name} is not accessed in the loop")
    reason = _overlap_reason(loop, elements, varying)
    if reason is not None:
        return reason
    for element in elements:
        reason = _escape_reason(loop, element)
        if reason is not None:
            return reason
    written = any(element.stored for element in elements)
    for other in arrays_under(loop):
        if other is memref or _base(other) is not _base(memref):
            continue
        other_uses = [u.operation for u in other.uses if loop.is_ancestor(u.operation)]
        if written or any(not isinstance(u, affine.LoadOp) for u in other_uses):
            return f"{name} may alias {array_name(other)} (a view of the same memref)"
    return Replaceable(memref, builder, elements)


def _guard_mismatch(element: Element, access: Element, count: int) -> str | None:
    """Why `access` (one access) cannot join `element` (the same element); None if it can."""
    if element.guard is None or access.guard is None:
        if element.guard is None and access.guard is None:
            return None
        how = "accessed both padded and plain"
    elif same_conditions(element.guard, access.guard, count):
        return None
    else:
        how = "padded under different conditions"
    first, here = describe_access(element.accesses[0]), describe_access(access.accesses[0])
    return f"{first} and {here} are one element, {how}"


def _escape_reason(loop: affine.ForOp, element: Element) -> str | None:
    """Why a padded element that `loop` stores cannot be kept in registers; None if it can."""
    if element.guard is None or not element.stored:
        return None
    reached = escape(element.accesses, element.wrappers, loop)
    if reached is None:
        return None
    where = describe_access(reached) if isinstance(reached, Access) else f"'{reached.name}'"
    return f"a value read from padded {describe_access(element.accesses[0])} reaches {where}"


def nonempty_guard(loop: affine.ForOp) -> Guard | None:
    """None when `loop` provably runs at least once (in the iterations of the loops around it),
    else the condition under which it does: every upper bound above every lower bound."""
    count = trip_count(loop)
    if count is not None and count >= 1:
        return None
    builder = MapBuilder()
    lowers, uppers = builder.exprs(lower_bound(loop)), builder.exprs(upper_bound(loop))
    conditions = [upper - lower - 1 for upper in uppers for lower in lowers]
    domain = IterationDomain(enclosing_loops(loop))
    if count is None and all(domain.holds(c, builder.values) for c in conditions):
        return None
    bound = builder.build(conditions)
    return Guard(bound.map, bound.operands)


def _before(loop: affine.ForOp, loads: Sequence[Operation], guard: Guard | None) -> list[SSAValue]:
    """Insert `loads` (plain or padded loads) before `loop` (under `guard`); the values they
    give there."""
    block = loop.parent_block()
    assert block is not None
    values = [load.results[0] for load in loads]
    if guard is None:
        block.insert_ops_before(loads, loop)
        return values
    zeros = [zero_of(value.type) for value in values]
    then_block = Block([*loads, affine.YieldOp.get(*values)])
    else_block = Block([*zeros, affine.YieldOp.get(*(zero.result for zero in zeros))])
    if_op = new_if(guard, then_block, else_block)
    for value, result in zip(values, if_op.results, strict=True):
        result.name_hint = value.name_hint
    block.insert_op_before(if_op, loop)
    return list(if_op.results)


def _after(loop: affine.ForOp, stores: Sequence[Operation], guard: Guard | None) -> None:
    """Insert `stores` (plain or padded stores) after `loop` (under `guard`)."""
    block = loop.parent_block()
    assert block is not None
    if not stores:
        return
    if guard is None:
        block.insert_ops_after(stores, loop)
        return
    block.insert_op_after(new_if(guard, Block([*stores, affine.YieldOp.get()]), None), loop)


def _overlap_reason(
    loop: affine.ForOp, elements: Sequence[Element], varying: Sequence[Operation]
) -> str | None:
    """Why an access left in memory may touch an element kept in registers (the exact
    dependence analysis over one execution of `loop`), or None."""
    if not varying:
        return None
    kept = {op for element in elements for op in element.accesses}
    left = set(varying)
    for dep in dependences(loop):
        if loop in dep.loops and dep.level < dep.loops.index(loop):
            continue  # between executions of `loop`, ordered by a loop around it
        a, b = dep.source.op, dep.sink.op
        if (a in kept and b in left) or (a in left and b in kept):
            other = a if a in left else b
            return f"{describe_access(other)} may touch an element kept in registers"
    return None


def scalar_replace(loop: affine.ForOp, arrays: Sequence[Replaceable]) -> affine.ForOp:
    """Keep the elements of `arrays` (each `replaceable` in `loop`) in registers across
    `loop`; returns the loop, rebuilt with one more iter_arg per element stored in it."""
    pairs = [(array, element) for array in arrays for element in array.elements]
    loads: list[Operation] = []
    for array, element in pairs:
        bound = array.bound(element)
        load = affine.LoadOp(array.memref, bound.operands, AffineMapAttr(bound.map))
        load.result.name_hint = f"{array.memref.name_hint}_reg" if array.memref.name_hint else None
        padded = array.guard(element)
        if padded is not None:
            load = new_padded_load(load, padded)
        loads.append(load)
    guard = nonempty_guard(loop)
    current = _before(loop, loads, guard)
    carried = [k for k, (_, element) in enumerate(pairs) if element.stored]
    loop = append_iter_args(loop, [current[k] for k in carried])
    block = loop.body.block
    first = len(loop.results) - len(carried)
    for k, arg, result in zip(carried, block.args[first + 1 :], loop.results[first:], strict=True):
        current[k] = arg
        hint = pairs[k][0].memref.name_hint
        arg.name_hint, result.name_hint = (f"{hint}_acc", f"{hint}_out") if hint else (None, None)
    which: dict[Operation, int] = {
        padded or access: k
        for k, (_, element) in enumerate(pairs)
        for access, padded in zip(element.accesses, element.wrappers, strict=True)
    }
    for op in list(block.ops):
        k = which.get(op)
        if k is None:
            continue
        access = op if isinstance(op, Access) else padded_access(op)
        if isinstance(access, affine.StoreOp):
            current[k] = access.value
        else:
            op.results[0].replace_all_uses_with(current[k])
        block.erase_op(op)
    terminator = block.last_op
    if not isinstance(terminator, affine.YieldOp):
        terminator = affine.YieldOp.get()
        block.add_op(terminator)
    terminator.operands = (*terminator.operands, *(current[k] for k in carried))
    stores: list[Operation] = []
    for k, result in zip(carried, loop.results[first:], strict=True):
        array, element = pairs[k]
        bound = array.bound(element)
        store = affine.StoreOp(result, array.memref, bound.operands, AffineMapAttr(bound.map))
        padded = array.guard(element)
        stores.append(store if padded is None else new_padded_store(store, padded))
    _after(loop, stores, guard)
    return loop


def forward_in_block(block: Block, memrefs: Collection[SSAValue] | None = None) -> int:
    """Store-to-load forwarding and redundant-load elimination within `block` (of `memrefs`,
    default all, outside GPU shared and private memory): a load of an element whose value is
    known (stored or loaded earlier in the block, with equal indices) is replaced by that
    value. A store forgets the elements of views of the same memref that it may write; an op
    with regions or side effects (loops, calls, barriers, memref.store ...) forgets everything.
    A padded load is a load known only to padded loads on the same condition; a padded store
    forgets like a store and makes nothing known. Returns the number of loads removed."""
    builder = MapBuilder()
    known: list[tuple[SSAValue, Element, SSAValue, affine.IfOp | None]] = []
    removed = 0
    for op in list(block.ops):
        access = op if isinstance(op, Access) else padded_access(op)
        guard = op if isinstance(op, affine.IfOp) else None
        if access is None:
            if op.regions or not is_side_effect_free(op):
                known.clear()
            continue
        here: Element | None = None
        if _memory(access.memref) is None and (memrefs is None or access.memref in memrefs):
            indices = composed(builder, access.map.data, access.indices)
            here = Element(indices, [_form(index, builder) for index in indices])
        count = len(builder.values)
        if isinstance(access, affine.StoreOp):
            base = _base(access.memref)
            known = [
                (m, e, v, g)
                for m, e, v, g in known
                if _base(m) is not base
                or (here is not None and m is access.memref and _same(here, e, count) is False)
            ]
            if here is not None and guard is None:
                known.append((access.memref, here, access.value, None))
            continue
        if here is None:
            continue
        hit = next(
            (
                v
                for m, e, v, g in known
                if m is access.memref and same_guard(g, guard) and _same(here, e, count)
            ),
            None,
        )
        if hit is None:
            known.append((access.memref, here, op.results[0], guard))
        else:
            op.results[0].replace_all_uses_with(hit)
            block.erase_op(op)
            removed += 1
    return removed
