"""gpu-mma: matmul warp tiles on tensor cores (nvgpu.ldmatrix + nvgpu.mma.sync), run on the CPU
through the GPU emulator (its ldmatrix and mma.sync follow PTX's fragment layouts:
gpu_mma_emulator.py) against numpy, and refusals; on a device (marked `gpu`) the same nests."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from gpu_emulator import emulate
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from loopopt.context import make_context, verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.runtime.cpu import run_function
from loopopt.universe import all_passes

TYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}


def matmul_text(m: int, n: int, k: int, element: str, form: str = "ab") -> str:
    """C[i, j] += A · B with A[i, k] or (form "atb") A[k, i], B[k, j] or (form "abt") B[j, k]."""
    a_shape, a_index = ((k, m), "%k, %i") if form == "atb" else ((m, k), "%i, %k")
    b_shape, b_index = ((n, k), "%j, %k") if form == "abt" else ((k, n), "%k, %j")
    a_t, b_t = (
        f"memref<{a_shape[0]}x{a_shape[1]}x{element}>",
        f"memref<{b_shape[0]}x{b_shape[1]}x{element}>",
    )
    c_t = f"memref<{m}x{n}xf32>"
    widen = element != "f32"
    ext_a = f"%ae = arith.extf %a : {element} to f32" if widen else ""
    ext_b = f"%be = arith.extf %b : {element} to f32" if widen else ""
    a_val, b_val = ("%ae", "%be") if widen else ("%a", "%b")
    return f"""
func.func @mm(%A: {a_t}, %B: {b_t}, %C: {c_t}) {{
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = 0 to {k} {{
        %a = affine.load %A[{a_index}] : {a_t}
        %b = affine.load %B[{b_index}] : {b_t}
        {ext_a}
        {ext_b}
        %p = arith.mulf {a_val}, {b_val} : f32
        %c = affine.load %C[%i, %j] : {c_t}
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : {c_t}
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  func.return
}}
"""


def tensor_core_pipeline(
    bm: int, bn: int, bk: int, wm: int, wn: int, padded: bool = False, extra: str = ""
) -> str:
    pad = "pad-tiles{loops=i_t2,j_t2,i,j,k}," if padded else ""
    tile = f"loop-tile{{tile-sizes={bm},{bn},{bk}}},loop-tile{{loops=i,j tile-sizes={wm},{wn}}},"
    promote = "".join(
        f"promote{{arrays={x} loop=k_t memory-space=shared pad=8}}," for x in ("A", "B")
    )
    block = f"{32 * bn // wn},{bm // wm}"
    return f"{tile}{pad}{promote}gpu-mma{{{extra}}},gpu-map-loops{{block={block}}}"


def _run(text: str, pipeline: str, arrays: list[np.ndarray]) -> None:
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    PassPipeline.parse_spec(all_passes(), pipeline).apply(ctx, module)
    verify_ir(module, pipeline)
    emulate(module)
    run_function(module, "mm", arrays)


def _operands(
    rng: np.random.Generator, m: int, n: int, k: int, element: str, form: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dtype = TYPES[element]
    a_shape = (k, m) if form == "atb" else (m, k)
    b_shape = (n, k) if form == "abt" else (k, n)
    a = rng.uniform(-1, 1, a_shape).astype(dtype)
    b = rng.uniform(-1, 1, b_shape).astype(dtype)
    c = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    return a, b, c


def _reference(a: np.ndarray, b: np.ndarray, c: np.ndarray, form: str) -> np.ndarray:
    a64 = a.astype(np.float64).T if form == "atb" else a.astype(np.float64)
    b64 = b.astype(np.float64).T if form == "abt" else b.astype(np.float64)
    return c.astype(np.float64) + a64 @ b64


@pytest.mark.parametrize(
    ("element", "form"),
    [
        ("bf16", "ab"),
        pytest.param("f16", "ab", marks=pytest.mark.slow),  # f16 and AB are covered apart
        ("bf16", "atb"),
        ("f16", "abt"),
    ],
)
def test_warp_tiles_on_tensor_cores_match_numpy(
    element: str, form: str, rng: np.random.Generator
) -> None:
    m, n, k = 64, 64, 32
    a, b, c = _operands(rng, m, n, k, element, form)
    expected = _reference(a, b, c, form)
    _run(matmul_text(m, n, k, element, form), tensor_core_pipeline(32, 64, 32, 16, 32), [a, b, c])
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("m", "n", "k"), [(40, 72, 40), (17, 33, 9)])
def test_odd_sizes_run_padded_tiles(m: int, n: int, k: int, rng: np.random.Generator) -> None:
    """pad-tiles runs the partial tiles as full ones: zero-filled shared tiles, C's loads and
    stores guarded element by element."""
    a, b, c = _operands(rng, m, n, k, "bf16", "ab")
    expected = _reference(a, b, c, "ab")
    pipeline = tensor_core_pipeline(32, 64, 16, 16, 32, padded=True)
    _run(matmul_text(m, n, k, "bf16"), pipeline, [a, b, c])
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("form", ["ab", "abt"])
def test_tf32_rounds_the_operands(form: str, rng: np.random.Generator) -> None:
    """precision=tf32: f32 operands rounded to 10 mantissa bits (cvt.rna), f32 accumulation."""
    m, n, k = 32, 64, 16
    a, b, c = _operands(rng, m, n, k, "f32", form)
    exact = _reference(a, b, c, form)
    pipeline = tensor_core_pipeline(32, 64, 16, 16, 32, extra="precision=tf32")
    _run(matmul_text(m, n, k, "f32", form), pipeline.replace("pad=8", "pad=4"), [a, b, c])
    error = np.abs(c - exact).max()
    assert 1e-6 < error < 2e-2  # tf32 is less precise than f32, and within its 2^-11 steps


GPU_CASES = [
    ("bf16", "ab", 256, 256, 128, "", 2e-5),
    ("f16", "abt", 256, 128, 64, "", 2e-5),
    ("bf16", "atb", 128, 256, 64, "", 2e-5),
    ("bf16", "ab", 301, 203, 99, "padded", 2e-5),
    ("f32", "ab", 256, 256, 64, "precision=tf32", 5e-3),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("element", "form", "m", "n", "k", "how", "tolerance"), GPU_CASES)
def test_tensor_cores_on_the_gpu(
    element: str,
    form: str,
    m: int,
    n: int,
    k: int,
    how: str,
    tolerance: float,
    rng: np.random.Generator,
) -> None:
    """Each path on a device (sm_80+): bf16/f16 with the operands as they are or transposed,
    padded partial tiles, and tf32, against numpy's f64 product (relative to its scale)."""
    import loopopt

    a, b, c = _operands(rng, m, n, k, element, form)
    expected = _reference(a, b, c, form)
    extra = "precision=tf32" if element == "f32" else ""
    pipeline = tensor_core_pipeline(64, 64, 32, 32, 32, padded=how == "padded", extra=extra)
    if element == "f32":
        pipeline = pipeline.replace("pad=8", "pad=4")
    kernel = loopopt.compile(matmul_text(m, n, k, element, form), "mm", pipeline, target="gpu")
    kernel(a, b, c)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(c, expected, rtol=0, atol=tolerance * scale * np.sqrt(k))


def test_refusals_name_the_reason() -> None:
    text = matmul_text(64, 64, 32, "f32")
    with pytest.raises(LoopoptError, match="operands must be both bf16 or both f16, not f32"):
        _run(text, tensor_core_pipeline(32, 64, 32, 16, 32), [])
