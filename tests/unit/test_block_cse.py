"""Merging repeated ops and loads within a block before lowering (lowering/block_cse.py)."""

from __future__ import annotations

import numpy as np
import pytest
from kernels import matmul

import loopopt.lowering.gpu_to_nvvm as gpu_to_nvvm
import loopopt.lowering.to_llvm as to_llvm
from loopopt.backend.ptx import module_to_ptx
from loopopt.context import make_context, parse_module
from loopopt.lowering.block_cse import merge_repeats
from loopopt.pass_pipeline import apply_passes, parse_pipeline
from loopopt.runtime.cpu import compile_cpu

TEXT = """
func.func @f(%A: memref<8x8xf32>, %B: memref<8x8xf32>, %i: index, %j: index) {
  %a = affine.load %A[%i, 3] : memref<8x8xf32>
  %a2 = affine.load %A[%i, 3] : memref<8x8xf32>
  %other = affine.load %A[%i, 4] : memref<8x8xf32>
  %c = arith.cmpi slt, %i, %j : index
  %c2 = arith.cmpi slt, %i, %j : index
  %d = arith.cmpi sle, %i, %j : index
  %s = arith.addf %a, %a2 : f32
  %s2 = arith.addf %s, %other : f32
  affine.store %s2, %B[%i, %j] : memref<8x8xf32>
  %after = affine.load %A[%i, 3] : memref<8x8xf32>
  affine.store %after, %A[%j, %i] : memref<8x8xf32>
  %again = affine.load %A[%i, 3] : memref<8x8xf32>
  %after2 = affine.load %A[%i, 3] : memref<8x8xf32>
  %x = arith.select %c, %again, %after2 : f32
  %y = arith.select %c2, %again, %after2 : f32
  %z = arith.select %d, %x, %y : f32
  affine.for %k = 0 to 8 {
    %inner = affine.load %A[%i, 3] : memref<8x8xf32>
    %inner2 = affine.load %A[%i, 3] : memref<8x8xf32>
    %t = arith.addf %inner, %inner2 : f32
    affine.store %t, %B[%k, %j] : memref<8x8xf32>
  }
  affine.store %z, %B[%j, %j] : memref<8x8xf32>
  return
}
"""


def test_equal_loads_merge_until_a_store_and_equal_pure_ops_merge() -> None:
    module = parse_module(TEXT)
    # a2, c2, after2 (into again), y (then equal to x), inner2
    assert merge_repeats(module) == 5
    text = str(module)
    assert "%a2" not in text and "%c2" not in text and "%after2" not in text
    assert "%s = arith.addf %a, %a : f32" in text
    # a store may write A[i, 3]: the load after it stays, and the one after that reuses it
    assert "%x = arith.select %c, %again, %again : f32" in text
    assert "%z = arith.select %d, %x, %x : f32" in text
    # the loop body starts empty and merges its own loads
    assert "%t = arith.addf %inner, %inner : f32" in text
    assert text.count("affine.load %A[%i, 3]") == 4  # a, after, again, inner


def test_a_load_is_not_merged_across_a_barrier_or_an_async_copy() -> None:
    module = parse_module(
        """
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%A: memref<64xf32>)
        workgroup(%S: memref<64xf32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %a = memref.load %S[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %b = memref.load %S[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %a, %b : f32
      memref.store %s, %A[%t] : memref<64xf32>
      gpu.return
    }
  }
}
"""
    )
    assert merge_repeats(module) == 0


def _ptx(text: str, pipeline: str, merge: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    if not merge:
        monkeypatch.setattr(gpu_to_nvvm, "merge_repeats", lambda op: 0)
        monkeypatch.setattr(to_llvm, "merge_repeats", lambda op: 0)
    module = parse_module(text)
    apply_passes(make_context(), module, parse_pipeline(pipeline), lambda p, m: None)
    ptx = module_to_ptx(module, "sm_90")
    monkeypatch.undo()
    return ptx


REGISTER_TILED = (
    "loop-tile{tile-sizes=32,32,8},promote{arrays=A loop=k_t memory-space=shared pad=4},"
    "promote{arrays=B loop=k_t memory-space=shared pad=4},loop-tile{loops=i,j tile-sizes=4,2},"
    "gpu-map-loops{block=16,8},loop-unroll{unroll-full loop=k},loop-unroll{unroll-full loop=j},"
    "loop-unroll{unroll-full loop=i},scalar-replace{loop=k_t}"
)


@pytest.mark.parametrize("sizes", [(64, 64, 64), (67, 45, 33)])
def test_the_ptx_of_a_register_tiled_kernel_is_the_same(
    sizes: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """LLVM merges what block_cse merges: the same PTX, from fewer ops."""
    text, _, _ = matmul(*sizes, np.random.default_rng(0))
    pipeline = REGISTER_TILED if sizes[0] % 32 == 0 else "auto-schedule{device=sm_90}"
    merged = _ptx(text, pipeline, True, monkeypatch)
    assert merged == _ptx(text, pipeline, False, monkeypatch)
    assert merged.count("fma.rn.f32") >= 8


def test_an_unrolled_kernel_on_the_cpu_gives_the_same_results() -> None:
    """The host lowering merges too: an unrolled, scalar-replaced matmul against numpy."""
    text, name, arrays = matmul(12, 10, 7, np.random.default_rng(1))
    module = parse_module(text)
    pipeline = (
        "loop-tile{tile-sizes=4,2},loop-unroll{unroll-full loop=j},"
        "loop-unroll{unroll-full loop=i},scalar-replace{loop=k}"
    )
    apply_passes(make_context(), module, parse_pipeline(pipeline), lambda p, m: None)
    a, b, c = arrays
    want = c + a @ b
    compile_cpu(module, name)(a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
