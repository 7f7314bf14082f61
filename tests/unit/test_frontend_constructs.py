"""Every construct of the front-end's subset: the IR it makes, and CPU results equal Python's.

`_same(f, *args)` runs `f` as plain Python on copies of the arguments and as a
`@loopopt.kernel` on the CPU, compares every array exactly (same operations, same precision),
checks that upstream `mlir-opt` accepts the kernel's IR (where it is installed), and returns
that IR.
"""

from __future__ import annotations

import math
import re
import subprocess
from typing import Any

import numpy as np
import pytest
from upstream import MLIR_OPT
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp

import loopopt
from loopopt.frontend.kernel import Kernel

SCALE = 3
HALF = 0.5


def _same(function: Any, *args: Any, rtol: float = 0.0) -> str:
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        function(*expected)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kern = loopopt.kernel(function)
    kern(*got, target="cpu")
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=rtol, atol=0, err_msg=f"argument {k}")
    text = kern.mlir(*args)
    if MLIR_OPT is not None:
        proc = subprocess.run([MLIR_OPT], input=text, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"mlir-opt rejects the IR: {proc.stderr.strip()[:600]}"
    return text


def test_loops_are_named_after_python_variables_and_triangular() -> None:
    def tri(A):
        n = A.shape[0]
        for row in range(n):
            for col in range(row + 1):
                A[row, col] += row * 10 + col

    ir = _same(tri, np.zeros((5, 5)))
    assert 'loopopt.name = "row"' in ir and 'loopopt.name = "col"' in ir
    assert "affine.for %col = 0 to affine_map<(d0) -> ((d0 + 1))>(%row)" in ir


def test_negative_and_positive_steps() -> None:
    def steps(A, B, C, n):
        for i in range(n - 1, -1, -1):
            A[i] = i
        for i in range(10, 0, -3):
            B[i] = i
        for i in range(1, n, 2):
            C[i] = i * 2

    ir = _same(steps, np.zeros(7), np.zeros(11), np.zeros(7), 7)
    assert "affine.for %i_rev = 0 to %n" in ir
    assert "affine.for %i_rev_1 = 0 to 4" in ir  # 10, 7, 4, 1
    assert "step 2" in ir


def test_max_lower_and_min_upper_bounds() -> None:
    def window(A, B):
        n = A.shape[0]
        for i in range(n):
            for k in range(max(0, i - 2), min(n, i + 3)):
                B[i] += A[k]

    ir = _same(window, np.arange(9.0), np.zeros(9))
    assert "= max affine_map<(d0) -> (0, (d0 + -2))>(%i) to min affine_map" in ir


def test_min_max_of_symbols_are_symbols() -> None:
    def symbolic(A, n, m):
        for i in range(max(n, m)):
            A[i] = 1.0
        A[min(n, m) - 1] = 5.0

    ir = _same(symbolic, np.zeros(10), 3, 4)
    assert "affine.for %i = 0 to %0" in ir and "affine.max" in ir


def test_local_ints_shapes_and_symbol_arithmetic() -> None:
    def ints(A, B, n):
        rows, cols = A.shape
        half = cols // 2
        count = n * n
        for i in range(rows):
            for j in range(half):
                A[i, j * 2 + 1] = count + len(B) + B.ndim + SCALE
        for k in range(count):
            B[k % 3] += k // 4 - (k % 5)

    ir = _same(ints, np.zeros((3, 8)), np.zeros(9), 3)
    assert "arith.muli %n, %n" in ir  # n * n: a symbol computed once, at the top


def test_both_subscript_spellings_give_the_same_ir() -> None:
    def commas(A, B):
        for i in range(3):
            for j in range(4):
                B[i, j] = A[i, j]

    def brackets(A, B):
        for i in range(3):
            for j in range(4):
                B[i][j] = A[i][j]

    args = (np.ones((3, 4)), np.zeros((3, 4)))
    assert _same(commas, *args).replace("commas", "f") == _same(brackets, *args).replace(
        "brackets", "f"
    )


def test_augmented_assignment_of_names_and_elements() -> None:
    def aug(A, N):
        x = 1.5
        k = 7
        for i in range(4):
            x += A[i]
            x -= 0.25
            x *= 1.5
            x /= 1.25
            A[i] **= 2
            A[i] //= 0.75
            A[i] %= 3.0
            k //= 2
            k += i
            k %= 5
            k *= 3
            N[i] ^= k
            N[i] <<= 1
            N[i] >>= 2
            N[i] &= 0xFF
            N[i] |= 3
        A[0] = x
        N[0] = k

    _same(aug, np.array([1.5, -2.25, 3.0, -7.5]), np.array([5, -9, 12, 40], np.int64))


def test_scalars_carried_by_loops_become_iter_args() -> None:
    def recurrences(A, out):
        total = 0.0
        prev = 1.0
        count = 0
        for i in range(A.shape[0]):
            total += A[i]
            prev = 0.5 * prev + A[i]
            if A[i] > 0:
                count += 1
        out[0] = total
        out[1] = prev
        out[2] = count

    ir = _same(recurrences, np.array([1.0, -2.0, 3.0, 4.5]), np.zeros(3))
    assert re.search(
        r"iter_args\(%total = .*, %prev = .*, %count = .*\) -> \(f64, f64, index\)", ir
    )


def test_temporaries_are_not_carried() -> None:
    def temps(A, B):
        for i in range(4):
            t = A[i] * 2.0
            B[i] = t
        for j in range(4):
            t = A[j] + 1.0
            B[j] += t

    assert "iter_args" not in _same(temps, np.arange(4.0), np.zeros(4))


def test_a_carried_python_int_becomes_a_float_when_floats_are_added() -> None:
    def widen(A, out):
        m = 0
        for i in range(A.shape[0]):
            m = max(m, A[i])
        out[0] = m

    ir = _same(widen, np.array([0.5, 2.5, -1.0], np.float32), np.zeros(1, np.float32))
    assert "-> (f32)" in ir


def test_affine_and_data_dependent_ifs() -> None:
    def ifs(A, B):
        n = A.shape[0]
        for i in range(n):
            if i > 0 and i < n - 1:
                B[i] = A[i - 1] + A[i + 1]
            elif i == 0:
                B[i] = A[i]
            else:
                B[i] = -A[i]
            if A[i] > 0.5 or not A[i] > -0.5:
                B[i] *= 2.0
            if i != 2:
                B[i] += 1.0

    ir = _same(ifs, np.array([0.1, 0.9, -0.7, 0.3, 0.6]), np.zeros(5))
    assert "affine.if" in ir and "scf.if" in ir


def test_conditional_expressions_select_or_branch() -> None:
    def conditional(A, B):
        n = A.shape[0]
        for i in range(n):
            B[i] = A[i] if A[i] > 0 else 0.0  # both sides safe: select
            B[i] += A[i - 1] if i > 0 else 0.0  # a read guarded by an affine condition
            B[i] += A[i] // 2.0 if A[i] != 0 else 1.0

    ir = _same(conditional, np.array([1.0, -2.0, 3.0, 0.0]), np.zeros(4))
    assert "arith.select" in ir and "affine.if" in ir


def test_short_circuit_guards_reads() -> None:
    def guarded(A, B):
        n = A.shape[0]
        for i in range(n):
            ok = i > 0 and A[i - 1] > 0.0
            if ok or (i < n - 1 and A[i + 1] < 0.0):
                B[i] = 1.0
            B[i] += 1.0 if 0 < i < n - 1 else 0.0

    ir = _same(guarded, np.array([1.0, -2.0, 3.0, 0.5]), np.zeros(4))
    assert ir.count("affine.if") >= 2


def test_power_min_max_abs() -> None:
    def arith(A, B, N):
        for i in range(A.shape[0]):
            B[i] = A[i] ** 2 + abs(A[i]) ** 0.5 + max(A[i], 0.0, -A[i]) - min(A[i], 1.0)
            N[i] = abs(N[i]) ** 3 + max(N[i], 2) - min(N[i], i) + 2**10 + (-7) // 2

    _same(arith, np.array([1.5, -2.0, 0.0, -0.5]), np.zeros(4), np.array([3, -4, 0, 9], np.int64))


def test_min_max_keep_python_nan_semantics() -> None:
    def first_wins(A, B):
        for i in range(A.shape[0]):
            B[i, 0] = max(A[i], 1.0)
            B[i, 1] = max(1.0, A[i])
            B[i, 2] = min(A[i], 1.0)
            B[i, 3] = min(1.0, A[i])

    _same(first_wins, np.array([np.nan, 2.0, 0.5]), np.zeros((3, 4)))


def test_math_functions_compute_as_python() -> None:
    def maths(A, B):
        for i in range(A.shape[0]):
            x = A[i]
            B[i, 0] = math.sqrt(abs(x)) + math.exp(x) + math.log(abs(x) + 1.0)
            B[i, 1] = math.pow(abs(x), 1.5) + math.sin(x) + math.cos(x) + math.tan(x)
            B[i, 2] = math.tanh(x) + math.fmod(x, 0.75) + math.fabs(x)
            B[i, 3] = math.floor(x) + math.ceil(x) * 2 + math.pi
            B[i, 4] = float(math.floor(x) // 2) + int(x * 3.0) + round(x) + round(x * 4.0)
            B[i, 5] = pow(abs(x), 0.75) + round(2.5) + round(i * 1.5)

    values = np.array([1.25, -2.5, 0.3, -0.75, 3.0, 7.5], np.float32)
    ir = _same(maths, values, np.zeros((6, 6), np.float32))
    for op in ("math.sqrt", "math.exp", "math.log", "math.powf", "math.sin", "math.tanh"):
        assert f"{op} " in ir and ": f64" in ir


def test_numpy_functions_keep_float32() -> None:
    def single(A, B):
        for i in range(A.shape[0]):
            B[i] = np.sqrt(np.abs(A[i])) + np.exp(A[i]) + np.float32(0.1) * np.maximum(A[i], 0)

    args = (np.array([1.5, -2.0, 0.25], np.float32), np.zeros(3, np.float32))
    ir = _same(single, *args, rtol=3e-7)  # numpy's own expf may differ by an ulp
    assert "math.sqrt %" in ir and "f64" not in ir


def test_float_floor_division_and_modulo_as_python() -> None:
    def divmod_(A, B, out):
        for i in range(A.shape[0]):
            for j in range(B.shape[0]):
                out[i, j, 0] = A[i] // B[j]
                out[i, j, 1] = A[i] % B[j]

    values = np.array([7.5, -7.5, 0.0, -0.0, 1e-300, 3.0, -3.0])
    divisors = np.array([2.0, -2.0, 0.5, -3.0, 1e300])
    _same(divmod_, values, divisors, np.zeros((7, 5, 2)))


def test_integer_division_rounds_toward_minus_infinity() -> None:
    def idiv(A, B, out):
        for i in range(A.shape[0]):
            for j in range(B.shape[0]):
                out[i, j, 0] = A[i] // B[j]
                out[i, j, 1] = A[i] % B[j]
                out[i, j, 2] = (i - 3) // 2 + (i - 3) % 2

    a, b = np.array([7, -7, 0, 13], np.int32), np.array([2, -2, 5], np.int32)
    _same(idiv, a, b, np.zeros((4, 3, 3), np.int32))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (np.int32, np.float32),
        (np.int64, np.float64),
        (np.float32, np.float64),
        (np.int32, np.int64),
    ],
)
def test_dtype_promotion_follows_numpy(first: type, second: type) -> None:
    def promote(A, B, out, alpha, k):
        for i in range(A.shape[0]):
            out[i] = A[i] * B[i] + alpha + k + A[i] / 3 + B[i] * 0.5

    a = np.array([1, 2, -3], first)
    b = np.array([4, -5, 6], second)
    for out_type in (np.float64, np.float32):
        _same(promote, a, b, np.zeros(3, out_type), 1.25, 2)


