// Ops of dialects loopopt does not know: read and printed in the generic form with the flag, a
// one-line error without it. The analyses take such an op to read and write any memory.
// RUN: loopopt-opt %s --allow-unregistered-dialect -p loop-mark-parallel | filecheck %s
// RUN: loopopt-opt %s --allow-unregistered-dialect | loopopt-opt - --allow-unregistered-dialect | filecheck %s --check-prefix=ROUND
// RUN: not loopopt-opt %s 2>&1 | filecheck %s --check-prefix=NOFLAG
// RUN: not loopopt-opt %s --allow-unregistered-dialect --emit llvm 2>&1 | filecheck %s --check-prefix=LOWER

// CHECK-LABEL: func.func @opaque
// CHECK:         %{{.*}} = "foo.bar"(%{{.*}}) {x = 1 : i32} : (f32) -> f32
// CHECK-NOT:     loopopt.parallel
// CHECK-LABEL: func.func @plain
// CHECK:         } {loopopt.parallel}

// ROUND:       "foo.bar"(%{{.*}}) {x = 1 : i32} : (f32) -> f32
// ROUND:       "foo.sync"() : () -> ()

// NOFLAG:      allow-unregistered-dialect.mlir:[[# @LINE + 9]]:11: error: Operation foo.bar is not registered (--allow-unregistered-dialect accepts it)
// NOFLAG-NOT:  error
// LOWER:       allow-unregistered-dialect.mlir:[[# @LINE + 7]]:5: error: cannot lower 'foo.bar' to LLVM

// Each iteration calls foo.bar, which may read or write any memory (B's element of another
// iteration): i carries a dependence. @plain's loop is parallel.
func.func @opaque(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    %w = "foo.bar"(%v) {x = 1 : i32} : (f32) -> f32
    affine.store %w, %A[%i] : memref<8xf32>
  }
  "foo.sync"() : () -> ()
  return
}

func.func @plain(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %A[%i] : memref<8xf32>
  }
  return
}
