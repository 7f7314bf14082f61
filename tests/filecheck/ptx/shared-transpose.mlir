// RUN: loopopt-opt %s --emit ptx | filecheck %s
// RUN: %if ptxas %{ loopopt-opt %s --emit ptx -o %t.ptx && %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// A 32x33 shared tile (padded against bank conflicts) between a barrier: a static .shared
// array of the kernel, accessed with ld/st.shared after address-space inference.
// CHECK-LABEL: .visible .entry transpose_k0(
// CHECK:         .shared .align 16 .b8 __shm_transpose_k0_0[4224];
// CHECK-DAG:     mov.u32 %r{{[0-9]+}}, %ctaid.y;
// CHECK-DAG:     mov.u32 %r{{[0-9]+}}, %tid.y;
// CHECK:         ld.global.nc.b32
// CHECK:         st.shared.b32
// CHECK:         bar.sync 0;
// CHECK:         ld.shared.b32
// CHECK:         st.global.b32
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @transpose_k0(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %n: index, %m: index) kernel {
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %tile = memref.alloca() : memref<32x33xf32, 3>
      %i = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%by, %ty)
      %j = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%bx, %tx)
      affine.if affine_set<(d0, d1)[s0, s1] : (s0 - d0 - 1 >= 0, s1 - d1 - 1 >= 0)>(%i, %j)[%n, %m] {
        %v = affine.load %A[%i, %j] : memref<?x?xf32>
        affine.store %v, %tile[%ty, %tx] : memref<32x33xf32, 3>
      }
      gpu.barrier
      %oi = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%bx, %ty)
      %oj = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%by, %tx)
      affine.if affine_set<(d0, d1)[s0, s1] : (s1 - d0 - 1 >= 0, s0 - d1 - 1 >= 0)>(%oi, %oj)[%n, %m] {
        %w = affine.load %tile[%tx, %ty] : memref<32x33xf32, 3>
        affine.store %w, %B[%oi, %oj] : memref<?x?xf32>
      }
      gpu.return
    }
  }
}
