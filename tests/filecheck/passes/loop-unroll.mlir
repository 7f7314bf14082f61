// RUN: loopopt-opt %s --split-input-file -p 'loop-unroll{unroll-factor=4}' | filecheck %s
// RUN: loopopt-opt %s --split-input-file -p 'loop-unroll{unroll-full}' | filecheck %s --check-prefix=FULL
// RUN: loopopt-opt %s --split-input-file -p 'loop-unroll{unroll-factor=2 loop=i}' | filecheck %s --check-prefix=OUTER
// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-unroll{unroll-factor=0}'

// Without loop=, the innermost loops are unrolled. Copy u sees the IV as `iv + u * step`,
// composed into the access maps. A factor that divides a constant trip count leaves no
// remainder; otherwise a remainder loop `<name>_rem` runs the leftover iterations.
// unroll-full replaces loops with a constant trip count by their iterations.

// CHECK-LABEL: func.func @divisible
// CHECK:       affine.for %[[I:.*]] = 0 to 8 step 4 {
// CHECK-NEXT:    affine.load %{{.*}}[%[[I]]]
// CHECK:         affine.store %{{.*}}, %{{.*}}[%[[I]] + 1]
// CHECK:         affine.store %{{.*}}, %{{.*}}[%[[I]] + 2]
// CHECK:         affine.store %{{.*}}, %{{.*}}[%[[I]] + 3]
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NOT:   i_rem
// FULL-LABEL:  func.func @divisible
// FULL-NOT:    affine.for
// FULL:        affine.store %{{.*}}, %{{.*}}[0]
// FULL:        affine.store %{{.*}}, %{{.*}}[7]
// FULL-NEXT:   func.return
// OUTER-LABEL: func.func @divisible
// OUTER-NEXT:  affine.for %[[I:.*]] = 0 to 8 step 2 {
// OUTER:         affine.store %{{.*}}, %{{.*}}[%[[I]] + 1]
// OUTER-NEXT:  } {loopopt.name = "i"}
// OUTER-NOT:   i_rem
// expected-error@unknown {{loop-unroll: unroll-factor must be at least 1, got 0}}
func.func @divisible(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    %s = arith.addf %v, %v : f32
    affine.store %s, %A[%i] : memref<8xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// 4 does not divide 10: the main loop runs to 8, `k_rem` from 8 to 10. Unrolling the outer
// loop i copies the inner loop, and the copies keep the name k.
// CHECK-LABEL: func.func @remainder
// CHECK:       affine.for %[[I:.*]] = 0 to 4 {
// CHECK-NEXT:    affine.for %[[K:.*]] = 0 to 8 step 4 {
// CHECK-NEXT:      %[[V0:.*]] = affine.load %[[A:.*]][%[[I]], %[[K]]]
// CHECK-NEXT:      affine.store %[[V0]], %[[A]][%[[I]], %[[K]]]
// CHECK-NEXT:      %[[V1:.*]] = affine.load %[[A]][%[[I]], %[[K]] + 1]
// CHECK-NEXT:      affine.store %[[V1]], %[[A]][%[[I]], %[[K]] + 1]
// CHECK:           affine.store %{{.*}}, %[[A]][%[[I]], %[[K]] + 3]
// CHECK-NEXT:    } {loopopt.name = "k"}
// CHECK-NEXT:    affine.for %[[KR:.*]] = 8 to 10 {
// CHECK-NEXT:      affine.load %[[A]][%[[I]], %[[KR]]]
// CHECK:         } {loopopt.name = "k_rem"}
// CHECK-NEXT:  } {loopopt.name = "i"}
// FULL-LABEL:  func.func @remainder
// FULL:        affine.for %[[I:.*]] = 0 to 4 {
// FULL-NEXT:     affine.load %{{.*}}[%[[I]], 0]
// FULL:          affine.store %{{.*}}, %{{.*}}[%[[I]], 9]
// FULL-NEXT:   } {loopopt.name = "i"}
// OUTER-LABEL: func.func @remainder
// OUTER:       affine.for %[[I:.*]] = 0 to 4 step 2 {
// OUTER-NEXT:    affine.for %[[K0:.*]] = 0 to 10 {
// OUTER-NEXT:      affine.load %{{.*}}[%[[I]], %[[K0]]]
// OUTER:         } {loopopt.name = "k"}
// OUTER-NEXT:    affine.for %[[K1:.*]] = 0 to 10 {
// OUTER-NEXT:      affine.load %{{.*}}[%[[I]] + 1, %[[K1]]]
// OUTER:         } {loopopt.name = "k"}
// OUTER-NEXT:  } {loopopt.name = "i"}
// OUTER-NOT:   i_rem
// expected-error@unknown {{loop-unroll: unroll-factor must be at least 1, got 0}}
func.func @remainder(%A: memref<4x10xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %k = 0 to 10 {
      %v = affine.load %A[%i, %k] : memref<4x10xf32>
      affine.store %v, %A[%i, %k] : memref<4x10xf32>
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  return
}

// -----

// A symbolic trip count: the split point is lb + ((ub - lb) floordiv 4) * 4, and the remainder
// starts at max(lb, split) so that it stays empty when ub < lb. A non-affine use of the IV keeps
// an affine.apply. unroll-full leaves the loop alone (its trip count is not constant).
// CHECK-LABEL: func.func @symbolic
// CHECK-SAME:    %[[A:[a-zA-Z0-9_]+]]: memref<?xi64>, %[[N:[a-zA-Z0-9_]+]]: index
// CHECK:       affine.for %[[I:.*]] = 2 to affine_map<()[s0] -> (((((s0 + -2) floordiv 4) * 4) + 2))>()[%[[N]]] step 4 {
// CHECK-DAG:     %[[I1:.*]] = affine.apply affine_map<(d0) -> ((d0 + 1))> (%[[I]])
// CHECK-DAG:     %[[I2:.*]] = affine.apply affine_map<(d0) -> ((d0 + 2))> (%[[I]])
// CHECK-DAG:     %[[I3:.*]] = affine.apply affine_map<(d0) -> ((d0 + 3))> (%[[I]])
// CHECK:         arith.index_cast %[[I]] : index to i64
// CHECK:         arith.index_cast %[[I1]] : index to i64
// CHECK-NEXT:    affine.store %{{.*}}, %[[A]][%[[I]] + 1]
// CHECK:         arith.index_cast %[[I3]] : index to i64
// CHECK-NEXT:    affine.store %{{.*}}, %[[A]][%[[I]] + 3]
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NEXT:  affine.for %[[IR:.*]] = max affine_map<()[s0] -> (2, ((((s0 + -2) floordiv 4) * 4) + 2))>()[%[[N]]] to %[[N]] {
// CHECK-NEXT:    arith.index_cast %[[IR]] : index to i64
// CHECK:       } {loopopt.name = "i_rem"}
// FULL-LABEL:  func.func @symbolic
// FULL:        affine.for %{{.*}} = 2 to %{{.*}} {
// OUTER-LABEL: func.func @symbolic
// OUTER:       affine.for %{{.*}} step 2 {
// OUTER:       } {loopopt.name = "i_rem"}
// expected-error@unknown {{loop-unroll: unroll-factor must be at least 1, got 0}}
func.func @symbolic(%A: memref<?xi64>, %n: index) {
  affine.for %i = 2 to %n {
    %x = arith.index_cast %i : index to i64
    affine.store %x, %A[%i] : memref<?xi64>
  } {loopopt.name = "i"}
  return
}

// -----

// iter_args thread through the copies; a trip count (3) not above the factor unrolls fully.
// CHECK-LABEL: func.func @reduction
// CHECK:       %[[ZERO:.*]] = arith.constant
// CHECK-NOT:   affine.for
// CHECK:       %[[V0:.*]] = affine.load %[[A:.*]][0]
// CHECK-NEXT:  %[[S0:.*]] = arith.addf %[[ZERO]], %[[V0]] : f32
// CHECK-NEXT:  %[[V1:.*]] = affine.load %[[A]][1]
// CHECK-NEXT:  %[[S1:.*]] = arith.addf %[[S0]], %[[V1]] : f32
// CHECK-NEXT:  %[[V2:.*]] = affine.load %[[A]][2]
// CHECK-NEXT:  %[[S2:.*]] = arith.addf %[[S1]], %[[V2]] : f32
// CHECK-NEXT:  affine.store %[[S2]], %{{.*}}[0]
// FULL-LABEL:  func.func @reduction
// FULL-NOT:    affine.for
// FULL:        affine.store
// OUTER-LABEL: func.func @reduction
// OUTER:       %[[MAIN:.*]] = affine.for %{{.*}} = 0 to 2 step 2 iter_args
// OUTER:       affine.for %{{.*}} = 2 to 3 iter_args(%{{.*}} = %[[MAIN]]) -> (f32) {
// expected-error@unknown {{loop-unroll: unroll-factor must be at least 1, got 0}}
func.func @reduction(%A: memref<3xf32>, %out: memref<1xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = affine.for %i = 0 to 3 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %A[%i] : memref<3xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  } {loopopt.name = "i"}
  affine.store %sum, %out[0] : memref<1xf32>
  return
}

// -----

// Partial unroll with iter_args: the remainder starts from the main loop's result.
// CHECK-LABEL: func.func @partial_reduction
// CHECK:       %[[MAIN:.*]] = affine.for %{{.*}} = 0 to 8 step 4 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:         %[[S0:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// CHECK:         %[[S1:.*]] = arith.addf %[[S0]], %{{.*}} : f32
// CHECK:         %[[S2:.*]] = arith.addf %[[S1]], %{{.*}} : f32
// CHECK:         %[[S3:.*]] = arith.addf %[[S2]], %{{.*}} : f32
// CHECK-NEXT:    affine.yield %[[S3]] : f32
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NEXT:  %[[REM:.*]] = affine.for %{{.*}} = 8 to 9 iter_args(%{{.*}} = %[[MAIN]]) -> (f32) {
// CHECK:       } {loopopt.name = "i_rem"}
// CHECK-NEXT:  affine.store %[[REM]]
// FULL-LABEL:  func.func @partial_reduction
// FULL-NOT:    affine.for
// OUTER-LABEL: func.func @partial_reduction
// OUTER:       affine.for %{{.*}} = 0 to 8 step 2 iter_args
// expected-error@unknown {{loop-unroll: unroll-factor must be at least 1, got 0}}
func.func @partial_reduction(%A: memref<9xf32>, %out: memref<1xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = affine.for %i = 0 to 9 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %A[%i] : memref<9xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  } {loopopt.name = "i"}
  affine.store %sum, %out[0] : memref<1xf32>
  return
}

// -----

// A triangular loop (syrk's j to i + 1): the split map is over the outer IV.
// CHECK-LABEL: func.func @triangular
// CHECK:       affine.for %[[I:.*]] = 0 to 8 {
// CHECK-NEXT:    affine.for %[[J:.*]] = 0 to affine_map<(d0) -> ((((d0 + 1) floordiv 4) * 4))>(%[[I]]) step 4 {
// CHECK:           affine.store %{{.*}}, %{{.*}}[%[[J]] + 3, %[[I]]]
// CHECK-NEXT:    } {loopopt.name = "j"}
// CHECK-NEXT:    affine.for %[[JR:.*]] = max affine_map<(d0) -> (0, (((d0 + 1) floordiv 4) * 4))>(%[[I]]) to affine_map<(d0) -> ((d0 + 1))>(%[[I]]) {
// CHECK-NEXT:      affine.load %{{.*}}[%[[I]], %[[JR]]]
// CHECK:         } {loopopt.name = "j_rem"}
// FULL-LABEL:  func.func @triangular
// FULL:        affine.for %{{.*}} = 0 to affine_map<(d0) -> ((d0 + 1))>
// OUTER-LABEL: func.func @triangular
// OUTER:       affine.for %[[I:.*]] = 0 to 8 step 2 {
// OUTER-NEXT:    affine.for %{{.*}} = 0 to affine_map<(d0) -> ((d0 + 1))>(%[[I]]) {
// OUTER:         affine.for %{{.*}} = 0 to affine_map<(d0) -> ((d0 + 2))>(%[[I]]) {
// expected-error@unknown {{loop-unroll: unroll-factor must be at least 1, got 0}}
func.func @triangular(%C: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %v = affine.load %C[%i, %j] : memref<8x8xf32>
      affine.store %v, %C[%j, %i] : memref<8x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// A point loop ending at min(is + 6, n): no affine.min of the IV %is may be a bound operand
// (upstream MLIR rejects it as a dim), so there is no remainder: copy u runs under an affine.if
// on i + u <= min(is + 6, n) - 1, one constraint per result, but for those that hold in every
// iteration: i + 1 <= is + 5 for i in is, is + 4 (and for every copy when the factor is 2).
// CHECK-LABEL: func.func @point_loop
// CHECK-SAME:    %[[N:[a-zA-Z0-9_]+]]: index
// CHECK:       affine.for %[[IS:.*]] = 0 to %[[N]] step 6 {
// CHECK-NEXT:    affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IS]]) to min affine_map<(d0)[s0] -> ((d0 + 6), s0)>(%[[IS]])[%[[N]]] step 4 {
// CHECK-NEXT:      affine.load %{{.*}}[%[[I]]]
// CHECK:           affine.if affine_set<(d0)[s0] : ((((d0 * -1) + s0) + -2) >= 0)>(%[[I]])[%[[N]]] {
// CHECK-NEXT:        affine.load %{{.*}}[%[[I]] + 1]
// CHECK:           affine.if affine_set<(d0, d1)[s0] : (((d0 + (d1 * -1)) + 2) >= 0, (((d1 * -1) + s0) + -4) >= 0)>(%[[IS]], %[[I]])[%[[N]]] {
// CHECK-NEXT:        affine.load %{{.*}}[%[[I]] + 3]
// CHECK:         } {loopopt.name = "i"}
// CHECK-NOT:     affine.min
// CHECK-NOT:     i_rem
// OUTER-LABEL: func.func @point_loop
// OUTER:         affine.for %[[I:.*]] = {{.*}} step 2 {
// OUTER:           affine.if affine_set<(d0)[s0] : ((((d0 * -1) + s0) + -2) >= 0)>(%[[I]])[%{{.*}}] {
// expected-error@unknown {{loop-unroll: unroll-factor must be at least 1, got 0}}
func.func @point_loop(%A: memref<?xf32>, %n: index) {
  affine.for %is = 0 to %n step 6 {
    affine.for %i = affine_map<(d0) -> (d0)>(%is) to min affine_map<(d0)[s0] -> (d0 + 6, s0)>(%is)[%n] {
      %v = affine.load %A[%i] : memref<?xf32>
      %s = arith.addf %v, %v : f32
      affine.store %s, %A[%i] : memref<?xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "is"}
  return
}
