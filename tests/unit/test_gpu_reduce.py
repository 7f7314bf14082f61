"""Block and grid reductions: the butterfly that finishes a block's reduction tree
(loops/gpu_warp), grid-wide reductions by partials or atomics (loops/gpu_grid,
lowering/atomic), and the emulator's model of `nvvm.shfl.sync` (gpu_shuffle_emulator), checked
on random inputs against numpy for + * min max over f32/f64/i32/i64, sizes that do not divide
the block."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_emulator import emulate
from gpu_kernels import WARP_SUM
from gpu_shuffle_emulator import take_errors
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import gpu

from loopopt.context import make_context, parse_module, verify_ir
from loopopt.loops.gpu_map import MAPPING
from loopopt.loops.gpu_warp import clamp_operand, warp_width
from loopopt.passes.gpu_map_loops import GpuMapLoopsPass
from loopopt.runtime.cpu import run_function

OPS = {
    ("add", "f"): "arith.addf",
    ("mul", "f"): "arith.mulf",
    ("min", "f"): "arith.minimumf",
    ("max", "f"): "arith.maximumf",
    ("add", "i"): "arith.addi",
    ("mul", "i"): "arith.muli",
    ("min", "i"): "arith.minsi",
    ("max", "i"): "arith.maxsi",
}
TYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}
SIZES = (1, 31, 33, 1000, (1 << 16) + 3)


def total_text(kind: str, t: str) -> str:
    """out[0] = init ⊕ X[0] ⊕ … over a dynamic size: a grid-wide reduction."""
    op = OPS[(kind, t[0])]
    return f"""
func.func @total(%X: memref<?x{t}>, %out: memref<1x{t}>, %init: {t}) {{
  %c0 = arith.constant 0 : index
  %n = memref.dim %X, %c0 : memref<?x{t}>
  %s = affine.for %i = 0 to %n iter_args(%acc = %init) -> ({t}) {{
    %x = affine.load %X[%i] : memref<?x{t}>
    %a = {op} %acc, %x : {t}
    affine.yield %a : {t}
  }} {{loopopt.name = "i"}}
  affine.store %s, %out[0] : memref<1x{t}>
  return
}}
"""


def rows_text(kind: str, t: str) -> str:
    """out[i] = init ⊕ A[i, 0] ⊕ …: a block per row (reductions=block)."""
    op = OPS[(kind, t[0])]
    return f"""
