"""Plain `xdsl-opt`, which finds loopopt through its `xdsl.universe` entry point, re-reads the
output of every loopopt pass (gpu, nvvm and llvm stages included)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from equivalence import transform
from kernels import LU
from test_version_guards import triangle

from loopopt.universe import PASSES

MATMUL = (Path(__file__).resolve().parents[2] / "src/loopopt/examples/matmul.mlir").read_text()
MATMUL_128 = """
func.func @matmul(%A: memref<128x128xf32>, %B: memref<128x128xf32>, %C: memref<128x128xf32>) {
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 128 {
      affine.for %k = 0 to 128 {
        %a = affine.load %A[%i, %k] : memref<128x128xf32>
        %b = affine.load %B[%k, %j] : memref<128x128xf32>
        %c = affine.load %C[%i, %j] : memref<128x128xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<128x128xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""
TWO_STATEMENTS = """
func.func @two(%A: memref<64xf32>, %B: memref<64xf32>, %C: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %a = affine.load %A[%i] : memref<64xf32>
    affine.store %a, %B[%i] : memref<64xf32>
  } {loopopt.name = "i"}
  affine.for %j = 0 to 64 {
    %b = affine.load %B[%j] : memref<64xf32>
    %s = arith.addf %b, %b : f32
    affine.store %s, %C[%j] : memref<64xf32>
  } {loopopt.name = "j"}
  return
}
"""
SCF = """
func.func @copy(%A: memref<64x64xf32>, %B: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %A[%i, %j] : memref<64x64xf32>
      memref.store %a, %B[%j, %i] : memref<64x64xf32>
    }
  }
  return
}
"""
CONV = """
func.func @conv(%I: memref<6x6xf32>, %F: memref<3x3xf32>, %O: memref<4x4xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      affine.for %p = 0 to 3 {
        affine.for %q = 0 to 3 {
          %x = affine.load %I[%i + %p, %j + %q] : memref<6x6xf32>
          %f = affine.load %F[%p, %q] : memref<3x3xf32>
          %o = affine.load %O[%i, %j] : memref<4x4xf32>
          %m = arith.mulf %x, %f : f32
          %s = arith.addf %o, %m : f32
          affine.store %s, %O[%i, %j] : memref<4x4xf32>
        } {loopopt.name = "q"}
      } {loopopt.name = "p"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""
SCRATCH = """
func.func @rows(%A: memref<12x8xf32>, %t: memref<8xf32>) {
  affine.for %i = 2 to 12 step 3 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j] : memref<12x8xf32>
      affine.store %a, %t[%j] : memref<8xf32>
    } {loopopt.name = "j"}
    affine.for %k = 0 to 8 {
      %b = affine.load %t[7 - %k] : memref<8xf32>
      affine.store %b, %A[%i, %k] : memref<12x8xf32>
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  return
}
"""
SHARED = "loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared}"
RING = (
    "loop-tile{tile-sizes=64,64,32},promote{arrays=A loop=k_t memory-space=shared pad=4},"
    "promote{arrays=B loop=k_t memory-space=shared pad=4},loop-tile{loops=i,j tile-sizes=8,4},"
    "gpu-map-loops{block=16,8 copy-vector=4},loop-unroll{unroll-full loop=A_copy_in},"
    "loop-unroll{unroll-full loop=B_copy_in},pipeline-copies{loop=k_t stages=3 async}"
)
PAD = "loop-tile{tile-sizes=4,4,8},pad-tiles{loops=i,j,k}"

SHIFT = """
func.func @shift(%A: memref<64xf32>) {
  affine.for %i = 0 to 63 {
    %a = affine.load %A[%i + 1] : memref<64xf32>
    affine.store %a, %A[%i] : memref<64xf32>
  } {loopopt.name = "i"}
  return
}
"""
"""A[i] = A[i + 1]: the read sees no write of the loop (array-snapshot makes i parallel)."""

GEMM_ALPHA = """
func.func @gemm(%alpha: f32, %A: memref<16x8xf32>, %B: memref<8x16xf32>, %C: memref<16x16xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 8 {
      affine.for %j = 0 to 16 {
        %a = affine.load %A[%i, %k] : memref<16x8xf32>
        %m = arith.mulf %alpha, %a : f32
        %b = affine.load %B[%k, %j] : memref<8x16xf32>
        %p = arith.mulf %m, %b : f32
        %c = affine.load %C[%i, %j] : memref<16x16xf32>
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<16x16xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  return
}
"""
"""gemm's `alpha * A[i, k]`, computed again for every j (hoist-invariants computes it once)."""

CASES: dict[str, tuple[str, str]] = {
    "loop-name": (MATMUL, "loop-name"),
    "raise-scf-to-affine": (SCF, "raise-scf-to-affine"),
    "loop-tile": (MATMUL, "loop-tile{tile-sizes=32,32,8}"),
    "loop-strip-mine": (MATMUL, "loop-strip-mine{factor=4 loop=k}"),
    "loop-unroll": (MATMUL, "loop-unroll{unroll-factor=3 loop=k}"),
    "loop-unroll-jam": (MATMUL, "loop-unroll-jam{unroll-jam-factor=2 loop=i}"),
    "loop-interchange": (MATMUL, "loop-interchange{permutation=1,0,2}"),
    "loop-peel": (MATMUL, "loop-peel{loop=i count=2}"),
    "loop-skew": (MATMUL, "loop-skew{loops=i,j factor=2}"),
    "loop-distribute": (TWO_STATEMENTS, "loop-fuse{loops=i,j},loop-distribute{loop=i}"),
    "loop-fuse": (TWO_STATEMENTS, "loop-fuse{loops=i,j}"),
    "loop-reschedule": (LU, "loop-reschedule"),
    "array-expand": (SCRATCH, "array-expand"),
    "array-snapshot": (SHIFT, "array-snapshot"),
    "hoist-invariants": (GEMM_ALPHA, "hoist-invariants"),
    "reduction-to-memory": (MATMUL, "scalar-replace{loop=k},reduction-to-memory"),
    "pad-tiles": (MATMUL, PAD),
    "loop-mark-parallel": (MATMUL, "loop-mark-parallel"),
    "promote": (MATMUL, SHARED),
    "pipeline-copies": (MATMUL_128, RING),
    "scalar-replace": (MATMUL, f"{PAD},promote{{arrays=A,B loop=k_t}},scalar-replace{{loop=k_t}}"),
    "version-guards": (
        triangle(9, 3, below=True),
        "loop-tile{loops=i,j,k tile-sizes=2,1,4},pad-tiles{loops=i_t,k_t,i,k},"
        "loop-unroll{unroll-full loop=k},loop-unroll{unroll-full loop=j},"
        "loop-unroll{unroll-full loop=i},scalar-replace{loop=k_t},version-guards{loop=k_t}",
    ),
    "loopopt-lower-to-llvm": (MATMUL, "loop-tile{tile-sizes=32,32,8},loopopt-lower-to-llvm"),
    "gpu-map-loops": (MATMUL, f"{SHARED},gpu-map-loops"),
    "gpu-constant-memory": (
        CONV,
        "gpu-map-loops{block=4,4},loop-unroll{unroll-full loop=q},gpu-constant-memory{arrays=F}",
    ),
    "auto-schedule": (MATMUL, "auto-schedule"),
    "gpu-mma": (
        (Path(__file__).resolve().parents[1] / "filecheck/passes/gpu-mma.mlir").read_text(),
        "loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,32},"
        "promote{arrays=A loop=k_t memory-space=shared pad=8},"
        "promote{arrays=B loop=k_t memory-space=shared pad=8},gpu-mma,gpu-map-loops{block=32,2}",
    ),
    "loopopt-lower-gpu-to-nvvm": (MATMUL_128, f"{RING},loopopt-lower-gpu-to-nvvm"),
}


def _xdsl_opt() -> str:
    found = shutil.which("xdsl-opt", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("xdsl-opt is not installed next to this Python")
    return found


def test_every_pass_has_a_case() -> None:
    assert set(CASES) == set(PASSES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_plain_xdsl_opt_rereads_the_output(name: str) -> None:
    text, pipeline = CASES[name]
    assert name in pipeline
    printed = transform(text, pipeline)
    proc = subprocess.run([_xdsl_opt()], input=printed, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"xdsl-opt rejects {name}'s output: {proc.stderr[-1500:]}"
    assert proc.stdout.count("func.func") + proc.stdout.count("llvm.func") >= 1
