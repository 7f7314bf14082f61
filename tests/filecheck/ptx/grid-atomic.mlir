// RUN: loopopt-opt %s -p 'gpu-map-loops{reductions=grid-atomic}' --emit ptx | filecheck %s
// RUN: %if ptxas %{ loopopt-opt %s -p 'gpu-map-loops{reductions=grid-atomic}' --emit ptx -o %t.ptx && %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// A sum, a float max and an integer min of 2^20 elements, shared out over 1024 blocks that add
// their totals into one accumulator each: a one-thread kernel sets the accumulators to 0.0,
// -inf and INT64_MAX first; each block's thread 0 makes one atomic per value: a float add, a
// float max as a signed max of the non-negative and an unsigned min of the negative values'
// bits (the ordered-integer trick), an integer min. The region adds the initial values.
// CHECK:       .global .align 8 .b8 __total_2[8];
// CHECK-LABEL: .visible .entry total_k0(
// CHECK:         st.global.b32 [__total_0], 0;
// CHECK:         st.global.b32 [__total_1], -8388608;
// CHECK:         st.global.b64 [__total_2], 9223372036854775807;
// CHECK-LABEL: .visible .entry total_k1(
// CHECK:         shfl.sync.bfly.b32
// CHECK:         atom.global.add.f32 {{.*}}, [__total_0],
// CHECK:         atom.global.max.s32 {{.*}}, [__total_1],
// CHECK:         atom.global.min.u32 {{.*}}, [__total_1],
// CHECK:         atom.global.min.s64 {{.*}}, [__total_2],
// CHECK-LABEL: .visible .entry total_k2(
// CHECK:         ld.global.b32 {{.*}}, [__total_0];
func.func @total(%X: memref<1048576xf32>, %K: memref<1048576xi64>, %out: memref<3xf32>, %o: memref<1xi64>) {
  %zero = arith.constant 1.0 : f32
  %low = arith.constant 0xFF800000 : f32
  %high = arith.constant 9223372036854775807 : i64
  %s, %m, %k = affine.for %i = 0 to 1048576 iter_args(%acc = %zero, %big = %low, %least = %high) -> (f32, f32, i64) {
    %x = affine.load %X[%i] : memref<1048576xf32>
    %a = arith.addf %acc, %x : f32
    %b = arith.maximumf %big, %x : f32
    %y = affine.load %K[%i] : memref<1048576xi64>
    %c = arith.minsi %least, %y : i64
    affine.yield %a, %b, %c : f32, f32, i64
  } {loopopt.name = "i"}
  affine.store %s, %out[0] : memref<3xf32>
  affine.store %m, %out[1] : memref<3xf32>
  affine.store %k, %o[0] : memref<1xi64>
  return
}
