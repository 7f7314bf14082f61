"""Padding partial tiles to full tiles: over-computation with guarded accesses.

A point loop of a tile (`loop-tile` makes them: `%it to min(%it + 32, 1000)`) runs its full
tile instead (`%it to %it + 32`: a constant trip count, so it unrolls, maps onto a fixed number
of threads, keeps its register tile), and a loop with a constant lower bound and an upper bound
that varies with outer loops (a triangle's `%j = 0 to %i + 1`, its tile loop
`%jt = 0 to %it + 64 step 64`) runs its bounding box (`%jt = 0 to 1153 step 64`, islpy), and
so does a loop of step 1 whose lower bound varies (`%k = %i + 1 to 1000` runs `1 to 1000`).
A point loop whose lower bound is a max (`max(%kt, %i + 1)`: a tile of trmm's `%k = %i + 1 to
1000`) runs from the result its upper bound is a full tile of (`%kt to %kt + 8`, step 1): the
iterations below the dropped lower bounds are an extension too, guarded the same way.
The iterations past the original bounds (the extension)
must not change the result, so every access under a padded loop that may leave its array is
guarded (loops/padded_access.py): a load reads 0 outside the array, a store writes only inside.

    affine.for %k = %kt to min(%kt + 32, 1000) {        affine.for %k = %kt to %kt + 32 {
      %a = affine.load %A[%i, %k]                          %a = affine.if (%k <= 999) {A[%i, %k]}
      %b = affine.load %B[%k, %j]              ==>              else {0.0} {loopopt.padded}
      %o = affine.load %C[%i, %j]                          %b = ... B[%k, %j] or 0.0 ...
      C[%i, %j] = %o + %a * %b                             %o = affine.load %C[%i, %j]
                                                           C[%i, %j] = %o + %a * %b   (no guard)

A store in the extension of a loop must be proved harmless, or it keeps that loop's original
bound in its guard (correct, but scalar replacement then needs the guards of the loads and
stores of an element to agree). It is harmless when (islpy, over the padded iteration domain)
  - it cannot execute there: its element is outside the array whenever the IV is past the
    bound (C[%i, %j] with %i past 1000), or
  - it stores back what it loaded: an accumulation `X = X + x * y * …` of the same element (in
    the same block, with no other store to X between; the product a tree of multiplications)
    where every factor is 0 past the bound: a load that is out of bounds there reads 0.0, and
    any other factor (a scalar such as 2mm's alpha, an element that exists there) is made
    `arith.select (iv < bound), x, 0` so that an infinite or NaN factor cannot make 0 * x a
    NaN: X + 0 * 0 == X (a -0.0 element becomes +0.0).
Loads need no proof (they have no effect), only the in-bounds guard. Conditions that always
hold in the padded domain are left out, so accesses that never leave their arrays stay plain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import affine, arith, memref
from xdsl.dialects.builtin import AffineMapAttr, FloatAttr, IntegerAttr, UnitAttr
from xdsl.ir import Block, Operation, SSAValue, Use
from xdsl.ir.affine import AffineExpr
from xdsl.traits import is_side_effect_free

from loopopt.analysis.box import band_box
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.affine_ext import MaxOp
from loopopt.dialects.loopopt import PADDED
from loopopt.loops.affine_maps import (
    Bound,
    MapBuilder,
    constant_difference,
    lower_bound,
    set_bounds,
    upper_bound,
)
from loopopt.loops.guard import Guard, IterationDomain, new_if
from loopopt.loops.nest import describe_loop, enclosing_loops, iv, step_of
from loopopt.loops.padded_access import in_bounds, padded_load, padded_store, zero_of

Access = affine.LoadOp | affine.StoreOp
_NO_EFFECT = (affine.ForOp, affine.YieldOp, affine.IfOp, affine.ApplyOp, affine.MinOp, MaxOp)


@dataclass
class Padded:
    """A loop padded to its full tile, with the upper-bound results that padding dropped (the
    original loop ran while its IV was below each of them) and the lower-bound results it
    dropped (the original loop started at their max)."""

    loop: affine.ForOp
    dropped: list[Bound]
    dropped_lower: list[Bound] = field(default_factory=list[Bound])


def pad_loop(loop: affine.ForOp, pass_name: str = "pad-tiles") -> Padded:
    """Make `loop`'s upper bound its `lower + E` result (E a positive multiple of the step)."""
    name = describe_loop(loop)
    if loop.inits:
        raise LoopoptError(f"{pass_name}: loop '{name}' carries values (iter_args)", op=loop)
    lower, upper = lower_bound(loop), upper_bound(loop)
    builder = MapBuilder()
    starts = builder.exprs(lower)
    ends = builder.exprs(upper)
    tiles: list[tuple[int, int]] = []  # (lower result, upper result `lower + N`)
    for first, start in enumerate(starts):
        for k, end in enumerate(ends):
            size = constant_difference(end, start, len(builder.values))
            if size is not None and size > 0 and size % step_of(loop) == 0:
                tiles.append((first, k))
    step = step_of(loop)
    if len(starts) > 1 and (not tiles or (step != 1 and not _tile_loop(loop))):
        raise LoopoptError(f"{pass_name}: loop '{name}' has a max lower bound", op=loop)
    if not tiles:
        box = _box_bounds(loop)
        if box is not None:
            varies = bool(lower.map.num_dims or lower.map.num_symbols)
            set_bounds(loop, lower=Bound.constant(box[0]), upper=Bound.constant(box[1]))
            below = [lower] if varies and step_of(loop) == 1 else []  # a tile: its points
            return Padded(loop, [_result(upper, k) for k in range(len(ends))], below)
        raise LoopoptError(
            f"{pass_name}: loop '{name}' is not a tile (no upper bound 'lower + N', N a "
            "multiple of the step) nor a loop whose bounds vary with outer loops (its lower "
            "bound constant, or its step 1)",
            op=loop,
        )
    first, keep = tiles[0]
    dropped = [_result(upper, k) for k in range(len(ends)) if k != keep]
    # a tile loop's points keep their own lower bounds (a tile that starts below one may
    # still hold points above it)
    dropped_lower = [_result(lower, k) for k in range(len(starts)) if k != first and step == 1]
    if dropped or dropped_lower:
        set_bounds(loop, lower=_result(lower, first), upper=_result(upper, keep))
    return Padded(loop, dropped, dropped_lower)


