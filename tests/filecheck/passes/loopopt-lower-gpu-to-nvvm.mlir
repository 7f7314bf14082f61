// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p loopopt-lower-gpu-to-nvvm | filecheck %s

// xDSL's gpu dialect has no custom syntax: gpu ops are written in the generic form.

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
// CHECK:         "gpu.launch_func"
builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<?xf32>, memref<?xf32>, index) -> (), kernel}> ({
    ^bb0(%A: memref<?xf32>, %B: memref<?xf32>, %n: index):
      %bx = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %bd = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
      %tx = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %base = arith.muli %bx, %bd : index
      %i = arith.addi %base, %tx : index
      affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%i)[%n] {
        %a = affine.load %A[%i] : memref<?xf32>
        %b = arith.addf %a, %a : f32
        affine.store %b, %B[%i] : memref<?xf32>
      }
      "gpu.return"() : () -> ()
    }) {sym_name = "vadd_k0"} : () -> ()
  }) : () -> ()
  func.func @vadd(%A: memref<?xf32>, %B: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %A, %c0 : memref<?xf32>
    "gpu.launch_func"(%c1, %c1, %c1, %c256, %c1, %c1, %A, %B, %n) <{kernel = @kernels::@vadd_k0, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 0>}> : (index, index, index, index, index, index, memref<?xf32>, memref<?xf32>, index) -> ()
    return
  }
}

// -----

// A shared buffer (space 3) becomes a global in shared memory, reached through a generic
// pointer; gpu.barrier becomes nvvm.barrier0.
// CHECK:       llvm.mlir.global internal @__shm_rev_k0_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x f32>
// CHECK-LABEL: llvm.func @rev_k0(
// CHECK-SAME:    loopopt.shared_bytes = 1024 : i64
// CHECK:         %[[S:.*]] = llvm.mlir.addressof @__shm_rev_k0_0 : !llvm.ptr<3>
// CHECK:         %[[G:.*]] = llvm.call_intrinsic "llvm.nvvm.ptr.shared.to.gen.p0.p3"(%[[S]]) : (!llvm.ptr<3>) -> !llvm.ptr
// CHECK:         llvm.getelementptr inbounds %[[G]]
// CHECK:         nvvm.barrier0
// CHECK:         llvm.getelementptr inbounds %[[G]]
builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<256xf32>) -> (), kernel}> ({
    ^bb0(%A: memref<256xf32>):
      %tx = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %buf = memref.alloca() : memref<256xf32, 3>
      %v = affine.load %A[%tx] : memref<256xf32>
      affine.store %v, %buf[%tx] : memref<256xf32, 3>
      "gpu.barrier"() : () -> ()
      %w = affine.load %buf[255 - %tx] : memref<256xf32, 3>
      affine.store %w, %A[%tx] : memref<256xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "rev_k0"} : () -> ()
  }) : () -> ()
}

// -----

// More than 48 KB of shared buffers: they are laid out in dynamic shared memory, and the
// kernel records how many bytes its launches must request.
// CHECK:       llvm.mlir.global external @__loopopt_dynamic_shmem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @big_k0(
// CHECK-SAME:    loopopt.shared_bytes = 65536 : i64, loopopt.dynamic_shared_bytes = 65536 : i64
// CHECK:         llvm.mlir.addressof @__loopopt_dynamic_shmem
// CHECK:         llvm.getelementptr %{{.*}}[32768] : (!llvm.ptr) -> !llvm.ptr, i8
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
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<64xf32>) -> (), kernel}> ({
    ^bb0(%A: memref<64xf32>):
      // expected-error@+1 {{kernel @huge_k0 needs 262144 bytes of shared memory or more; a block has at most 232448}}
      %a = memref.alloca() : memref<256x256xf32, 3>
      "gpu.return"() : () -> ()
    }) {sym_name = "huge_k0"} : () -> ()
  }) : () -> ()
}
