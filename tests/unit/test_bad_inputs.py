"""Bad and unusual inputs: one line that says what is wrong and where, never a crash.

Each CLI case runs in-process through `run(argv)` / `main(argv)` and checks the exit code (1; 2
for argparse usage errors), a single-line diagnostic with its location where there is one, no
traceback and no `-o` file. Front-end cases check that the caller's arrays are unchanged. The
cases that used to kill the interpreter (SIGFPE, segfaults) run in child processes.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


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
