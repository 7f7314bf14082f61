// RUN: loopopt-opt %s -p 'gpu-map-loops{block=64},loop-unroll{unroll-full in-llvm loop=k}' --emit ptx | filecheck %s
// RUN: loopopt-opt %s -p 'gpu-map-loops{block=64}' --emit ptx | filecheck %s --check-prefix=ROLLED

// A loop marked for LLVM to unroll (`loop-unroll{unroll-full in-llvm}`) is unrolled by LLVM:
// the kernel holds all 128 multiply-adds of a row and no branch; unmarked, LLVM's own
// heuristics keep a loop (unrolled 8 times).
// CHECK-LABEL: .visible .entry rows_k0(
// CHECK-COUNT-128: fma.rn.f32
// CHECK-NOT:   fma.rn.f32
// CHECK-NOT:   bra
// CHECK:       ret;

// ROLLED-LABEL: .visible .entry rows_k0(
// ROLLED:       bra
func.func @rows(%A: memref<256x128xf32>, %B: memref<128xf32>, %C: memref<256xf32>) {
  affine.for %i = 0 to 256 {
    %zero = arith.constant 0.0 : f32
    %s = affine.for %k = 0 to 128 iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %A[%i, %k] : memref<256x128xf32>
      %b = affine.load %B[%k] : memref<128xf32>
      %m = arith.mulf %a, %b : f32
      %n = arith.addf %acc, %m : f32
      affine.yield %n : f32
    } {loopopt.name = "k"}
    affine.store %s, %C[%i] : memref<256xf32>
  } {loopopt.name = "i"}
  return
}
