"""Merge repeated computations and loads within a block, before the kernels are lowered.

    %a = affine.load %A_s[%i, 3]                 %a = affine.load %A_s[%i, 3]
    %c = arith.cmpi slt, %k, %n                  %c = arith.cmpi slt, %k, %n
    %s = arith.select %c, %x, %z           →     %s = arith.select %c, %x, %z
    %a2 = affine.load %A_s[%i, 3]                %q = arith.mulf %s, %a
    %c2 = arith.cmpi slt, %k, %n
    %s2 = arith.select %c2, %x, %z
    %q = arith.mulf %s2, %a2

A fully unrolled register tile reads each operand once per use (an 8 x 4 tile of a 32-deep k
loop: 2,048 loads of 384 elements) and repeats the index and guard arithmetic of each; every
op costs tens of ops and a pattern match each through the lowering to LLVM, and LLVM's
EarlyCSE/GVN merge them again at O3 anyway. So, within one block:

- an op free of side effects and without regions takes the results of an earlier op of the
  same name, operands, properties, attributes and result types;
- a load (affine.load, memref.load) takes the result of an earlier load of the same memref,
  map and index operands when no op between them may write memory: an op with regions, or one
  that is neither free of side effects nor a load (a store, a barrier, an asynchronous copy
  or its wait, a call), forgets every load before it.

Nested blocks start empty. This is what LLVM itself may do (a value another thread writes
between two loads with no barrier between them is a data race), so the PTX is the same, from
fewer ops. Run after FMA contraction (lowering/contract.py), which fuses only a product with
one use: merging two equal products first would leave both adds unfused.
"""

from __future__ import annotations

from xdsl.dialects import affine, memref
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.traits import is_side_effect_free

Key = tuple[
    str,
    tuple[SSAValue, ...],
    tuple[tuple[str, Attribute], ...],
    tuple[tuple[str, Attribute], ...],
    tuple[Attribute, ...],
]


def merge_repeats(root: Operation) -> int:
    """Merge the repeated ops of every block under `root` in place; how many were erased."""
    merged = 0
    for region in root.regions:
        for block in region.blocks:
            merged += _merge_block(block)
    return merged


def _key(op: Operation) -> Key:
    return (
        op.name,
        tuple(op.operands),
        tuple(sorted(op.properties.items())),
        tuple(sorted(op.attributes.items())),
        tuple(op.result_types),
    )


def _merge_block(block: Block) -> int:
    merged = 0
    pure: dict[Key, Operation] = {}
    loads: dict[Key, Operation] = {}
    for op in list(block.ops):
        if op.regions:
            loads.clear()
            merged += merge_repeats(op)
            continue
        if isinstance(op, affine.LoadOp | memref.LoadOp):
            known = loads
        elif op.results and not op.successors and is_side_effect_free(op):
            known = pure
        else:
            loads.clear()
            continue
        key = _key(op)
        earlier = known.get(key)
        if earlier is None:
            known[key] = op
            continue
        for old, new in zip(op.results, earlier.results, strict=True):
            old.replace_all_uses_with(new)
        op.detach()
        op.erase()
        merged += 1
    return merged
