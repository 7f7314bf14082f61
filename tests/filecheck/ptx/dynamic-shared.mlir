// RUN: loopopt-opt %s --emit ptx | filecheck %s
// RUN: loopopt-opt %s --emit ptx --gpu-arch sm_89 --verify-diagnostics
// RUN: %if ptxas %{ loopopt-opt %s --emit ptx -o %t.ptx && %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// 128 KB of shared buffers exceed PTX's 48 KB of static shared memory: they live in the
// dynamic shared memory (an .extern .shared array), which launches size. sm_89 has only 99 KB.
// CHECK:       .extern .shared .align 16 .b8 __loopopt_dynamic_shmem[];
// CHECK-LABEL: .visible .entry big_k0(
// CHECK:         st.shared.b32
// CHECK:         st.shared.b32
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error@+1 {{kernel @big_k0 needs 131072 bytes of shared memory; sm_89 allows 101376 per block}}
    gpu.func @big_k0(%A: memref<16384xf32>) kernel {
      %tx = gpu.thread_id x
      %a = memref.alloca() : memref<16384xf32, 3>
      %b = memref.alloca() : memref<16384xf32, 3>
      %v = affine.load %A[%tx] : memref<16384xf32>
      affine.store %v, %a[%tx] : memref<16384xf32, 3>
      affine.store %v, %b[%tx] : memref<16384xf32, 3>
      gpu.return
    }
  }
}
