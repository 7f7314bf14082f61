// RUN: sed '/^\/\/ NEGATIVE CASES/,$d' %s | loopopt-opt - -p 'gpu-map-loops{block=4,4},loop-unroll{unroll-full loop=q},gpu-constant-memory{arrays=F}' | filecheck %s
// RUN: sed '/^\/\/ NEGATIVE CASES/,$d' %s | loopopt-opt - -p 'gpu-map-loops{block=4,4},loop-unroll{unroll-full loop=q},gpu-constant-memory{arrays=F}' | loopopt-opt - -p 'gpu-constant-memory{arrays=F}' | filecheck %s
// RUN: sed '/^\/\/ NEGATIVE CASES/,$d' %s | loopopt-opt - -p 'gpu-map-loops{block=4,4},gpu-constant-memory{arrays=F}' --emit ptx | filecheck %s --check-prefix=PTX
// RUN: sed '/^\/\/ NEGATIVE CASES/,$d' %s | loopopt-opt - -p 'gpu-map-loops{block=4,4},gpu-constant-memory{arrays=F,I func=other_k0}' | filecheck %s --check-prefix=FUNC
// RUN: sed -n '/^\/\/ NEGATIVE CASES/,$p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'gpu-constant-memory{arrays=F}'
// RUN: sed '/^\/\/ NEGATIVE CASES/,$d' %s | not loopopt-opt - -p 'gpu-map-loops,gpu-constant-memory{arrays=X}' 2>&1 | filecheck %s --check-prefix=NOARG
// RUN: sed '/^\/\/ NEGATIVE CASES/,$d' %s | not loopopt-opt - -p 'gpu-map-loops,gpu-constant-memory' 2>&1 | filecheck %s --check-prefix=NONE
// NOARG: error: gpu-constant-memory: no kernel takes an array named 'X' (run it after gpu-map-loops)
// NONE: error: gpu-constant-memory: name the arrays (arrays=F,...)

// A 3x3 filter: the kernel's loads of %F become loads of a constant-memory global named after
// kernel and array; the argument stays (the runtime copies it into the global before each
// launch: loopopt.constant_args maps argument 1 to the global). Running the pass again (RUN
// line 2, on the printed output) changes nothing.
// CHECK-LABEL: func.func @conv
// CHECK:         gpu.launch_func @kernels::@conv_k0 {{.*}} args(%I : memref<6x6xf32>, %F : memref<3x3xf32>, %O : memref<4x4xf32>)
// CHECK:       gpu.module @kernels {
// CHECK-NEXT:    "memref.global"() <{sym_name = "__const_conv_k0_F", type = memref<3x3xf32, 4 : i64>, initial_value, sym_visibility = "public"}> : () -> ()
// CHECK-NEXT:    gpu.func @conv_k0(%I: memref<6x6xf32>, %F: memref<3x3xf32>, %O: memref<4x4xf32>) kernel
// CHECK-SAME:      loopopt.constant_args = {"1" = "__const_conv_k0_F"}
// CHECK-NEXT:      %[[FC:.*]] = memref.get_global @__const_conv_k0_F : memref<3x3xf32, 4 : i64>
// CHECK-NOT:       %F[
// CHECK:           affine.for %[[P:.*]] = 0 to 3 {
// CHECK:             affine.load %[[FC]][%[[P]], 0] : memref<3x3xf32, 4 : i64>
// CHECK:             affine.load %[[FC]][%[[P]], 1] : memref<3x3xf32, 4 : i64>
// CHECK:             affine.load %[[FC]][%[[P]], 2] : memref<3x3xf32, 4 : i64>
// CHECK-NOT:       %F[
// CHECK:           gpu.return
// The second kernel reads %F at one index: its own global.
// CHECK:         "memref.global"() <{sym_name = "__const_other_k0_F", type = memref<3x3xf32, 4 : i64>
// CHECK-NEXT:    gpu.func @other_k0(
// CHECK-SAME:      loopopt.constant_args = {"1" = "__const_other_k0_F"}
// CHECK-NEXT:      %[[FO:.*]] = memref.get_global @__const_other_k0_F
// CHECK:           affine.load %[[FO]][1, 1] : memref<3x3xf32, 4 : i64>

// In the PTX, a .const array of 36 bytes, read with ld.const (p and q not unrolled: LLVM does).
// PTX:       .weak .const .align 4 .b8 __const_conv_k0_F[36];
// PTX-LABEL: .entry conv_k0(
// PTX:         ld.const.b32 {{.*}}[__const_conv_k0_F];
// PTX:         ld.const.b32 {{.*}}[__const_conv_k0_F+4];

// func= names one kernel; there, %I is read-only too and moves as well (argument 0).
// FUNC:       gpu.func @conv_k0(
// FUNC-NOT:     loopopt.constant_args
// FUNC-SAME:    {
// FUNC:       "memref.global"() <{sym_name = "__const_other_k0_F", type = memref<3x3xf32, 4 : i64>
// FUNC-NEXT:  "memref.global"() <{sym_name = "__const_other_k0_I", type = memref<6x6xf32, 4 : i64>
// FUNC-NEXT:  gpu.func @other_k0(
// FUNC-SAME:    loopopt.constant_args = {"0" = "__const_other_k0_I", "1" = "__const_other_k0_F"}
// FUNC-NOT:   memref.global
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

func.func @other(%I: memref<6x6xf32>, %F: memref<3x3xf32>, %O: memref<4x4xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      %x = affine.load %I[%i, %j] : memref<6x6xf32>
      %f = affine.load %F[1, 1] : memref<3x3xf32>
      %m = arith.mulf %x, %f : f32
      affine.store %m, %O[%i, %j] : memref<4x4xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// NEGATIVE CASES, from here on: each chunk is refused (RUN line 5).
// The kernel writes %F.
gpu.module @kernels {
  gpu.func @writes(%F: memref<3x3xf32>) kernel {
    %tx = gpu.thread_id x
    %f = affine.load %F[0, 0] : memref<3x3xf32>
    // expected-error@+1 {{gpu-constant-memory: kernel @writes writes %F; constant memory is read-only}}
    affine.store %f, %F[1, 1] : memref<3x3xf32>
    gpu.return
  }
}

// -----

// %F is used by something other than a load.
gpu.module @kernels {
  gpu.func @dim(%F: memref<3x3xf32>, %O: memref<3xindex>) kernel {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{gpu-constant-memory: kernel @dim uses %F in 'memref.dim', not only in loads}}
    %n = memref.dim %F, %c0 : memref<3x3xf32>
    affine.store %n, %O[0] : memref<3xindex>
    gpu.return
  }
}

// -----

// A constant-memory global needs a static size.
gpu.module @kernels {
  // expected-error@+1 {{gpu-constant-memory: kernel @dynamic: %F (memref<?x3xf32>) needs a static shape and no layout}}
  gpu.func @dynamic(%F: memref<?x3xf32>, %O: memref<3xf32>) kernel {
    %f = affine.load %F[0, 0] : memref<?x3xf32>
    affine.store %f, %O[0] : memref<3xf32>
    gpu.return
  }
}

// -----

// 128x129 floats are 66048 bytes: more than the 64 KB of constant memory.
// expected-error@+1 {{gpu-constant-memory: the constant arrays of gpu.module @kernels need 66048 bytes; constant memory has 65536}}
gpu.module @kernels {
  gpu.func @big(%F: memref<128x129xf32>, %O: memref<3xf32>) kernel {
    %f = affine.load %F[0, 0] : memref<128x129xf32>
    affine.store %f, %O[0] : memref<3xf32>
    gpu.return
  }
}
