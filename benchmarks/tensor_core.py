"""Tensor-core GEMMs: loopopt's mma.sync schedules against cuBLAS (torch.matmul) in one process.

    python3 benchmarks/tensor_core.py              # every row
    python3 benchmarks/tensor_core.py --rows bf16-4096 tf32-4096

Rows: bf16 and f16 GEMM 4096³ and 8192³ (C f32 += A · B, the schedule auto-schedule picks:
tensor cores without being told), tf32 4096³ (f32 operands, `gpu-mma{precision=tf32}` on the
tensor_core recipe's tiles: opt-in), and bf16 3001³ (padded partial tiles). cuBLAS runs the
same product in torch (torch.matmul of the same bf16/f16 operands: cuBLAS's half GEMM, f32
accumulation, a half result; tf32 with `allow_tf32`). Every result is checked
against an f64 reference of the same operands with a tolerance fitting the precision
(relative Frobenius error: bf16/f16 operands are exact in f32 products, 1e-4; tf32 operands
lose 13 mantissa bits, 5e-3). Triton's matmul is not measured here (no Triton kernel is
shipped with this script). Prints one line per row: ms, TFLOP/s, the ratio to cuBLAS, the
error, and the schedule.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import loopopt  # noqa: E402
from loopopt.context import make_context  # noqa: E402
from loopopt.schedule.summary import summarize  # noqa: E402
from loopopt.schedule.tensor_core import tensor_core  # noqa: E402


@dataclass(frozen=True)
class Row:
    name: str
    element: str
    size: int
    tolerance: float


ROWS = [
    Row("bf16-4096", "bf16", 4096, 1e-4),
    Row("bf16-8192", "bf16", 8192, 1e-4),
    Row("f16-4096", "f16", 4096, 1e-4),
    Row("f16-8192", "f16", 8192, 1e-4),
    Row("tf32-4096", "f32", 4096, 5e-3),
    Row("bf16-3001-padded", "bf16", 3001, 1e-4),
]
TORCH_TYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def matmul_text(size: int, element: str) -> str:
    t = f"memref<{size}x{size}x{element}>"
    c = f"memref<{size}x{size}xf32>"
    widen = element != "f32"
    ext = (
        f"%ae = arith.extf %a : {element} to f32\n        %be = arith.extf %b : {element} to f32"
        if widen
        else ""
    )
    a, b = ("%ae", "%be") if widen else ("%a", "%b")
    return f"""
func.func @mm(%A: {t}, %B: {t}, %C: {c}) {{
  affine.for %i = 0 to {size} {{
    affine.for %j = 0 to {size} {{
      affine.for %k = 0 to {size} {{
        %a = affine.load %A[%i, %k] : {t}
        %b = affine.load %B[%k, %j] : {t}
        {ext}
        %p = arith.mulf {a}, {b} : f32
        %c = affine.load %C[%i, %j] : {c}
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : {c}
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  func.return
}}
"""


def pipeline_for(row: Row) -> str:
    if row.element != "f32":
        return "auto-schedule"
    from xdsl.dialects import func
    from xdsl.parser import Parser

    module = Parser(make_context(), matmul_text(row.size, row.element)).parse_module()
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    text = tensor_core(summarize(fn), 128, 128, 32, 64, 64).pipeline
    return text.replace("gpu-mma", "gpu-mma{precision=tf32}").replace("pad=8", "pad=4")


def _time(run: object, repeat: int = 20) -> float:
    assert callable(run)
    run()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeat):
        run()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeat * 1e3


def run_row(row: Row) -> str:
    kind = TORCH_TYPES[row.element]
    n = row.size
    generator = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(n, n, device="cuda", generator=generator).to(kind)
    b = torch.rand(n, n, device="cuda", generator=generator).to(kind)
    reference = a.double() @ b.double()
    pipeline = pipeline_for(row)
    kernel = loopopt.compile(matmul_text(n, row.element), "mm", pipeline, target="gpu")
    c = torch.zeros(n, n, device="cuda", dtype=torch.float32)
    kernel(a, b, c)
    error = float(torch.linalg.norm(c.double() - reference) / torch.linalg.norm(reference))
    ours = kernel.time(a, b, c, warmup=2, repeat=10)
    torch.backends.cuda.matmul.allow_tf32 = row.element == "f32"
    cublas = _time(lambda: torch.matmul(a, b))
    theirs = torch.matmul(a, b).double()
    cublas_error = float(torch.linalg.norm(theirs - reference) / torch.linalg.norm(reference))
    flops = 2.0 * n**3
    ok = "ok" if error <= row.tolerance else f"ERROR > {row.tolerance}"
    return (
        f"{row.name:18} loopopt {ours:8.3f} ms {flops / ours / 1e9:7.1f} TFLOP/s | cuBLAS "
        f"{cublas:8.3f} ms | {cublas / ours:5.2f}x cuBLAS | error {error:.2e} "
        f"(cuBLAS {cublas_error:.2e}) {ok} | {pipeline}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="*", default=[r.name for r in ROWS])
    args = parser.parse_args(argv)
    print(f"tensor-core GEMMs on {torch.cuda.get_device_name()}")
    failed = 0
    for row in ROWS:
        if row.name not in args.rows:
            continue
        try:
            line = run_row(row)
        except Exception as e:  # one row's failure is reported, the others still run
            line = f"{row.name:18} FAILED: {type(e).__name__}: {str(e).splitlines()[0]}"
        failed += "ERROR" in line or "FAILED" in line
        print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