func.func @rows(%A: memref<3x?x{t}>, %out: memref<3x{t}>, %init: {t}) {{
  %c1 = arith.constant 1 : index
  %m = memref.dim %A, %c1 : memref<3x?x{t}>
  affine.for %i = 0 to 3 {{
    %s = affine.for %j = 0 to %m iter_args(%acc = %init) -> ({t}) {{
      %x = affine.load %A[%i, %j] : memref<3x?x{t}>
      %a = {op} %acc, %x : {t}
      affine.yield %a : {t}
    }} {{loopopt.name = "j"}}
    affine.store %s, %out[%i] : memref<3x{t}>
  }} {{loopopt.name = "i"}}
  return
}}
"""


def inputs(kind: str, t: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = TYPES[t]
    if kind == "mul" and t[0] == "f":
        return rng.uniform(0.999, 1.001, shape).astype(dtype)
    if kind == "mul":  # odd factors: the product wraps around, exactly, in any order
        signs = rng.integers(0, 2, shape) * 2 - 1
        return (signs * rng.choice([1, 3], shape)).astype(dtype)
    if t[0] == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def reference(kind: str, t: str, x: np.ndarray, init: float | int, axis: int | None) -> object:
    dtype = TYPES[t]
    if kind == "add":
        return (x.astype(np.float64 if t[0] == "f" else dtype).sum(axis) + init).astype(dtype)
    if kind == "mul":
        with np.errstate(over="ignore"):
            return (x.prod(axis, dtype=dtype) * dtype(init)).astype(dtype)
    reduce = np.minimum if kind == "min" else np.maximum
    return reduce(reduce.reduce(x, axis), dtype(init)).astype(dtype)


def emulated(text: str, name: str, args: list[object], **options: object) -> list[object]:
    module = parse_module(text, "test.mlir", make_context())
    GpuMapLoopsPass(**options).apply(make_context(), module)  # type: ignore[arg-type]
    verify_ir(module, "after gpu-map-loops")
    emulate(module)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_function(module, name, got)
    return got


def check_total(
    kind: str, t: str, sizes: tuple[int, ...], threads: int = 256, reductions: str = "auto"
) -> None:
    for n in sizes:
        x = inputs(kind, t, (n,), seed=n)
        init = TYPES[t](3 if kind != "mul" else 1)
        got = emulated(
            total_text(kind, t), "total", [x, np.zeros(1, TYPES[t]), init], region_threads=threads
        )[1]
        expected = reference(kind, t, x, init, None)
        rtol = 1e-4 if t == "f32" else 1e-10
        np.testing.assert_allclose(got[0], expected, rtol=rtol, err_msg=f"{kind} {t} n={n}")


def check_rows(kind: str, t: str, sizes: tuple[int, ...], threads: int) -> None:
    for m in sizes:
        a = inputs(kind, t, (3, m), seed=m)
        init = TYPES[t](1)
        got = emulated(
            rows_text(kind, t),
            "rows",
            [a, np.zeros(3, TYPES[t]), init],
            reductions="block",
            region_threads=threads,
        )[1]
        expected = reference(kind, t, a, init, 1)
        rtol = 1e-4 if t == "f32" else 1e-10
        np.testing.assert_allclose(got, expected, rtol=rtol, err_msg=f"{kind} {t} m={m}")


def test_warp_width_is_the_largest_power_of_two_dividing_the_block() -> None:
    from xdsl.dialects.builtin import f16, f32, f64, i32, i64

    assert [warp_width(n, [f32]) for n in (256, 96, 48, 24, 100, 7, 1)] == [32, 32, 16, 8, 4, 1, 1]
    assert warp_width(256, [f64, i64, i32]) == 32
    assert warp_width(256, [f32, f16]) == 1  # f16 is not shuffled: the tree runs to its end
    assert clamp_operand(32) == 31 and clamp_operand(8) == (24 << 8) | 31


@pytest.mark.parametrize(
    ("kind", "t"), [("add", "f32"), ("max", "f64"), ("mul", "i32"), ("min", "i64")]
)
def test_grid_reductions_compute_what_numpy_does(kind: str, t: str) -> None:
    """Dynamic sizes: the grid path (1024 blocks of partials), whatever n is."""
    check_total(kind, t, (1, 33, SIZES[-1]))


@pytest.mark.parametrize(
    ("kind", "t", "threads"),
    [("add", "f64", 256), ("max", "f32", 96), ("min", "i32", 24), ("mul", "i64", 48)],
)
def test_block_reductions_compute_what_numpy_does(kind: str, t: str, threads: int) -> None:
    """A block per row: 256 and 96 threads end in 32-lane butterflies, 24 and 48 in 8- and
    16-lane ones (the member mask of each segment computed from the thread id)."""
    check_rows(kind, t, SIZES[:4], threads)


@pytest.mark.parametrize(
    ("kind", "t"), [("add", "f32"), ("max", "f32"), ("min", "f64"), ("add", "i64"), ("max", "i32")]
)
def test_atomic_grid_reductions_compute_what_numpy_does(kind: str, t: str) -> None:
    """reductions=grid-atomic: the accumulator is reset, each block adds its total
    atomically (float min/max by the ordered-integer trick), the initial value counts once."""
    check_total(kind, t, (1, 33, SIZES[-1]), reductions="grid-atomic")


def test_atomic_grid_reductions_reset_then_add_then_read() -> None:
    module = parse_module(total_text("max", "f32"), "test.mlir", make_context())
    GpuMapLoopsPass(reductions="grid-atomic").apply(make_context(), module)
    kernels = [op for op in module.walk() if isinstance(op, gpu.FuncOp)]
    summaries = [{k: v.data for k, v in f.attributes[MAPPING].data.items()} for f in kernels]
    assert summaries == [
        {"region": "one thread"},
        {"grid_reduction": "i", "blocks": "atomics"},
        {"region": "one thread"},
    ]
    product = parse_module(total_text("mul", "f32"), "test.mlir", make_context())
    GpuMapLoopsPass(reductions="grid-atomic").apply(make_context(), product)
    assert "partials" in str(product) and "atomic_rmw" not in str(product)  # no atomic multiply


@pytest.mark.slow
@pytest.mark.parametrize("t", list(TYPES))
@pytest.mark.parametrize("kind", ["add", "mul", "min", "max"])
def test_every_reduction_of_every_type(kind: str, t: str) -> None:
    check_total(kind, t, SIZES)
    if kind != "mul":
        check_total(kind, t, SIZES, reductions="grid-atomic")
    for threads in (256, 96, 24):
        check_rows(kind, t, SIZES[:4], threads)


@settings(max_examples=6)
@given(
    kind=st.sampled_from(["add", "mul", "min", "max"]),
    t=st.sampled_from(list(TYPES)),
    m=st.integers(1, 700),
    threads=st.sampled_from([32, 48, 160]),
)
def test_random_block_reductions(kind: str, t: str, m: int, threads: int) -> None:
    """Property: a block per row reduces any row length, with any block size that the
    butterfly's segments fit (32 lanes for 32 and 160 threads, 16 for 48), to what numpy
    computes."""
    check_rows(kind, t, (m,), threads)


def test_the_emulator_runs_a_correct_butterfly(rng: np.random.Generator) -> None:
    a = rng.standard_normal(256).astype(np.float32)
    out = np.zeros(8, np.float32)
    module = parse_module(WARP_SUM, "warp.mlir", make_context())
    emulate(module)
    run_function(module, "warp_sum", [a, out])
    np.testing.assert_allclose(out, a.reshape(8, 32).sum(1), rtol=1e-5)
    assert take_errors() == []


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            ("%all = arith.constant -1", "%all = arith.constant 65535"),
            "the thread is not in its member mask",
        ),
        (
            ("%all = arith.constant -1", "%all = arith.constant 65535"),
            "the source lane is not in the member mask",
        ),
        (("%c128 = arith.constant 128", "%c128 = arith.constant 112"), "the source lane is absent"),
    ],
)
def test_the_emulator_reports_undefined_shuffles(change: tuple[str, str], error: str) -> None:
    """A thread outside its mask, a source lane past the block's last thread (a partial warp):
    PTX leaves the result undefined, the emulator records an error."""
    text = WARP_SUM.replace(*change)
    module = parse_module(text, "warp.mlir", make_context())
    emulate(module)
    run_function(module, "warp_sum", [np.ones(256, np.float32), np.zeros(8, np.float32)])
    errors = set(take_errors())
    assert error in errors, errors


def test_the_emulator_follows_ptx_for_a_clamped_down_shuffle() -> None:
    """`down` by 4 in segments of 16 lanes (c = 16 << 8 | 31): lanes 12..15 of each segment
    keep their own value."""
    text = WARP_SUM.replace("bfly %all, %v0, %c16, %clamp", "down %all, %v0, %four, %seg")
    segments = "%seg = arith.constant 4127 : i32\n      %four = arith.constant 4 : i32"
    text = text.replace(
        "%clamp = arith.constant 31 : i32", f"%clamp = arith.constant 31 : i32\n      {segments}"
    )
    text = text.replace("%v1 = arith.addf %v0, %s16", "%v1 = arith.addf %s16, %s16")
    a = np.arange(256, dtype=np.float32)
    out = np.zeros(8, np.float32)
    module = parse_module(text, "warp.mlir", make_context())
    emulate(module)
    run_function(module, "warp_sum", [a, out])
    lanes = np.arange(32)
    source = np.where(lanes % 16 + 4 <= 15, lanes + 4, lanes)
    expected = [2 * (32 * w + source[:16]).sum() for w in range(8)]  # lane 0's half
    np.testing.assert_allclose(out, expected)
    assert take_errors() == []


@pytest.mark.gpu
@pytest.mark.parametrize("reductions", ["auto", "grid-atomic"])
@pytest.mark.parametrize("t", list(TYPES))
@pytest.mark.parametrize("kind", ["add", "mul", "min", "max"])
def test_reductions_on_the_gpu(kind: str, t: str, reductions: str) -> None:
    """The same reductions on the device: grid-wide (partials or atomics) over every size, and
    a block per row with 96 and 24 threads (32- and 8-lane butterflies)."""
    import loopopt

    dtype = TYPES[t]
    rtol = 1e-4 if t == "f32" else 1e-10
    for n in SIZES:
        x = inputs(kind, t, (n,), seed=n)
        out = np.zeros(1, dtype)
        pipeline = f"gpu-map-loops{{reductions={reductions}}}"
        loopopt.compile(total_text(kind, t), "total", pipeline=pipeline, target="gpu")(
            x, out, dtype(3 if kind != "mul" else 1)
        )
        expected = reference(kind, t, x, dtype(3 if kind != "mul" else 1), None)
        atol = rtol * float(np.abs(x).astype(np.float64).sum()) if kind == "add" else 0.0
        np.testing.assert_allclose(out[0], expected, rtol=rtol, atol=atol, err_msg=f"n={n}")
    for threads in (96, 24):
        a = inputs(kind, t, (3, 1000), seed=threads)
        rows = np.zeros(3, dtype)
        pipeline = f"gpu-map-loops{{reductions=block region-threads={threads}}}"
        loopopt.compile(rows_text(kind, t), "rows", pipeline=pipeline, target="gpu")(
            a, rows, dtype(1)
        )
        # a reassociated sum is accurate to rtol of the sum of magnitudes (cancellation)
        scale = np.abs(a).astype(np.float64).sum(axis=1) if kind == "add" else 0.0
        want = reference(kind, t, a, dtype(1), 1)
        np.testing.assert_allclose(rows, want, rtol=rtol, atol=float(np.max(rtol * scale)))
