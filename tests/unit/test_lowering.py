"""Lowering to LLVM, checked by running on the CPU against Python/numpy references."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.lowering.to_llvm import lower_to_llvm
from loopopt.runtime.cpu import compile_cpu, run_function

BOUNDS = """
func.func @bounds(%A: memref<20xi64>, %n: index) {
  affine.for %i = max affine_map<()[s0] -> (2, s0 - 10)>()[%n]
      to min affine_map<()[s0] -> (18, s0)>()[%n] step 3 {
    %v = arith.index_cast %i : index to i64
    affine.store %v, %A[%i] : memref<20xi64>
  }
  return
}
"""


@pytest.mark.parametrize("n", [0, 5, 12, 17, 30])
def test_max_min_bounds_with_symbols_and_step(n: int) -> None:
    a = np.zeros(20, np.int64)
    run_function(BOUNDS, "bounds", [a, n])
    expected = np.zeros(20, np.int64)
    for i in range(max(2, n - 10), min(18, n), 3):
        expected[i] = i
    np.testing.assert_array_equal(a, expected)


def test_triangular_bounds_with_dims() -> None:
    text = """
func.func @tri(%A: memref<8x8xi32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = affine_map<(d0) -> (d0 floordiv 2)>(%i) to affine_map<(d0) -> (d0 + 1)>(%i) {
      %c = arith.constant 1 : i32
      %v = affine.load %A[%i, %j] : memref<8x8xi32>
      %s = arith.addi %v, %c : i32
      affine.store %s, %A[%i, %j] : memref<8x8xi32>
    }
  }
  return
}
"""
    a = np.zeros((8, 8), np.int32)
    run_function(text, "tri", [a])
    expected = np.array([[1 if i // 2 <= j <= i else 0 for j in range(8)] for i in range(8)])
    np.testing.assert_array_equal(a, expected)


DIVISION = """
func.func @div(%x: index, %out: memref<5xi64>) {
  %q = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%x)
  %c = affine.apply affine_map<(d0) -> (d0 ceildiv 4)>(%x)
  %m = affine.apply affine_map<(d0) -> (d0 mod 4)>(%x)
  %lo = affine.min affine_map<(d0)[s0] -> (d0 * 2, s0 - d0, 3)>(%x)[%x]
  %hi = affine.max affine_map<(d0) -> (d0 * -3, d0 + 1)>(%x)
  %vals = arith.constant 0 : index
  %r0 = arith.index_cast %q : index to i64
  %r1 = arith.index_cast %c : index to i64
  %r2 = arith.index_cast %m : index to i64
  %r3 = arith.index_cast %lo : index to i64
  %r4 = arith.index_cast %hi : index to i64
  affine.store %r0, %out[0] : memref<5xi64>
  affine.store %r1, %out[1] : memref<5xi64>
  affine.store %r2, %out[2] : memref<5xi64>
  affine.store %r3, %out[3] : memref<5xi64>
  affine.store %r4, %out[4] : memref<5xi64>
  return
}
"""


def test_floordiv_ceildiv_mod_min_max_on_negative_values() -> None:
    function = compile_cpu(DIVISION, "div")
    for x in range(-9, 10):
        out = np.zeros(5, np.int64)
        function(x, out)
        expected = [x // 4, -(-x // 4), x % 4, min(2 * x, 0, 3), max(-3 * x, x + 1)]
        assert out.tolist() == expected, x


def test_iter_args_reduction_returns_a_scalar_over_a_dynamic_memref() -> None:
    text = """
func.func @sum(%A: memref<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %n = memref.dim %A, %c0 : memref<?xf64>
  %zero = arith.constant 0.0 : f64
  %s = affine.for %i = 0 to %n iter_args(%acc = %zero) -> (f64) {
    %v = affine.load %A[%i] : memref<?xf64>
    %t = arith.addf %acc, %v : f64
    affine.yield %t : f64
  }
  return %s : f64
}
"""
    function = compile_cpu(text, "sum")
    for n in (0, 1, 37):
        a = np.arange(n, dtype=np.float64)
        assert function(a) == float(a.sum())


def test_dynamic_2d_shapes_and_memref_dim(rng: np.random.Generator) -> None:
    text = """
