// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-unroll-jam{unroll-jam-factor=2 loop=i}' | filecheck %s
// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-unroll-jam{unroll-jam-factor=4}' | filecheck %s --check-prefix=DEFAULT

// Unroll-and-jam: the unrolled loop steps by factor * step; runs of statements are copied in
// place (copy u sees `iv + u * step`) and inner loops are kept once, holding all the copies.
// A remainder loop `<name>_rem` (not jammed) runs the leftover iterations. Without loop=, the
// loops just outside the innermost ones are jammed.

// CHECK-LABEL: func.func @matmul
// CHECK:       affine.for %[[I:.*]] = 0 to 4 step 2 {
// CHECK-NEXT:    affine.for %[[J:.*]] = 0 to 6 {
// CHECK-NEXT:      affine.for %[[K:.*]] = 0 to 4 {
// CHECK-NEXT:        affine.load %[[A:.*]][%[[I]], %[[K]]]
// CHECK:             affine.store %{{.*}}, %[[C:.*]][%[[I]], %[[J]]]
// CHECK-NEXT:        affine.load %[[A]][%[[I]] + 1, %[[K]]]
// CHECK:             affine.store %{{.*}}, %[[C]][%[[I]] + 1, %[[J]]]
// CHECK-NEXT:      } {loopopt.name = "k"}
// CHECK-NEXT:    } {loopopt.name = "j"}
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NEXT:  affine.for %[[IR:.*]] = 4 to 5 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 6 {
// CHECK-NEXT:      affine.for %{{.*}} = 0 to 4 {
// CHECK-NEXT:        affine.load %[[A]][%[[IR]], %{{.*}}]
// CHECK:       } {loopopt.name = "i_rem"}
// DEFAULT-LABEL: func.func @matmul
// DEFAULT:       affine.for %[[I:.*]] = 0 to 5 {
// DEFAULT-NEXT:    affine.for %[[J:.*]] = 0 to 4 step 4 {
// DEFAULT-NEXT:      affine.for %[[K:.*]] = 0 to 4 {
// DEFAULT:             affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]]
// DEFAULT:             affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]] + 1]
// DEFAULT:             affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]] + 2]
// DEFAULT:             affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]] + 3]
// DEFAULT-NEXT:      } {loopopt.name = "k"}
// DEFAULT-NEXT:    } {loopopt.name = "j"}
// DEFAULT-NEXT:    affine.for %{{.*}} = 4 to 6 {
// DEFAULT:         } {loopopt.name = "j_rem"}
// DEFAULT-NEXT:  } {loopopt.name = "i"}
func.func @matmul(%A: memref<5x4xf32>, %B: memref<4x6xf32>, %C: memref<5x6xf32>) {
  affine.for %i = 0 to 5 {
    affine.for %j = 0 to 6 {
      affine.for %k = 0 to 4 {
        %a = affine.load %A[%i, %k] : memref<5x4xf32>
        %b = affine.load %B[%k, %j] : memref<4x6xf32>
        %c = affine.load %C[%i, %j] : memref<5x6xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<5x6xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// An imperfect nest with a reduction in iter_args: the statements around k are copied in place,
// k gets one accumulator per copy. A factor equal to the trip count leaves no remainder.
// CHECK-LABEL: func.func @reduction
// CHECK:       affine.for %[[I:.*]] = 0 to 4 step 2 {
// CHECK-NEXT:    %[[Y0:.*]] = affine.load %[[Y:.*]][%[[I]]]
// CHECK-NEXT:    %[[Y1:.*]] = affine.load %[[Y]][%[[I]] + 1]
// CHECK-NEXT:    %[[R0:.*]], %[[R1:.*]] = affine.for %{{.*}} = 0 to 8 iter_args(%[[ACC0:.*]] = %[[Y0]], %[[ACC1:.*]] = %[[Y1]]) -> (f32, f32) {
// CHECK:           %[[S0:.*]] = arith.addf %[[ACC0]], %{{.*}} : f32
// CHECK:           %[[S1:.*]] = arith.addf %[[ACC1]], %{{.*}} : f32
// CHECK-NEXT:      affine.yield %[[S0]], %[[S1]] : f32, f32
// CHECK-NEXT:    } {loopopt.name = "k"}
// CHECK-NEXT:    affine.store %[[R0]], %[[Y]][%[[I]]]
// CHECK-NEXT:    affine.store %[[R1]], %[[Y]][%[[I]] + 1]
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NOT:   i_rem
// DEFAULT-LABEL: func.func @reduction
// DEFAULT:       affine.for %[[I:.*]] = 0 to 4 step 4 {
// DEFAULT-COUNT-4: affine.load %{{.*}}[%[[I]]{{.*}}] : memref<4xf32>
// DEFAULT-NEXT:    %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = affine.for %{{.*}} = 0 to 8 iter_args
func.func @reduction(%A: memref<4x8xf32>, %x: memref<8xf32>, %y: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    %y0 = affine.load %y[%i] : memref<4xf32>
    %r = affine.for %k = 0 to 8 iter_args(%acc = %y0) -> (f32) {
      %a = affine.load %A[%i, %k] : memref<4x8xf32>
      %b = affine.load %x[%k] : memref<8xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      affine.yield %s : f32
    } {loopopt.name = "k"}
    affine.store %r, %y[%i] : memref<4xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// A symbolic trip count: the main loop ends at (n floordiv 2) * 2, the remainder starts at
// max(0, that).
// CHECK-LABEL: func.func @symbolic
// CHECK-SAME:    %[[N:[a-zA-Z0-9_]+]]: index
// CHECK:       affine.for %[[I:.*]] = 0 to affine_map<()[s0] -> (((s0 floordiv 2) * 2))>()[%[[N]]] step 2 {
// CHECK-NEXT:    affine.for %[[J:.*]] = 0 to 8 {
// CHECK:           affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]]
// CHECK:           affine.store %{{.*}}, %{{.*}}[%[[I]] + 1, %[[J]]]
// CHECK-NEXT:    } {loopopt.name = "j"}
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NEXT:  affine.for %{{.*}} = max affine_map<()[s0] -> (0, ((s0 floordiv 2) * 2))>()[%[[N]]] to %[[N]] {
// CHECK:       } {loopopt.name = "i_rem"}
// DEFAULT-LABEL: func.func @symbolic
// DEFAULT:       affine.for %{{.*}} = 0 to affine_map<()[s0] -> (((s0 floordiv 4) * 4))>()[%{{.*}}] step 4 {
func.func @symbolic(%A: memref<?x8xf32>, %n: index) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to 8 {
      %v = affine.load %A[%i, %j] : memref<?x8xf32>
      %s = arith.addf %v, %v : f32
      affine.store %s, %A[%i, %j] : memref<?x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// A point loop ending at min(is + 5, n): no affine.min of %is may be a bound operand upstream,
// so there is no remainder; the jammed statements of copy u run under an affine.if on
// i + u <= min(is + 5, n) - 1.
// CHECK-LABEL: func.func @point_loop
// CHECK-SAME:    %[[N:[a-zA-Z0-9_]+]]: index
// CHECK:       affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IS:.*]]) to min affine_map<(d0)[s0] -> ((d0 + 5), s0)>(%[[IS]])[%[[N]]] step 2 {
// CHECK-NEXT:    affine.for %[[J:.*]] = 0 to 8 {
// CHECK:           affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]]
// CHECK-NEXT:      affine.if affine_set<(d0, d1)[s0] : (((d0 + (d1 * -1)) + 3) >= 0, (((d1 * -1) + s0) + -2) >= 0)>(%[[IS]], %[[I]])[%[[N]]] {
// CHECK:             affine.store %{{.*}}, %{{.*}}[%[[I]] + 1, %[[J]]]
// CHECK:         } {loopopt.name = "j"}
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NOT:   i_rem
// DEFAULT-LABEL: func.func @point_loop
// DEFAULT:       affine.for %{{.*}} = {{.*}} step 4 {
// DEFAULT-COUNT-3: affine.if
func.func @point_loop(%A: memref<?x8xf32>, %n: index) {
  affine.for %is = 0 to %n step 5 {
    affine.for %i = affine_map<(d0) -> (d0)>(%is) to min affine_map<(d0)[s0] -> (d0 + 5, s0)>(%is)[%n] {
      affine.for %j = 0 to 8 {
        %v = affine.load %A[%i, %j] : memref<?x8xf32>
        %s = arith.addf %v, %v : f32
        affine.store %s, %A[%i, %j] : memref<?x8xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  } {loopopt.name = "is"}
  return
}

// -----

// Refused: jamming i would run A[i + 1, j] before A[i, j + 1] has been computed.
// CHECK-NOT:   func.func @wavefront
// DEFAULT-NOT: func.func @wavefront
func.func @wavefront(%A: memref<6x7xf32>) {
  // expected-error@+1 {{loop-unroll-jam: illegal: unroll-and-jam of loop i reverses A[i, j] → A[i - 1, j + 1] (RAW) with direction (<, >)}}
  affine.for %i = 1 to 6 {
    affine.for %j = 0 to 6 {
      %u = affine.load %A[%i - 1, %j + 1] : memref<6x7xf32>
      %c = affine.load %A[%i, %j] : memref<6x7xf32>
      %s = arith.addf %u, %c : f32
      affine.store %s, %A[%i, %j] : memref<6x7xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// Refused: the copies of j would need different trip counts.
func.func @triangular(%C: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    // expected-error@+1 {{loop-unroll-jam: cannot jam 'i' into 'j': the bounds of 'j' vary with 'i'}}
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %v = affine.load %C[%i, %j] : memref<8x8xf32>
      %s = arith.addf %v, %v : f32
      affine.store %s, %C[%i, %j] : memref<8x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
