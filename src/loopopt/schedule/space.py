"""The candidate schedules of a nest: its class, the recipe's parameter grid, what fits.

    s = summarize(fn)
    classify(s)                      # "matmul" | "conv" | "stencil" | "map"
    for schedule in candidates(s, DEVICES["sm_90"]):
        ...                          # deterministic order, no two with the same pipeline

The class comes from the access structure (schedule/roles.py, never names):
matmul (C[i, j] += A[i, k] * B[k, j], any order of A's and B's dimensions), conv (2-D or 3-D
out[o] += image[o + f] * ...), stencil (a 2-D parallel band reading one array at several
offsets), map (anything with a parallel loop). Each class enumerates its recipe's parameters:

    matmul   bm, bn ∈ {32..256}, bk ∈ {8, 16, 32}, tm, tn ∈ {1, 2, 4, 8}, pipelined on/off,
             copies 1 or 4 elements at a time (gpu-map-loops{copy-vector}), and with 4: a
             3-stage cp.async ring instead (pipeline-copies{stages=3 async}) where k has
             at least 3 steps; with WARP_TILE_CANDIDATES (off: none measured faster on the
             H200) the ring's register tiles also as strided 4 x 4 fragments (`fragment=4`;
             from 8 x 8 also with swizzled tiles, promote{swizzle}), and 16 x 8 tiles of 256
             threads in 256 x 128 and 128 x 256 block tiles (bk = 8, fragments, a ring,
             padded or swizzled tiles); fragments only where a thread's k step holds at most
             STEP_FMAS FMAs
    conv     by ∈ {4..128}, bx ∈ {16..256}, rows ∈ {1..16} (rows per thread); 2-D: the
             weights in global or in constant memory (gpu-constant-memory), and cols ∈
             {1, 2, 4} adjacent outputs of a row per thread where bx divides the row and
             the thread's body keeps to COLUMN_TILE_FMAS
    stencil  by ∈ {1..256}, bx ∈ {16..256}, rows ∈ {1..16}
    map      block shapes over the 1-3 mapped loops, unroll ∈ {1, 2, 4, 8} of the inner loop

The fast matmul and conv recipes fully unroll, so only tiles that divide the trip counts they
unroll are offered (and, pipelined, a block's threads must divide each copy); when none does,
the space falls back to padded matmul tiles (`pad-tiles`: partial tiles run as full ones,
zero-filled copies issued ahead by register double buffering where the copy rounds allow, or
by a 3-stage cp.async ring of 16-byte zero-filling copies where rows of 4 stay aligned), or
to the map recipe. Tiles far larger than a
loop (twice its trip count or more) are left out. Last, what does not fit the device goes
(schedule/occupancy.misfit: threads, shared memory, registers, occupancy), and so do blocks of
fewer than 32 threads (a partial warp). An empty space (no parallel loop, nothing fits) is an
empty list; `why_none` gives the reason.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence

from loopopt.schedule import recipes, tensor_core
from loopopt.schedule.occupancy import misfit
from loopopt.schedule.roles import conv_roles, map_roles, matmul_roles, stencil_roles
from loopopt.schedule.types import Device, NestSummary, Schedule

MIN_THREADS = 32
"""A block of fewer threads than a warp leaves lanes idle."""


def classify(summary: NestSummary) -> str:
    """matmul, conv, stencil or map, by the nest's access structure (a nest whose bounds
    vary: matmul or map, each run on its bounding box)."""
    if matmul_roles(summary) is not None:
        return "matmul"
    if any(loop.varies for loop in summary.loops):
        return "map"
    if conv_roles(summary) is not None:
        return "conv"
    if stencil_roles(summary) is not None:
        return "stencil"
    return "map"


def candidates(summary: NestSummary, device: Device) -> list[Schedule]:
    """The schedules of the nest's class that fit `device` (see the module docstring); none
    when no loop is parallel or nothing fits (`why_none` says which). A nest with a loop that
    never runs (0 iterations: a 0-size array) has nothing to schedule. A contraction whose
    bounds vary (a triangle) gets padded matmul tiles only: on the H200 (2026-11-26,
    PolyBench LARGE) they ran faster than the default mapping with a varying upper bound
    (syrk 0.10 ms, 1.04x torch), a parallel loop's varying lower bound (covariance 0.149
    against 0.309 ms) and, their diagonal's guards versioned away (`version-guards`), a
    reduction loop's (trmm 0.200 against 0.247 ms)."""
    if any(loop.trip <= 0 for loop in summary.loops):
        return []
    kind = classify(summary)
    boxed = any(loop.varies for loop in summary.loops)  # only padded tiles
    found = [] if boxed and kind == "matmul" else _fitting(SPACES[kind](summary), summary, device)
    if not found and kind == "matmul":
        found = _fitting(_padded_matmul(summary), summary, device)
    if not found and kind != "map":
        found = _fitting(_map(summary), summary, device)
    if kind == "matmul":  # f16/bf16 operands on sm_80+: tensor cores (schedule/tensor_core.py)
        found = [*_fitting(tensor_core.candidates(summary, device), summary, device), *found]
    return found


