"""f16 and bf16 elements on the CPU: conversions round to nearest even, kernels match numpy /
ml_dtypes references, loop passes keep results, unsupported uses are refused in one line."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from equivalence import assert_equivalent, run

from loopopt.backend.llvm_ir import bfloat_bits
from loopopt.diagnostics import LoopoptError
from loopopt.element_types import numpy_dtype
from loopopt.runtime.cpu import compile_cpu

DTYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}
EPS = {"f16": 2.0**-11, "bf16": 2.0**-8}
"""Unit roundoff: the relative error of one rounding."""

CONVERT = """
func.func @convert(%S: memref<?xf32>, %D: memref<?xf64>, %A: memref<?xT>, %B: memref<?xT>,
                   %W: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %S, %c0 : memref<?xf32>
  affine.for %i = 0 to %n {
    %s = affine.load %S[%i] : memref<?xf32>
    %a = arith.truncf %s : f32 to T
    affine.store %a, %A[%i] : memref<?xT>
    %d = affine.load %D[%i] : memref<?xf64>
    %b = arith.truncf %d : f64 to T
    affine.store %b, %B[%i] : memref<?xT>
    %w = arith.extf %b : T to f64
    affine.store %w, %W[%i] : memref<?xf64>
  }
  return
}
"""


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(np.uint16)


def _nearest(values: np.ndarray, t: str) -> np.ndarray:
    """Each f64 value rounded once to `t` (numpy's float16 cast does; ml_dtypes' bfloat16 cast
    from f64 rounds twice, through f32, so bf16 uses the backend's exact rounding)."""
    if t == "f16":
        return values.astype(np.float16)
    bits = np.array([bfloat_bits(float(v)) for v in values], np.uint16)
    return bits.view(ml_dtypes.bfloat16)


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_truncf_rounds_to_nearest_even_from_f32_and_f64(t: str, rng: np.random.Generator) -> None:
    n = 2000
    wide = rng.standard_normal(n) * np.exp2(rng.integers(-140, 140, n))
    # ties and near-ties (1 + half an ulp of t, a hair above and below), overflow, subnormals
    ulp = EPS[t] * 2
    wide[:8] = [1 + ulp / 2, 1 + 3 * ulp / 2, 1 + ulp / 2 + 2**-40, 1 + ulp / 2 - 2**-40,
                -(1 + ulp / 2 + 2**-40), 7e4, 1e-7, np.inf]  # fmt: skip
    with np.errstate(over="ignore"):
        single = wide.astype(np.float32)
        A, B = np.zeros(n, DTYPES[t]), np.zeros(n, DTYPES[t])
        W = np.zeros(n)
        compile_cpu(CONVERT.replace("T", t), "convert")(single, wide, A, B, W)
        np.testing.assert_array_equal(_bits(A), _bits(single.astype(DTYPES[t])))
        np.testing.assert_array_equal(_bits(B), _bits(_nearest(wide, t)))
    np.testing.assert_array_equal(W, B.astype(np.float64))  # extf is exact


def test_nan_stays_nan_and_infinities_keep_their_sign() -> None:
    special = np.array([np.nan, -np.inf, np.inf, -0.0], np.float32)
    for t in DTYPES:
        A, B, W = np.zeros(4, DTYPES[t]), np.zeros(4, DTYPES[t]), np.zeros(4)
        convert = compile_cpu(CONVERT.replace("T", t), "convert")
        convert(special, special.astype(np.float64), A, B, W)
        assert np.isnan(W[0]) and list(W[1:3]) == [-np.inf, np.inf]
        assert np.signbit(W[3]) and W[3] == 0


ELEMENTWISE = """
func.func @fma(%X: memref<?x?xT>, %Y: memref<?x?xT>, %Z: memref<?x?xT>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %X, %c0 : memref<?x?xT>
  %n = memref.dim %X, %c1 : memref<?x?xT>
  %k = arith.constant 0.1 : T
  affine.for %i = 0 to %m {
    affine.for %j = 0 to %n {
      %x = affine.load %X[%i, %j] : memref<?x?xT>
      %y = affine.load %Y[%i, %j] : memref<?x?xT>
      %p = arith.mulf %x, %y : T
      %s = arith.addf %p, %k : T
      %e = math.exp %s : T
      %xf = arith.extf %x : T to f32
      %ef = arith.extf %e : T to f32
      %q = arith.subf %ef, %xf : f32
      %z = arith.truncf %q : f32 to T
      affine.store %z, %Z[%i, %j] : memref<?x?xT>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


def _elementwise_reference(x: np.ndarray, y: np.ndarray, t: str) -> np.ndarray:
    """Every T op rounded to T (computed in f32, as LLVM and numpy do); math.exp in f32."""
    dtype, f32 = DTYPES[t], np.float32
    k = np.array([0.1]).astype(dtype)[0] if t == "f16" else _nearest(np.array([0.1]), t)[0]
    p = (x.astype(f32) * y.astype(f32)).astype(dtype)
    s = (p.astype(f32) + f32(k)).astype(dtype)
    e = np.exp(s.astype(f32)).astype(dtype)
    return (e.astype(f32) - x.astype(f32)).astype(dtype)


@pytest.mark.parametrize("t", ["f16", "bf16"])
@pytest.mark.parametrize(
    "pipeline", ["loop-tile{tile-sizes=8,16}", "loop-unroll-jam{unroll-jam-factor=3 loop=i}"]
)
def test_elementwise_kernel_is_numpy_bit_for_bit(
    t: str, pipeline: str, rng: np.random.Generator
) -> None:
    x = rng.standard_normal((19, 37)).astype(DTYPES[t])
    y = rng.standard_normal((19, 37)).astype(DTYPES[t])
    z = np.zeros((19, 37), DTYPES[t])
    text = ELEMENTWISE.replace("T", t)
    got = run(text, "fma", [x, y, z])[2]
    np.testing.assert_array_equal(_bits(got), _bits(_elementwise_reference(x, y, t)))
    assert_equivalent(text, "fma", [x, y, z], pipeline, rtol=0)


MATMUL = """
func.func @matmul(%A: memref<MxKxT>, %B: memref<KxNxT>, %C: memref<MxNxf32>) {
  affine.for %i = 0 to M {
    affine.for %j = 0 to N {
      affine.for %k = 0 to K {
        %a = affine.load %A[%i, %k] : memref<MxKxT>
        %b = affine.load %B[%k, %j] : memref<KxNxT>
        %c = affine.load %C[%i, %j] : memref<MxNxf32>
        %af = arith.extf %a : T to f32
        %bf = arith.extf %b : T to f32
        %p = arith.mulf %af, %bf : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<MxNxf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


def _matmul(t: str, m: int, n: int, k: int, rng: np.random.Generator) -> tuple[str, list]:
    text = MATMUL.replace("M", str(m)).replace("N", str(n)).replace("K", str(k)).replace("T", t)
    a = rng.standard_normal((m, k)).astype(DTYPES[t])
    b = rng.standard_normal((k, n)).astype(DTYPES[t])
    return text, [a, b, rng.standard_normal((m, n)).astype(np.float32)]


@pytest.mark.parametrize("t", ["f16", "bf16"])
@pytest.mark.parametrize(
    "pipeline",
    [
        "loop-tile{tile-sizes=16,8,8},promote{loop=k_t arrays=A,B}",
        "loop-tile{tile-sizes=8,8,4},promote{loop=k_t memory-space=shared transpose pad=4}",
        "loop-tile{tile-sizes=8,8},scalar-replace,loop-unroll{unroll-factor=3}",
        "loop-unroll-jam{unroll-jam-factor=2 loop=i}",
    ],
)
def test_matmul_with_f32_accumulator(t: str, pipeline: str, rng: np.random.Generator) -> None:
    """C[i,j] += float(A[i,k]) * float(B[k,j]): f32 accumulation of exact products (an f16 or
    bf16 product is exact in f32), so only f32 roundoff separates it from f64."""
    text, arrays = _matmul(t, 37, 29, 45, rng)
    a, b, c = (x.astype(np.float64) for x in arrays)
    got = run(text, "matmul", arrays)[2]
    np.testing.assert_allclose(got, c + a @ b, rtol=1e-5, atol=45 * 2e-6 * 16)
    after = assert_equivalent(text, "matmul", arrays, pipeline, rtol=0)
    assert t in after


REDUCTION = """
func.func @sums(%X: memref<?xT>, %Out: memref<2xf32>, %Narrow: memref<1xT>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %X, %c0 : memref<?xT>
  %zero = arith.constant 0.0 : f32
  %zero_t = arith.constant 0.0 : T
  %wide, %narrow = affine.for %i = 0 to %n iter_args(%acc = %zero, %acc_t = %zero_t)
      -> (f32, T) {
    %x = affine.load %X[%i] : memref<?xT>
    %xf = arith.extf %x : T to f32
    %s = arith.addf %acc, %xf : f32
    %s_t = arith.addf %acc_t, %x : T
    affine.yield %s, %s_t : f32, T
  } {loopopt.name = "i"}
  affine.store %wide, %Out[0] : memref<2xf32>
  %m = arith.maximumf %wide, %zero : f32
  affine.store %m, %Out[1] : memref<2xf32>
  affine.store %narrow, %Narrow[0] : memref<1xT>
  return
}
"""


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_reduction_in_f32_and_in_the_element_type(t: str, rng: np.random.Generator) -> None:
    x = rng.uniform(0, 1, 1001).astype(DTYPES[t])
    out, narrow = np.zeros(2, np.float32), np.zeros(1, DTYPES[t])
    compile_cpu(REDUCTION.replace("T", t), "sums")(x, out, narrow)
    exact = float(np.sum(x.astype(np.float64)))
    np.testing.assert_allclose(out[0], exact, rtol=1001 * 2.0**-24)
    sequential = np.zeros(1, DTYPES[t])  # each add rounded to T, in loop order
    for value in x:
        sequential[0] = (np.float32(sequential[0]) + np.float32(value)).astype(DTYPES[t])
    assert _bits(narrow)[0] == _bits(sequential)[0]
    assert abs(float(narrow[0]) - exact) > abs(float(out[0]) - exact)  # why f32 accumulates


def test_element_types_map_to_numpy_and_ml_dtypes() -> None:
    from xdsl.dialects.builtin import BFloat16Type, Float16Type, FloatTF32Type

    assert numpy_dtype(Float16Type()) == np.float16
    assert numpy_dtype(BFloat16Type()) == np.dtype(ml_dtypes.bfloat16)
    assert numpy_dtype(FloatTF32Type()) is None


def test_half_scalar_arguments_are_refused_in_one_line() -> None:
    text = """
func.func @scale(%A: memref<4xf16>, %s: f16) {
  return
}
"""
    refusal = r"argument 1 of type f16 is not supported on the CPU \(scalars are f32, f64, i8"
    with pytest.raises(LoopoptError, match=refusal):
        compile_cpu(text, "scale")


def test_bf16_array_of_the_wrong_dtype_is_refused() -> None:
    f = compile_cpu(CONVERT.replace("T", "bf16"), "convert")
    s, d, w = np.zeros(2, np.float32), np.zeros(2), np.zeros(2)
    with pytest.raises(LoopoptError, match="argument 2: expected dtype bfloat16 .* got float16"):
        f(s, d, np.zeros(2, np.float16), np.zeros(2, ml_dtypes.bfloat16), w)


def test_bfloat_bits_rounds_once_from_f64() -> None:
    """Just above a tie between two bfloat16 values: rounding through float32 first would land
    on the tie and round to even (ml_dtypes' cast does); one rounding goes up."""
    above_tie = 1 + 2.0**-8 + 2.0**-40
    assert bfloat_bits(above_tie) == 0x3F81
    assert bfloat_bits(1 + 2.0**-8) == 0x3F80  # the tie itself: to even
    assert bfloat_bits(1 + 3 * 2.0**-8) == 0x3F82
    assert bfloat_bits(-above_tie) == 0xBF81
    assert bfloat_bits(1e-45) == 0 and bfloat_bits(1e39) == 0x7F80
    assert bfloat_bits(float("nan")) == 0x7FC0
