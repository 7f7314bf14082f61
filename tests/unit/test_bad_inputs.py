"""Bad and unusual inputs: one line that says what is wrong and where, never a crash.

Each CLI case runs in-process through `run(argv)` / `main(argv)` and checks the exit code (1; 2
for argparse usage errors), a single-line diagnostic with its location where there is one, no
traceback and no `-o` file. Front-end cases check that the caller's arrays are unchanged. The
cases that used to kill the interpreter (SIGFPE, segfaults) run in child processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import affine
from xdsl.dialects.builtin import ModuleOp

import loopopt
from loopopt.diagnostics import LoopoptError
from loopopt.passes.loop_name import LoopNamePass
from loopopt.tools import loopopt_cli, loopopt_opt

GOOD = """func.func @f(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %A[%i] : memref<8xf32>
  }
  return
}
"""
NOT_UTF8 = b"func.func @f() {\xff\xfe}\n"
SEMI_AFFINE = """func.func @f(%A: memref<64xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %v = affine.load %A[%i * %j] : memref<64xf32>
      affine.store %v, %A[%i + %j] : memref<64xf32>
    }
  }
  return
}
"""

HUGE = """func.func @f(%A: memref<1000000000xf32>) {
  affine.for %i = 0 to 1000000000 {
    affine.for %j = 0 to 2 {
      %v = affine.load %A[%i] : memref<1000000000xf32>
      affine.store %v, %A[%i] : memref<1000000000xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


@dataclass(frozen=True)
class Case:
    """A bad input: the command line (`in.mlir` is `text`; `-o out.mlir` is added for
    loopopt-opt), the exit code, where the one diagnostic line starts and what it says."""

    argv: tuple[str, ...]
    where: str
    says: str
    text: str | bytes = GOOD
    code: int = 1


PIPELINE_ERRORS = {
    "unclosed-options": ("loop-tile{tile-sizes=32", "<pipeline>:1:24: ", "expected either a space"),
    "stray-brace": ("loop-tile}", "<pipeline>:1:10: ", "expected a comma or pass arguments"),
    "empty-element": ("loop-name,,loop-name", "<pipeline>:1:11: ", "expected pass name"),
    "leading-comma": (",loop-name", "<pipeline>:1:1: ", "expected pass name"),
    "trailing-comma": ("loop-name,", "<pipeline>:1:10: ", "trailing comma"),
    "empty-value": ("loop-tile{tile-sizes=}", "<pipeline>:1:22: ", "unknown argument value"),
    "unsupported-anchor": (
        "builtin.module(gpu.module(loop-name))",
        "<pipeline>:1:16: ",
        "anchor 'gpu.module(...)' inside builtin.module(...) is not supported",
    ),
    "function-in-function": (
        "func.func(func.func(loop-name))",
        "<pipeline>:1:11: ",
        "anchor 'func.func(...)' inside func.func(...) is not supported",
    ),
    "unclosed-anchor": ("func.func(loop-name", "<pipeline>:1:10: ", "'(' is never closed"),
    "unbalanced-paren": ("loop-name)", "<pipeline>:1:10: ", "unbalanced ')'"),
    "comma-after-anchor": ("func.func(loop-name),", "<pipeline>:1:21: ", "after this comma"),
    "no-comma-after-anchor": (
        "func.func(loop-name) cse",
        "<pipeline>:1:22: ",
        "expected ',' or ')' after 'func.func(...)'",
    ),
    "error-in-anchor": (
        "builtin.module(func.func(loop-tile{tile-sizes=a}))",
        "<pipeline>:1:26: ",
        "loop-tile:",
    ),
    "space-in-pass-name": ("loop-name, loop nam", "<pipeline>:1:16: ", "expected a comma"),
    "xdsl-pass-option": ("cse{foo=1}", "<pipeline>:1:1: ", "cse: unknown option 'foo'"),
    "xdsl-pass-misspelt": ("canonicalise", "<pipeline>:1:1: ", "did you mean 'canonicalize'"),
    "unknown-pass": ("loop-nam", "<pipeline>:1:1: ", "did you mean 'loop-name'"),
    "bad-value": ("loop-name,loop-tile{tile-sizes=a}", "<pipeline>:1:11: ", "loop-tile:"),
    "negative-top": ("auto-schedule{top=-1}", "<pipeline>:1:1: ", "top must be >= 0, got -1"),
}

LIMIT = "more than max-ops=65536 (raise max-ops to allow it)"
OPT_CASES = {
    "not-utf8": Case(("in.mlir",), "in.mlir:1:17: ", "not valid UTF-8 (byte 0xff)", NOT_UTF8),
    "unroll-full-1e9": Case(
        ("in.mlir", "-p", "loop-unroll{unroll-full loop=i}"),
        "in.mlir:2:3: ",
        "loop-unroll: fully unrolling 'i' would create 4000000000 ops (1000000000 copies of a "
        f"body of 4), {LIMIT}",
        HUGE,
    ),
    "unroll-factor-1e9": Case(
        ("in.mlir", "-p", "loop-unroll{unroll-factor=999999999 loop=i}"),
        "in.mlir:2:3: ",
        "loop-unroll: unrolling by 999999999 'i' would create 3999999996 ops",
        HUGE,
    ),
    "unroll-jam-1e9": Case(
        ("in.mlir", "-p", "loop-unroll-jam{unroll-jam-factor=999999999}"),
        "in.mlir:2:3: ",
        "loop-unroll-jam: unroll-and-jam by 999999999 of 'i' would create 3999999996 ops",
        HUGE,
    ),
    "unroll-max-ops-raised-but-short": Case(
        ("in.mlir", "-p", "loop-unroll{unroll-full loop=i max-ops=3999999999}"),
        "in.mlir:2:3: ",
        "would create 4000000000 ops (1000000000 copies of a body of 4), more than "
        "max-ops=3999999999",
        HUGE,
    ),
    "unroll-max-ops-negative": Case(
        ("in.mlir", "-p", "loop-unroll{max-ops=-1}"), "in.mlir: ", "max-ops must be >= 0"
    ),
    "option-missing": Case(
        ("in.mlir", "-p", "loop-name,promote"), "in.mlir: ", "promote: missing option loop="
    ),
    "option-out-of-range": Case(
        ("in.mlir", "-p", "loop-tile{tile-sizes=-2}"), "in.mlir: ", "tile size -2 is negative"
    ),
    "semi-affine": Case(("in.mlir",), "in.mlir:4:34: ", "semi-affine expression", SEMI_AFFINE),
    "unknown-emit": Case(("in.mlir", "--emit", "x"), "loopopt-opt: ", "--emit", code=2),
    **{
        f"pipeline-{name}": Case(("in.mlir", "-p", pipeline), where, says)
        for name, (pipeline, where, says) in PIPELINE_ERRORS.items()
    },
}

RUN_CASES = {
    "not-utf8": Case(("run", "in.mlir"), "in.mlir:1:17: ", "not valid UTF-8", NOT_UTF8),
    "semi-affine": Case(("run", "in.mlir"), "in.mlir:4:34: ", "semi-affine", SEMI_AFFINE),
    "repeat-0": Case(("run", "--repeat", "0"), "loopopt run: ", "at least 1", code=2),
    "pipeline": Case(
        ("run", "in.mlir", "--target", "cpu", "-p", "loop-name,"),
        "<pipeline>:1:10: ",
        "trailing comma",
    ),
}


def _check(case: Case, code: int, stderr: str, out: Path | None = None) -> None:
    assert code == case.code, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    if case.code == 1:
        assert len(lines) == 1, stderr
    assert lines[-1].startswith(f"{case.where}error: "), lines[-1]
    assert case.says in lines[-1], lines[-1]
    assert out is None or not out.exists()


@pytest.mark.parametrize("case", OPT_CASES.values(), ids=OPT_CASES.keys())
def test_loopopt_opt(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    text = case.text if isinstance(case.text, bytes) else case.text.encode()
    (tmp_path / "in.mlir").write_bytes(text)
    try:
        code = loopopt_opt.run([*case.argv, "-o", "out.mlir"])
    except SystemExit as e:  # argparse
        code = int(e.code or 0)
    _check(case, code, capsys.readouterr().err, tmp_path / "out.mlir")


@pytest.mark.parametrize("case", RUN_CASES.values(), ids=RUN_CASES.keys())
def test_loopopt_run(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    text = case.text if isinstance(case.text, bytes) else case.text.encode()
    (tmp_path / "in.mlir").write_bytes(text)
    with pytest.raises(SystemExit) as exit:
        loopopt_cli.main(list(case.argv))
    _check(case, int(exit.value.code or 0), capsys.readouterr().err)


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """A pipe with `data` on stdin, as `cat in.mlir | loopopt-opt` gives."""
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    monkeypatch.setattr(sys, "stdin", os.fdopen(read))


def test_empty_stdin_is_an_empty_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`mlir-opt bad.mlir | loopopt-opt` must not compile the bundled example instead."""
    _stdin(monkeypatch, b"")
    out = tmp_path / "out.mlir"
    assert loopopt_opt.run(["-p", "loop-name", "-o", str(out)]) == 0, capsys.readouterr().err
    assert out.read_text() == "builtin.module {\n}\n"
    out.unlink()
    _stdin(monkeypatch, b"")  # `mlir-opt bad.mlir | loopopt-opt -p gpu-map-loops --emit ptx`
    code = loopopt_opt.run(["-p", "gpu-map-loops", "--emit", "ptx", "-o", str(out)])
    case = Case((), "<stdin>: ", "no gpu.module to compile to PTX")
    _check(case, code, capsys.readouterr().err, out)


def test_not_utf8_on_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, NOT_UTF8)
    out = tmp_path / "out.mlir"
    code = loopopt_opt.run(["-o", str(out)])
    case = Case((), "<stdin>:1:17: ", "not valid UTF-8")
    _check(case, code, capsys.readouterr().err, out)


def _crash_at_first_loop(self: LoopNamePass, ctx: Context, module: ModuleOp) -> None:
    for op in module.walk():
        if isinstance(op, affine.ForOp):
            raise KeyError("missing")


def test_internal_error_names_the_pass_and_the_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug in a pass: one line with the pass and the op it was working on, in both CLIs."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(LoopNamePass, "apply", _crash_at_first_loop)
    (tmp_path / "in.mlir").write_text(GOOD)
    case = Case((), "in.mlir:2:3: ", "internal error in loop-name (KeyError): 'missing'")
    code = loopopt_opt.run(["in.mlir", "-p", "loop-mark-parallel,loop-name", "-o", "out.mlir"])
    _check(case, code, capsys.readouterr().err, tmp_path / "out.mlir")
    with pytest.raises(SystemExit) as exit:
        loopopt_cli.main(["run", "in.mlir", "--target", "cpu", "-p", "loop-name"])
    _check(case, int(exit.value.code or 0), capsys.readouterr().err)


def test_loopopt_run_of_a_function_without_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing to compare: it matches (the comparison used to fail in max() of nothing)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.mlir").write_text("func.func @f() {\n  return\n}\n")
    with pytest.raises(SystemExit) as exit:
        loopopt_cli.main(["run", "in.mlir", "--target", "cpu", "-p", "", "--repeat", "1"])
    captured = capsys.readouterr()
    assert exit.value.code == 0, captured.err
    assert "matches the original" in captured.out


@loopopt.kernel
def scale(A, B):
    for i in range(A.shape[0]):
        B[i] = 2.0 * A[i]


@pytest.mark.parametrize(
    ("pipeline", "where", "says"), PIPELINE_ERRORS.values(), ids=PIPELINE_ERRORS.keys()
)
def test_schedule_errors_in_python(pipeline: str, where: str, says: str) -> None:
    """`schedule="..."`: a LoopoptError (never xDSL's exception); the arrays are unchanged."""
    A, B = np.arange(4, dtype=np.float32), np.full(4, 7.0, np.float32)
    with pytest.raises(LoopoptError) as error:
        scale(A, B, schedule=pipeline, target="cpu")
    assert error.value.one_line().startswith(f"{where}error: ")
    assert says in error.value.message
    np.testing.assert_array_equal(A, np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(B, np.full(4, 7.0, np.float32))
    with pytest.raises(LoopoptError):
        loopopt.compile(GOOD, "f", pipeline=pipeline, target="cpu")


@loopopt.kernel
def float_bound(A):
    for i in range(2.5):
        A[i] = 1.0


@loopopt.kernel
def float_parameter_bound(A, n):
    for i in range(n):
        A[i] = 1.0


F32 = np.float32
MISLEADING = {  # kernel, arguments, the line of the kernel's source it is about, what it says
    "0-d-array": (
        scale,
        (np.array(1.0, F32), np.zeros(4, F32)),
        "def scale",
        "scale() argument 'A' is a 0-d float32 array; kernels take numbers and arrays of one or "
        "more dimensions (reshape it to (1,))",
    ),
    "float128-array": (
        scale,
        (np.zeros(4, np.longdouble), np.zeros(4, F32)),
        "def scale",
        f"scale() argument 'A' is a {np.dtype(np.longdouble).name} array; arrays must be float16, "
        "bfloat16, float32, float64, int32 or int64",
    ),
    "number-for-an-array": (
        scale,
        (1.0, np.zeros(4, F32)),
        "for i in range(A.shape[0])",
        "'A' is a number (float), not an array: 'A.shape'",
    ),
    "float-bound": (
        float_bound,
        (np.zeros(4, F32),),
        "for i in range(2.5)",
        "range() takes integers, and '2.5' is a float: 'range(2.5)'",
    ),
    "float-parameter-bound": (
        float_parameter_bound,
        (np.zeros(4, F32), 2.5),
        "for i in range(n)",
        "range() takes integers, and 'n' is a float: 'range(n)'",
    ),
}


@pytest.mark.parametrize(("kernel", "args", "line", "says"), MISLEADING.values(), ids=MISLEADING)
def test_messages_say_what_is_wrong(
    kernel: Any, args: tuple[Any, ...], line: str, says: str
) -> None:
    """Each used to mislead: `not a float32/… array` for a 0-d array, `'A.shape' is outside
    the subset` for a number passed as an array, `loop bounds must be affine` for a float."""
    before = [np.array(a, copy=True) for a in args]
    with pytest.raises(LoopoptError) as error:
        kernel(*args, target="cpu")
    assert error.value.message == says
    source = Path(__file__).read_text().splitlines()
    number = next(k for k, text in enumerate(source, start=1) if text.strip().startswith(line))
    assert error.value.location is not None
    assert error.value.location.startswith(f"{__file__}:{number}:")
    for arg, copy in zip(args, before, strict=True):
        np.testing.assert_array_equal(arg, copy)


def _python(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """Run `source` as a script file (the front end reads kernels' source from their file)."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, timeout=300
    )


def test_integer_division_by_zero_in_a_kernel_is_defined(tmp_path: Path) -> None:
    """x // 0 is 0 and x % 0 is x (README), on the CPU as on the GPU; no SIGFPE."""
    proc = _python(
        tmp_path,
        """
        import numpy as np, loopopt

        @loopopt.kernel
        def divide(A, Q, R, n):
            for i in range(A.shape[0]):
                Q[i] = A[i] // n
                R[i] = A[i] % n

        for dtype in (np.int32, np.int64):
            A = np.array([-7, -1, 0, 3, np.iinfo(dtype).min], dtype)
            Q, R = np.ones_like(A), np.ones_like(A)
            divide(A, Q, R, 0, target="cpu")
            assert Q.tolist() == [0] * 5 and R.tolist() == A.tolist(), (Q, R)
            divide(A, Q, R, -1, target="cpu")
            assert Q.tolist() == [7, 1, 0, -3, A[4]] and R.tolist() == [0] * 5, (Q, R)
        print("ok")
        """,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


def test_float_division_by_zero_in_a_kernel_is_numpys(tmp_path: Path) -> None:
    """x // 0.0 and x % 0.0, where Python raises: NumPy's floor_divide and remainder (±inf,
    NaN for 0 // 0, NaN), also for a negative zero; other divisors as Python's."""
    proc = _python(
        tmp_path,
        """
        import numpy as np, loopopt

        @loopopt.kernel
        def divide(A, B, Q, R):
            for i in range(A.shape[0]):
                Q[i] = A[i] // B[i]
                R[i] = A[i] % B[i]

        for dtype in (np.float32, np.float64):
            A = np.array([-7.5, -1.0, 0.0, 3.25, 5.0, -2.0, 7.5], dtype)
            B = np.array([0.0, 0.0, 0.0, -0.0, 2.0, -0.75, -2.0], dtype)
            Q, R = np.ones_like(A), np.ones_like(A)
            divide(A, B, Q, R, target="cpu")
            with np.errstate(all="ignore"):
                want_q, want_r = np.floor_divide(A, B), np.remainder(A, B)
            np.testing.assert_array_equal(Q, want_q)
            np.testing.assert_array_equal(R, want_r)
        print("ok")
        """,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


def test_kernels_named_after_the_libm_functions_they_call(tmp_path: Path) -> None:
    """`def exp` calling math.exp, `def fmod` with float %: the JIT's symbols are prefixed, so the
    kernel does not take the place of libm's function (it used to call itself: segfault)."""
    proc = _python(
        tmp_path,
        """
        import math
        import numpy as np, loopopt

        @loopopt.kernel
        def exp(A):
            for i in range(A.shape[0]):
                A[i] = math.exp(A[i])

        @loopopt.kernel
        def fmod(A, B):
            for i in range(A.shape[0]):
                A[i] = A[i] % B[i]

        A = np.arange(8, dtype=np.float64)
        exp(A, target="cpu")
        assert np.allclose(A, np.exp(np.arange(8))), A
        A, B = np.arange(8, dtype=np.float64) - 3.5, np.full(8, 3.0)
        expected = A % B
        fmod(A, B, target="cpu")
        assert np.array_equal(A, expected), A
        print("ok")
        """,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


EXPF = """func.func @expf(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    %e = math.exp %v : f32
    affine.store %e, %A[%i] : memref<8xf32>
  }
  return
}
"""
MALLOC = """func.func @malloc(%A: memref<8xf32>) {
  %B = memref.alloc() : memref<8xf32>
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %B[%i] : memref<8xf32>
  }
  func.call @expf(%B) : (memref<8xf32>) -> ()
  affine.for %i = 0 to 8 {
    %v = affine.load %B[%i] : memref<8xf32>
    affine.store %v, %A[%i] : memref<8xf32>
  }
  memref.dealloc %B : memref<8xf32>
  return
}
"""


@pytest.mark.parametrize(("text", "func"), [(EXPF, "expf"), (MALLOC + EXPF, "malloc")])
def test_loopopt_run_of_functions_named_after_c_library_functions(
    tmp_path: Path, text: str, func: str
) -> None:
    """`@expf` (math.exp f32 lowers to a call of expf) and `@malloc` (memref.alloc calls malloc;
    its call of @expf must reach the user's function, renamed too)."""
    src = tmp_path / "libm.mlir"
    src.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "loopopt.tools.loopopt_cli", "run", str(src), "--func", func]
        + ["--target", "cpu", "-p", "", "--repeat", "1"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "matches the original" in proc.stdout


def test_pipeline_copies_refuses_a_ring_no_gpu_has_room_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stages=100000`: refused at once (it used to replicate the copies for minutes)."""
    monkeypatch.chdir(tmp_path)
    kernels = Path(__file__).parents[1] / "filecheck" / "passes" / "pipeline-copies.mlir"
    (tmp_path / "in.mlir").write_text(kernels.read_text())
    pipeline = "pipeline-copies{func=rows_k0 loop=k_t stages=100000 async}"
    code = loopopt_opt.run(["in.mlir", "-p", pipeline, "-o", "out.mlir"])
    [line] = capsys.readouterr().err.splitlines()
    assert code == 1 and not (tmp_path / "out.mlir").exists()
    assert line.startswith("in.mlir:") and "error: pipeline-copies{async}: rings of 100000 " in line
    assert "bytes of shared memory; no GPU gives a block more than 232448" in line
