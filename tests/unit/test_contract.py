"""FMA contraction of GPU kernels (lowering/contract.py)."""

from __future__ import annotations

from loopopt.context import parse_module
from loopopt.lowering.contract import contract_fma

TEXT = """
func.func @f(%a: f32, %b: f32, %c: f32, %m: memref<4xf32>) {
  %p = arith.mulf %a, %b : f32
  %s = arith.addf %c, %p : f32
  %q = arith.mulf %b, %c : f32
  %t = arith.addf %q, %s : f32
  %shared = arith.mulf %a, %c : f32
  %u = arith.addf %shared, %t : f32
  %v = arith.addf %shared, %u : f32
  %i = arith.constant 0 : index
  memref.store %v, %m[%i] : memref<4xf32>
  return
}
"""


def test_single_use_products_fuse_either_operand_order() -> None:
    module = parse_module(TEXT)
    contract_fma(module)
    text = str(module)
    assert text.count("math.fma") == 2
    assert "math.fma %a, %b, %c" in text
    # %shared has two uses: it stays a multiply, and both adds stay adds.
    assert text.count("arith.mulf") == 1
    assert text.count("arith.addf") == 2


def test_kernels_compile_to_fma_instructions() -> None:
    from loopopt.backend.ptx import module_to_ptx

    module = parse_module(
        """
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%A: memref<64xf32>, %B: memref<64xf32>) kernel {
      %t = gpu.thread_id x
      %a = memref.load %A[%t] : memref<64xf32>
      %b = memref.load %B[%t] : memref<64xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %p, %b : f32
      memref.store %s, %A[%t] : memref<64xf32>
      gpu.return
    }
  }
}
"""
    )
    ptx = module_to_ptx(module, "sm_90")
    assert "fma.rn.f32" in ptx
    assert "mul.rn.f32" not in ptx
