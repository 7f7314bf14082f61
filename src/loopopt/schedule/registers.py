"""A thread's register estimate, the compiler's cap and the expected spills.

registers(summary, s)                    # estimated registers per thread (`register_parts`)
register_cap(s, device)                  # what one block (or min_blocks) of s may have
spilled_registers(summary, s, device)    # expected spills beyond the cap (its uncertainty)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loopopt import target
from loopopt.schedule.resources import box, by_array, distinct, mapping, operands
from loopopt.schedule.types import Access, Device, NestSummary, Schedule

COPY_ADDRESS_REGISTERS = 3
"""Registers a copy instruction in flight holds besides its values: its 64-bit global address
and its shared one (a step's unrolled copies are all loaded before the first is stored; fitted
with the fragments and overhead below to ptxas -v on 134 SGEMM schedules, 10% mean error)."""
HOIST_FMAS = 256
"""The compiler issues shared loads ahead of their FMAs over a window that grows with the
unrolled step: one reduction point's operands in flight per 256 FMAs of the step (fitted with
COPY_ADDRESS_REGISTERS, COPY_OVERLAP and OVERHEAD_REGISTERS to ptxas -v on 207 SGEMM schedules:
9% mean error; 8x8 tiles 32 deep spill, 16 deep do not)."""
COPY_OVERLAP = 4
"""Without pipelining, a quarter of a step's copies are in flight during the previous step's
compute (the compiler issues the loads of invariant data ahead of the barrier)."""
PADDED_COPY_REGISTERS = 2
"""Registers a zero-filled copy (pad-tiles: guarded, scalar) holds besides those of a plain
one: its in-bounds predicate and its own address (no shared base with its neighbours)."""
OVERHEAD_REGISTERS = 13
"""Indices, bounds and loop counters a thread keeps besides its data (+ 2 per array)."""
DEFER_FMAS = 128
"""Operands loaded from global memory and reused within this many FMAs of the unrolled body
(one iteration of its outermost unrolled loop) do not spill: ptxas loads them again. On the
H200, 8x8 convs (64 and 128 FMAs per output row of the tile) ran unspilled where the
estimate exceeded the cap (512- and 1024-thread blocks: 61 and 82 us against 60 for the
best); 16x16 convs (256 per row) spilled as estimated (a 1024-thread block: 3 ms)."""
REGISTER_ERROR = 0.15
"""Relative uncertainty of the register estimate (its error against ptxas -v: 10% mean)."""


def _words(accesses: Iterable[Access]) -> int:
    return max(1, -(-next(iter(accesses)).elem_bytes // 4))


@dataclass(frozen=True)
class Registers:
    """The parts of a thread's register estimate (32-bit registers)."""

    accumulators: int
    fragments: int
    copies: int
    overhead: int
    pipelined: bool
    deferrable: bool = False
    """The operands are global loads (nothing staged in shared memory) reused within
    DEFER_FMAS FMAs: under the cap, the compiler loads them again next to their uses instead
    of spilling (`_deferrable`)."""

    @property
    def total(self) -> int:
        if self.pipelined:
            live = self.fragments + self.copies
        else:  # copies and fragments take turns, the next copies starting during the compute
            live = max(self.copies, self.fragments + -(-self.copies // COPY_OVERLAP))
        return self.accumulators + live + self.overhead

    @property
    def required(self) -> int:
        """What cannot spill without a load and store per use: accumulators, overhead and
        the copies in flight of a pipelined schedule."""
        return self.accumulators + self.overhead + (self.copies if self.pipelined else 0)

    @property
    def spillable(self) -> int:
        """The registers the compiler spills beyond the cap: the total, less the operand
        fragments it may defer instead (`deferrable`)."""
        return self.total - self.fragments if self.deferrable else self.total


@functools.lru_cache(maxsize=1 << 13)
def register_parts(summary: NestSummary, schedule: Schedule) -> Registers:
    """An estimate of the registers one thread needs (before the compiler's cap):

    - accumulators: arrays in `schedule.registers` hold their per-thread tile (distinct
      elements over the thread's ranges); other written arrays, their distinct elements in
      the unrolled body (without an unrolled reduction, in one iteration of the body's
      outermost loop: an output is stored as soon as it is computed);
    - operand fragments (`_live_operands`): the operands live at once in the unrolled body;
    - copy registers: per staged array, the values of a thread's share of the box and
      COPY_ADDRESS_REGISTERS per copy instruction (one per `copy_width` elements), live during
      the compute when pipelined, else only during the copy (the larger of copies and
      fragments); a cp.async ring's copies hold no values, only their addresses;
    - overhead: OVERHEAD_REGISTERS + 2 per array (64-bit pointers) + 1 per sequential loop.
    """
    m = mapping(summary, schedule)
    names = [loop.name for loop in summary.loops]
    unrolled = {n: m.thread[n] for n in names if n in schedule.unrolled}
    reductions = [n for n, r in unrolled.items() if not summary.loop(n).parallel and r > 1]
    outer = next((n for n in reversed(schedule.unrolled) if unrolled.get(n, 1) > 1), None)
    first = {outer: 1} if outer is not None else {}
    accumulators = copies = 0
    read: list[tuple[int, list[Access]]] = []
    for array, accesses in operands(summary, schedule).items():
        words = _words(accesses)
        writes = [a for a in accesses if a.write]
        if array in schedule.registers:
            accumulators += words * distinct(accesses, summary, m.thread)
        elif writes:
            streamed = {} if reductions else first
            accumulators += words * distinct(writes, summary, {**unrolled, **streamed})
        reads = [a for a in accesses if not a.write]
        if reads and array not in schedule.registers:
            read.append((words, reads))
        if array in schedule.shared:
            extents = box(accesses, names, m.block)
            width = copy_width(schedule, extents)
            per_thread = -(-math.prod(extents) // width // schedule.threads_per_block)
            values = 0 if schedule.stages > 1 else width * words
            guard = PADDED_COPY_REGISTERS if dict(schedule.params).get("padded") else 0
            copies += per_thread * (values + COPY_ADDRESS_REGISTERS + guard)
    fragments = _live_operands(read, summary, unrolled, reductions, first)
    sequential = sum(1 for n in names if n not in schedule.unrolled and m.thread[n] > 1)
    overhead = OVERHEAD_REGISTERS + 2 * len(by_array(summary)) + sequential
    deferrable = _deferrable(summary, schedule, unrolled, outer)
    return Registers(
        accumulators, fragments, copies, overhead + (m.steps > 1), schedule.pipelined, deferrable
    )


def _deferrable(
    summary: NestSummary, schedule: Schedule, unrolled: dict[str, int], outer: str | None
) -> bool:
    """Nothing staged in shared memory, and one iteration of the body's outermost unrolled
    loop (the span over which its operands are reused) holds at most DEFER_FMAS FMAs."""
    if schedule.shared or outer is None:
        return False
    fmas = math.prod(unrolled.values()) // unrolled[outer] * summary.flops / 2
    return fmas <= DEFER_FMAS


def _live_operands(
    operands: Sequence[tuple[int, list[Access]]],
    summary: NestSummary,
    unrolled: dict[str, int],
    reductions: Sequence[str],
    first: dict[str, int],
) -> int:
    """Operand registers live at once in the unrolled body (`operands`: words and read
    accesses per array), for the compiler's cheapest order of the body: at most everything
    it reads; the loads of one iteration of its outermost loop (without a reduction, twice:
    the next iteration's loads are issued ahead); with an unrolled reduction, what one
    iteration of the outermost reduction loop reads of the arrays its iterations reuse (a
    convolution's image rows), and what one reduction point reads of the others (a matrix
    product's A column and B row)."""

    def total(ranges: dict[str, int]) -> int:
        return sum(words * distinct(reads, summary, ranges) for words, reads in operands)

    whole = total(unrolled)
    per_outer = total({**unrolled, **first}) if first else whole
    if not reductions:
        return min(whole, 2 * per_outer)
    outer = reductions[0]
    at_point = {n: r for n, r in unrolled.items() if n not in reductions}
    ahead = max(1.0, math.prod(unrolled.values()) * summary.flops / 2 / HOIST_FMAS)
    per_step = 0
    for words, reads in operands:
        one = distinct(reads, summary, {**unrolled, outer: 1})
        if distinct(reads, summary, unrolled) < unrolled[outer] * one:
            per_step += words * one
        else:
            per_step += words * round(ahead * distinct(reads, summary, at_point))
    return min(whole, per_outer, per_step)


def copy_width(schedule: Schedule, extents: Sequence[int]) -> int:
    """Elements a thread copies at a time into a shared buffer of box `extents` (array order):
    the schedule's `copy_vector` (Schedule.extra, gpu-map-loops{copy-vector}) where it divides
    the box's rows, else 1."""
    width = dict(schedule.extra).get("copy_vector", 1)
    return width if width > 1 and extents and extents[-1] % width == 0 else 1


def registers(summary: NestSummary, schedule: Schedule) -> int:
    """The estimated registers per thread (`register_parts`' total)."""
    return register_parts(summary, schedule).total


def register_cap(schedule: Schedule, device: Device) -> int:
    """The most registers per thread the compiler may use: the device's limit, what one block
    (or `min_blocks` blocks, the launch bounds) of this size can have on an SM
    (target.register_cap: the cap gpu-map-loops{max-registers=cap} sets, on this device)."""
    return target.register_cap(
        schedule.threads_per_block,
        schedule.min_blocks,
        registers_per_sm=device.regs_per_sm,
        max_registers=device.max_regs_per_thread,
        warp_size=device.warp_size,
    )


def spilled_registers(
    summary: NestSummary, schedule: Schedule, device: Device, required: bool = False
) -> float:
    """The registers the compiler is expected to spill (of the `required` part only, with
    `required`): the estimate's excess over the cap, averaged over the estimate's uncertainty
    (the true need uniform within ±REGISTER_ERROR of it), so that a schedule whose estimate is
    just under the cap already risks some."""
    parts = register_parts(summary, schedule)
    need = parts.required if required else parts.spillable
    cap = register_cap(schedule, device)
    low, high = need * (1 - REGISTER_ERROR), need * (1 + REGISTER_ERROR)
    if cap >= high:
        return 0.0
    if cap <= low:
        return need - cap
    return (high - cap) ** 2 / (2 * (high - low))


def allocated_registers(summary: NestSummary, schedule: Schedule, device: Device) -> int:
    """The estimate rounded up to the allocation unit (8 per thread), at most the cap (beyond,
    the compiler spills)."""
    estimate = -(-registers(summary, schedule) // 8) * 8
    return min(estimate, register_cap(schedule, device))