def _box_bounds(loop: affine.ForOp) -> tuple[int, int] | None:
    """The first iteration of `loop` over its bounding box (analysis/box.py) and past its last,
    when its bounds are affine functions of outer IVs (a triangle: `%j = 0 to %i + 1`, `%k =
    %i + 1 to 1000`) and its lower bound one result; else None. A lower bound that varies with
    a step other than 1 moves the grid of the iterations: only a tile loop (`_tile_loop`) may
    start lower, on a multiple of its step (its point loops' own bounds keep their range)."""
    lower = loop.lowerBoundMap.data
    if len(lower.results) != 1:
        return None
    step = step_of(loop)
    moving = bool(lower.num_dims or lower.num_symbols) and step != 1
    if moving and not _tile_loop(loop):
        return None
    box = band_box([*enclosing_loops(loop), loop])
    if box is None:
        return None
    lo, hi = box[-1]
    return (lo - lo % step if moving else lo, hi + 1)


def _tile_loop(loop: affine.ForOp) -> bool:
    """Every use of `loop`'s IV is in the bounds of a loop under it, as a lower bound result
    `iv` and an upper bound result `iv + step` (loop-tile's point loops): its tiles may start
    anywhere on a grid of its step that begins at or below its first iteration."""
    value, step = iv(loop), step_of(loop)
    for use in value.uses:
        user = use.operation
        if not isinstance(user, affine.ForOp) or not loop.is_ancestor(user) or user is loop:
            return False
        if value in user.inits:
            return False
        builder = MapBuilder()
        at = builder.value(value)
        starts = builder.exprs(lower_bound(user))
        ends = builder.exprs(upper_bound(user))
        n = len(builder.values)
        for exprs, offset in ((starts, 0), (ends, step)):
            using = [e for e in exprs if at in set(e.dfs())]
            if not using or any(constant_difference(e, at, n) != offset for e in using):
                return False
    return True


