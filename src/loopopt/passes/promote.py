"""Promote the arrays used under a loop into local buffers, with copy loops (still CPU-runnable).

    promote{loop=k_t arrays=A,B memory-space=shared pad=1 func=matmul}

Before:  affine.for %kt ... { ... %a = affine.load %A[%i, %k] ... } {loopopt.name = "k_t"}
After:   affine.for %kt ... {
           %A_shared = memref.alloca() : memref<32x9xf32, 3 : i64>
           affine.for %c0 = 0 to min(32, 37 - %it) { affine.for %c1 = 0 to min(8, 23 - %kt) {
             ... %A[%it + %c0, %kt + %c1] -> %A_shared[%c0, %c1] ...
           } {loopopt.name = "A_copy_in_1", loopopt.copy} } {loopopt.name = "A_copy_in_0", ...}
           ... %a = affine.load %A_shared[%i - %it, %k - %kt] ...
         } {loopopt.name = "k_t"}

Each array's footprint under the loop (a box with an affine origin and constant extents, halos
included) gets a buffer allocated at the start of the loop body; the box is copied in when the
array is read and the written elements copied back after the body. `memory-space=shared` puts
the buffer in address space 3 (GPU workgroup memory); `local` (default) has no memory space.
`pad=N` adds N elements to the innermost buffer dimension; by default 1 in shared memory when
the innermost extent is a multiple of 32 (a bank-conflict-free row stride), else 0 (pad=4
keeps rows 16-byte aligned for vector loads). `swizzle` instead permutes each row's 16-byte
chunks by XOR with the row index mod 8 (`#loopopt.swizzle`, no padding): down a column and
along a row of chunks, 8 consecutive pieces fall in different banks. `transpose` reverses
the buffer's dimensions
(A[i, k] at A_shared[k - k0, i - i0]): the copy loops still read the array contiguously.
`arrays=` names arrays by their SSA names (`%A` -> A); by default every array used under the
loop. Promotion assumes distinct function arguments do not alias; it refuses non-affine
accesses, footprints without a constant extent, views of one memref where one is written, and
shared buffers (with those already in the function) beyond what one block may have
(target.MAX_SHARED_BYTES: 227 KB on sm_90).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, builtin, func, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import Attribute, BlockArgument, SSAValue

from loopopt.analysis.footprint import Footprint, array_name, arrays_under, footprint
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import (
    describe_loop,
    find_loops,
    functions,
    loop_name,
    loops_in,
)
from loopopt.loops.promote import buffer_shape, promote, swizzle_params
from loopopt.lowering.llvm_common import element_bytes
from loopopt.passes import LoopoptPass
from loopopt.target import MAX_SHARED_BYTES, SHARED_BANKS, SHARED_SPACE

MEMORY_SPACES: dict[str, int | None] = {"local": None, "shared": SHARED_SPACE}
"""memory-space= values and the address space of the buffer's memref type."""


def default_pad(extents: tuple[int, ...], memory_space: str) -> int:
    """1 in shared memory when the innermost extent is a multiple of the bank count, else 0."""
    if memory_space == "shared" and extents and extents[-1] % SHARED_BANKS == 0:
        return 1
    return 0


def copy_loop_prefix(name: str, taken: set[str]) -> str:
    """`name`, or `name2`, `name3` ... when copy loops of that prefix exist in the function."""
    prefix, counter = name, 2
    while f"{prefix}_copy_in_0" in taken or f"{prefix}_copy_out_0" in taken:
        prefix, counter = f"{name}{counter}", counter + 1
    return prefix


