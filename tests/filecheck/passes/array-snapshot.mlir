// RUN: loopopt-opt %s --split-input-file -p 'array-snapshot' | filecheck %s
// RUN: loopopt-opt %s --split-input-file -p 'array-snapshot,loop-mark-parallel' | filecheck %s --check-prefix=PAR
// RUN: loopopt-opt %s -p 'array-snapshot{array=A func=both}' | filecheck %s --check-prefix=NAMED
// RUN: not loopopt-opt %s -p 'array-snapshot{array=A func=prefix}' 2>&1 | filecheck %s --check-prefix=FLOW
// RUN: not loopopt-opt %s -p 'array-snapshot{array=nothere}' 2>&1 | filecheck %s --check-prefix=NOARRAY

// FLOW: array-snapshot.mlir:[[# @LINE + 56]]:3: error: array-snapshot: cannot snapshot 'A': every read of 'A' may see a value written in the nest: A[i] → A[i - 1] (RAW)
// NOARRAY: error: array-snapshot: no loop nest writes an array named 'nothere'

// trmm: B[k, j] (k > i) reads rows that no iteration has written yet (no flow dependence
// arrives into it), so it reads a copy of B taken before the nest; the accumulator B[i, j] and
// the epilogue's read keep B. i and j, sequential before (anti dependences from B[k, j]),
// become parallel.
// CHECK-LABEL: func.func @trmm
// CHECK-NEXT:    %[[S:.*]] = memref.alloc() : memref<6x8xf64>
// CHECK-NEXT:    affine.for %[[E0:.*]] = 0 to 6 {
// CHECK-NEXT:      affine.for %[[E1:.*]] = 0 to 8 {
// CHECK-NEXT:        %[[V:.*]] = affine.load %B[%[[E0]], %[[E1]]] : memref<6x8xf64>
// CHECK-NEXT:        affine.store %[[V]], %[[S]][%[[E0]], %[[E1]]] : memref<6x8xf64>
// CHECK-NEXT:      } {loopopt.name = "B_snap1"}
// CHECK-NEXT:    } {loopopt.name = "B_snap0"}
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 6 {
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to 8 {
// CHECK-NEXT:        affine.for %[[K:.*]] = affine_map<(d0) -> ((d0 + 1))>(%[[I]]) to 6 {
// CHECK-NEXT:          affine.load %B[%[[I]], %[[J]]]
// CHECK-NEXT:          affine.load %A[%[[K]], %[[I]]]
// CHECK-NEXT:          affine.load %[[S]][%[[K]], %[[J]]]
// CHECK:             affine.load %B[%[[I]], %[[J]]]
// CHECK:         memref.dealloc %[[S]] : memref<6x8xf64>
// CHECK-NEXT:    func.return
// PAR-LABEL: func.func @trmm
// PAR:         } {loopopt.name = "j", loopopt.parallel}
// PAR-NEXT:    } {loopopt.name = "i", loopopt.parallel}
func.func @trmm(%alpha: f64, %A: memref<6x6xf64>, %B: memref<6x8xf64>) {
  affine.for %i = 0 to 6 {
    affine.for %j = 0 to 8 {
      affine.for %k = affine_map<(d0) -> (d0 + 1)>(%i) to 6 {
        %b = affine.load %B[%i, %j] : memref<6x8xf64>
        %a = affine.load %A[%k, %i] : memref<6x6xf64>
        %s = affine.load %B[%k, %j] : memref<6x8xf64>
        %p = arith.mulf %a, %s : f64
        %t = arith.addf %b, %p : f64
        affine.store %t, %B[%i, %j] : memref<6x8xf64>
      } {loopopt.name = "k"}
      %v = affine.load %B[%i, %j] : memref<6x8xf64>
      %w = arith.mulf %alpha, %v : f64
      affine.store %w, %B[%i, %j] : memref<6x8xf64>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  func.return
}

// -----

// A running sum: A[i - 1] reads what the previous iteration wrote. Nothing changes (and
// array=A is refused: FLOW).
// CHECK-LABEL: func.func @prefix
// CHECK-NOT:     memref.alloc
// CHECK:         affine.load %A[%{{.*}} + -1]
// PAR-LABEL: func.func @prefix
// PAR:         } {loopopt.name = "i"}
func.func @prefix(%A: memref<40xf64>, %B: memref<40xf64>) {
  affine.for %i = 1 to 40 {
    %a = affine.load %A[%i - 1] : memref<40xf64>
    %b = affine.load %B[%i] : memref<40xf64>
    %s = arith.addf %a, %b : f64
    affine.store %s, %A[%i] : memref<40xf64>
  } {loopopt.name = "i"}
  func.return
}

// -----

// A[i + 1] sees no write of the nest, but i also carries the flow dependence into A[i - 1]:
// a snapshot would free no loop, so none is made without options; array=A makes it (NAMED).
// CHECK-LABEL: func.func @both
// CHECK-NOT:     memref.alloc
// NAMED-LABEL: func.func @both
// NAMED:         %[[S:.*]] = memref.alloc() : memref<40xf64>
// NAMED:         affine.for %[[I:.*]] = 1 to 39 {
// NAMED-NEXT:      affine.load %A[%[[I]] + -1]
// NAMED-NEXT:      affine.load %[[S]][%[[I]] + 1]
// NAMED:         memref.dealloc %[[S]]
func.func @both(%A: memref<40xf64>) {
  affine.for %i = 1 to 39 {
    %a = affine.load %A[%i - 1] : memref<40xf64>
    %b = affine.load %A[%i + 1] : memref<40xf64>
    %s = arith.addf %a, %b : f64
    affine.store %s, %A[%i] : memref<40xf64>
  } {loopopt.name = "i"}
  func.return
}
