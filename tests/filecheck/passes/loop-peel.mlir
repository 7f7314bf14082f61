// RUN: loopopt-opt %s --split-input-file -p 'loop-peel{loop=i count=2}' | filecheck %s
// RUN: loopopt-opt %s --split-input-file -p 'loop-peel{loop=i count=-2}' | filecheck %s --check-prefix=BACK
// RUN: loopopt-opt %s --split-input-file -p 'loop-peel{full-tiles}' | filecheck %s --check-prefix=TILES
// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-peel{loop=i count=20}'

// count=N > 0 peels the first N iterations into `<name>_peel` before the loop, count=-N the last
// N after it; the loop keeps its name. Peeling the end of a loop bounded by a min of loop IVs
// (a point loop: min(i_t + 4, 10)) first versions it on which result is the min: an affine.if
// holds one copy per result, each peeled (an affine.min of IVs is no valid dim for upstream
// MLIR). full-tiles splits each tile loop into full tiles (point loops without min) and the
// partial tile `<name>_peel`. A count of at least a constant trip count is refused.

// CHECK-LABEL: func.func @constant
// CHECK:       affine.for %[[P:.*]] = 0 to 2 {
// CHECK-NEXT:    affine.load %{{.*}}[%[[P]]]
// CHECK:       } {loopopt.name = "i_peel"}
// CHECK-NEXT:  affine.for %[[I:.*]] = 2 to 10 {
// CHECK-NEXT:    affine.load %{{.*}}[%[[I]]]
// CHECK:       } {loopopt.name = "i"}
// BACK-LABEL:  func.func @constant
// BACK:        affine.for %{{.*}} = 0 to 8 {
// BACK:        } {loopopt.name = "i"}
// BACK-NEXT:   affine.for %{{.*}} = 8 to 10 {
// BACK:        } {loopopt.name = "i_peel"}
// TILES-LABEL: func.func @constant
// TILES:       affine.for %{{.*}} = 0 to 10 {
// TILES-NOT:   i_peel
func.func @constant(%A: memref<10xf32>) {
  // expected-error@+1 {{loop-peel: cannot peel 20 iterations off 'i': it runs only 10}}
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<10xf32>
    %s = arith.addf %v, %v : f32
    affine.store %s, %A[%i] : memref<10xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// Symbolic bounds, a step and iter_args: the peeled part is clipped with min/max, and the
// value flows from the first loop into the second.
// CHECK-LABEL: func.func @symbolic_sum
// CHECK-SAME:    %[[N:[a-zA-Z0-9_]+]]: index
// CHECK:       %[[ZERO:.*]] = arith.constant
// CHECK:       %[[R0:.*]] = affine.for %{{.*}} = 3 to min affine_map<()[s0] -> (s0, 7)>()[%[[N]]] step 2 iter_args(%{{.*}} = %[[ZERO]]) -> (f32) {
// CHECK:       } {loopopt.name = "i_peel"}
// CHECK-NEXT:  %[[R1:.*]] = affine.for %{{.*}} = 7 to %[[N]] step 2 iter_args(%{{.*}} = %[[R0]]) -> (f32) {
// CHECK:       } {loopopt.name = "i"}
// CHECK-NEXT:  affine.store %[[R1]]
// BACK-LABEL:  func.func @symbolic_sum
// BACK-SAME:     %[[N:[a-zA-Z0-9_]+]]: index
// BACK:        %[[R0:.*]] = affine.for %{{.*}} = 3 to min affine_map<()[s0] -> (s0, ((((s0 + -3) ceildiv 2) * 2) + -1))>()[%[[N]]] step 2
// BACK:        } {loopopt.name = "i"}
// BACK-NEXT:   %[[R1:.*]] = affine.for %{{.*}} = max affine_map<()[s0] -> (3, ((((s0 + -3) ceildiv 2) * 2) + -1))>()[%[[N]]] to %[[N]] step 2 iter_args(%{{.*}} = %[[R0]]) -> (f32) {
// BACK:        } {loopopt.name = "i_peel"}
// BACK-NEXT:   affine.store %[[R1]]
// TILES-LABEL: func.func @symbolic_sum
// TILES-NOT:   i_peel
func.func @symbolic_sum(%A: memref<?xf32>, %out: memref<1xf32>, %n: index) {
  %zero = arith.constant 0.0 : f32
  %r = affine.for %i = 3 to %n step 2 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %A[%i] : memref<?xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  } {loopopt.name = "i"}
  affine.store %r, %out[0] : memref<1xf32>
  return
}

// -----