func.func @mm(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %A, %c0 : memref<?x?xf32>
  %k = memref.dim %A, %c1 : memref<?x?xf32>
  %n = memref.dim %B, %c1 : memref<?x?xf32>
  affine.for %i = 0 to %m {
    affine.for %j = 0 to %n {
      affine.for %p = 0 to %k {
        %a = affine.load %A[%i, %p] : memref<?x?xf32>
        %b = affine.load %B[%p, %j] : memref<?x?xf32>
        %c = affine.load %C[%i, %j] : memref<?x?xf32>
        %s = arith.addf %c, %a : f32
        %t = arith.mulf %a, %b : f32
        %u = arith.addf %c, %t : f32
        affine.store %u, %C[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
"""
    for m, k, n in [(3, 5, 7), (8, 1, 2)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        c = rng.standard_normal((m, n)).astype(np.float32)
        expected = c + a @ b
        run_function(text, "mm", [a, b, c])
        np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


UNARY = """
func.func @f(%X: memref<16xT>, %Y: memref<16xT>) {
  affine.for %i = 0 to 16 {
    %x = affine.load %X[%i] : memref<16xT>
    %y = OP %x : T
    affine.store %y, %Y[%i] : memref<16xT>
  }
  return
}
"""

UNARY_CASES = {
    "math.sqrt": np.sqrt,
    "math.exp": np.exp,
    "math.log": np.log,
    "math.sin": np.sin,
    "math.cos": np.cos,
    "math.tan": np.tan,
    "math.tanh": np.tanh,
    "math.absf": np.abs,
    "math.floor": np.floor,
    "math.ceil": np.ceil,
    "math.erf": np.vectorize(math.erf),
    "math.log1p": np.log1p,
    "math.rsqrt": lambda x: 1 / np.sqrt(x),
    "arith.negf": np.negative,
}


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op", sorted(UNARY_CASES))
def test_unary_float_functions(op: str, dtype: str) -> None:
    np_type = np.float32 if dtype == "f32" else np.float64
    x = np.linspace(0.1, 3.0, 16).astype(np_type)
    y = np.zeros_like(x)
    run_function(UNARY.replace("OP", op).replace("T", dtype), "f", [x, y])
    rtol = 2e-6 if dtype == "f32" else 1e-12
    np.testing.assert_allclose(y, UNARY_CASES[op](x).astype(np_type), rtol=rtol, atol=rtol)


BINARY = """
func.func @f(%X: memref<9xT>, %Y: memref<9xT>, %Z: memref<9xT>) {
  affine.for %i = 0 to 9 {
    %x = affine.load %X[%i] : memref<9xT>
    %y = affine.load %Y[%i] : memref<9xT>
    %z = OP %x, %y : T
    affine.store %z, %Z[%i] : memref<9xT>
  }
  return
}
"""

FLOAT_BINARY = {
    "math.powf": lambda x, y: np.abs(x) ** y,
    "math.copysign": np.copysign,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "arith.divf": np.divide,
    "arith.subf": np.subtract,
}

INT_BINARY = {
    "arith.addi": np.add,
    "arith.muli": np.multiply,
    "arith.divsi": lambda x, y: np.trunc(x / y).astype(x.dtype),
    "arith.remsi": np.fmod,
    "arith.floordivsi": np.floor_divide,
    "arith.ceildivsi": lambda x, y: -np.floor_divide(-x, y),
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.andi": np.bitwise_and,
    "arith.xori": np.bitwise_xor,
}


@pytest.mark.parametrize("op", sorted(FLOAT_BINARY))
def test_binary_float_ops(op: str, rng: np.random.Generator) -> None:
    x = rng.standard_normal(9)
    y = rng.standard_normal(9)
    if op == "math.powf":
        x = np.abs(x)
    z = np.zeros(9)
    run_function(BINARY.replace("OP", op).replace("T", "f64"), "f", [x, y, z])
    np.testing.assert_allclose(z, FLOAT_BINARY[op](x, y), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["i32", "i64"])
@pytest.mark.parametrize("op", sorted(INT_BINARY))
def test_binary_int_ops_with_negative_values(op: str, dtype: str) -> None:
    np_type = np.int32 if dtype == "i32" else np.int64
    x = np.array([-9, -8, -7, -1, 0, 1, 7, 8, 9], np_type)
    y = np.array([4, -4, 3, -3, 5, 2, -2, 4, -5], np_type)
    z = np.zeros_like(x)
    run_function(BINARY.replace("OP", op).replace("T", dtype), "f", [x, y, z])
    np.testing.assert_array_equal(z, INT_BINARY[op](x, y))


DIVISIONS = ["divsi", "remsi", "floordivsi", "ceildivsi", "divui", "remui", "ceildivui"]
DIVIDENDS = [-7, 7, 0, "MIN", "MIN", "MIN", 9, -9, 9]
DIVISORS = [0, 0, 0, 0, -1, 1, 2, 2, -2]
DIVIDE_IN_A_CHILD = f"""
import json, sys
import numpy as np
from loopopt.runtime.cpu import run_function
text, out = {BINARY!r}.replace("9x", "DIVIDENDSx").replace("to 9", "to DIVIDENDS"), {{}}
for op in sys.argv[1:]:
    for t, dtype in (("i32", np.int32), ("i64", np.int64)):
        low = int(np.iinfo(dtype).min)
        x = np.array([low if v == "MIN" else v for v in {DIVIDENDS!r}], dtype)
        y, z = np.array({DIVISORS!r}, dtype), np.zeros({len(DIVIDENDS)}, dtype)
        kernel = text.replace("OP", "arith." + op).replace("T", t)
        run_function(kernel.replace("DIVIDENDS", str(len(x))), "f", [x, y, z])
        out[op + ":" + t] = z.tolist()
print(json.dumps(out))
"""


def _divided(op: str, x: int, y: int, bits: int) -> int:
    """What `x op y` gives after lowering: x / 0 is 0, x % 0 is x, overflow wraps."""
    if op.endswith("ui"):
        x, y = x % (1 << bits), y % (1 << bits)
    truncated = 0 if y == 0 else abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    if op.startswith("rem"):
        exact = x - truncated * y
    elif y != 0 and op.startswith("floor"):
        exact = x // y
    elif y != 0 and op.startswith("ceil"):
        exact = -(-x // y)
    else:
        exact = truncated
    half = 1 << (bits - 1)
    return (exact + half) % (1 << bits) - half


def test_integer_division_is_defined_for_every_divisor() -> None:
    """By zero (and MIN / -1) the hardware would trap (SIGFPE on x86): run in a child process."""
    proc = subprocess.run(
        [sys.executable, "-c", DIVIDE_IN_A_CHILD, *DIVISIONS],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    for op in DIVISIONS:
        for t, bits in (("i32", 32), ("i64", 64)):
            low = -(1 << (bits - 1))
            xs = [low if v == "MIN" else int(v) for v in DIVIDENDS]
            expected = [_divided(op, x, y, bits) for x, y in zip(xs, DIVISORS, strict=True)]
            assert got[f"{op}:{t}"] == expected, (op, t)


def test_fma_select_compare_and_casts() -> None:
    text = """
func.func @f(%X: memref<6xf32>, %I: memref<6xi32>, %F: memref<6xf64>, %s: f32, %k: i64) {
  affine.for %i = 0 to 6 {
    %x = affine.load %X[%i] : memref<6xf32>
    %f = math.fma %x, %s, %x : f32
    %zero = arith.constant 0.0 : f32
    %neg = arith.cmpf olt, %f, %zero : f32
    %clamped = arith.select %neg, %zero, %f : f32
    %t = arith.fptosi %clamped : f32 to i32
    %ki = arith.trunci %k : i64 to i32
    %sum = arith.addi %t, %ki : i32
    affine.store %sum, %I[%i] : memref<6xi32>
    %w = arith.extf %clamped : f32 to f64
    %ii = arith.index_cast %i : index to i64
    %fi = arith.sitofp %ii : i64 to f64
    %r = arith.addf %w, %fi : f64
    affine.store %r, %F[%i] : memref<6xf64>
  }
  return
}
"""
    x = np.array([-2.5, -0.5, 0.0, 0.7, 1.5, 3.25], np.float32)
    ints = np.zeros(6, np.int32)
    floats = np.zeros(6, np.float64)
    run_function(text, "f", [x, ints, floats, 1.5, 10])
    fused = np.maximum(x * np.float32(1.5) + x, 0)
    np.testing.assert_array_equal(ints, np.trunc(fused).astype(np.int32) + 10)
    np.testing.assert_allclose(floats, fused.astype(np.float64) + np.arange(6), rtol=1e-7)


def test_affine_if_else_with_result() -> None:
    text = """
func.func @f(%A: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    %r = affine.if affine_set<(d0) : (d0 - 3 >= 0, -d0 + 6 >= 0)>(%i) -> f32 {
      %one = arith.constant 1.0 : f32
      affine.yield %one : f32
    } else {
      %two = arith.constant 2.0 : f32
      affine.yield %two : f32
    }
    affine.store %r, %A[%i] : memref<10xf32>
  }
  return
}
"""
    a = np.zeros(10, np.float32)
    run_function(text, "f", [a])
    np.testing.assert_array_equal(a, [2, 2, 2, 1, 1, 1, 1, 2, 2, 2])


def test_local_buffers_in_loops_do_not_grow_the_stack() -> None:
    """A static alloca is hoisted out of the loop; memory spaces are ignored on the host."""
    text = """
func.func @f(%A: memref<100000x64xf32>) {
  affine.for %i = 0 to 100000 {
    %buf = memref.alloca() : memref<64xf32, 3>
    %heap = memref.alloc() : memref<64xf32>
    affine.for %j = 0 to 64 {
      %v = affine.load %A[%i, %j] : memref<100000x64xf32>
      affine.store %v, %buf[%j] : memref<64xf32, 3>
      affine.store %v, %heap[63 - %j] : memref<64xf32>
    }
    affine.for %j = 0 to 64 {
      %v = affine.load %buf[%j] : memref<64xf32, 3>
      %w = affine.load %heap[%j] : memref<64xf32>
      %s = arith.addf %v, %w : f32
      affine.store %s, %A[%i, %j] : memref<100000x64xf32>
    }
    memref.dealloc %heap : memref<64xf32>
  }
  return
}
"""
    a = np.tile(np.arange(64, dtype=np.float32), (100000, 1))
    run_function(text, "f", [a])
    np.testing.assert_array_equal(a[-1], np.arange(64) + np.arange(64)[::-1])


def test_calls_pass_pointers_and_dynamic_sizes() -> None:
    text = """
func.func @scale(%A: memref<?xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %A, %c0 : memref<?xf32>
  affine.for %i = 0 to %n {
    %v = affine.load %A[%i] : memref<?xf32>
    %w = arith.mulf %v, %s : f32
    affine.store %w, %A[%i] : memref<?xf32>
  }
  return
}
func.func @main(%A: memref<7xf32>) {
  %d = "memref.cast"(%A) : (memref<7xf32>) -> memref<?xf32>
  %two = arith.constant 2.0 : f32
  func.call @scale(%d, %two) : (memref<?xf32>, f32) -> ()
  return
}
"""
    a = np.arange(7, dtype=np.float32)
    run_function(text, "main", [a])
    np.testing.assert_array_equal(a, 2 * np.arange(7))


def test_index_elements_and_i64_scalars() -> None:
    text = """
func.func @f(%A: memref<4xindex>, %k: i64, %n: index) -> i64 {
  affine.for %i = 0 to 4 {
    %v = arith.index_cast %k : i64 to index
    %w = arith.addi %v, %n : index
    affine.store %w, %A[%i] : memref<4xindex>
  }
  %r = arith.index_cast %n : index to i64
  return %r : i64
}
"""
    a = np.zeros(4, np.int64)
    assert compile_cpu(text, "f")(a, 2**40, -3) == -3
    np.testing.assert_array_equal(a, [2**40 - 3] * 4)


def test_unsupported_op_is_a_located_diagnostic() -> None:
    text = """
func.func @f(%A: memref<4xf32>, %B: memref<4xf32>) {
  "memref.copy"(%A, %B) : (memref<4xf32>, memref<4xf32>) -> ()
  return
}
"""
    with pytest.raises(LoopoptError, match=r"^t.mlir:3:3: error: cannot lower 'memref.copy'"):
        lower_to_llvm(parse_module(text, "t.mlir"))


def test_layouts_and_unsupported_element_types_are_diagnostics() -> None:
    strided = "func.func @f(%A: memref<4xf32, strided<[2]>>) { return }"
    with pytest.raises(LoopoptError, match="cannot lower memref with a layout"):
        lower_to_llvm(parse_module(strided, "t.mlir"))
    fp8 = "func.func @f(%A: memref<4xf8E5M2>) { return }"
    with pytest.raises(LoopoptError, match="cannot lower values of type f8E5M2 to LLVM"):
        compile_cpu(fp8, "f")
    half_scalar = "func.func @f(%x: f16) { return }"  # f16 arrays run; f16 scalars cannot
    with pytest.raises(LoopoptError, match="argument 0 of type f16 is not supported on the CPU"):
        compile_cpu(half_scalar, "f")


def test_scalar_argument_checks() -> None:
    function = compile_cpu(BOUNDS, "bounds")
    a = np.zeros(20, np.int64)
    with pytest.raises(LoopoptError, match="expected an integer"):
        function(a, 2.5)
    with pytest.raises(LoopoptError, match="does not fit"):
        function(a, 2**70)


def test_affine_parallel_with_grouped_upper_bounds() -> None:
    text = """
func.func @p(%A: memref<2x3xi64>, %n: index) {
  "affine.parallel"(%n) <{lowerBoundsMap = affine_map<() -> (0, 0)>,
      lowerBoundsGroups = dense<1> : vector<2xi32>,
      upperBoundsMap = affine_map<()[s0] -> (2, 3, s0)>,
      upperBoundsGroups = dense<[1, 2]> : vector<2xi32>,
      steps = [1 : i64, 1 : i64], reductions = []}> ({
  ^bb0(%i: index, %j: index):
    %v = arith.index_cast %j : index to i64
    affine.store %v, %A[%i, %j] : memref<2x3xi64>
    "affine.yield"() : () -> ()
  }) : (index) -> ()
  return
}
"""
    a = np.full((2, 3), -1, np.int64)
    run_function(text, "p", [a, 2])
    np.testing.assert_array_equal(a, [[0, 1, -1], [0, 1, -1]])


def test_rank_zero_memrefs_and_bool_constants() -> None:
    text = """
func.func @z(%A: memref<f32>, %B: memref<f64>, %I: memref<2xi32>) {
  %v = memref.load %A[] : memref<f32>
  %w = arith.extf %v : f32 to f64
  memref.store %w, %B[] : memref<f64>
  %t = arith.constant true
  %e = arith.extsi %t : i1 to i32
  %u = arith.extui %t : i1 to i32
  affine.store %e, %I[0] : memref<2xi32>
  affine.store %u, %I[1] : memref<2xi32>
  return
}
"""
    a, b, ints = np.array(3.5, np.float32), np.array(0.0), np.zeros(2, np.int32)
    run_function(text, "z", [a, b, ints])
    assert b == 3.5
    assert ints.tolist() == [-1, 1]


def test_same_function_name_in_two_modules() -> None:
    first = """
func.func @f(%A: memref<1xf32>) {
  %c = arith.constant 1.0 : f32
  affine.store %c, %A[0] : memref<1xf32>
  return
}
"""
    second = first.replace("1.0", "2.0")
    a = np.zeros(1, np.float32)
    run_function(first, "f", [a])
    assert a[0] == 1.0
    run_function(second, "f", [a])
    assert a[0] == 2.0