@dataclass(frozen=True)
class PromotePass(LoopoptPass):
    """Copy the footprint of arrays used under a loop into local/shared buffers."""

    name = "promote"
    option_order = ("arrays",)

    loop: str | None = None
    """The loop whose body gets the buffers (by loopopt.name)."""
    arrays: tuple[str, ...] = ()
    """Arrays to promote, by SSA name; default: every array used under the loop."""
    memory_space: str = "local"
    """local (no memory space) or shared (GPU workgroup memory, address space 3)."""
    pad: int | None = None
    """Elements added to the innermost buffer dimension (default: see default_pad)."""
    transpose: bool = False
    """Store the box with its dimensions reversed (A[i, k] at A_shared[k - k0, i - i0])."""
    swizzle: bool = False
    """XOR-swizzled rows instead of padding (`#loopopt.swizzle`, loops/promote.py's
    `swizzled_column`): 16-byte chunks of row r permuted by XOR with r mod 8; rows must be a
    whole number of at least two 16-byte chunks."""
    indexed_by: tuple[str, ...] = ()
    """Only the accesses whose indices use the IVs of the loops of these names (each array's
    reads on one side of a contraction: syrk's A[i, k] apart from its A[j, k])."""
    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.loop is None:
            raise LoopoptError("promote: missing option loop=NAME (the loop to promote under)")
        if self.memory_space not in MEMORY_SPACES:
            raise LoopoptError(
                f"promote: memory-space must be local or shared, not '{self.memory_space}'"
            )
        if self.pad is not None and self.pad < 0:
            raise LoopoptError(f"promote: pad must be >= 0, not {self.pad}")
        if self.swizzle and self.pad:
            raise LoopoptError(f"promote: swizzle and pad={self.pad} exclude each other")
        fns = [fn for fn in functions(op, self.func) if find_loops(fn, self.loop)]
        if not fns:
            raise LoopoptError(f"promote: no loop named '{self.loop}'", op=op)
        plans = [(fn, *self._plan(loop)) for fn in fns for loop in find_loops(fn, self.loop)]
        for fn, loop, footprints in plans:
            if self.memory_space == "shared":
                pads = 0 if self.swizzle else self.pad
                _require_shared_fits(fn, loop, footprints, pads, self.transpose)
            taken = {name for name in map(loop_name, loops_in(fn)) if name is not None}
            for fp in footprints:
                extents = fp.extents[::-1] if self.transpose else fp.extents
                pad = self.pad if self.pad is not None else default_pad(extents, self.memory_space)
                if self.swizzle:
                    pad = 0
                    _require_swizzle(fp, extents, loop)
                prefix = copy_loop_prefix(
                    buffer_prefix(array_name(fp.memref), self.indexed_by), taken
                )
                taken |= {f"{prefix}_copy_in_0", f"{prefix}_copy_out_0"}
                space = MEMORY_SPACES[self.memory_space]
                promote(loop, fp, space, pad, prefix, self.transpose, self.swizzle)

    def _plan(self, loop: affine.ForOp) -> tuple[affine.ForOp, list[Footprint]]:
        """The loop and the footprints to promote, all checked before anything changes."""
        under = arrays_under(loop)
        chosen: list[SSAValue] = []
        for wanted in self.arrays:
            found = [m for m in under if array_name(m) == wanted]
            if not found:
                raise LoopoptError(
                    f"promote: no array named '{wanted}' is used under loop "
                    f"'{describe_loop(loop)}'",
                    op=loop,
                )
            chosen += [m for m in found if m not in chosen]
        if not self.arrays:
            chosen = under
        if not self.indexed_by:
            return loop, [footprint(loop, memref, self.name) for memref in chosen]
        footprints = []
        for array in chosen:
            selected = [a for a in _accesses_under(loop, array) if self._indexed(a)]
            if not selected:
                raise LoopoptError(
                    f"promote: no access of '{array_name(array)}' under loop "
                    f"'{describe_loop(loop)}' is indexed by loop(s) {', '.join(self.indexed_by)}",
                    op=loop,
                )
            footprints.append(footprint(loop, array, self.name, selected))
        return loop, footprints

    def _indexed(self, access: affine.LoadOp | affine.StoreOp) -> bool:
        """The access's indices use an IV of a loop named so, for every name of `indexed_by`."""
        names = {loop_name(loop) for loop in _index_loops(access)}
        return all(name in names for name in self.indexed_by)


def buffer_prefix(array: str, indexed_by: tuple[str, ...] = ()) -> str:
    """The name a promotion gives its buffer and copy loops: the array's (`A`: `A_shared`,
    `A_copy_in_0`), with the `indexed-by` loops (`A_i`: `A_i_shared`, `A_i_copy_in_0`)."""
    return "_".join((array, *indexed_by))


def _accesses_under(loop: affine.ForOp, memref: SSAValue) -> list[affine.LoadOp | affine.StoreOp]:
    return [
        use.operation
        for use in memref.uses
        if isinstance(use.operation, affine.LoadOp | affine.StoreOp)
        and loop.is_ancestor(use.operation)
    ]


def _index_loops(access: affine.LoadOp | affine.StoreOp) -> list[affine.ForOp]:
    """The loops whose IVs the access's indices use (through affine.apply/min/max and pure
    index arithmetic)."""
    found: list[affine.ForOp] = []
    pending = list(access.indices)
    seen: set[SSAValue] = set()
    while pending:
        value = pending.pop()
        if value in seen:
            continue
        seen.add(value)
        if isinstance(value, BlockArgument):
            owner = value.owner.parent_op()
            if isinstance(owner, affine.ForOp) and value is owner.body.block.args[0]:
                found.append(owner)
        elif not value.owner.regions:
            pending.extend(value.owner.operands)
    return found


def _require_swizzle(fp: Footprint, extents: tuple[int, ...], loop: affine.ForOp) -> None:
    """A diagnostic when the buffer's rows cannot be swizzled (loops/promote.swizzle_params)."""
    t = fp.memref.type
    assert isinstance(t, MemRefType)
    row = extents[-1] if len(extents) >= 2 else 0
    if len(extents) < 2 or swizzle_params(row, element_bytes(t.element_type)) is None:
        raise LoopoptError(
            f"promote: cannot swizzle the buffer of {array_name(fp.memref)} under "
            f"'{describe_loop(loop)}': its rows of {row} elements are not a whole number of "
            "at least two 16-byte chunks",
            op=loop,
        )


def buffer_bytes(extents: tuple[int, ...], pad: int, element: Attribute) -> int:
    """Bytes of a buffer of `extents` (innermost padded by `pad`) of `element`s."""
    count = math.prod(buffer_shape(extents, pad))
    return count * (getattr(element, "size", None) or 8)


def _require_shared_fits(
    fn: func.FuncOp,
    loop: affine.ForOp,
    footprints: list[Footprint],
    pad: int | None,
    transpose: bool = False,
) -> None:
    """Shared buffers already in the function plus the new ones must fit in one block."""
    total = 0
    for op in fn.walk():
        if not isinstance(op, memref.AllocaOp):
            continue
        if op.memref.type.memory_space == IntegerAttr(SHARED_SPACE, 64):
            total += buffer_bytes(op.memref.type.get_shape(), 0, op.memref.type.element_type)
    for fp in footprints:
        extents = fp.extents[::-1] if transpose else fp.extents
        fp_pad = pad if pad is not None else default_pad(extents, "shared")
        assert isinstance(fp.memref.type, MemRefType)
        total += buffer_bytes(extents, fp_pad, fp.memref.type.element_type)
    if total > MAX_SHARED_BYTES:
        raise LoopoptError(
            f"promote: shared buffers under loop '{describe_loop(loop)}' need {total} bytes, "
            f"more than the {MAX_SHARED_BYTES} one block can have (sm_90)",
            op=loop,
        )
