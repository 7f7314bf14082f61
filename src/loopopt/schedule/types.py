"""The values schedule/ works on: a loop nest's facts, a device, and a schedule (data).

    summary = summarize(fn)                       # schedule/summary.py: NestSummary
    for s in candidates(summary, device):         # schedule/space.py: Schedule values
        cost = predict(summary, s, device)        # schedule/cost_model.py: Prediction
    s.passes                                      # (LoopTilePass(tile_sizes=(128, 64, 16)), ...)
    s.pipeline                                    # "loop-tile{tile-sizes=128,64,16},..."

A schedule is a typed value: the sequence of the same pass objects the CLI builds (`passes`),
printable as pipeline text (`pipeline`, replayable with loopopt-opt -p) and parsed from it
(pass_pipeline.py). It is self-describing: besides its passes it states the mapping they
produce (block tile, per-thread tile, which loop runs along threadIdx.x, what is staged in
shared memory, what is unrolled), so the cost model reads the schedule, never the passes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields

from xdsl.passes import ModulePass

from loopopt.target import SHARED_BANKS, WARP_SIZE


class _CachedHash:
    """A frozen dataclass hashed once (the model's memo tables hash summaries, accesses and
    schedules at every lookup); the hash stays out of pickles (strings hash differently in
    another process)."""

    def __hash__(self) -> int:
        return self._hash

    @functools.cached_property
    def _hash(self) -> int:
        return hash(tuple(getattr(self, f.name) for f in fields(self) if f.compare))  # pyright: ignore[reportArgumentType]

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}


@dataclass(frozen=True)
class Loop:
    """One loop of the nest's perfect band, outermost first."""

    name: str
    trip: int
    """Constant trip count; where the bounds vary, the trip count of its bounding box."""
    parallel: bool
    """Carries no dependence (exact analysis)."""
    varies: bool = False
    """Its bounds depend on outer loops of the band (syrk's `j < i + 1`): `trip` covers the
    bounding box, which a schedule runs with guards."""
    lower_varies: bool = False
    """Its lower bound depends on outer loops of the band (covariance's `j = i to m`)."""


@dataclass(frozen=True)
class Access(_CachedHash):
    """One affine load or store in the innermost body: array[coeffs · ivs + offset]."""

    __hash__ = _CachedHash.__hash__

    array: str
    """The memref's name (its SSA name hint, as `promote{arrays=}` uses it)."""
    write: bool
    coeffs: tuple[tuple[int, ...], ...]
    """Per array dimension, the coefficient of each band loop (outermost first)."""
    offset: tuple[int, ...]
    """Per array dimension, the constant term."""
    shape: tuple[int, ...]
    elem_bytes: int


def operand_key(array: str, loop: str) -> str:
    """The name of the reads of `array` whose indices use loop `loop` when a schedule stages
    them apart from the array's other reads (`promote{arrays=A indexed-by=i}`): `A@i`."""
    return f"{array}@{loop}"


def split_key(key: str) -> tuple[str, str | None]:
    """(array, loop) of an operand key; loop None for a plain array name."""
    array, _, loop = key.partition("@")
    return array, loop or None


@dataclass(frozen=True)
class NestSummary(_CachedHash):
    """The facts of one perfect affine nest that the space and the cost model need."""

    __hash__ = _CachedHash.__hash__

    func: str
    loops: tuple[Loop, ...]
    accesses: tuple[Access, ...]
    flops: int
    """Floating-point operations per innermost iteration (a multiply-add counts 2)."""
    initialized: tuple[str, ...] = ()
    """Arrays the nest sets to a constant before its reduction loops (`O[i, j] = 0` ahead of
    the filter loops): their accumulations read no element from memory."""

    def loop(self, name: str) -> Loop:
        return next(loop for loop in self.loops if loop.name == name)

    def index(self, name: str) -> int:
        return [loop.name for loop in self.loops].index(name)

    @property
    def iterations(self) -> int:
        total = 1
        for loop in self.loops:
            total *= loop.trip
        return total


