// RUN: loopopt-opt %s -p 'gpu-map-loops{reductions=block region-threads=96}' --emit ptx | filecheck %s
// RUN: %if ptxas %{ loopopt-opt %s -p 'gpu-map-loops{reductions=block region-threads=96}' --emit ptx -o %t.ptx && %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// Row sums of f64 and row maxima of i32 with a block of 96 threads per row: a shared-memory
// tree from 96 partial results down to 32 (96 → 48 → 32, a barrier after each level), then 5
// butterfly shuffles over the whole warp (mask -1, clamp 31) with no barrier among them. An
// f64 moves as two 32-bit halves (two shuffles per step), an i32 as itself. Thread 0 stores
// the total in shared memory, which every thread reads after one more barrier.
// CHECK-LABEL: .visible .entry rows_k0(
// CHECK-COUNT-3: bar.sync 0;
// CHECK:         shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// CHECK-NEXT:    shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// CHECK-NOT:     bar.sync
// CHECK:         shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK-NEXT:    shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK:         st.shared.b64
// CHECK:         bar.sync 0;
// CHECK:         ld.shared.b64
// CHECK-NOT:     shfl.sync
// CHECK-LABEL: .visible .entry rows_k1(
// CHECK-COUNT-3: bar.sync 0;
// CHECK:         shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// CHECK-NEXT:    max.s32
// CHECK-NOT:     bar.sync
// CHECK:         shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK:         st.shared.b32
// CHECK:         bar.sync 0;
func.func @rows(%A: memref<300x500xf64>, %out: memref<300xf64>, %B: memref<300x500xi32>, %m: memref<300xi32>) {
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 300 {
    %s = affine.for %j = 0 to 500 iter_args(%acc = %zero) -> (f64) {
      %a = affine.load %A[%i, %j] : memref<300x500xf64>
      %n = arith.addf %acc, %a : f64
      affine.yield %n : f64
    } {loopopt.name = "j"}
    affine.store %s, %out[%i] : memref<300xf64>
  } {loopopt.name = "i"}
  %low = arith.constant -2147483648 : i32
  affine.for %i = 0 to 300 {
    %s = affine.for %j = 0 to 500 iter_args(%acc = %low) -> (i32) {
      %b = affine.load %B[%i, %j] : memref<300x500xi32>
      %n = arith.maxsi %acc, %b : i32
      affine.yield %n : i32
    } {loopopt.name = "j"}
    affine.store %s, %m[%i] : memref<300xi32>
  } {loopopt.name = "i"}
  return
}
