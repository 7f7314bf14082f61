"""The anchors of ../shared/ANCHORS.md: what a user would pick instead, run in loopopt's process.

    strict_fp32()                                 # TF32 off for cuBLAS and cuDNN
    run = runner("cuBLAS", workload, inputs)      # inputs: float32 CUDA tensors
    region = run()                                # the output's written region (to check)
    ms = time_ms(run, repeat=20)                  # median of CUDA-event timings

cuBLAS is torch.matmul, cuDNN torch.nn.functional.conv2d/conv3d (one channel, NCHW), Triton a
standard tiled matmul with `tl.dot(..., input_precision="ieee")` (FMA, no TF32) and a small
autotune list, torch the jacobi sweep as slicing. Upstream MLIR's SGEMM cannot run on the GPU
machine: it is quoted (`quoted_ms`). The floors of the roofline are the FP32 FMA peak (from the
device's SM count and clock) and the device's copy bandwidth (measured here). Needs torch;
Triton is optional (its anchor reports an error without it).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from workloads import Workload

from loopopt.runtime.cuda import L2_FLUSH_BYTES

try:
    import triton
    import triton.language as tl
except ImportError:  # the Triton anchor then reports that it is missing
    triton = None

UPSTREAM_MLIR_SGEMM_TFLOPS = {4096: 0.97}
"""Upstream MLIR 22 tiled-parallel GPU mapping of SGEMM n³ on the H200 (ANCHORS.md)."""
H200_FP32_PEAK = 66.9e12
"""FP32 FMA peak of the H200 (ANCHORS.md), used when the device's clock cannot be read."""

Runner = Callable[[], torch.Tensor]


def strict_fp32() -> None:
    """fp32 strict: no TF32 in cuBLAS or cuDNN."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def time_ms(run: Callable[[], object], warmup: int = 3, repeat: int = 20) -> float:
    """Median milliseconds of `run()`, kernel time only, timed as loopopt's `Compiled.time`
    (runtime.cuda.time_kernel) and triton.testing.do_bench: an L2 flush queued before each
    run keeps the GPU busy while the host launches, so launch overhead stays out."""
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    pairs = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(max(1, repeat))
    ]
    for start, end in pairs:
        flush.zero_()
        start.record()
        run()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in pairs)


def rel_error(got: torch.Tensor, ref: torch.Tensor) -> float:
    """‖got − ref‖ / ‖ref‖ (Frobenius, float64); NaN anywhere gives NaN."""
    diff = torch.linalg.vector_norm(got.double() - ref)
    return float(diff / torch.linalg.vector_norm(ref))


def copy_bandwidth(nbytes: int = 1 << 30, repeat: int = 20) -> float:
    """Bytes per second of a device-to-device copy of `nbytes` (read + written counted)."""
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), repeat=repeat)
    return 2.0 * nbytes / (ms * 1e-3)


def fp32_peak() -> tuple[float, str]:
    """FP32 FMA flop/s of device 0 (SMs × FP32 lanes × 2 × clock) and how it was found."""
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    lanes = 64 if (props.major, props.minor) in {(6, 0), (7, 0), (7, 5), (8, 0)} else 128
    khz = getattr(props, "clock_rate", 0) or _driver_clock_khz()
    if not khz:
        return H200_FP32_PEAK, "the H200's, from ANCHORS.md (clock unknown)"
    ghz = khz / 1e6
    return sms * lanes * 2 * ghz * 1e9, f"{sms} SMs × {lanes} lanes × 2 × {ghz:.2f} GHz"


def _driver_clock_khz() -> int:
    try:
        from loopopt.runtime import cuda

        device = cuda.context()
        attribute = cuda._driver().CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CLOCK_RATE
        return int(cuda.call("cuDeviceGetAttribute", attribute, device.handle))
    except Exception:  # an old or new driver without the attribute: the caller falls back
        return 0


def quoted_ms(name: str, workload: Workload) -> float | None:
    """Milliseconds of an anchor that is quoted, not run (None: `name` is run, or not quoted)."""
    if name != "MLIR" or workload.func != "sgemm":
        return None
    m, n, k = workload.sizes
    tflops = UPSTREAM_MLIR_SGEMM_TFLOPS.get(n) if m == n == k else None
    return None if tflops is None else workload.flops / (tflops * 1e9)


def runner(name: str, workload: Workload, inputs: Sequence[torch.Tensor]) -> Runner:
    """A function computing `workload` the anchor's way; it returns the written output region."""
    kind = workload.func
    if name == "cuBLAS" and kind in ("sgemm", "sgemm_atb"):
        return _cublas(kind, inputs)
    if name == "Triton" and kind in ("sgemm", "sgemm_atb"):
        return _triton(kind, inputs)
    if name == "cuDNN" and kind in ("conv2d", "conv3d"):
        return _cudnn(kind, inputs)
    if name == "torch" and kind == "jacobi2d":
        return _torch_jacobi(inputs)
    raise ValueError(f"no {name} anchor for {workload.name}")


