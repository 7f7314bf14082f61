// RUN: loopopt-opt %s --emit ptx | filecheck %s
// RUN: loopopt-opt %s --emit ptx --gpu-arch sm_80 | filecheck %s --check-prefix=SM80
// RUN: loopopt-opt %s --emit ptx --gpu-arch sm_89 | filecheck %s --check-prefix=SM89
// RUN: loopopt-opt %s -p loopopt-lower-gpu-to-nvvm | loopopt-opt --emit ptx | filecheck %s
// RUN: %if ptxas %{ loopopt-opt %s --emit ptx -o %t.ptx && %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
// RUN: %if ptxas %{ loopopt-opt %s --emit ptx --gpu-arch sm_80 -o %t80.ptx && %ptxas -arch=sm_80 %t80.ptx -o %t80.cubin %}

// A guarded vector add: the kernel is a .entry (ptx_kernel), memrefs are .u64 pointers with
// an i64 per dynamic size, loads and stores go to global memory.
// CHECK:       .version 7.8
// CHECK:       .target sm_90
// CHECK:       .address_size 64
// CHECK-LABEL: .visible .entry vadd_k0(
// CHECK-NEXT:    .param .u64 .ptr .align 1 vadd_k0_param_0,
// CHECK-NEXT:    .param .u64 vadd_k0_param_1,
// CHECK-NEXT:    .param .u64 .ptr .align 1 vadd_k0_param_2,
// CHECK-NEXT:    .param .u64 vadd_k0_param_3,
// CHECK-NEXT:    .param .u64 .ptr .align 1 vadd_k0_param_4,
// CHECK-NEXT:    .param .u64 vadd_k0_param_5,
// CHECK-NEXT:    .param .u64 vadd_k0_param_6
// CHECK-NEXT:  )
// CHECK-DAG:     mov.u32 %r{{[0-9]+}}, %ctaid.x;
// CHECK-DAG:     mov.u32 %r{{[0-9]+}}, %ntid.x;
// CHECK-DAG:     mov.u32 %r{{[0-9]+}}, %tid.x;
// CHECK:         @%p{{[0-9]+}} bra
// CHECK:         ld.global.nc.b32
// CHECK:         ld.global.nc.b32
// CHECK:         add.rn.f32
// CHECK:         st.global.b32
// CHECK:         ret;
// SM80:        .version 7.0
// SM80:        .target sm_80
// SM89:        .version 7.8
// SM89:        .target sm_89
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @vadd_k0(%A: memref<?xf32>, %B: memref<?xf32>, %C: memref<?xf32>, %n: index) kernel {
      %bx = gpu.block_id x
      %bd = gpu.block_dim x
      %tx = gpu.thread_id x
      %base = arith.muli %bx, %bd : index
      %i = arith.addi %base, %tx : index
      affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%i)[%n] {
        %a = affine.load %A[%i] : memref<?xf32>
        %b = affine.load %B[%i] : memref<?xf32>
        %c = arith.addf %a, %b : f32
        affine.store %c, %C[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
