// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'array-expand' | filecheck %s
// RUN: loopopt-opt %s --split-input-file -p 'array-expand,loop-mark-parallel' | filecheck %s --check-prefix=PAR
// RUN: loopopt-opt %s --split-input-file -p 'array-expand{max-bytes=100}' | filecheck %s --check-prefix=SMALL
// RUN: not loopopt-opt %s -p 'array-expand{array=t loop=j}' 2>&1 | filecheck %s --check-prefix=OUTSIDE
// RUN: not loopopt-opt %s -p 'array-expand{array=t loop=i}' 2>&1 | filecheck %s --check-prefix=FLOW
// RUN: not loopopt-opt %s -p 'array-expand{array=t loop=e}' 2>&1 | filecheck %s --check-prefix=EXPOSED
// RUN: not loopopt-opt %s -p 'array-expand{array=t loop=ii}' 2>&1 | filecheck %s --check-prefix=SAME
// RUN: not loopopt-opt %s -p 'array-expand{array=sum loop=q max-bytes=64}' 2>&1 | filecheck %s --check-prefix=BYTES
// RUN: not loopopt-opt %s -p 'array-expand{array=t}' 2>&1 | filecheck %s --check-prefix=BOTH
// RUN: not loopopt-opt %s -p 'array-expand{array=nothere loop=r}' 2>&1 | filecheck %s --check-prefix=NOARRAY

// BOTH: error: array-expand: give both array= and loop=, or neither
// NOARRAY: error: array-expand: no array named 'nothere' is used under loop 'r'
// OUTSIDE: array-expand.mlir:[[# @LINE + 63]]:5: error: array-expand: cannot expand 't' over loop 'j': 't' is accessed outside loop 'j'
// FLOW: error: array-expand: cannot expand 't' over loop 'i': 't[0]' may read a value written in another iteration or before loop 'i'
// EXPOSED: error: array-expand: cannot expand 't' over loop 'e': 't[kk]' may read a value written in another iteration or before loop 'e'
// SAME: error: array-expand: cannot expand 't' over loop 'ii': the iterations do not all write the same elements of 't'
// BYTES: error: array-expand: expanding 'sum' over loop 'q' needs 960 bytes, more than max-bytes=64

// doitgen: every iteration (r, q) writes sum[0..5] before reading it. `sum` is expanded over
// r and q (the loops that carry its false dependences); after the nest, the last iteration's
// values go back into `sum`. r and q become parallel.
// CHECK-LABEL: func.func @doitgen
// CHECK-NEXT:    %[[X:.*]] = memref.alloc() : memref<4x5x6xf64>
// CHECK-NEXT:    affine.for %[[R:.*]] = 0 to 4 {
// CHECK-NEXT:      affine.for %[[Q:.*]] = 0 to 5 {
// CHECK-NEXT:        affine.for %[[P:.*]] = 0 to 6 {
// CHECK:               affine.store %{{.*}}, %[[X]][%[[R]], %[[Q]], %[[P]]] : memref<4x5x6xf64>
// CHECK:               affine.load %[[X]][%[[R]], %[[Q]], %[[P]]]
// CHECK:               affine.store %{{.*}}, %[[X]][%[[R]], %[[Q]], %[[P]]]
// CHECK:             affine.load %[[X]][%[[R]], %[[Q]], %{{.*}}]
// CHECK:         affine.for %[[E:.*]] = 0 to 6 {
// CHECK-NEXT:      %[[V:.*]] = affine.load %[[X]][3, 4, %[[E]]] : memref<4x5x6xf64>
// CHECK-NEXT:      affine.store %[[V]], %{{.*}}[%[[E]]] : memref<6xf64>
// CHECK-NEXT:    } {loopopt.name = "sum_out0"}
// CHECK-NEXT:    memref.dealloc %[[X]] : memref<4x5x6xf64>
// PAR-LABEL: func.func @doitgen
// PAR:       } {loopopt.name = "q", loopopt.parallel}
// PAR-NEXT:  } {loopopt.name = "r", loopopt.parallel}
// SMALL-LABEL: func.func @doitgen
// SMALL-NOT:   memref.alloc
// SMALL:       func.return
func.func @doitgen(%A: memref<4x5x6xf64>, %C4: memref<6x6xf64>, %sum: memref<6xf64>) {
  affine.for %r = 0 to 4 {
    affine.for %q = 0 to 5 {
      affine.for %p = 0 to 6 {
        %z = arith.constant 0.0 : f64
        affine.store %z, %sum[%p] : memref<6xf64>
        affine.for %s = 0 to 6 {
          %a = affine.load %A[%r, %q, %s] : memref<4x5x6xf64>
          %c = affine.load %C4[%s, %p] : memref<6x6xf64>
          %m = arith.mulf %a, %c : f64
          %o = affine.load %sum[%p] : memref<6xf64>
          %n = arith.addf %o, %m : f64
          affine.store %n, %sum[%p] : memref<6xf64>
        } {loopopt.name = "s"}
      } {loopopt.name = "p"}
      affine.for %p2 = 0 to 6 {
        %v = affine.load %sum[%p2] : memref<6xf64>
        affine.store %v, %A[%r, %q, %p2] : memref<4x5x6xf64>
      } {loopopt.name = "p2"}
    } {loopopt.name = "q"}
  } {loopopt.name = "r"}
  func.return
}