def _fitting(schedules: Iterable[Schedule], summary: NestSummary, device: Device) -> list[Schedule]:
    seen: set[str] = set()
    kept: list[Schedule] = []
    for s in schedules:
        if s.pipeline in seen or s.threads_per_block < MIN_THREADS:
            continue
        seen.add(s.pipeline)
        if misfit(summary, s, device) is None:
            kept.append(s)
    return kept


def why_none(summary: NestSummary, device: Device) -> str:
    """Why `candidates` is empty: no parallel loop, or the first misfit of a mapping."""
    if any(loop.trip <= 0 for loop in summary.loops):
        return "a loop runs 0 times"
    if map_roles(summary) is None:
        return "no loop is parallel"
    for s in _map(summary):
        reason = misfit(summary, s, device)
        if reason is not None:
            return reason
    return "no block shape has a full warp"


def _upto(options: Sequence[int], trip: int) -> list[int]:
    """The options below twice `trip` (a tile far larger than its loop only adds guards);
    the smallest option stays."""
    return [s for s in options if s < 2 * trip or s == options[0]]


def _divisors(options: Sequence[int], trip: int) -> list[int]:
    return [s for s in options if trip % s == 0]


def _matmul(summary: NestSummary) -> Iterable[Schedule]:
    r = matmul_roles(summary)
    assert r is not None
    m, n, k = (summary.loop(name).trip for name in (r.i, r.j, r.k))
    tiles = itertools.product(
        _divisors((32, 64, 128, 256), m),
        _divisors((32, 64, 128, 256), n),
        _divisors((8, 16, 32), k),
        (1, 2, 4, 8),
        (1, 2, 4, 8),
        (True, False),
        (1, 4),
        (0, ASYNC_STAGES),
    )
    for bm, bn, bk, tm, tn, pipelined, vector, stages in tiles:
        per_round = (bm // tm) * (bn // tn) * vector
        if (pipelined or stages) and (bm * bk % per_round or bk * bn % per_round):
            continue  # a guarded copy cannot be issued ahead
        if stages and (vector == 1 or pipelined or k // bk < stages):
            continue  # 16-byte pieces, not with register double buffering, a full ring of steps
        yield recipes.matmul(
            summary, bm, bn, bk, tm, tn, pipelined, copy_vector=vector, stages=stages
        )
        fragments = tm % FRAGMENT == 0 and tn % FRAGMENT == 0 and max(tm, tn) > FRAGMENT
        if WARP_TILE_CANDIDATES and stages and fragments and tm * tn * bk <= STEP_FMAS:
            for swizzle in (False, True) if tm * tn >= 64 else (False,):
                yield recipes.matmul(
                    summary, bm, bn, bk, tm, tn, False, copy_vector=4, stages=stages,
                    fragment=FRAGMENT, swizzle=swizzle,
                )  # fmt: skip
    for bm, bn, bk in itertools.product(
        _divisors((128, 256), m), _divisors((128, 256), n), _divisors((8,), k)
    ):
        if WARP_TILE_CANDIDATES and bm * bn == 256 * 128 and k // bk >= ASYNC_STAGES:
            for swizzle in (False, True):
                yield recipes.matmul(
                    summary, bm, bn, bk, 16, 8, False, copy_vector=4, stages=ASYNC_STAGES,
                    fragment=FRAGMENT, swizzle=swizzle,
                )  # fmt: skip


WARP_TILE_CANDIDATES = False
"""Whether the space offers the fragment, swizzle and 16 x 8 candidates below. Off: on the
H200 (2026-11-25, `benchmarks/run.py --sgemm-variants --only sgemm-4096`, one process with
cuBLAS at 2.685 ms) none of the 23 variants beat the 64 x 128 x 32 8 x 4 ring (3.152 ms,
0.85x): 128 x 128 x 8 8 x 8 fragments swizzled 3.689 ms, 128 x 256 x 8 16 x 8 fragments
3.348 ms, 64 x 128 x 16 8 x 8 fragments 3.140 ms; the model, not calibrated for them, ranked
the swizzled 128 x 128 tile first. The options stay for hand schedules and `loopopt tune`."""

FRAGMENT = 4
"""Strided per-thread fragments of the cp.async candidates whose register tile holds more
than one (recipes.matmul `fragment`): a warp's 128-bit loads of B cover consecutive 16-byte
pieces (no bank conflicts), where contiguous 8-wide tiles put lanes 32 bytes apart. With
them come 16 x 8 tiles of 256 threads in 256 x 128 and 128 x 256 block tiles (cuBLAS's
SGEMM shape on the H200: 128 accumulators, 1 block per SM)."""

STEP_FMAS = 1024
"""The most FMAs of a thread's unrolled k step for the fragment candidates: in a cp.async
ring (no barrier inside a step) ptxas hoists a step's shared loads, and beyond this it spills
where the register estimate does not foresee it (ptxas -v, sm_90: 8 x 8 tiles 32 deep 255
registers and 304-368 bytes of spills, estimated 221-224; 16 deep 167; 16 x 8 tiles 8 deep
255 without spills, 16 deep 48 bytes)."""

ASYNC_STAGES = 3
"""Slices in flight of the cp.async candidates (SGEMM 4096³ on the H200, 64 x 128 x 32 tiles:
2, 3 and 4 stages 3.61, 3.40 and 3.50 ms with A transposed; 3 stages with A as it is 3.16 ms,
the fastest measured)."""


def _padded_matmul(summary: NestSummary) -> Iterable[Schedule]:
    r = matmul_roles(summary)
    assert r is not None
    m, n, k = (summary.loop(name).trip for name in (r.i, r.j, r.k))
    tiles = itertools.product(
        _upto((32, 64, 128), m),
        _upto((32, 64, 128), n),
        _upto((8, 16, 32), k),
        (1, 2, 4, 8),
        (1, 2, 4, 8),
    )
    for bm, bn, bk, tm, tn in tiles:
        threads = (bm // tm) * (bn // tn)
        # Issued a k step ahead where every copy round is whole: without, each step waits for
        # its zero-filled copies (H200, 1000³ to 3001³: 2-2.5x slower), so only where it must.
        pipelined = not (bm * bk % threads or bk * bn % threads)
        yield recipes.matmul(summary, bm, bn, bk, tm, tn, pipelined, padded=True)
        # A ring of 16-byte zero-filling cp.async copies where rows of 4 floats stay whole and
        # aligned (both arrays' rows a multiple of 4 long) and every round is whole.
        whole = not (bm * bk % (4 * threads) or bk * bn % (4 * threads))
        if whole and _aligned_rows(summary) and k // bk >= ASYNC_STAGES:
            yield recipes.matmul(
                summary, bm, bn, bk, tm, tn, False, copy_vector=4, stages=ASYNC_STAGES, padded=True
            )


def _aligned_rows(summary: NestSummary) -> bool:
    """Every array's rows hold a multiple of 4 elements (16-byte copies stay aligned)."""
    return all(a.shape[-1] % 4 == 0 for a in summary.accesses)


def _conv(summary: NestSummary) -> Iterable[Schedule]:
    r = conv_roles(summary)
    assert r is not None
    y, x = r.outs[-2:]
    height, width = summary.loop(y).trip, summary.loop(x).trip
    taps = math.prod(summary.loop(f).trip for f in r.filters)
    two_d = len(r.outs) == 2
    for by in _divisors((4, 8, 16, 32, 64, 128), height):
        for bx in _upto((16, 32, 64, 128, 256), width):
            for rows in (1, 2, 4, 8, 16):
                if rows > by:
                    continue
                columns = _conv_columns(bx, width, rows * taps) if two_d else (1,)
                for tile in columns:
                    yield recipes.conv(summary, by, bx, rows, cols=tile)
                    if r.weights and two_d:  # every filter loop unrolled: the
                        # weights' offsets are constants ptxas folds into the FMAs
                        yield recipes.conv(summary, by, bx, rows, constant=True, cols=tile)


COLUMN_TILE_FMAS = 2048
"""The most FMAs a thread's unrolled body may hold with column tiles. On the H200, 16 x 2
outputs of an 8x8 filter (2048) take 40 registers and run at 53% of the FMA peak; 8 x 2 of a
16x16 filter (4096) take ptxas's 255 and spill (0.68 ms against 0.23 ms for 8 x 1), which
the register estimate (208) does not foresee."""


def _conv_columns(bx: int, trip: int, fmas: int) -> tuple[int, ...]:
    """Columns per thread of a 2-D conv with bx-wide tiles of a `trip`-long row, `fmas` per
    column of the thread's tile: 2 and 4 where they leave a warp of threads along the row,
    every tile is full (the column loop is unrolled) and the body stays within
    COLUMN_TILE_FMAS; 1 always."""
    if trip % bx:
        return (1,)
    return (1, *(c for c in (2, 4) if bx // c >= 32 and c * fmas <= COLUMN_TILE_FMAS))


def _stencil(summary: NestSummary) -> Iterable[Schedule]:
    r = stencil_roles(summary)
    assert r is not None
    rows_y, cols = summary.loop(r.y).trip, summary.loop(r.x).trip
    for by in _upto((1, 2, 4, 8, 16, 32, 64, 128, 256), rows_y):
        for bx in _upto((16, 32, 64, 128, 256), cols):
            for rows in (1, 2, 4, 8, 16):
                if rows <= by:
                    yield recipes.stencil(summary, by, bx, rows)


BLOCK_SHAPES: dict[int, tuple[tuple[int, ...], ...]] = {
    1: ((32, 64, 128, 256, 512, 1024),),
    2: ((16, 32, 64, 128, 256), (1, 2, 4, 8, 16, 32)),
    3: ((16, 32, 64, 128), (1, 2, 4, 8, 16), (1, 2, 4, 8)),
}
"""Threads along x, y, z for 1, 2 and 3 mapped loops."""


def _map(summary: NestSummary) -> Iterable[Schedule]:
    r = map_roles(summary)
    if r is None:
        return
    axes = [
        _upto(options, summary.loop(name).trip)
        for options, name in zip(BLOCK_SHAPES[len(r.axes)], r.axes, strict=True)
    ]
    unrolls = [1]
    if r.inner is not None:
        unrolls += [u for u in (2, 4, 8) if u <= summary.loop(r.inner).trip]
    for shape in itertools.product(*axes):
        for unroll in unrolls:
            yield recipes.map_nest(summary, shape, unroll)


SPACES: dict[str, Callable[[NestSummary], Iterable[Schedule]]] = {
    "matmul": _matmul,
    "conv": _conv,
    "stencil": _stencil,
    "map": _map,
}