def test_scalar_parameters_of_numpy_types() -> None:
    def axpy(alpha, X, Y):
        for i in range(X.shape[0]):
            Y[i] += alpha * X[i]

    x, y = np.arange(4, dtype=np.float32) / 3, np.ones(4, np.float32)
    assert "%alpha: f32" in _same(axpy, np.float32(0.1), x, y)
    assert "%alpha: f64" in _same(axpy, 0.1, x, y)
    assert "%alpha: index" in _same(axpy, 3, x, y)


def test_globals_and_negative_constant_subscripts() -> None:
    def ends(A):
        A[-1] = A[0] * SCALE + HALF
        A[-2] = math.e

    _same(ends, np.arange(5.0))


def test_int_and_bool_stores() -> None:
    def stores(F, N):
        for i in range(F.shape[0]):
            N[i] = F[i] * 2.5  # truncation toward zero, as numpy
            F[i] = N[i] > 0

    _same(stores, np.array([1.7, -1.7, 0.2]), np.zeros(3, np.int32))


def test_every_op_has_a_location_in_the_python_file() -> None:
    def located(A, B):
        for i in range(A.shape[0]):
            B[i] = A[i] * 2.0

    kern = Kernel(located)
    module: ModuleOp = kern.module(np.zeros(4), np.zeros(4))
    line = kern.source.first_line
    for op in module.walk():
        if op is module:
            continue
        assert isinstance(op.location, FileLineColLoc), op.name
        assert op.location.filename.data == __file__
        if op.name == "arith.mulf":
            assert op.location.line.data == line + 2
    assert f'loc("{__file__}":{line + 2}:' in kern.mlir(np.zeros(4), np.zeros(4), locations=True)


def test_mlir_without_arguments_uses_annotations_and_dynamic_shapes() -> None:
    def annotated(A: "float32[:, :]", x: "float64[8]", n: int, alpha: float):  # noqa: F821, UP037
        for i in range(n):
            A[i, 0] = alpha * x[i]

    ir = loopopt.kernel(annotated).mlir()
    assert "%A: memref<?x?xf32>, %x: memref<8xf64>, %n: index, %alpha: f64" in ir


def test_mlir_without_arguments_uses_the_last_call() -> None:
    def plain(A):
        for i in range(A.shape[0]):
            A[i] = 1.0

    kern = loopopt.kernel(plain)
    with pytest.raises(loopopt.diagnostics.LoopoptError, match=r"needs example arguments"):
        kern.mlir()
    kern(np.zeros((3,), np.float32), target="cpu")
    assert "memref<?xf32>" in kern.mlir()
    assert "memref<3xf32>" in kern.mlir(np.zeros(3, np.float32))
