"""mlir-opt 22 reads each stage of a matmul with shared-memory promotion and a cp.async ring:
what loop-tile, promote, gpu-map-loops (workgroup attributions), pipeline-copies (nvgpu async
copies) and the NVVM lowering print (skipped without mlir-opt)."""

from __future__ import annotations

import pytest
from equivalence import transform
from test_xdsl_opt_rereads import MATMUL_128, RING
from upstream import assert_upstream_valid

PROMOTED = (
    "loop-tile{tile-sizes=64,64,32},promote{arrays=A loop=k_t memory-space=shared pad=4},"
    "promote{arrays=B loop=k_t memory-space=shared pad=4}"
)
STAGES = {
    "loop-tile": "loop-tile{tile-sizes=64,64,32}",
    "promote": PROMOTED,
    "gpu-map-loops": f"{PROMOTED},loop-tile{{loops=i,j tile-sizes=8,4}},"
    "gpu-map-loops{block=16,8 copy-vector=4}",
    "pipeline-copies": RING,
    "loopopt-lower-gpu-to-nvvm": f"{RING},loopopt-lower-gpu-to-nvvm",
}


@pytest.mark.parametrize("stage", list(STAGES))
def test_mlir_opt_reads_the_stage(stage: str) -> None:
    printed = transform(MATMUL_128, STAGES[stage])
    if stage == "loopopt-lower-gpu-to-nvvm":
        assert "nvvm.cp.async.shared.global" in printed and "gpu.kernel" in printed
        assert "nvvm.cp.async.wait.group" in printed
    if stage == "gpu-map-loops":
        assert "gpu.launch_func" in printed and "gpu.barrier" in printed
        assert "workgroup(%A_shared" in printed and "memref.alloca" not in printed
    if stage == "pipeline-copies":
        assert "nvgpu.device_async_copy" in printed and "nvgpu.device_async_wait" in printed
    assert_upstream_valid(printed)