// -----

// A step and a lower bound other than 0 and 1: the buffer is indexed by iteration numbers.
// CHECK-LABEL: func.func @rows
// CHECK-NEXT:    %[[X:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK:         affine.store %{{.*}}, %[[X]][(%{{.*}} + -2) floordiv 3, %{{.*}}]
// CHECK:         affine.load %[[X]][(%{{.*}} + -2) floordiv 3, %{{.*}} * -1 + 7]
// CHECK:         affine.load %[[X]][3, %{{.*}}] : memref<4x8xf32>
func.func @rows(%A: memref<12x8xf32>, %t: memref<8xf32>) {
  affine.for %i = 2 to 12 step 3 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j] : memref<12x8xf32>
      affine.store %a, %t[%j] : memref<8xf32>
    } {loopopt.name = "j"}
    affine.for %k = 0 to 8 {
      %b = affine.load %t[7 - %k] : memref<8xf32>
      affine.store %b, %A[%i, %k] : memref<12x8xf32>
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  func.return
}

// -----

// A true dependence: iteration i reads t[0], which iteration i - 1 wrote. Nothing changes.
// CHECK-LABEL: func.func @carried
// CHECK-NOT:   memref.alloc
func.func @carried(%A: memref<8xf32>, %t: memref<1xf32>) {
  affine.for %i = 0 to 8 {
    %o = affine.load %t[0] : memref<1xf32>
    %a = affine.load %A[%i] : memref<8xf32>
    %s = arith.addf %o, %a : f32
    affine.store %s, %t[0] : memref<1xf32>
  } {loopopt.name = "i"}
  func.return
}

// -----

// Each iteration writes a different element: nothing to expand (and no dependence anyway).
// CHECK-LABEL: func.func @partial
// CHECK-NOT:   memref.alloc
func.func @partial(%A: memref<8x8xf32>, %t: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      affine.store %a, %t[%i] : memref<8xf32>
    } {loopopt.name = "j"}
    %b = affine.load %t[%i] : memref<8xf32>
    affine.store %b, %A[%i, 0] : memref<8x8xf32>
  } {loopopt.name = "ii"}
  func.return
}

// -----

// The first iteration of k reads t[0], which no iteration of jj writes.
// CHECK-LABEL: func.func @exposed
// CHECK-NOT:   memref.alloc
func.func @exposed(%A: memref<8x8xf32>, %t: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 1 to 8 {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      affine.store %a, %t[%j] : memref<8xf32>
    } {loopopt.name = "jj"}
    affine.for %k = 0 to 8 {
      %b = affine.load %t[%k] : memref<8xf32>
      affine.store %b, %A[%i, %k] : memref<8x8xf32>
    } {loopopt.name = "kk"}
  } {loopopt.name = "e"}
  func.return
}
