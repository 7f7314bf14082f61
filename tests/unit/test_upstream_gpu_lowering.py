"""Upstream MLIR's own GPU pipeline lowers what gpu-map-loops prints with loopopt's meaning.

A matmul tiled 32x32x8 (sizes 100x90x70: partial tiles, guarded copies) with A and B promoted
to shared memory, mapped by gpu-map-loops (`shared`), and a 128³ one whose copies then become a
cp.async ring of 3 tiles by pipeline-copies (`ring`: nvgpu.device_async_copy): `mlir-opt
--lower-affine --gpu-lower-to-nvvm-pipeline` makes PTX in which each workgroup buffer is one
`.shared` array of the block (not a thread's `.local` stack), and that kernel, launched through
loopopt's runtime, computes what loopopt's own kernel computes. The device has no mlir-opt: the
GPU test runs the PTX kept in upstream_ptx/ (`python tests/unit/test_upstream_gpu_lowering.py`
writes it again; a test checks it is what mlir-opt makes now).
"""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import numpy as np
import pytest
from equivalence import transform
from test_xdsl_opt_rereads import MATMUL_128
from upstream import upstream_ptx
from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import IntegerAttr, MemRefType

import loopopt
from loopopt.backend.ptx import assemble, find_ptxas
from loopopt.context import make_context, parse_module
from loopopt.dialects import gpu_ext
from loopopt.lowering.llvm_common import element_bytes
from loopopt.target import STATIC_SHARED_BYTES