@dataclass(frozen=True)
class Device:
    """What the cost model and the resource checks know of a GPU (schedule/device.py fills it)."""

    name: str
    arch: str
    """sm_80, sm_89, sm_90."""
    sms: int
    clock_ghz: float
    fp32_lanes_per_sm: int
    """FP32 FMA lanes per SM per clock (128 on sm_80..sm_90 for fp32 FFMA issue; sm_80 = 64)."""
    dram_gbps: float
    l2_bytes: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    max_regs_per_thread: int
    smem_per_sm: int
    smem_per_block: int
    """Without the dynamic opt-in (48 KiB)."""
    smem_per_block_optin: int
    warp_size: int = WARP_SIZE
    shared_banks: int = SHARED_BANKS
    launch_us: float = 3.0
    tensor_tflops: float = 0.0
    """Dense f16/bf16 tensor-core peak with f32 accumulation, TFLOP/s (0: none)."""
    tf32_tflops: float = 0.0
    """Dense tf32 tensor-core peak, TFLOP/s."""


@dataclass(frozen=True)
class Schedule(_CachedHash):
    """One candidate: a pass pipeline plus the mapping it produces (for the cost model).

    Recipes give `steps` (the pass objects) and leave `pipeline` empty: it is filled with their
    text. A schedule read back from text (a tuning cache, a results file) has only `pipeline`;
    `passes` parses it. Equality and hashing use the text, which the passes print canonically.
    """

    __hash__ = _CachedHash.__hash__

    recipe: str
    """Which recipe of schedule/recipes.py made it (matmul, conv, stencil, map)."""
    params: tuple[tuple[str, int], ...]
    """The recipe's parameters, in a fixed order (e.g. (("bm", 128), ("bn", 64), ...))."""
    pipeline: str
    """The loopopt pass pipeline that applies it (replayable with loopopt-opt -p): the text of
    `steps` when they are given."""
    block_tile: tuple[tuple[str, int], ...]
    """Per tiled loop, its extent per thread block; reduction loops: the chunk staged per step."""
    thread_tile: tuple[tuple[str, int], ...]
    """Per parallel loop, the extent one thread computes (register tile / rows per thread)."""
    threads: tuple[int, int, int]
    """Block shape (x, y, z)."""
    x_loop: str
    """The loop whose consecutive iterations go to consecutive threadIdx.x."""
    shared: tuple[str, ...] = ()
    """Arrays staged in shared memory per block tile (promote), or operand keys (`A@i`,
    `operand_key`) where an array's reads on two sides of a contraction get a tile each."""
    pad: int = 0
    """Elements of padding per shared row."""
    transposed: tuple[str, ...] = ()
    """Shared buffers (entries of `shared`) stored with their dimensions reversed."""
    unrolled: tuple[str, ...] = ()
    """Loops fully unrolled inside a thread (their reuse stays in registers)."""
    registers: tuple[str, ...] = ()
    """Arrays whose per-thread tile is held in registers across the reduction (scalar-replace)."""
    constant: tuple[str, ...] = ()
    """Read-only arrays the kernel reads from constant memory (gpu-constant-memory)."""
    pipelined: bool = False
    """Copy-in of step t + 1 issued during step t (register double buffering)."""
    min_blocks: int = 0
    extra: tuple[tuple[str, int], ...] = field(default=())
    """Anything else a recipe wants the model to know."""
    steps: tuple[ModulePass, ...] = field(default=(), compare=False, repr=False)
    """The pass objects that apply it, in order (`passes` reads them)."""

    def __post_init__(self) -> None:
        if not self.steps:
            return
        from loopopt.pass_pipeline import pipeline_text

        text = pipeline_text(self.steps)
        if not self.pipeline:
            object.__setattr__(self, "pipeline", text)
        elif self.pipeline != text:
            raise ValueError(f"schedule pipeline '{self.pipeline}' is not its steps' '{text}'")

    @property
    def passes(self) -> tuple[ModulePass, ...]:
        """The pass objects that apply it: `steps`, else those of the `pipeline` text."""
        if self.steps or not self.pipeline:
            return self.steps
        from loopopt.pass_pipeline import parse_pipeline

        return tuple(parse_pipeline(self.pipeline))

    def param(self, name: str) -> int:
        return dict(self.params)[name]

    @property
    def stages(self) -> int:
        """Shared buffers of a cp.async ring (pipeline-copies{stages=N async}); 1: none."""
        return max(1, dict(self.extra).get("stages", 1))

    @property
    def threads_per_block(self) -> int:
        x, y, z = self.threads
        return x * y * z

    def key(self) -> str:
        """A short stable name: recipe and parameters (`matmul bm=128 bn=64 ...`)."""
        return " ".join([self.recipe] + [f"{k}={v}" for k, v in self.params])
