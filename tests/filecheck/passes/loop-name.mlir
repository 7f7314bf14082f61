// RUN: loopopt-opt %s --split-input-file -p loop-name | filecheck %s
// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-name{func=missing}'

// Unnamed loops get i0, i1, ... in pre-order; existing names are kept and never reused.
// CHECK-LABEL: func.func @matmul
// CHECK:       affine.for %[[I:.*]] = 0 to 4 {
// CHECK:         affine.for %[[J:.*]] = 0 to 4 {
// CHECK:           affine.for %[[K:.*]] = 0 to 4 {
// CHECK:           } {loopopt.name = "i2"}
// CHECK:         } {loopopt.name = "i1"}
// CHECK:       } {loopopt.name = "i0"}
// expected-error@unknown {{no function named 'missing'}}
func.func @matmul(%A: memref<4x4xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      affine.for %k = 0 to 4 {
        %v = affine.load %A[%i, %k] : memref<4x4xf32>
        affine.store %v, %A[%i, %j] : memref<4x4xf32>
      }
    }
  }
  return
}

// -----

// CHECK-LABEL: func.func @keeps_names
// CHECK:       } {loopopt.name = "i1"}
// CHECK:       } {loopopt.name = "i0"}
// CHECK:       } {loopopt.name = "i2"}
// expected-error@unknown {{no function named 'missing'}}
func.func @keeps_names(%A: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      %v = affine.load %A[%j] : memref<4xf32>
      affine.store %v, %A[%i] : memref<4xf32>
    }
  } {loopopt.name = "i0"}
  affine.for %k = 0 to 4 {
    %v = affine.load %A[%k] : memref<4xf32>
    affine.store %v, %A[%k] : memref<4xf32>
  }
  return
}