M, N, K = 100, 90, 70
MATMUL = f"""
func.func @matmul(%A: memref<{M}x{K}xf32>, %B: memref<{K}x{N}xf32>, %C: memref<{M}x{N}xf32>) {{
  affine.for %i = 0 to {M} {{
    affine.for %j = 0 to {N} {{
      affine.for %k = 0 to {K} {{
        %a = affine.load %A[%i, %k] : memref<{M}x{K}xf32>
        %b = affine.load %B[%k, %j] : memref<{K}x{N}xf32>
        %c = affine.load %C[%i, %j] : memref<{M}x{N}xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<{M}x{N}xf32>
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""
PIPELINE = (
    "loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared pad=1},"
    "gpu-map-loops"
)
RING = (
    "loop-tile{tile-sizes=64,64,16},promote{arrays=A loop=k_t memory-space=shared pad=4},"
    "promote{arrays=B loop=k_t memory-space=shared pad=4},loop-tile{loops=i,j tile-sizes=8,4},"
    "gpu-map-loops{block=16,8 copy-vector=4},loop-unroll{unroll-full loop=A_copy_in},"
    "loop-unroll{unroll-full loop=B_copy_in},pipeline-copies{loop=k_t stages=3 async}"
)
"""Rings of 3 tiles that fit in static shared memory (upstream declares them statically)."""
CASES = {"shared": (MATMUL, PIPELINE), "ring": (MATMUL_128, RING)}
PTX_DIR = Path(__file__).resolve().parent / "upstream_ptx"
KERNEL = "matmul_k0"


def _ptx_file(case: str) -> Path:
    return PTX_DIR / f"matmul_{case}.ptx"


def _mapped(case: str) -> str:
    return transform(*CASES[case])


def _shape(text: str) -> tuple[int, int, int]:
    """(M, N, K) of the matmul in `text`."""
    m, k = re.search(r"%A: memref<(\d+)x(\d+)xf32>", text).groups()  # type: ignore[union-attr]
    n = re.search(r"%B: memref<\d+x(\d+)xf32>", text).group(1)  # type: ignore[union-attr]
    return int(m), int(n), int(k)


def _launch_and_buffers(text: str) -> tuple[list[int], list[int], list[int]]:
    """The launch's grid and block sizes, and the bytes of the kernel's workgroup buffers."""
    module = parse_module(text, "mapped.mlir", make_context())
    [launch] = [op for op in module.walk() if isinstance(op, gpu.LaunchFuncOp)]
    [kernel] = [op for op in module.walk() if isinstance(op, gpu.FuncOp)]

    def constant(value: object) -> int:
        owner = getattr(value, "owner", None)
        assert isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr)
        return owner.value.value.data

    grid = [constant(v) for v in (launch.gridSizeX, launch.gridSizeY, launch.gridSizeZ)]
    block = [constant(v) for v in (launch.blockSizeX, launch.blockSizeY, launch.blockSizeZ)]
    sizes: list[int] = []
    for buffer in gpu_ext.workgroup_args(kernel):
        t = buffer.type
        assert isinstance(t, MemRefType)
        sizes.append(int(np.prod(t.get_shape())) * element_bytes(t.element_type))
    return grid, block, sizes


@pytest.mark.parametrize("case", list(CASES))
def test_upstream_declares_each_workgroup_buffer_shared(case: str) -> None:
    text = _mapped(case)
    _, _, sizes = _launch_and_buffers(text)
    assert len(sizes) == 2, "A and B are workgroup attributions of the kernel"
    assert sum(sizes) <= STATIC_SHARED_BYTES, "upstream declares them statically"
    ptx = upstream_ptx(text)
    declared = re.findall(r"\.shared \.align (\d+) \.b8 \w+\[(\d+)\];", ptx)
    assert sorted(int(n) for _, n in declared) == sorted(sizes)
    assert {int(a) for a, _ in declared} == {16}
    assert "__local_depot" not in ptx and ".local" not in ptx, "a buffer is a thread's own"
    assert "ld.shared" in ptx and "bar.sync" in ptx
    if case == "ring":  # upstream lowers nvgpu's copies and groups to cp.async
        assert re.search(r"cp\.async\.cg\.shared\.global \[%rd\d+\], \[%rd\d+\], 16;", ptx)
        assert "cp.async.commit_group;" in ptx and re.search(r"cp\.async\.wait_group\s+1;", ptx)
    else:
        assert "st.shared" in ptx


@pytest.mark.parametrize("case", list(CASES))
def test_the_kept_ptx_assembles_without_a_stack(case: str) -> None:
    """ptxas takes upstream's kernel for sm_90: no stack frame (no buffer is a thread's own)."""
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("needs ptxas")
    report = assemble(_ptx_file(case).read_text(), "sm_90", ptxas)
    assert "0 bytes stack frame" in report


@pytest.mark.parametrize("case", list(CASES))
def test_the_kept_ptx_is_what_upstream_makes_now(case: str) -> None:
    assert upstream_ptx(_mapped(case)) == _ptx_file(case).read_text(), (
        "upstream's PTX changed: python tests/unit/test_upstream_gpu_lowering.py"
    )


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_upstream_lowered_kernel_computes_what_loopopts_does(
    case: str, rng: np.random.Generator
) -> None:
    from loopopt.runtime import cuda

    text, pipeline = CASES[case]
    m, n, k = _shape(text)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = rng.standard_normal((m, n), dtype=np.float32)
    mine = c.copy()
    loopopt.compile(text, "matmul", pipeline=pipeline, target="gpu")(a, b, mine)

    grid, block, _ = _launch_and_buffers(_mapped(case))
    kernel = cuda.get_kernel(_ptx_file(case).read_text(), KERNEL)
    buffers = [cuda.to_device(x) for x in (a, b, c)]
    cuda.launch(kernel, grid, block, [(buffer.ptr, ctypes.c_void_p) for buffer in buffers])
    cuda.synchronize()
    theirs = np.empty_like(c)
    buffers[2].copy_to(theirs)

    reference = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(mine, reference, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(theirs, mine, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":  # write the kept PTX again (needs mlir-opt 22)
    PTX_DIR.mkdir(exist_ok=True)
    for name in CASES:
        _ptx_file(name).write_text(upstream_ptx(_mapped(name)))
        print(f"wrote {_ptx_file(name)}")
