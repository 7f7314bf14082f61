"""Merge repeated loads of one element within a block, before the kernels are lowered.

    %a = affine.load %A_s[%i, 3]                 %a = affine.load %A_s[%i, 3]
    %p = arith.mulf %a, %b                 →     %p = arith.mulf %a, %b
    %a2 = affine.load %A_s[%i, 3]                %q = arith.mulf %a, %c
    %q = arith.mulf %a2, %c

A fully unrolled register tile reads each operand once per use (an 8 x 4 tile of a 32-deep
k loop: 2,048 loads of 384 elements); every load costs about twenty ops through the lowering
to LLVM, and LLVM's EarlyCSE/GVN merge them again at O3 anyway. So a load (affine.load,
memref.load) takes the result of an earlier load in the same block with the same memref,
map and index operands when no op between them may write memory: an op with regions, or one
that is neither free of side effects nor a load (a store, a barrier, an asynchronous copy or
its wait, a call), starts a new epoch in which nothing earlier is reused. Nested blocks start
empty. This is what LLVM itself may do (a value another thread writes between two loads with
no barrier between them is a data race), so the PTX is the same, from fewer ops.
"""

from __future__ import annotations

from xdsl.dialects import affine, memref
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.traits import is_side_effect_free

Load = affine.LoadOp | memref.LoadOp
Key = tuple[str, tuple[SSAValue, ...], tuple[tuple[str, Attribute], ...]]


def merge_loads(root: Operation) -> int:
    """Merge the repeated loads of every block under `root` in place; how many were erased."""
    merged = 0
    for region in root.regions:
        for block in region.blocks:
            merged += _merge_block(block)
    return merged


def _key(op: Load) -> Key:
    """The op, its memref and indices, its properties (the affine map, `nontemporal`)."""
    return (op.name, tuple(op.operands), tuple(sorted(op.properties.items())))


def _merge_block(block: Block) -> int:
    merged = 0
    known: dict[Key, Load] = {}
    for op in list(block.ops):
        if op.regions:
            known.clear()
            merged += merge_loads(op)
            continue
        if isinstance(op, Load):
            key = _key(op)
            earlier = known.get(key)
            if earlier is None or earlier.results[0].type != op.results[0].type:
                known[key] = op
                continue
            op.results[0].replace_all_uses_with(earlier.results[0])
            op.detach()
            op.erase()
            merged += 1
        elif not is_side_effect_free(op):
            known.clear()
    return merged