def _result(bound: Bound, index: int) -> Bound:
    builder = MapBuilder()
    return builder.build([builder.exprs(bound)[index]])


def check_effects(loop: affine.ForOp, pass_name: str = "pad-tiles") -> None:
    """Refuse ops under `loop` whose effects no guard here covers."""
    for op in loop.body.walk():
        plain = isinstance(op, (*_NO_EFFECT, affine.LoadOp, affine.StoreOp, memref.AllocaOp))
        if not plain and not is_side_effect_free(op):
            raise LoopoptError(
                f"{pass_name}: '{op.name}' in padded loop '{describe_loop(loop)}' has effects "
                "that cannot be guarded",
                op=op,
            )


Extension = tuple[affine.ForOp, Bound, bool]
"""A padded loop and one bound padding dropped: its iterations at or past the upper bound, or
(True: a lower bound) below the lower bound."""


class _Guards:
    """The guard of one access: its in-bounds conditions and, for a store, the original
    bounds of the padded loops around it that are not proved needless; for a load, the
    `element` bounds of the stores of its element (`bounds`)."""

    def __init__(self, access: Access, padded: Sequence[Padded], bounds: Sequence[Extension] = ()):
        self.access = access
        loops = enclosing_loops(access)
        self.domain = IterationDomain(loops)
        self.builder = MapBuilder()
        self.extensions: list[Extension] = [
            (p.loop, bound, below)
            for p in padded
            if p.loop in loops
            for bounds, below in ((p.dropped, False), (p.dropped_lower, True))
            for bound in bounds
        ]
        self.bounds = list(bounds)
        self.element: list[Extension] = []
        """A store's extensions that bound its element (set by `conditions`)."""

    def _past(self, extension: Extension) -> AffineExpr:
        """`>= 0` where the IV is at or past the dropped upper bound (below a lower one)."""
        loop, bound, below = extension
        [end] = self.builder.exprs(bound)
        if below:
            return end - self.builder.value(iv(loop)) - 1
        return self.builder.value(iv(loop)) - end

    def conditions(self) -> list[AffineExpr] | None:
        """Each `>= 0`; None where the memref's shape is dynamic."""
        inside = in_bounds(self.access, self.builder)
        if inside is None:
            return None
        kept = list(inside) + [AffineExpr.constant(-1) - self._past(e) for e in self.bounds]
        if isinstance(self.access, affine.StoreOp):
            kept += self._store_conditions(inside)
        values = self.builder.values
        return [c for c in kept if not self.domain.holds(c, values)]

    def _store_conditions(self, inside: list[AffineExpr]) -> list[AffineExpr]:
        """A store's extensions that may execute in the array, kept in its guard when they
        bound the element itself (only IVs of its indices: a triangle of C, like the array's
        bounds; its loads get them too, `element`), left out when another extension implies
        them, else proved harmless (or kept)."""
        values = self.builder.values
        live = [
            e for e in self.extensions if self.domain.feasible([*inside, self._past(e)], values)
        ]
        indices = set(self.access.indices)
        for extension in live:
            loop, bound, _ = extension
            if {iv(loop), *bound.operands} <= indices:
                self.element.append(extension)
        kept = [AffineExpr.constant(-1) - self._past(e) for e in self.element]
        covering = list(self.element)  # handled, or to be handled
        rest = [e for e in live if e not in self.element]
        for n, extension in enumerate(rest):
            if any(self._implies(extension, other, inside) for other in covering + rest[n + 1 :]):
                continue
            covering.append(extension)
            if not self._harmless(inside, self._past(extension), extension):
                kept.append(AffineExpr.constant(-1) - self._past(extension))
        return kept

    def _implies(self, extension: Extension, other: Extension, inside: list[AffineExpr]) -> bool:
        """Past `extension`'s bound, the IV of `other` is past its bound too (islpy)."""
        exprs = [*inside, self._past(extension), AffineExpr.constant(-1) - self._past(other)]
        return not self.domain.feasible(exprs, self.builder.values)

    def _harmless(self, inside: list[AffineExpr], past: AffineExpr, extension: Extension) -> bool:
        loop = extension[0]
        values = self.builder.values
        factors = _accumulated_factors(self.access)
        if not factors:
            return False
        zeroed: list[Use] = []
        for use in factors:
            factor = _unzeroed(use.operation.operands[use.index]).owner
            if isinstance(factor, affine.LoadOp) and loop.is_ancestor(factor):
                within = in_bounds(factor, self.builder)
                if within is not None and not self.domain.feasible(
                    [*inside, past, *within], values
                ):
                    continue  # out of the array past the bound: 0 there
            zeroed.append(use)
        for use in zeroed:
            _zero_past(use, extension)
        return True


