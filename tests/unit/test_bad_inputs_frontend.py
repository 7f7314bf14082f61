"""Front-end misuse, continued from test_bad_inputs.py: `@loopopt.kernel` called with arguments
of the wrong kind, shape or dtype, and kernels that use Python the subset does not have. Each
is one `LoopoptError` located at the kernel's line it is about (the `def` line for arguments),
and the caller's arrays are unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loopopt
from loopopt.diagnostics import LoopoptError

F32 = np.float32
G = 3.0


def helper(x: float) -> float:
    return x


@loopopt.kernel
def scale(A, B):
    for i in range(A.shape[0]):
        B[i] = 2.0 * A[i]


@loopopt.kernel
def while_loop(A):
    i = 0
    while i < 4:
        A[i] = 1.0


@loopopt.kernel
def try_block(A):
    try:  # noqa: SIM105
        A[0] = 1.0
    except Exception:
        pass


@loopopt.kernel
def calls_python(A):
    for i in range(A.shape[0]):
        A[i] = helper(A[i])


@loopopt.kernel
def uses_lambda(A):
    f = lambda x: x  # noqa: E731, F841
    A[0] = 1.0


@loopopt.kernel
def list_comp(A):
    x = [1.0 for _ in range(3)]  # noqa: F841


@loopopt.kernel
def prints(A):
    print(A[0])


@loopopt.kernel
def returns(A):
    return A[0]


@loopopt.kernel
def nested_def(A):
    def inner():
        pass

    A[0] = 1.0


@loopopt.kernel
def with_block(A):
    with open("x"):
        A[0] = 1.0


@loopopt.kernel
def string_const(A):
    A[0] = "x"


@loopopt.kernel
def step_zero(A):
    for i in range(0, 4, 0):
        A[i] = 1.0


@loopopt.kernel
def range_four(A):
    for i in range(0, 4, 1, 2):
        A[i] = 1.0


@loopopt.kernel
def for_list(A):
    for i in [0, 1]:
        A[i] = 1.0


@loopopt.kernel
def matmul_op(A):
    A[0] = A[1] @ A[2]


@loopopt.kernel
def shape_five(A):
    for i in range(A.shape[5]):
        A[i] = 1.0


@loopopt.kernel
def breaks(A):
    for i in range(4):
        if A[i] > 0.0:
            break
        A[i] = 1.0


@loopopt.kernel
def out_of_bounds(A):
    for i in range(A.shape[0]):
        A[i + 1] = 1.0


@loopopt.kernel
def attr_write(A):
    A.shape = 3


@loopopt.kernel
def slices(A):
    A[0:2] = 1.0


@loopopt.kernel
def generator(A):
    yield A[0]


@loopopt.kernel
def fstring(A):
    x = f"{A[0]}"  # noqa: F841


@loopopt.kernel
def dict_literal(A):
    x = {1: 2}  # noqa: F841


@loopopt.kernel
def big_literal(A):
    for i in range(A.shape[0]):
        A[i] = 123456789012345678901234567890


@loopopt.kernel
def big_power(A):
    for _i in range(2**70):
        A[0] = 1.0


@loopopt.kernel
def huge_exponent(A):
    A[0] = 3**10**9


def _z(n: int = 4, dtype: Any = F32) -> np.ndarray:
    return np.arange(n, dtype=dtype)


ANY = "a float16/bfloat16/float32/float64/int32/int64 array, an int or a float"
CASES: dict[str, tuple[Any, Any, str, str]] = {
    # kernel, arguments (or a function making them), line it is about, what it says
    "too-few-arguments": (scale, (_z(),), "def scale", "scale() takes 2 arguments, 1 given"),
    "too-many-arguments": (
        scale,
        (_z(), _z(), _z()),
        "def scale",
        "scale() takes 2 arguments, 3 given",
    ),
    "string": (scale, ("abc", _z()), "def scale", f"argument 'A' is a str, not {ANY}"),
    "list": (scale, ([1.0, 2.0], _z()), "def scale", f"argument 'A' is a list, not {ANY}"),
    "none": (scale, (None, _z()), "def scale", f"argument 'A' is a NoneType, not {ANY}"),
    "bool": (scale, (True, _z()), "def scale", f"argument 'A' is a bool, not {ANY}"),
    "complex-array": (
        scale,
        (np.zeros(4, np.complex64), _z()),
        "def scale",
        "argument 'A' is a complex64 array; arrays must be float16, bfloat16, float32, float64, "
        "int32 or int64",
    ),
    "object-array": (
        scale,
        (np.zeros(4, object), _z()),
        "def scale",
        "argument 'A' is an object array",
    ),
    "bool-array": (scale, (np.zeros(4, bool), _z()), "def scale", "argument 'A' is a bool array"),
    "rank": (
        scale,
        (np.zeros((4, 4), F32), _z()),
        "B[i] = 2.0 * A[i]",
        "'A[i]' indexes 1 of the 2 dimensions",
    ),
    "output-too-short": (
        scale,
        (_z(8), _z()),
        "B[i] = 2.0 * A[i]",
        "'B[i]' may index B[4] outside its shape (4,) (at i = 4)",
    ),
    "read-only-output": (
        scale,
        lambda: (_z(), np.frombuffer(_z().tobytes(), F32)),
        "def scale",
        "scale(): argument 'B' is read-only but the kernel writes it",
    ),
    "overlapping": (
        scale,
        lambda: (lambda a: (a[:4], a[2:6]))(_z(8)),
        "def scale",
        "scale(): arguments 'A' and 'B' share memory and one is written",
    ),
    "index-past-the-end": (
        out_of_bounds,
        (_z(),),
        "A[i + 1] = 1.0",
        "'A[i + 1]' may index A[4] outside its shape (4,) (at i = 3)",
    ),
    "illegal-schedule": (
        scale,
        (_z(), _z()),
        "for i in range(A.shape[0])",
        "loop-interchange: permutation has 2 entries but the band (i) has 1 loops",
    ),
    "while": (while_loop, (_z(),), "while i < 4", "while loops are outside the subset"),
    "try": (try_block, (_z(),), "try:", "try statements are outside the subset"),
    "python-call": (
        calls_python,
        (_z(),),
        "A[i] = helper(A[i])",
        "call of unknown function 'helper'",
    ),
    "lambda": (uses_lambda, (_z(),), "f = lambda", "Lambda 'lambda x: x' is outside the subset"),
    "list-comprehension": (list_comp, (_z(),), "x = [1.0", "is outside the subset"),
    "print": (prints, (_z(),), "print(A[0])", "statement 'print(A[0])' is outside the subset"),
    "return-value": (
        returns,
        (_z(),),
        "return A[0]",
        "return is only allowed at the end, without a value",
    ),
    "nested-def": (nested_def, (_z(),), "def inner", "nested functions are outside the subset"),
    "with": (with_block, (_z(),), 'with open("x")', "with statements are outside the subset"),
    "string-constant": (string_const, (_z(),), 'A[0] = "x"', "(str) is outside the subset"),
    "range-step-zero": (
        step_zero,
        (_z(),),
        "for i in range(0, 4, 0)",
        "the step of 'range(0, 4, 0)' must be a nonzero constant",
    ),
    "range-four-arguments": (
        range_four,
        (_z(),),
        "for i in range(0, 4, 1, 2)",
        "range() takes 1 to 3 positional arguments",
    ),
    "for-over-a-list": (
        for_list,
        (_z(),),
        "for i in [0, 1]",
        "for loops must iterate over range(...), not '[0, 1]'",
    ),
    "matmul-operator": (matmul_op, (_z(),), "A[0] = A[1] @ A[2]", "operator '@' is not supported"),
    "shape-past-the-rank": (
        shape_five,
        (_z(),),
        "for i in range(A.shape[5])",
        "'A.shape[5]' is out of range: 'A.shape' has 1 dimension",
    ),
    "break": (breaks, (_z(),), "break", "break is outside the subset"),
    "assign-to-shape": (attr_write, (_z(),), "A.shape = 3", "cannot assign to 'A.shape'"),
    "slice": (slices, (_z(),), "A[0:2] = 1.0", "slices are outside the subset: 'A[0:2]'"),
    "generator": (generator, (_z(),), "yield A[0]", "statement 'yield A[0]' is outside"),
    "f-string": (fstring, (_z(),), 'x = f"{A[0]}"', "is outside the subset"),
    "dict": (dict_literal, (_z(),), "x = {1: 2}", "Dict '{1: 2}' is outside the subset"),
    "int-beyond-64-bits": (  # was xDSL's VerifyException
        big_literal,
        (_z(dtype=np.int64),),
        "A[i] = 1234",
        "'123456789012345678901234567890' does not fit in 64 bits",
    ),
    "bound-beyond-64-bits": (  # was a loop of 2**70 cut to 64 bits: a hang
        big_power,
        (_z(),),
        "for _i in range(2**70)",
        "'2 ** 70' does not fit in 64 bits",
    ),
    "power-not-computed": (  # Python would compute 3 ** 10**9 for minutes first
        huge_exponent,
        (_z(),),
        "A[0] = 3**10**9",
        "'3 ** 10 ** 9' does not fit in 64 bits",
    ),
    # a pass's complaint about its options names the kernel (it named nothing)
    "option-out-of-range": (scale, (_z(), _z()), "def scale(A, B):", "tile size -1 is negative"),
}
SCHEDULES = {
    "illegal-schedule": "loop-interchange{permutation=1,0}",
    "option-out-of-range": "loop-tile{tile-sizes=-1}",
}


@pytest.mark.parametrize(("kernel", "args", "line", "says"), CASES.values(), ids=CASES)
def test_front_end_refusals(
    request: pytest.FixtureRequest, kernel: Any, args: Any, line: str, says: str
) -> None:
    args = args() if callable(args) else args
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    schedule = SCHEDULES.get(request.node.callspec.id)
    with pytest.raises(LoopoptError) as error:
        kernel(*args, schedule=schedule, target="cpu")
    assert says in error.value.message, error.value.message
    assert "\n" not in error.value.one_line()
    source = Path(__file__).read_text().splitlines()
    number = next(k for k, text in enumerate(source, start=1) if text.strip().startswith(line))
    assert error.value.location is not None
    assert error.value.location.startswith(f"{__file__}:{number}:"), error.value.location
    for arg, copy in zip(args, before, strict=True):
        if isinstance(arg, np.ndarray):
            np.testing.assert_array_equal(arg, copy)


def test_unknown_target_is_one_line() -> None:
    A, B = _z(), _z()
    with pytest.raises(LoopoptError, match="unknown target 'tpu'"):
        scale(A, B, target="tpu")
    np.testing.assert_array_equal(B, _z())


@loopopt.kernel
def copy(A, B):
    for i in range(A.shape[0]):
        B[i] = A[i]


@pytest.mark.parametrize("schedule", [None, "auto", "loop-tile{tile-sizes=4}"])
def test_zero_size_arrays_run(schedule: str | None) -> None:
    """Loops of 0 iterations: nothing to do (the cost model divided by the 0-size block)."""
    A, B = np.zeros(0, F32), np.zeros(0, F32)
    copy(A, B, schedule=schedule, target="cpu")
    A, B = np.ones(3, F32), np.zeros(3, F32)
    copy(A, B, schedule=schedule, target="cpu")
    np.testing.assert_array_equal(B, A)
