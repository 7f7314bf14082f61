"""loopopt's naive (coalescing-aware) SGEMM next to cuBLAS, in one process.

    python benchmarks/matmul_naive.py [--n 4096] [--block 32,8 ...] [--repeat 20]

The loop nest C[i, j] += A[i, k] * B[k, j] goes through `gpu-map-loops` only (no tiling, no shared
memory): i and j become the grid and the block, the contiguous j goes to threadIdx.x, k stays a
sequential loop in the kernel. cuBLAS runs through torch (TF32 off). The upstream MLIR 22
tiled-parallel GPU mapping of the same nest measured 0.97 TFLOP/s on the H200
(../shared/ANCHORS.md); it cannot run here (no MLIR on the GPU machine), so its row quotes
that anchor.

`--pipeline P` adds rows that run P on the perfect nest C[i, j] += A[i, k] * B[k, j] (C zeroed),
e.g. the tiled, shared-memory schedule of `loopopt run`.

Every result is checked against a float64 reference on fresh random inputs, with the output
poisoned (NaN) before the run.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import loopopt

UPSTREAM_MLIR_TFLOPS_H200 = 0.97


def matmul_mlir(n: int) -> str:
    t = f"memref<{n}x{n}xf32>"
    return f"""
func.func @matmul(%A: {t}, %B: {t}, %C: {t}) {{
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {n} {{
      %zero = arith.constant 0.0 : f32
      %sum = affine.for %k = 0 to {n} iter_args(%acc = %zero) -> (f32) {{
        %a = affine.load %A[%i, %k] : {t}
        %b = affine.load %B[%k, %j] : {t}
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %p : f32
        affine.yield %s : f32
      }} {{loopopt.name = "k"}}
      affine.store %sum, %C[%i, %j] : {t}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""


def matmul_accumulate_mlir(n: int) -> str:
    """The perfect nest C[i, j] += A[i, k] * B[k, j] (tiling and promotion pipelines need it)."""
    t = f"memref<{n}x{n}xf32>"
    return f"""
func.func @matmul(%A: {t}, %B: {t}, %C: {t}) {{
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = 0 to {n} {{
        %a = affine.load %A[%i, %k] : {t}
        %b = affine.load %B[%k, %j] : {t}
        %c = affine.load %C[%i, %j] : {t}
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : {t}
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--block", action="append", default=None, help="e.g. 32,8 (repeatable)")
    parser.add_argument(
        "--pipeline", action="append", default=None, help="more pipelines to time (repeatable)"
    )
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    n = args.n
    flops = 2.0 * n**3
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(n, n, device="cuda", generator=gen)
    b = torch.randn(n, n, device="cuda", generator=gen)
    ref = (a.double() @ b.double()).float()

    def rel_err(out: torch.Tensor) -> float:
        return float(torch.linalg.norm((out - ref).double()) / torch.linalg.norm(ref.double()))

    rows: list[tuple[str, float, float]] = []
    c = torch.full((n, n), float("nan"), device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(3):
        torch.matmul(a, b, out=c)
    for _ in range(args.repeat):
        start.record()
        torch.matmul(a, b, out=c)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    cublas_ms = float(np.median(times))
    assert rel_err(c) < 1e-4, "cuBLAS result is wrong"
    rows.append(("cuBLAS (torch, TF32 off)", cublas_ms, flops / cublas_ms / 1e9))

    text = matmul_mlir(n)
    failed = False
    accumulate = matmul_accumulate_mlir(n)
    pipelines = [
        (f"loopopt naive, block={block}", f"gpu-map-loops{{block={block}}}", text)
        for block in args.block or ["32,8", "32,4", "16,16", "64,4"]
    ]
    pipelines += [(f"loopopt {p}", p, accumulate) for p in args.pipeline or []]
    for name, pipeline, source in pipelines:
        kern = loopopt.compile(source, "matmul", pipeline=pipeline, target="gpu")
        # The accumulating nest needs C = 0 (one run is checked); the other is poisoned.
        fill = 0.0 if source is accumulate else float("nan")
        c = torch.full((n, n), fill, device="cuda")
        kern(a, b, c)
        err = rel_err(c)
        ms = kern.time(a, b, c, repeat=args.repeat)
        ok = err < 1e-4
        failed |= not ok
        label = name + ("" if ok else f" WRONG (rel. err {err:.1e})")
        rows.append((label, ms, flops / ms / 1e9))

    gpu = torch.cuda.get_device_name(0)
    print(f"SGEMM {n}³ (fp32), {gpu}; median of {args.repeat} runs, CUDA events")
    width = max(38, *(len(label) for label, _, _ in rows))
    print(f"{'':{width}s} {'ms':>9s} {'TFLOP/s':>8s} {'vs cuBLAS':>9s} {'vs MLIR':>8s}")
    for label, ms, tflops in rows:
        print(
            f"{label:{width}s} {ms:9.3f} {tflops:8.2f} {tflops / rows[0][2]:9.3f} "
            f"{tflops / UPSTREAM_MLIR_TFLOPS_H200:8.2f}"
        )
    anchor = "upstream MLIR 22 mapping (anchor, H200)"
    print(f"{anchor:{width}s} {'':9s} {UPSTREAM_MLIR_TFLOPS_H200:8.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