def _unzeroed(value: SSAValue) -> SSAValue:
    """The factor under the `arith.select (c), x, 0` around it (`_zero_past`'s): 0 wherever
    that factor is."""
    while isinstance(value.owner, arith.SelectOp) and _is_zero(value.owner.rhs):
        value = value.owner.lhs
    return value


def _is_zero(value: SSAValue) -> bool:
    const = value.owner
    if not isinstance(const, arith.ConstantOp):
        return False
    attr = const.value
    return isinstance(attr, FloatAttr | IntegerAttr) and attr.value.data == 0


def _accumulated_factors(store: Access) -> list[Use]:
    """The uses of the factors x, y, … of `store`'s value `X + x * y * …` (a tree of
    multiplications, each used once, by the next), X loaded from the stored element in the
    same block with no store to the memref between; [] for any other value."""
    assert isinstance(store, affine.StoreOp)
    value = store.value.owner
    if not isinstance(value, arith.AddfOp | arith.AddiOp):
        return []
    for acc, product in ((value.lhs, value.rhs), (value.rhs, value.lhs)):
        load, mul = acc.owner, product.owner
        if not isinstance(load, affine.LoadOp) or not isinstance(mul, arith.MulfOp | arith.MuliOp):
            continue
        if not _same_element(load, store) or not _nothing_stored_between(load, store):
            continue
        if not product.has_one_use():
            return []  # zeroing its factors would change what its other users see
        return _leaves(mul)
    return []


def _leaves(mul: arith.MulfOp | arith.MuliOp) -> list[Use]:
    """The uses of the operands of a tree of single-use multiplications that are not
    multiplications of the tree themselves."""
    found: list[Use] = []
    for index, operand in enumerate(mul.operands):
        inner = operand.owner
        if isinstance(inner, arith.MulfOp | arith.MuliOp) and operand.has_one_use():
            found += _leaves(inner)
        else:
            found.append(Use(mul, index))
    return found


def _zero_past(use: Use, extension: Extension) -> None:
    """The factor `use` reads becomes 0 where the IV of the extension's loop is past its
    bound (what the loop ran to before padding): `arith.select (iv < end), factor, 0`, right
    before its user (`iv >= start` for a dropped lower bound)."""
    loop, end, lower = extension
    user, value = use.operation, use.operation.operands[use.index]
    apply = affine.ApplyOp(list(end.operands), AffineMapAttr(end.map))
    below = arith.CmpiOp(iv(loop), apply.result, "sge" if lower else "slt")
    zero = zero_of(value.type)
    select = arith.SelectOp(below.result, value, zero.result)
    select.attributes[PADDED] = UnitAttr()  # version-guards finds it
    block = user.parent_block()
    assert block is not None
    block.insert_ops_before([apply, below, zero, select], user)
    user.operands[use.index] = select.result


def _element(access: Access) -> tuple[object, ...]:
    """What identifies the element an access touches: its memref, map and index values."""
    return (access.memref, access.map, *access.indices)


def _same_element(load: affine.LoadOp, store: affine.StoreOp) -> bool:
    return (
        load.memref is store.memref
        and load.map == store.map
        and tuple(load.indices) == tuple(store.indices)
        and load.parent_block() is store.parent_block()
    )


def _nothing_stored_between(load: affine.LoadOp, store: affine.StoreOp) -> bool:
    op = load.next_op
    while op is not None and op is not store:
        for inner in op.walk():
            if not isinstance(inner, affine.LoadOp) and store.memref in inner.operands:
                return False
        op = op.next_op
    return op is store


