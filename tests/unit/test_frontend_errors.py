"""Everything outside the front-end's subset is an error naming the file, line and construct.

Each case is a kernel with one unsupported construct on the line marked `# <-`; translating it
(or calling it) must raise a one-line LoopoptError located at that line of this file.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import loopopt
from loopopt.diagnostics import LoopoptError

LUT = [1, 2, 3]
SETTINGS = {"n": 4}


def helper(x: float) -> float:
    return x + 1


def non_affine(A, B):
    for i in range(4):
        B[i] = A[i * i]  # <-


def indirect(A, idx):
    for i in range(4):
        A[idx[i]] = 0.0  # <-


def while_loop(A):
    i = 0
    while i < 4:  # <-
        A[i] = 0.0
        i += 1


def unknown_call(A):
    for i in range(4):
        A[i] = helper(A[i])  # <-


def python_list(A):
    for i in range(3):
        A[i] = LUT[i]  # <-


def python_dict(A):
    A[0] = SETTINGS["n"]  # <-


def method_call(A, B):
    B[0] = A.sum()  # <-


def slice_subscript(A, B):
    for j in range(4):
        B[j] = A[:, j]  # <-


def partial_subscript(A, B):
    for i in range(4):
        B[i] = A[i]  # <-


def break_loop(A):
    for i in range(4):
        if A[i] > 0:
            break  # <-


def return_value(A):
    return A[0]  # <-


def symbolic_step(A, s):
    for i in range(0, 8, s):  # <-
        A[i] = 0.0


def non_affine_bound(A):
    for i in range(4):
        for j in range(i * i):  # <-
            A[j] = 0.0


def float_bound(A, x):
    for i in range(x):  # <-
        A[i] = 0.0


def iterate_array(A):
    for x in A:  # <-
        x += 1


def loop_variable_after(A):
    for i in range(4):
        A[i] = 0.0
    A[0] = i  # <-


def one_branch(A):
    if A[0] > 0:
        t = 1.0
    A[1] = t  # <-


def no_initial_value(A):
    for i in range(4):  # <-
        s = s + A[i]  # noqa: F821
    A[0] = s


def integer_power(A, n):
    for i in range(4):
        A[i] = i**n  # <-


def and_of_numbers(A):
    A[0] = A[1] and A[2]  # <-


def string_value(A):
    A[0] = "x"  # <-


def is_comparison(A):
    if A[0] is None:  # <-
        A[0] = 1.0


def lambda_value(A):
    f = lambda x: x  # noqa: E731 # <-
    A[0] = f(1.0)


def math_unknown(A):
    A[0] = math.gamma(A[1])  # <-


def keyword_call(A):
    A[0] = max(A[1], A[2], key=abs)  # <-


def reassign_array_in_loop(A, B):
    for i in range(4):  # <-
        A = B
        A[i] = 0.0
    A[0] = 1.0


def condition_and_number(A):
    x = A[0] > 0
    A[1] = x + 1.0  # <-


def tuple_unpack_mismatch(A):
    n, m = A.shape  # <-
    A[0] = n + m


def undefined_name(A):
    A[0] = nothing  # noqa: F821 # <-


CASES: list[tuple[Callable[..., Any], list[Any], str]] = [
    (non_affine, [np.zeros(16), np.zeros(4)], r"non-affine subscript 'i \* i' in 'A\[i \* i\]'"),
    (indirect, [np.zeros(4), np.zeros(4, np.int32)], r"non-affine subscript 'idx\[i\]'"),
    (while_loop, [np.zeros(4)], r"while loops are outside the subset"),
    (unknown_call, [np.zeros(4)], r"call of unknown function 'helper'"),
    (python_list, [np.zeros(4)], r"'LUT' is list: outside the subset"),
    (python_dict, [np.zeros(4)], r"'SETTINGS' is dict: outside the subset"),
    (method_call, [np.zeros(4), np.zeros(4)], r"call of unknown function 'A.sum'"),
    (slice_subscript, [np.zeros((4, 4)), np.zeros(4)], r"slices are outside the subset"),
    (partial_subscript, [np.zeros((4, 4)), np.zeros(4)], r"'A\[i\]' indexes 1 of the 2 dim"),
    (break_loop, [np.zeros(4)], r"break is outside the subset"),
    (return_value, [np.zeros(4)], r"return is only allowed at the end, without a value"),
    (symbolic_step, [np.zeros(8), 2], r"the step of 'range\(0, 8, s\)' must be a nonzero const"),
    (non_affine_bound, [np.zeros(16)], r"loop bounds must be affine .*'range\(i \* i\)'"),
    (float_bound, [np.zeros(4), 2.0], r"range\(\) takes integers, and 'x' is a float"),
    (iterate_array, [np.zeros(4)], r"for loops must iterate over range\(...\), not 'A'"),
    (loop_variable_after, [np.zeros(4)], r"'i' is the variable of the loop at line \d+"),
    (one_branch, [np.zeros(4)], r"'t' has no single value after the if at line \d+"),
    (no_initial_value, [np.zeros(4)], r"'s' is carried by this loop .* no value before it"),
    (integer_power, [np.zeros(4), 2], r"an integer power needs a constant exponent"),
    (and_of_numbers, [np.zeros(4)], r"is a number in Python, not a condition"),
    (string_value, [np.zeros(4)], r"'x'.*\(str\) is outside the subset"),
    (is_comparison, [np.zeros(4)], r"comparison 'A\[0\] is None' is not supported"),
    (lambda_value, [np.zeros(4)], r"Lambda .* is outside the subset"),
    (math_unknown, [np.zeros(4)], r"call of unknown function 'math.gamma'"),
    (keyword_call, [np.zeros(4)], r"call of 'max' with keywords"),
    (reassign_array_in_loop, [np.zeros(4), np.zeros(4)], r"'A' is not a number and cannot"),
    (condition_and_number, [np.zeros(4)], r"cannot combine a condition with a number"),
    (tuple_unpack_mismatch, [np.zeros((2, 2, 2))], r"cannot unpack into '\(n, m\)'"),
    (undefined_name, [np.zeros(4)], r"name 'nothing' is not defined"),
]


def _marked_line(function: Callable[..., Any]) -> int:
    lines, first = inspect.getsourcelines(function)
    marked = [k for k, line in enumerate(lines) if line.rstrip().endswith("# <-")]
    assert len(marked) == 1, function.__name__
    return first + marked[0]


@pytest.mark.parametrize(("function", "args", "message"), CASES, ids=[c[0].__name__ for c in CASES])
def test_error_names_file_line_and_construct(
    function: Callable[..., Any], args: list[Any], message: str
) -> None:
    kern = loopopt.kernel(function)
    with pytest.raises(LoopoptError, match=message) as caught:
        kern.mlir(*args)
    error = caught.value
    assert error.location is not None
    filename, line, column = error.location.rsplit(":", 2)
    assert filename == __file__
    assert int(line) == _marked_line(function)
    assert int(column) >= 1
    assert len(str(error).splitlines()) == 1


def test_calls_refuse_unsupported_arguments() -> None:
    def store(A, x):
        A[0] = x

    kern = loopopt.kernel(store)
    for bad, what in [
        ([np.zeros(4, np.complex64), 1.0], "argument 'A' is a complex64 array; arrays must be"),
        ([np.zeros(4), np.float16(1)], "argument 'x' is a float16 scalar; float16 is an array"),
        ([[1.0, 2.0], 1.0], "argument 'A' is a list, not a float16/bfloat16/float32/float64/"),
        ([np.zeros(4), True], "argument 'x' is a bool, not"),
        ([np.zeros(4)], r"store\(\) takes 2 arguments, 1 given"),
    ]:
        with pytest.raises(LoopoptError, match=what):
            kern(*bad, target="cpu")


def test_star_parameters_and_lambdas_are_refused() -> None:
    def star(*arrays):
        pass

    with pytest.raises(LoopoptError, match=r"positional parameters only"):
        loopopt.kernel(star)
    with pytest.raises(LoopoptError, match=r"needs a def, not a lambda"):
        loopopt.kernel(lambda A: None)
