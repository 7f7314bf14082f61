"""The explicit schedules (pass pipelines) of the benchmark kernels, one place for all of them.

Each entry is a loopopt pass pipeline applied to the workload's loop nest (benchmarks/workloads.py
builds the MLIR). `benchmarks/run.py` times them next to the anchors; examples/ reuse them.
"""

from __future__ import annotations

SGEMM = "gpu-map-loops{block=32,8}"
"""C[i, j] += A[i, k] * B[k, j] (perfect, accumulating nest; C zeroed)."""

SGEMM_ATB = "gpu-map-loops{block=32,8}"
"""C[i, j] += A[k, i] * B[k, j]."""

CONV2D = "gpu-map-loops{block=32,8}"
"""out[i, j] += image[i + p, j + q] * filt[p, q] (out zeroed)."""

CONV3D = "gpu-map-loops{block=32,4,2}"
"""out[i, j, l] += image[i + p, j + q, l + r] * filt[p, q, r]."""

JACOBI2D = "gpu-map-loops{block=32,8}"
"""out[i, j] = 0.2 * (a[i, j] + a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])."""