// A 2-D tiled nest in loop-tile's shape. 4 divides 12 (j: every tile full, the min just goes)
// but not 10 (i: full tiles up to 8, then the partial tile `i_t_peel`).
// TILES-LABEL: func.func @tiled
// TILES:       affine.for %[[IT:.*]] = 0 to 8 step 4 {
// TILES-NEXT:    affine.for %[[JT:.*]] = 0 to 12 step 4 {
// TILES-NEXT:      affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[IT]]) to affine_map<(d0) -> ((d0 + 4))>(%[[IT]]) {
// TILES-NEXT:        affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[JT]]) to affine_map<(d0) -> ((d0 + 4))>(%[[JT]]) {
// TILES:           } {loopopt.name = "j"}
// TILES-NEXT:    } {loopopt.name = "i"}
// TILES-NEXT:  } {loopopt.name = "j_t"}
// TILES-NEXT: } {loopopt.name = "i_t"}
// TILES-NEXT: affine.for %[[ITP:.*]] = 8 to 10 step 4 {
// TILES-NEXT:   affine.for %[[JTP:.*]] = 0 to 12 step 4 {
// TILES-NEXT:     affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[ITP]]) to min affine_map<(d0) -> ((d0 + 4), 10)>(%[[ITP]]) {
// TILES-NEXT:       affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[JTP]]) to affine_map<(d0) -> ((d0 + 4))>(%[[JTP]]) {
// TILES:      } {loopopt.name = "i_t_peel"}
// TILES-NOT:  j_t_peel
// CHECK-LABEL: func.func @tiled
// CHECK:         affine.for %[[IT:.*]] = 0 to 10 step 4 {
// CHECK:           affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[IT]]) to min affine_map<(d0) -> (10, (d0 + 2))>(%[[IT]]) {
// CHECK:           } {loopopt.name = "i_peel"}
// CHECK-NEXT:      affine.for %{{.*}} = affine_map<(d0) -> ((d0 + 2))>(%[[IT]]) to min affine_map<(d0) -> ((d0 + 4), 10)>(%[[IT]]) {
// CHECK:           } {loopopt.name = "i"}
// BACK-LABEL:  func.func @tiled
// BACK:          affine.for %[[IT:.*]] = 0 to 10 step 4 {
// BACK-NEXT:       affine.for %{{.*}} = 0 to 12 step 4 {
// BACK-NEXT:         affine.if affine_set<(d0) : (((d0 * -1) + 6) >= 0)>(%[[IT]]) {
// BACK-NEXT:           affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[IT]]) to affine_map<(d0) -> ((d0 + 2))>(%[[IT]]) {
// BACK:                } {loopopt.name = "i"}
// BACK-NEXT:           affine.for %{{.*}} = affine_map<(d0) -> ((d0 + 2))>(%[[IT]]) to affine_map<(d0) -> ((d0 + 4))>(%[[IT]]) {
// BACK:                } {loopopt.name = "i_peel"}
// BACK:              } else {
// BACK-NEXT:           affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[IT]]) to 8 {
// BACK:                } {loopopt.name = "i"}
// BACK-NEXT:           affine.for %{{.*}} = max affine_map<(d0) -> (d0, 8)>(%[[IT]]) to 10 {
// BACK:                } {loopopt.name = "i_peel"}
func.func @tiled(%A: memref<10x12xf32>) {
  affine.for %i_t = 0 to 10 step 4 {
    affine.for %j_t = 0 to 12 step 4 {
      affine.for %i = affine_map<(d0) -> (d0)>(%i_t) to min affine_map<(d0) -> (d0 + 4, 10)>(%i_t) {
        affine.for %j = affine_map<(d0) -> (d0)>(%j_t) to min affine_map<(d0) -> (d0 + 4, 12)>(%j_t) {
          %v = affine.load %A[%i, %j] : memref<10x12xf32>
          %s = arith.addf %v, %v : f32
          affine.store %s, %A[%i, %j] : memref<10x12xf32>
        } {loopopt.name = "j"}
      } {loopopt.name = "i"}
    } {loopopt.name = "j_t"}
  } {loopopt.name = "i_t"}
  return
}

// -----

// A symbolic size: full tiles are those with i_t + 8 <= n, i.e. up to ((n - 7) ceildiv 8) * 8.
// TILES-LABEL: func.func @tiled_symbolic
// TILES-SAME:    %[[N:[a-zA-Z0-9_]+]]: index
// TILES:       affine.for %[[IT:.*]] = 0 to affine_map<()[s0] -> ((((s0 + -7) ceildiv 8) * 8))>()[%[[N]]] step 8 {
// TILES-NEXT:    affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[IT]]) to affine_map<(d0) -> ((d0 + 8))>(%[[IT]]) {
// TILES:       } {loopopt.name = "i_t"}
// TILES-NEXT:  affine.for %[[ITP:.*]] = max affine_map<()[s0] -> (0, (((s0 + -7) ceildiv 8) * 8))>()[%[[N]]] to %[[N]] step 8 {
// TILES-NEXT:    affine.for %{{.*}} = affine_map<(d0) -> (d0)>(%[[ITP]]) to min affine_map<(d0)[s0] -> ((d0 + 8), s0)>(%[[ITP]])[%[[N]]] {
// TILES:       } {loopopt.name = "i_t_peel"}
// CHECK-LABEL: func.func @tiled_symbolic
// CHECK:       } {loopopt.name = "i_peel"}
// BACK-LABEL:  func.func @tiled_symbolic
// BACK:        } {loopopt.name = "i_peel"}
func.func @tiled_symbolic(%A: memref<?xf32>, %n: index) {
  affine.for %i_t = 0 to %n step 8 {
    affine.for %i = affine_map<(d0) -> (d0)>(%i_t) to min affine_map<(d0)[s0] -> (d0 + 8, s0)>(%i_t)[%n] {
      %v = affine.load %A[%i] : memref<?xf32>
      %s = arith.addf %v, %v : f32
      affine.store %s, %A[%i] : memref<?xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "i_t"}
  return
}
