"""Recipes: a nest's summary and a few parameters → a `Schedule` (passes + mapping).

    s = summarize(fn)                     # C[i, j] += A[i, k] * B[k, j]
    matmul(s, 128, 64, 16, 8, 4).passes
      == (LoopTilePass(tile_sizes=(128, 64, 16)), PromotePass(loop="k_t", arrays=("A",), ...),
          ..., GpuMapLoopsPass(block=(16, 16), max_registers="cap"), ...)
    matmul(s, 128, 64, 16, 8, 4).pipeline
      == "loop-tile{tile-sizes=128,64,16},promote{arrays=A loop=k_t ... transpose},...,"
         "gpu-map-loops{block=16,16 max-registers=cap},...,scalar-replace{loop=k_t}"

Recipes build the pass objects the CLI builds (never pipeline text); the schedule prints them.

Each recipe finds the roles of the nest's loops and arrays (schedule/roles.py: which
loop indexes the output's rows, which array is the image …), so it works with whatever names
the nest uses; a nest of another shape is a LoopoptError. When the band is not in the order a
recipe expects (parallel loops first), the pipeline starts with a `loop-interchange`. Names the
pipeline refers to: `<loop>_t` for `loop-tile`'s tile loops (loops/tile.py, made fresh), and
`<array>_copy_in` for the thread-spread copy rounds of `promote` (loops/gpu_copy.py), which
exist only when a copy has more elements than the block has threads.

The fast recipes (matmul, conv) fully unroll loops, so their tiles must divide the trip counts
they unroll (schedule/space.py only offers those) unless they are padded: `matmul(padded=True)`
runs partial tiles as full ones (`pad-tiles`: guarded accesses, zero-filled shared tiles), so
odd sizes keep the unrolled register tile, and a triangular nest (syrk's `j < i + 1`) runs on
its bounding box; `stencil` handles partial tiles with guards, and
`map_nest` maps any nest with a parallel loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.passes import ModulePass

from loopopt.diagnostics import LoopoptError
from loopopt.loops.tile import fresh_name
from loopopt.passes.gpu_constant_memory import GpuConstantMemoryPass
from loopopt.passes.gpu_map_loops import GpuMapLoopsPass
from loopopt.passes.loop_interchange import LoopInterchangePass
from loopopt.passes.loop_tile import LoopTilePass
from loopopt.passes.loop_unroll import LoopUnrollPass
from loopopt.passes.loop_unroll_jam import LoopUnrollJamPass
from loopopt.passes.pad_tiles import PadTilesPass
from loopopt.passes.pipeline_copies import PipelineCopiesPass
from loopopt.passes.promote import PromotePass, buffer_prefix
from loopopt.passes.scalar_replace import ScalarReplacePass
from loopopt.passes.version_guards import VersionGuardsPass
from loopopt.schedule.roles import conv_roles, map_roles, matmul_roles, stencil_roles
from loopopt.schedule.types import NestSummary, Schedule, split_key

PAD = 4
"""Elements of padding per shared row (against bank conflicts)."""


LLVM_UNROLLS_K = False
"""Whether the matmul recipe keeps k (the inner loop of a k tile) rolled, outside the unrolled
register tile, for LLVM to unroll (`loop-unroll{unroll-full in-llvm}`; its accumulators are
iter_args of k, then of k_t). The PTX has the same instruction mix as unrolling k in the IR,
and the passes after it and the lowering walk 32 bodies fewer: SGEMM 4096³ compiles in 1.1
instead of 3.2 s of CPU time from the register tile to PTX. Off: timed on the H200
(2026-11-25, benchmarks/run.py --quick, one process with cuBLAS), ptxas given the FMAs in k,
i, j order runs SGEMM 4096³ in 3.227 ms (0.83x cuBLAS) against 3.152 ms (0.85x) with k
unrolled inside the register tile, and padded triangles far slower (syrk at PolyBench's
LARGE size 3.87 against 0.855 ms), so k stays unrolled in the IR until the order is fixed."""


def fresh(summary: NestSummary, base: str) -> str:
    """The name `loop-tile` gives a tile loop of the nest (loops/tile.py's `fresh_name`)."""
    return fresh_name({loop.name for loop in summary.loops}, base)


def reorder(summary: NestSummary, order: Sequence[str]) -> list[ModulePass]:
    """A loop-interchange bringing the band into `order` (nothing when it already is)."""
    band = [loop.name for loop in summary.loops]
    if band == list(order):
        return []
    permutation = tuple(list(order).index(name) for name in band)
    return [LoopInterchangePass(loops=tuple(band), permutation=permutation)]


def copy_prefix(key: str) -> str:
    """The prefix of the copy loops `promote` makes for a staged operand (`A`, `A@i` → `A_i`)."""
    array, loop = split_key(key)
    return buffer_prefix(array, (loop,) if loop is not None else ())


def _unroll_full(loop: str) -> LoopUnrollPass:
    return LoopUnrollPass(unroll_full=True, loop=loop)


def matmul(
    summary: NestSummary,
    bm: int,
    bn: int,
    bk: int,
    tm: int,
    tn: int,
    pipelined: bool = True,
    min_blocks: int = 0,
    outer_product: bool = False,
    padded: bool = False,
    copy_vector: int = 1,
    stages: int = 0,
    fragment: int = 0,
    warp_lanes: tuple[int, int] | tuple[()] = (),
    block_group: int = 1,
    swizzle: bool = False,
) -> Schedule:
    """C[i, j] += A[i, k] * B[k, j] (any order of A's and B's dimensions): a bm x bn block
    tile (threads bn/tn x bm/tm, j on x), bk-deep slices of A and B in shared memory (stored
    k-major: a slice whose last dimension is k is transposed), a tm x tn register tile per
    thread with C's accumulators in registers across k_t (scalar-replace); copies unrolled
    and, when `pipelined`, issued one k_t ahead; `min_blocks` blocks per SM (launch bounds).
    `outer_product` puts k outside the register tile. `padded`: for tiles that do not divide
    the trip counts: `pad-tiles` runs the partial tiles as full ones (loads outside the arrays
    read zeros, stores outside are skipped), so everything still unrolls; the copies are
    zero-filled (register double buffering issues them ahead, guards and all; a cp.async ring
    copies with a source size of 0 where they leave the array).
    `copy_vector`: threads copy that many consecutive elements at a time (128-bit accesses).
    `stages` >= 2 (sm_80+): the copies are cp.async into rings of that many shared slices,
    issued stages - 1 slices ahead, without registers; the slices keep the arrays' layout (a
    16-byte cp.async moves a piece of a row as it is: A is not transposed) and `pipelined`
    (register double buffering) does not apply.
    `fragment` f > 0 (dividing tm and tn): each thread's tm x tn tile is made of f x f
    fragments strided by the block's threads times f (CUTLASS's SIMT interleave): rows
    ty*f + {0..f-1} + s*f*(bm/tm), columns likewise, so that a warp's 128-bit loads of B
    (and of transposed A) cover consecutive 16-byte pieces, free of bank conflicts. The
    thread tile is `loop-tile` by f x f, whose f-chunk loops gpu-map-loops spreads
    cyclically over the threads and loop-unroll unrolls. 0: contiguous tm x tn tiles.
    `warp_lanes` (LX, LY): warp tiles (gpu-map-loops{warp-lanes}): a warp runs an LX x LY
    sub-grid of the threads. `block_group`: grouped block order (gpu-map-loops{block-group}).
    `swizzle`: XOR-swizzled shared tiles (promote{swizzle}) instead of padded rows."""
    r = matmul_roles(summary)
    if r is None:
        raise LoopoptError(f"matmul recipe: @{summary.func} is not C[i, j] += A[i, k] * B[k, j]")
    varying = [loop.name for loop in summary.loops if loop.varies]
    if varying and not padded:
        raise LoopoptError(
            f"matmul recipe: loop '{varying[0]}' of @{summary.func} has bounds that vary "
            "(its tiles are padded: padded=True)"
        )
    band = [*r.batch, r.i, r.j, r.k]  # i outside j: j on threadIdx.x, as x_loop says
    size = {r.i: bm, r.j: bn, r.k: bk, **dict.fromkeys(r.batch, 1)}  # a block per batch
    thread = {r.i: tm, r.j: tn}
    p0, p1 = [name for name in band if name not in r.batch][:2]
    kt = fresh(summary, f"{r.k}_t")
    threads = (bn // tn, bm // tm, 1)
    if fragment and (fragment < 0 or tm % fragment or tn % fragment):
        raise LoopoptError(f"matmul recipe: fragment={fragment} must divide tm={tm} and tn={tn}")
    mapping = GpuMapLoopsPass(
        block=threads[:2],
        min_blocks_per_sm=min_blocks,
        max_registers="cap",  # the register tile, not ptxas's occupancy target
        copy_vector=max(1, copy_vector),
        block_group=block_group,
        warp_lanes=tuple(warp_lanes),
    )
    # A tile's copy (clipped to its loops' trip counts) is spread over the block's threads,
    # `copy_vector` elements at a time where they divide its rows, in a round loop named
    # <array>_copy_in when it has more of those than the block has threads.
    box = {
        name: size[name] if padded else min(size[name], summary.loop(name).trip) for name in band
    }
    copies: list[ModulePass] = []
    for operand in r.operands:
        row = box[r.k] if operand.k_last else box[operand.loop]
        vector = copy_vector if row % copy_vector == 0 else 1
        if box[operand.loop] * box[r.k] // vector > threads[0] * threads[1]:
            copies.append(_unroll_full(f"{copy_prefix(operand.key)}_copy_in"))
    taken = [*(loop.name for loop in summary.loops), *(fresh(summary, f"{n}_t") for n in band)]
    tiles = [fresh_name(set(taken), f"{p}_t") for p in (p0, p1)]  # the thread tile's loops
    # a thread's fragments along p1 and p0, loops where it has more than one (unrolled too)
    split = [t for t, p in zip(tiles[::-1], (p1, p0), strict=True) if thread[p] > fragment]
    pieces = tuple(split) if fragment else ()
    # fragments: their loops sit outside k; padded tiles: guarded, 4.5x slower on the H200
    # with k outside (syrk at PolyBench's LARGE size: 3.87 against 0.855 ms)
    llvm_k = LLVM_UNROLLS_K and not fragment and not padded
    k_outside = outer_product or llvm_k
    compute: list[ModulePass] = [_unroll_full(name) for name in (r.k, p1, p0, *pieces)]
    if llvm_k:  # the register tile unrolled inside k, k left to LLVM
        compute = [
            _unroll_full(p1),
            _unroll_full(p0),
            LoopUnrollPass(unroll_full=True, in_llvm=True, loop=r.k),
            ScalarReplacePass(loop=r.k),
        ]
    ring = stages if stages >= 2 else 0
    pipelined = pipelined and not ring
    # a batched operand keeps its layout (promote's transpose reverses every dimension)
    transposed = () if ring or r.batch else tuple(o.key for o in r.operands if o.k_last)
    copy_ahead: list[ModulePass] = []
    if ring:
        copy_ahead = [PipelineCopiesPass(loop=kt, stages=ring, cp_async=True)]
    elif pipelined:
        copy_ahead = [PipelineCopiesPass(loop=kt)]
    promotes: list[ModulePass] = [
        PromotePass(
            arrays=(o.array,),
            loop=kt,
            memory_space="shared",
            pad=0 if swizzle else PAD,
            swizzle=swizzle,
            transpose=o.key in transposed,
            indexed_by=() if o.key == o.array else (o.loop,),
        )
        for o in r.operands
    ]
    thread_sizes = (fragment, fragment) if fragment else (thread[p0], thread[p1])
    thread_tile = LoopTilePass(loops=(p0, p1), tile_sizes=thread_sizes)
    tiling: list[ModulePass]
    if padded:  # the thread tile first: pad-tiles pads its loops too, promote sees the pads
        # run their box (every tile loop: the reorder may move which bounds vary)
        boxed = [fresh(summary, f"{n}_t") for n in band] if varying else []
        tiling = [thread_tile, PadTilesPass(loops=(*boxed, *tiles, p0, p1, r.k)), *promotes]
    else:
        tiling = [*promotes, thread_tile]
    steps: list[ModulePass] = [
        *reorder(summary, band),
        LoopTilePass(tile_sizes=tuple(size[n] for n in band)),
        *tiling,
        *([LoopInterchangePass(loops=(p0, p1, r.k), permutation=(1, 2, 0))] * k_outside),
        mapping,
        *copies,
        *copy_ahead,
        *compute,
        ScalarReplacePass(loop=kt),
        *([VersionGuardsPass(loop=kt)] if padded and varying else []),  # a triangle's selects
    ]
    params = [("bm", bm), ("bn", bn), ("bk", bk), ("tm", tm), ("tn", tn)]
    params += [("pipelined", int(pipelined))]
    params += [
        (k, int(v))
        for k, v in (
            ("min_blocks", min_blocks),
            ("outer_product", outer_product),
            ("padded", padded),
            ("copy_vector", copy_vector if copy_vector > 1 else 0),
            ("stages", ring),
            ("fragment", fragment),
            ("lanes_x", warp_lanes[0] if warp_lanes else 0),
            ("lanes_y", warp_lanes[1] if warp_lanes else 0),
            ("block_group", block_group if block_group > 1 else 0),
            ("swizzle", swizzle),
        )
        if v
    ]
    extra = [("copy_vector", copy_vector)] * (copy_vector > 1) + [("stages", ring)] * (ring > 0)
    extra += [("fragment", fragment)] * (fragment > 0) + [("block_group", block_group)] * (
        block_group > 1
    )
    extra += [("lanes_x", warp_lanes[0]), ("lanes_y", warp_lanes[1])] if warp_lanes else []
    extra += [("swizzle", 1)] * swizzle
    return Schedule(
        recipe="matmul",
        params=tuple(params),
        pipeline="",
        block_tile=tuple((n, size[n]) for n in band),
        thread_tile=((p0, thread[p0]), (p1, thread[p1])),
        threads=threads,
        x_loop=r.j,
        shared=tuple(o.key for o in r.operands),
        pad=0 if swizzle else PAD,
        transposed=transposed,
        unrolled=(r.k, p1, p0, *pieces),
        registers=(r.c,),
        pipelined=pipelined,
        min_blocks=min_blocks,
        extra=tuple(extra),
        steps=tuple(steps),
    )


def conv(
    summary: NestSummary, by: int, bx: int, rows: int, constant: bool = False, cols: int = 1
) -> Schedule:
    """out[o..] += image[o.. + f..] * filt[f..], 2-D or 3-D. 2-D: a by x bx output tile per
    block, `rows` consecutive outputs of a column per thread (threads bx x by/rows, the
    output's last loop on x), the filter loops and the rows unrolled: each image element a
    thread needs is loaded once and reused from a register by every (output, tap) pair.
    `cols` > 1 (2-D only; it must divide bx): a rows x cols register tile per thread, `cols`
    adjacent outputs of a row too (threads bx/cols x by/rows). A thread then loads
    (rows + fh - 1) x (cols + fw - 1) image values for rows x cols x fh x fw FMAs: with an
    8x8 filter, 207 loads for 2048 FMAs at 16 x 2, where 16 x 1 loads 184 for 1024. 3-D:
    one output plane per grid z, a by x bx tile of the other two; the first filter loop stays
    a loop, the other taps and the rows are unrolled inside it, and the outputs stay in
    registers across it (scalar-replace). `by` must divide the rows loop's trip count and
    `rows` divide `by` (full unrolls). `constant`: the weights (filt) in constant memory
    (gpu-constant-memory): their loads, at the same constant offsets in every thread, leave
    the load/store unit; the array is copied in before each launch."""
    r = conv_roles(summary)
    if r is None:
        raise LoopoptError(f"conv recipe: @{summary.func} is not out[o] += image[o + f] * ...")
    order = [*r.outs, *r.filters]
    threads = (bx // cols, by // rows, 1)
    if cols > 1 and len(r.outs) != 2:
        raise LoopoptError("conv recipe: column tiles (cols > 1) are for 2-D convolutions")
    if cols < 1 or bx % cols:
        raise LoopoptError(f"conv recipe: cols={cols} must divide the block tile's {bx} columns")
    if len(r.outs) == 2:
        (y, x), (f0, f1) = r.outs, r.filters
        columns = [LoopTilePass(loops=(x,), tile_sizes=(cols,))] if cols > 1 else []
        thread_x = f"{x}_t2" if cols > 1 else x
        steps: list[ModulePass] = [
            LoopTilePass(tile_sizes=(by, bx)),
            LoopTilePass(loops=(y,), tile_sizes=(rows,)),
            *columns,
            LoopInterchangePass(loops=(y, thread_x), permutation=(1, 0)),
            GpuMapLoopsPass(block=(bx // cols, by // rows)),
        ]
        unrolled, registers = ((x,) if columns else ()) + (f1, f0, y), ()
        steps += [_unroll_full(name) for name in unrolled]
    else:
        (_, y, x), (f0, f1, f2) = r.outs, r.filters
        steps = [
            LoopTilePass(tile_sizes=(0, by, bx)),
            LoopTilePass(loops=(y,), tile_sizes=(rows,)),
            LoopInterchangePass(loops=(y, x), permutation=(1, 0)),
            GpuMapLoopsPass(block=(bx, by // rows, 1)),
            # the other taps unrolled, then the rows jammed into the first filter loop (an
            # initialization of the outputs ahead of it stays outside): row after row, each
            # with all its taps (taps outside the rows hold twice the registers: 128 against
            # 64 at 16 rows, and conv3d 608³ ran 6.45 against 5.38 ms on the H200)
            *(_unroll_full(name) for name in (f2, f1)),
            LoopUnrollJamPass(loop=y, unroll_jam_factor=rows),
            _unroll_full(y),
            ScalarReplacePass(loop=f0),
        ]
        unrolled, registers = (f2, f1, y), (r.out,)
    in_constant = r.weights if constant else ()
    if in_constant:
        steps.append(GpuConstantMemoryPass(arrays=in_constant))
    return Schedule(
        recipe="conv",
        params=(("by", by), ("bx", bx), ("rows", rows))
        + (("cols", cols),) * (cols > 1)
        + (("constant", 1),) * bool(in_constant),
        pipeline="",
        block_tile=((y, by), (x, bx)),
        thread_tile=((y, rows),) + ((x, cols),) * (cols > 1),
        threads=threads,
        x_loop=x,
        unrolled=unrolled,
        registers=registers,
        constant=in_constant,
        steps=(*reorder(summary, order), *steps),
    )


def stencil(summary: NestSummary, by: int, bx: int, rows: int) -> Schedule:
    """out[y, x] = f(a[y + dy, x + dx] ...): a by x bx tile per block, `rows` consecutive rows
    of a column per thread (threads bx x by/rows), unrolled by `rows` so that the rows share
    their loads; partial tiles keep guards and remainders (any trip counts)."""
    r = stencil_roles(summary)
    if r is None:
        raise LoopoptError(f"stencil recipe: @{summary.func} is not a 2-D stencil")
    steps = [
        LoopTilePass(tile_sizes=(by, bx)),
        LoopTilePass(loops=(r.y,), tile_sizes=(rows,)),
        LoopInterchangePass(loops=(r.y, r.x), permutation=(1, 0)),
        GpuMapLoopsPass(block=(bx, by // rows)),
        LoopUnrollPass(unroll_factor=rows, loop=r.y),
    ]
    return Schedule(
        recipe="stencil",
        params=(("by", by), ("bx", bx), ("rows", rows)),
        pipeline="",
        block_tile=((r.y, by), (r.x, bx)),
        thread_tile=((r.y, rows),),
        threads=(bx, by // rows, 1),
        x_loop=r.x,
        unrolled=(r.y,),
        steps=(*reorder(summary, [r.y, r.x]), *steps),
    )


def map_nest(summary: NestSummary, block: Sequence[int], unroll: int = 1) -> Schedule:
    """Any nest with a parallel loop: up to three loops of its first parallel run (the one
    gpu-map-loops puts on threadIdx.x and the innermost others) tiled by the block shape
    (`block`: threads along x, y, z), one iteration per thread; the nest's innermost loop,
    when it lies inside the run, unrolled `unroll` times (with a remainder). Loops whose
    bounds vary with outer ones first run their bounding box, with guards (`pad-tiles`).
    Sequential loops outside the run stay on the host."""
    r = map_roles(summary)
    if r is None:
        raise LoopoptError(f"map recipe: no loop of @{summary.func} is parallel")
    if unroll > 1 and r.inner is None:
        raise LoopoptError(f"map recipe: no loop of @{summary.func} runs inside the mapped ones")
    shape = (*block, 1, 1, 1)[:3]
    size = dict(zip(r.axes, shape, strict=False))
    varying = tuple(loop.name for loop in summary.loops if loop.varies)
    steps: list[ModulePass] = [
        *([PadTilesPass(loops=varying)] if varying else []),  # the bounding box, guarded
        LoopTilePass(loops=tuple(r.mapped), tile_sizes=tuple(size[n] for n in r.mapped)),
        GpuMapLoopsPass(block=tuple(shape[: len(r.axes)])),
        *([LoopUnrollPass(unroll_factor=unroll, loop=r.inner)] if unroll > 1 else []),
    ]
    return Schedule(
        recipe="map",
        params=(("bx", shape[0]), ("by", shape[1]), ("bz", shape[2]), ("unroll", unroll)),
        pipeline="",
        block_tile=tuple((n, size[n]) for n in r.mapped),
        thread_tile=(),
        threads=(shape[0], shape[1], shape[2]),
        x_loop=r.axes[0],
        extra=(("host_loops", r.host),) if r.host else (),
        steps=(*reorder(summary, r.order), *steps),
    )
