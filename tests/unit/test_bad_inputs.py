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
