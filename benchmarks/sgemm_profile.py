"""One run of loopopt's SGEMM 4096³ (the benchmark's hand schedule, schedules.SGEMM) and one of
cuBLAS's (torch.matmul, TF32 off), on the same inputs, for Nsight Compute to profile both:

    ncu --section SpeedOfLight --section Occupancy --section WarpStateStats \\
        --section SchedulerStats --section LaunchStats --section InstructionStats \\
        --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,\\
    lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,\\
    smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,\\
    smsp__average_warp_latency_issue_stalled_mio_throttle.ratio,... \\
        -k regex:"sgemm|gemm" python3 benchmarks/sgemm_profile.py

It prints the largest difference between the two results (rounding only; 0.0 on the H200 on
2026-11-25, the inputs being in [0, 1)). What the profile says
is in benchmarks/README.md ("SGEMM against cuBLAS: the profile").
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

import schedules  # noqa: E402
import workloads  # noqa: E402

import loopopt  # noqa: E402

N = 4096


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    kernel = loopopt.compile(
        workloads.sgemm_mlir((N, N, N)), "sgemm", pipeline=schedules.SGEMM, target="gpu"
    )
    a, b = torch.rand(N, N, device="cuda"), torch.rand(N, N, device="cuda")
    c = torch.zeros(N, N, device="cuda")
    kernel(a, b, c)
    d = torch.matmul(a, b)
    torch.cuda.synchronize()
    print(f"max |loopopt - cuBLAS| = {float((c - d).abs().max()):.3g}")


if __name__ == "__main__":
    main()