def _operands(kind: str, inputs: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(A, B) with C = A @ B: AᵀB passes the transposed view (no copy)."""
    a, b = inputs
    return (a.t(), b) if kind == "sgemm_atb" else (a, b)


def _cublas(kind: str, inputs: Sequence[torch.Tensor]) -> Runner:
    a, b = _operands(kind, inputs)
    c = torch.full((a.shape[0], b.shape[1]), float("nan"), device=a.device)
    return lambda: torch.matmul(a, b, out=c)


def _cudnn(kind: str, inputs: Sequence[torch.Tensor]) -> Runner:
    image, filt = (x[None, None] for x in inputs)  # N = C = 1
    conv = F.conv2d if kind == "conv2d" else F.conv3d
    return lambda: conv(image, filt)[0, 0]  # cross-correlation, no padding: the nest


def _torch_jacobi(inputs: Sequence[torch.Tensor]) -> Runner:
    (a,) = inputs
    out = torch.full_like(a, float("nan"))

    def run() -> torch.Tensor:
        c = a[1:-1, 1:-1]
        out[1:-1, 1:-1] = 0.2 * (c + a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        return out[1:-1, 1:-1]

    return run


def _triton(kind: str, inputs: Sequence[torch.Tensor]) -> Runner:
    if triton is None:
        raise ImportError("triton is not installed")
    a, b = _operands(kind, inputs)
    (m, k), n = a.shape, b.shape[1]
    c = torch.full((m, n), float("nan"), device=a.device)

    def grid(meta: dict[str, Any]) -> tuple[int]:
        return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

    def run() -> torch.Tensor:
        _matmul_kernel[grid](
            a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0)
        )
        return c

    return run


if triton is not None:

    def _config(bm: int, bn: int, bk: int, stages: int, warps: int) -> Any:
        meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}
        return triton.Config(meta, num_stages=stages, num_warps=warps)

    @triton.autotune(
        configs=[
            _config(128, 128, 32, 3, 8),
            _config(128, 256, 16, 3, 8),
            _config(256, 128, 16, 3, 8),
            _config(128, 64, 32, 4, 4),
            _config(64, 128, 32, 4, 4),
            _config(64, 64, 32, 4, 4),
        ],
        key=["M", "N", "K", "stride_am", "stride_ak"],
    )
    @triton.jit
    def _matmul_kernel(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        stride_am,
        stride_ak,
        stride_bk,
        stride_bn,
        stride_cm,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
    ):
        # C = A @ B in fp32 (ieee: FMA, no TF32), C row-major; output tiles in groups of rows.
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        num_pid_in_group = GROUP_M * num_pid_n
        first_pid_m = (pid // num_pid_in_group) * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            k_left = K - k0
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee")
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :]
        tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
