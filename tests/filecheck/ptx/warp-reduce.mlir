// RUN: loopopt-opt %s --emit ptx | filecheck %s
// RUN: %if ptxas %{ loopopt-opt %s --emit ptx -o %t.ptx && %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// nvvm ops can be written in kernels directly: a butterfly warp sum with shfl.sync, lane 0
// storing the warp's total.
// CHECK-LABEL: .visible .entry warp_sum_k0(
// CHECK:         shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// CHECK:         shfl.sync.bfly.b32 {{.*}}, 8, 31, -1;
// CHECK:         shfl.sync.bfly.b32 {{.*}}, 4, 31, -1;
// CHECK:         shfl.sync.bfly.b32 {{.*}}, 2, 31, -1;
// CHECK:         shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK:         %laneid;
// CHECK:         st.global.b32
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @warp_sum_k0(%A: memref<?xf32>, %out: memref<?xf32>) kernel {
      %bx = gpu.block_id x
      %tx = gpu.thread_id x
      %i = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%bx, %tx)
      %v0 = affine.load %A[%i] : memref<?xf32>
      %all = arith.constant -1 : i32
      %clamp = arith.constant 31 : i32
      %c16 = arith.constant 16 : i32
      %c8 = arith.constant 8 : i32
      %c4 = arith.constant 4 : i32
      %c2 = arith.constant 2 : i32
      %c1 = arith.constant 1 : i32
      %s16 = nvvm.shfl.sync bfly %all, %v0, %c16, %clamp : f32 -> f32
      %v1 = arith.addf %v0, %s16 : f32
      %s8 = nvvm.shfl.sync bfly %all, %v1, %c8, %clamp : f32 -> f32
      %v2 = arith.addf %v1, %s8 : f32
      %s4 = nvvm.shfl.sync bfly %all, %v2, %c4, %clamp : f32 -> f32
      %v3 = arith.addf %v2, %s4 : f32
      %s2 = nvvm.shfl.sync bfly %all, %v3, %c2, %clamp : f32 -> f32
      %v4 = arith.addf %v3, %s2 : f32
      %s1 = nvvm.shfl.sync bfly %all, %v4, %c1, %clamp : f32 -> f32
      %v5 = arith.addf %v4, %s1 : f32
      %lane = gpu.lane_id
      affine.if affine_set<(d0) : (d0 == 0)>(%lane) {
        affine.store %v5, %out[%bx] : memref<?xf32>
      }
      gpu.return
    }
  }
}