def new_padded_load(load: affine.LoadOp, guard: Guard, padded: bool = True) -> affine.IfOp:
    """An affine.if on `guard` yielding `load` (a detached op), else 0; marked a padded load
    unless not `padded` (a guard other than in-bounds conditions, as promote's fill copies)."""
    zero = zero_of(load.result.type)
    then_block = Block([load, affine.YieldOp.get(load.result)])
    if_op = new_if(guard, then_block, Block([zero, affine.YieldOp.get(zero.result)]))
    if padded:
        if_op.attributes[PADDED] = UnitAttr()
    if_op.results[0].name_hint = load.result.name_hint
    return if_op


def new_padded_store(store: affine.StoreOp, guard: Guard) -> affine.IfOp:
    """A padded store: `store` (a detached op) under an affine.if on `guard`."""
    if_op = new_if(guard, Block([store, affine.YieldOp.get()]), None)
    if_op.attributes[PADDED] = UnitAttr()
    return if_op


def guard_load(load: affine.LoadOp, guard: Guard) -> affine.IfOp:
    """Put `load` under a padded-load affine.if (0 where `guard` is false), in place."""
    if_op = _wrap_in_place(load, lambda: new_padded_load(load, guard))
    for use in list(load.result.uses):
        if use.operation.parent_op() is not if_op:
            use.operation.operands[use.index] = if_op.results[0]
    return if_op


def guard_store(store: affine.StoreOp, guard: Guard) -> affine.IfOp:
    """Put `store` under a padded-store affine.if, in place."""
    return _wrap_in_place(store, lambda: new_padded_store(store, guard))


def _wrap_in_place(op: Operation, wrap: Callable[[], affine.IfOp]) -> affine.IfOp:
    """Detach `op`, build its affine.if with `wrap()` and put the if where `op` was."""
    parent = op.parent_block()
    assert parent is not None
    anchor = op.next_op
    op.detach()
    if_op = wrap()
    parent.insert_op_before(if_op, anchor)  # type: ignore[arg-type]
    return if_op


def _guarded(access: Access) -> bool:
    """Already under a padded guard (pad-tiles ran before on these loops)."""
    parent = access.parent_op()
    return parent is not None and (padded_load(parent) or padded_store(parent)) is not None


def pad_tiles(loops: Sequence[affine.ForOp], pass_name: str = "pad-tiles") -> None:
    """Pad `loops` to full tiles and guard the accesses under them (module docstring)."""
    for loop in loops:
        check_effects(loop, pass_name)
        if any(_guarded(op) for op in loop.body.walk() if isinstance(op, Access)):
            raise LoopoptError(
                f"{pass_name}: loop '{describe_loop(loop)}' holds padded accesses already "
                "(pad all the loops of a tile in one pad-tiles)",
                op=loop,
            )
    padded = [pad_loop(loop, pass_name) for loop in loops]
    tops = [
        p.loop
        for p in padded
        if not any(q.loop is not p.loop and q.loop.is_ancestor(p.loop) for q in padded)
    ]
    accesses = [op for top in tops for op in top.body.walk() if isinstance(op, Access)]
    stores = [a for a in accesses if isinstance(a, affine.StoreOp)]
    loads = [a for a in accesses if isinstance(a, affine.LoadOp)]
    plans: list[tuple[Access, Guard]] = []
    bounds: dict[tuple[object, ...], list[Extension]] = {}  # the element bounds of stores
    for access in [*stores, *loads]:  # a load takes the element bounds of its stores
        guards = _Guards(access, padded, bounds.get(_element(access), []))
        conditions = guards.conditions()
        if guards.element:
            bounds.setdefault(_element(access), guards.element)
        if conditions is None:
            raise LoopoptError(
                f"{pass_name}: the access to a memref of dynamic shape cannot be guarded",
                op=access,
            )
        if conditions:
            bound = guards.builder.build(conditions)
            plans.append((access, Guard(bound.map, bound.operands)))
    for access, guard in plans:
        if isinstance(access, affine.LoadOp):
            guard_load(access, guard)
        else:
            guard_store(access, guard)
