// RUN: loopopt-opt %s --split-input-file -p loop-mark-parallel | filecheck %s
// RUN: loopopt-opt %s -p 'loop-mark-parallel{func=wavefront}' | filecheck %s --check-prefix=ONLY
// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-mark-parallel{func=missing}'

// matmul: i and j carry nothing; k carries C[i, j] -> C[i, j] with direction (=, =, <).
// CHECK-LABEL: func.func @matmul
// CHECK:             } {loopopt.name = "k"}
// CHECK-NEXT:      } {loopopt.name = "j", loopopt.parallel}
// CHECK-NEXT:    } {loopopt.name = "i", loopopt.parallel}
// With func=wavefront (the whole file as one module), matmul is left alone.
// ONLY-LABEL: func.func @matmul
// ONLY:             } {loopopt.name = "k"}
// ONLY-NEXT:      } {loopopt.name = "j"}
// ONLY-NEXT:    } {loopopt.name = "i"}
// ONLY-LABEL: func.func @wavefront
// ONLY:           } {loopopt.name = "j", loopopt.parallel}
// ONLY-NEXT:    } {loopopt.name = "i"}
// expected-error@unknown {{no function named 'missing'}}
func.func @matmul(%A: memref<8x8xf32>, %B: memref<8x8xf32>, %C: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      affine.for %k = 0 to 8 {
        %a = affine.load %A[%i, %k] : memref<8x8xf32>
        %b = affine.load %B[%k, %j] : memref<8x8xf32>
        %c = affine.load %C[%i, %j] : memref<8x8xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<8x8xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// wavefront: A[i, j] -> A[i - 1, j + 1] has direction (<, >): i carries it, j is parallel.
// A stale mark on i is removed.
// CHECK-LABEL: func.func @wavefront
// CHECK:           } {loopopt.name = "j", loopopt.parallel}
// CHECK-NEXT:    } {loopopt.name = "i"}
// expected-error@unknown {{no function named 'missing'}}
func.func @wavefront(%A: memref<8x8xf32>) {
  affine.for %i = 1 to 8 {
    affine.for %j = 0 to 7 {
      %u = affine.load %A[%i - 1, %j + 1] : memref<8x8xf32>
      %c = affine.load %A[%i, %j] : memref<8x8xf32>
      %s = arith.addf %u, %c : f32
      affine.store %s, %A[%i, %j] : memref<8x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i", loopopt.parallel}
  return
}

// -----

// jacobi-1d: the time loop carries A and B between its two sweeps; both sweeps are parallel.
// CHECK-LABEL: func.func @jacobi
// CHECK:           } {loopopt.name = "i", loopopt.parallel}
// CHECK:           } {loopopt.name = "j", loopopt.parallel}
// CHECK-NEXT:    } {loopopt.name = "t"}
// expected-error@unknown {{no function named 'missing'}}
func.func @jacobi(%A: memref<16xf32>, %B: memref<16xf32>) {
  %third = arith.constant 0.333333343 : f32
  affine.for %t = 0 to 4 {
    affine.for %i = 1 to 15 {
      %l = affine.load %A[%i - 1] : memref<16xf32>
      %c = affine.load %A[%i] : memref<16xf32>
      %r = affine.load %A[%i + 1] : memref<16xf32>
      %s0 = arith.addf %l, %c : f32
      %s1 = arith.addf %s0, %r : f32
      %v = arith.mulf %s1, %third : f32
      affine.store %v, %B[%i] : memref<16xf32>
    } {loopopt.name = "i"}
    affine.for %j = 1 to 15 {
      %v = affine.load %B[%j] : memref<16xf32>
      affine.store %v, %A[%j] : memref<16xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "t"}
  return
}

// -----

// A[i] and A[i + 8] never meet (i < 8): parallel. A scatter through loaded indices is not, and
// a loop with iter_args (a reduction) never is.
// CHECK-LABEL: func.func @others
// CHECK:         } {loopopt.name = "shift", loopopt.parallel}
// CHECK:         } {loopopt.name = "scatter"}
// CHECK:         } {loopopt.name = "sum"}
// expected-error@unknown {{no function named 'missing'}}
func.func @others(%A: memref<16xf32>, %Idx: memref<8xindex>, %S: memref<f32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i + 8] : memref<16xf32>
    affine.store %v, %A[%i] : memref<16xf32>
  } {loopopt.name = "shift"}
  affine.for %i = 0 to 8 {
    %x = affine.load %Idx[%i] : memref<8xindex>
    %v = affine.load %A[%i] : memref<16xf32>
    memref.store %v, %A[%x] : memref<16xf32>
  } {loopopt.name = "scatter"}
  %zero = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 8 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %A[%i] : memref<16xf32>
    %n = arith.addf %acc, %v : f32
    affine.yield %n : f32
  } {loopopt.name = "sum"}
  affine.store %r, %S[] : memref<f32>
  return
}
