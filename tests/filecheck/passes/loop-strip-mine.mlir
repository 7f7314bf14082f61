// RUN: loopopt-opt %s --split-input-file -p 'loop-strip-mine{factor=4}' | filecheck %s
// RUN: loopopt-opt %s --split-input-file -p 'loop-strip-mine{factor=3 loop=j}' | filecheck %s --check-prefix=INNER
// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-strip-mine{factor=0}'

// The strip loop `<name>_s` steps by factor * step over the original bounds; the original loop
// runs one strip (min with the upper bound unless the factor divides a constant trip count).
// Without loop=, the top-level loops of each function are strip-mined. Factor 0 is refused.

// Constant bounds: 4 divides 16 (no min), 3 does not divide 10 (min).
// CHECK-LABEL: func.func @constant
// CHECK:       affine.for %[[IS:.*]] = 0 to 16 step 4 {
// CHECK-NEXT:    affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IS]]) to affine_map<(d0) -> ((d0 + 4))>(%[[IS]]) {
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to 10 {
// CHECK:           } {loopopt.name = "j"}
// CHECK-NEXT:    } {loopopt.name = "i", loopopt.parallel}
// CHECK-NEXT:  } {loopopt.name = "i_s", loopopt.parallel}
// INNER-LABEL: func.func @constant
// INNER:       affine.for %[[I:.*]] = 0 to 16 {
// INNER-NEXT:    affine.for %[[JS:.*]] = 0 to 10 step 3 {
// INNER-NEXT:      affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JS]]) to min affine_map<(d0) -> ((d0 + 3), 10)>(%[[JS]]) {
// INNER-NEXT:        affine.load %{{.*}}[%[[I]], %[[J]]]
// INNER:           } {loopopt.name = "j"}
// INNER-NEXT:    } {loopopt.name = "j_s"}
func.func @constant(%A: memref<16x10xf32>) {
  // expected-error@+1 {{loop-strip-mine: factor must be a positive integer, got 0}}
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 10 {
      %v = affine.load %A[%i, %j] : memref<16x10xf32>
      affine.store %v, %A[%i, %j] : memref<16x10xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i", loopopt.parallel}
  return
}

// -----

// Steps, symbols and bounds that depend on the outer loop: the strip loop keeps the original
// bounds, the inner loop clips to them.
// CHECK-LABEL: func.func @bounds
// CHECK-SAME:    %[[N:[a-z0-9_]+]]: index, %[[M:[a-z0-9_]+]]: index
// CHECK:       affine.for %[[IS:.*]] = 1 to %[[N]] step 8 {
// CHECK-NEXT:    affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IS]]) to min affine_map<(d0)[s0] -> ((d0 + 8), s0)>(%[[IS]])[%[[N]]] step 2 {
// CHECK-NEXT:      affine.for %{{.*}} = max affine_map<(d0) -> (0, (d0 + -2))>(%[[I]]) to min affine_map<(d0)[s0] -> ((d0 + 3), s0)>(%[[I]])[%[[M]]] {
// INNER-LABEL: func.func @bounds
// INNER-SAME:    %[[N:[a-z0-9_]+]]: index, %[[M:[a-z0-9_]+]]: index
// INNER:       affine.for %[[I:.*]] = 1 to %[[N]] step 2 {
// INNER-NEXT:    affine.for %[[JS:.*]] = max affine_map<(d0) -> (0, (d0 + -2))>(%[[I]]) to min affine_map<(d0)[s0] -> ((d0 + 3), s0)>(%[[I]])[%[[M]]] step 3 {
// INNER-NEXT:      affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[JS]]) to min affine_map<(d0, d1)[s0] -> ((d0 + 3), (d1 + 3), s0)>(%[[JS]], %[[I]])[%[[M]]] {
func.func @bounds(%A: memref<?xf32>, %n: index, %m: index) {
  // expected-error@+1 {{loop-strip-mine: factor must be a positive integer, got 0}}
  affine.for %i = 1 to %n step 2 {
    affine.for %j = max affine_map<(d0) -> (0, d0 - 2)>(%i) to min affine_map<(d0)[s0] -> (d0 + 3, s0)>(%i)[%m] {
      %v = affine.load %A[%j] : memref<?xf32>
      affine.store %v, %A[%i] : memref<?xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// iter_args: the strip loop carries the value, the inner loop starts from it.
// CHECK-LABEL: func.func @reduction
// CHECK:       affine.for %[[IS:.*]] = 0 to 6 step 4 {
// CHECK-NEXT:    affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IS]]) to min affine_map<(d0) -> ((d0 + 4), 6)>(%[[IS]]) {
// CHECK-NEXT:      affine.for %{{.*}} = 0 to 10 iter_args
// INNER-LABEL: func.func @reduction
// INNER:       %[[ZERO:.*]] = arith.constant
// INNER:       %[[SUM:.*]] = affine.for %[[JS:.*]] = 0 to 10 step 3 iter_args(%[[ACC0:.*]] = %[[ZERO]]) -> (f32) {
// INNER-NEXT:    %[[PART:.*]] = affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JS]]) to min affine_map<(d0) -> ((d0 + 3), 10)>(%[[JS]]) iter_args(%[[ACC:.*]] = %[[ACC0]]) -> (f32) {
// INNER:           %[[S:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// INNER-NEXT:      affine.yield %[[S]] : f32
// INNER-NEXT:    } {loopopt.name = "j"}
// INNER-NEXT:    affine.yield %[[PART]] : f32
// INNER-NEXT:  } {loopopt.name = "j_s"}
// INNER-NEXT:  affine.store %[[SUM]]
func.func @reduction(%A: memref<6x10xf32>, %out: memref<6xf32>) {
  %zero = arith.constant 0.0 : f32
  // expected-error@+1 {{loop-strip-mine: factor must be a positive integer, got 0}}
  affine.for %i = 0 to 6 {
    %sum = affine.for %j = 0 to 10 iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %A[%i, %j] : memref<6x10xf32>
      %s = arith.addf %acc, %a : f32
      affine.yield %s : f32
    } {loopopt.name = "j"}
    affine.store %sum, %out[%i] : memref<6xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// Strip-mining never changes the order of iterations: legal even with a (<, >) dependence.
// CHECK-LABEL: func.func @wavefront
// CHECK:       affine.for %[[IS:.*]] = 1 to 9 step 4 {
// CHECK-NEXT:    affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[IS]]) to affine_map<(d0) -> ((d0 + 4))>(%[[IS]]) {
// INNER-LABEL: func.func @wavefront
// INNER:       affine.for %[[JS:.*]] = 0 to 7 step 3 {
// INNER-NEXT:    affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[JS]]) to min affine_map<(d0) -> ((d0 + 3), 7)>(%[[JS]]) {
func.func @wavefront(%A: memref<9x8xf32>) {
  // expected-error@+1 {{loop-strip-mine: factor must be a positive integer, got 0}}
  affine.for %i = 1 to 9 {
    affine.for %j = 0 to 7 {
      %u = affine.load %A[%i - 1, %j + 1] : memref<9x8xf32>
      %c = affine.load %A[%i, %j] : memref<9x8xf32>
      %s = arith.addf %u, %c : f32
      affine.store %s, %A[%i, %j] : memref<9x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
