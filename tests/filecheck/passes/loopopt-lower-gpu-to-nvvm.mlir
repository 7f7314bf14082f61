// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p loopopt-lower-gpu-to-nvvm | filecheck %s

// gpu ops in MLIR's custom syntax (loopopt.dialects.gpu_ext); one case keeps xDSL's generic form,
// which still parses.

// Ids and dims become special-register reads widened to i64; memrefs bare pointers (+ sizes);
// the kernel keeps its name and is marked nvvm.kernel; the host function is left alone.
// CHECK-LABEL: llvm.func @vadd_k0(%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-SAME:    nvvm.kernel
// CHECK-SAME:    loopopt.shared_bytes = 0 : i64
// CHECK:         %[[BX:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK:         llvm.sext %[[BX]] : i32 to i64
// CHECK:         nvvm.read.ptx.sreg.ntid.x : i32
// CHECK:         nvvm.read.ptx.sreg.tid.x : i32
// CHECK:         llvm.cond_br
// CHECK:         llvm.load
// CHECK:         llvm.fadd
// CHECK:         llvm.store
// CHECK:         llvm.return
// CHECK-LABEL: func.func @vadd(
// CHECK:         gpu.launch_func @kernels::@vadd_k0 blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%A : memref<?xf32>, %B : memref<?xf32>, %n : index)
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @vadd_k0(%A: memref<?xf32>, %B: memref<?xf32>, %n: index) kernel {
      %bx = gpu.block_id x
      %bd = gpu.block_dim x
      %tx = gpu.thread_id x
      %base = arith.muli %bx, %bd : index
      %i = arith.addi %base, %tx : index
      affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%i)[%n] {
        %a = affine.load %A[%i] : memref<?xf32>
        %b = arith.addf %a, %a : f32
        affine.store %b, %B[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
  func.func @vadd(%A: memref<?xf32>, %B: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %A, %c0 : memref<?xf32>
    gpu.launch_func @kernels::@vadd_k0 blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%A : memref<?xf32>, %B : memref<?xf32>, %n : index)
    return
  }
}

// -----

// A shared buffer (space 3) becomes a global in shared memory; its loads and stores stay in
// address space 3 (ld/st.shared); gpu.barrier becomes nvvm.barrier0.
// CHECK:       llvm.mlir.global internal @__shm_rev_k0_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x f32>
// CHECK-LABEL: llvm.func @rev_k0(
// CHECK-SAME:    loopopt.shared_bytes = 1024 : i64
// CHECK:         %[[S:.*]] = llvm.mlir.addressof @__shm_rev_k0_0 : !llvm.ptr<3>
// CHECK-NEXT:    %[[P:.*]] = llvm.bitcast %[[S]] : !llvm.ptr<3> to !llvm.ptr<3>
// CHECK:         llvm.getelementptr inbounds %[[P]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
// CHECK:         nvvm.barrier0
// CHECK:         llvm.getelementptr inbounds %[[P]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @rev_k0(%A: memref<256xf32>) kernel {
      %tx = gpu.thread_id x
      %buf = memref.alloca() : memref<256xf32, 3>
      %v = affine.load %A[%tx] : memref<256xf32>
      affine.store %v, %buf[%tx] : memref<256xf32, 3>
      gpu.barrier
      %w = affine.load %buf[255 - %tx] : memref<256xf32, 3>
      affine.store %w, %A[%tx] : memref<256xf32>
      gpu.return
    }
  }
}

// -----

// More than 48 KB of shared buffers: they are laid out in dynamic shared memory, and the
// kernel records how many bytes its launches must request. (xDSL's generic form, with
// `kernel` as a property, still reads as a kernel.)
// CHECK:       llvm.mlir.global external @__loopopt_dynamic_shmem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @big_k0(
// CHECK-SAME:    loopopt.shared_bytes = 65536 : i64, loopopt.dynamic_shared_bytes = 65536 : i64
// CHECK:         llvm.mlir.addressof @__loopopt_dynamic_shmem
// CHECK:         llvm.getelementptr %{{.*}}[32768] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<8192xf32>) -> (), kernel}> ({
    ^bb0(%A: memref<8192xf32>):
      %tx = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %a = memref.alloca() : memref<8192xf32, 3>
      %b = memref.alloca() : memref<8192xf32, 3>
      %v = affine.load %A[%tx] : memref<8192xf32>
      affine.store %v, %a[%tx] : memref<8192xf32, 3>
      affine.store %v, %b[%tx] : memref<8192xf32, 3>
      "gpu.return"() : () -> ()
    }) {sym_name = "big_k0"} : () -> ()
  }) : () -> ()
}

// -----

builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @huge_k0(%A: memref<64xf32>) kernel {
      // expected-error@+1 {{kernel @huge_k0 needs 262144 bytes of shared memory or more; a block has at most 232448}}
      %a = memref.alloca() : memref<256x256xf32, 3>
      gpu.return
    }
  }
}

// -----

// Workgroup and private attributions become allocas at the kernel entry: the workgroup one a
// global in shared memory, the private one a stack slot.
// CHECK:       llvm.mlir.global internal @__shm_attr_k0_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x f32>
// CHECK-LABEL: llvm.func @attr_k0(%{{.*}}: !llvm.ptr)
// CHECK-SAME:    nvvm.kernel, gpu.kernel, loopopt.shared_bytes = 256 : i64
// CHECK:         %[[P:.*]] = llvm.alloca %{{.*}} x f32
// CHECK:         %[[S:.*]] = llvm.mlir.addressof @__shm_attr_k0_0 : !llvm.ptr<3>
// CHECK-NEXT:    %[[G:.*]] = llvm.bitcast %[[S]] : !llvm.ptr<3> to !llvm.ptr<3>
// CHECK:         llvm.getelementptr inbounds %[[G]]
// CHECK:         nvvm.barrier0
// CHECK:         llvm.getelementptr inbounds %[[G]]
// CHECK:         llvm.getelementptr inbounds %[[P]]
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @attr_k0(%A: memref<64xf32>)
        workgroup(%buf : memref<64xf32, #gpu.address_space<workgroup>>)
        private(%acc : memref<1xf32, #gpu.address_space<private>>) kernel {
      %tx = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %v = memref.load %A[%tx] : memref<64xf32>
      memref.store %v, %buf[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %w = memref.load %buf[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %w, %acc[%c0] : memref<1xf32, #gpu.address_space<private>>
      %r = memref.load %acc[%c0] : memref<1xf32, #gpu.address_space<private>>
      memref.store %r, %A[%tx] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

// A returning gpu.func cannot be a kernel.
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error@+1 {{Expected void return type for kernel function}}
    gpu.func @bad(%x: f32) -> f32 kernel {
      gpu.return %x : f32
    }
  }
}
