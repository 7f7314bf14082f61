"""Demotion: a loop's iter_args move into memory, the inverse of scalar replacement.

    %0 = affine.load %A[%i, %j]                     affine.for %k = 0 to %j {
    %1 = affine.for %k = 0 to %j                      %w = affine.load %A[%i, %j]
        iter_args(%w = %0) -> (f64) {                 %4 = arith.mulf …
      %4 = arith.mulf …                      ==>      %5 = arith.subf %w, %4
      %5 = arith.subf %w, %4                          affine.store %5, %A[%i, %j]
      affine.yield %5 : f64                         }
    }                                               %w_1 = affine.load %A[%i, %j]
    %6 = affine.load %A[%j, %j]                     %6 = affine.load %A[%j, %j]
    %7 = arith.divf %1, %6                          %7 = arith.divf %w_1, %6
    affine.store %7, %A[%i, %j]                     affine.store %7, %A[%i, %j]

Each iter_arg gets a place: its `Home` X[f] (analysis/demotion.py), or a scratch buffer, a
rank-0 `memref.alloca` right before the loop. The init value is stored there before the loop
(unless the home's `init_load` says X[f] holds it already); the body loads the place where it
read the iter_arg and stores what it yielded; after the loop the place is loaded where the
result was used. The loop is rebuilt without iter_args. A home store that now stores the value
just loaded from its own element is erased, and so are the loads left without uses (the home's
init load, the load after the loop): lu's second j loop keeps no op before or after its k loop.

A rank-0 alloca in the loop's block is private to each iteration of the loops around it: the
dependence analysis sees no dependence carried by them through it (analysis/dependence.py),
it needs no size, and the LLVM lowering hoists it to the function's entry. Not checked here:
that each home is one (`home`), that the scratch types are `storable`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import AffineMapAttr
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineMap

from loopopt.analysis.demotion import Home
from loopopt.loops.affine_maps import lower_bound, upper_bound
from loopopt.loops.bounds import replace_bounds

Place = tuple[SSAValue, AffineMapAttr, tuple[SSAValue, ...]]
"""One element of memory: (memref, map, map operands)."""


def _load(place: Place, hint: str | None) -> affine.LoadOp:
    buffer, amap, operands = place
    load = affine.LoadOp(buffer, operands, amap)
    load.result.name_hint = hint
    return load


def _store(value: SSAValue, place: Place) -> affine.StoreOp:
    buffer, amap, operands = place
    return affine.StoreOp(value, buffer, operands, amap)


def demote(loop: affine.ForOp, homes: Sequence[Home | None]) -> affine.ForOp:
    """Move every iter_arg of `loop` into memory: iter_arg k into `homes[k]`, or into a new
    scratch buffer where that is None (see the module docstring); returns the rebuilt loop."""
    block = loop.parent_block()
    assert block is not None and len(homes) == len(loop.inits)
    body = loop.body.block
    args = list(body.args[1:])
    places: list[Place] = []
    for arg, init, place_home in zip(args, loop.inits, homes, strict=True):
        if place_home is None:
            alloca = memref.AllocaOp.get(arg.type, shape=[])
            alloca.memref.name_hint = f"{arg.name_hint}_mem" if arg.name_hint else None
            block.insert_op_before(alloca, loop)
            place: Place = (alloca.memref, AffineMapAttr(AffineMap(0, 0, ())), ())
        else:
            store = place_home.store
            place = (store.memref, store.map, tuple(store.indices))
        places.append(place)
        if place_home is None or place_home.init_load is None:
            block.insert_op_before(_store(init, place), loop)
    loads = [_load(place, arg.name_hint) for place, arg in zip(places, args, strict=True)]
    first = body.first_op
    assert first is not None
    body.insert_ops_before(loads, first)
    for arg, load in zip(args, loads, strict=True):
        arg.replace_all_uses_with(load.result)
        body.erase_arg(arg)
    terminator = body.last_op
    assert isinstance(terminator, affine.YieldOp)
    stores = [_store(v, p) for v, p in zip(terminator.operands, places, strict=True)]
    body.insert_ops_before(stores, terminator)
    terminator.operands = ()
    after = [_load(place, arg.name_hint) for place, arg in zip(places, args, strict=True)]
    block.insert_ops_after(after, loop)
    for result, load in zip(loop.results, after, strict=True):
        result.replace_all_uses_with(load.result)
    new = replace_bounds(loop, lower_bound(loop), upper_bound(loop), inits=[])
    for place_home, load in zip(homes, after, strict=True):
        if place_home is not None and place_home.store.value is load.result:
            block.erase_op(place_home.store)
        if not load.result.uses:
            block.erase_op(load)
        init_load = place_home.init_load if place_home is not None else None
        if init_load is not None and not init_load.result.uses:
            block.erase_op(init_load)
    return new
