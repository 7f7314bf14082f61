// RUN: loopopt-opt %s --emit llvm | filecheck %s
// RUN: loopopt-opt %s --emit llvm -p loop-name | filecheck %s

// `--emit llvm` lowers to the llvm dialect and prints LLVM IR for the host.
// CHECK:       target triple =
// CHECK-LABEL: define void @"scale"(ptr %".1", i64 %".2", float %".3")
// CHECK:         phi i64
// CHECK:         icmp slt i64
// CHECK:         getelementptr inbounds float, ptr %".1", i64
// CHECK:         load float, ptr
// CHECK:         fmul float
// CHECK:         store float
// CHECK:         ret void
// CHECK-LABEL: define float @"dot"(ptr %".1", ptr %".2")
// CHECK:         phi float
// CHECK:         call float @"llvm.fma.f32"(float
// CHECK:         ret float
func.func @scale(%A: memref<?xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %A, %c0 : memref<?xf32>
  affine.for %i = 0 to %n {
    %v = affine.load %A[%i] : memref<?xf32>
    %w = arith.mulf %v, %s : f32
    affine.store %w, %A[%i] : memref<?xf32>
  }
  return
}

func.func @dot(%A: memref<16xf32>, %B: memref<16xf32>) -> f32 {
  %zero = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 16 iter_args(%acc = %zero) -> (f32) {
    %a = affine.load %A[%i] : memref<16xf32>
    %b = affine.load %B[%i] : memref<16xf32>
    %t = math.fma %a, %b, %acc : f32
    affine.yield %t : f32
  }
  return %r : f32
}
