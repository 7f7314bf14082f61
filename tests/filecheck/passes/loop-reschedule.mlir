// RUN: sed -n '1,/^\/\/ NEGATIVE CASES/p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'loop-reschedule' 2>/dev/null | filecheck %s
// RUN: sed -n '/^\/\/ SEIDEL/,/^\/\/ NEGATIVE CASES/p' %s | loopopt-opt - -p 'loop-reschedule,loop-mark-parallel' | filecheck %s --check-prefix=SEIDEL
// RUN: sed -n '/^\/\/ PARALLEL/,/^\/\/ SEIDEL/p' %s | loopopt-opt - -p 'loop-reschedule{force}' | filecheck %s --check-prefix=FORCE
// RUN: sed -n '/^\/\/ SEIDEL/,/^\/\/ NEGATIVE CASES/p' %s | loopopt-opt - -p 'loop-reschedule{wavefront},loop-mark-parallel' | filecheck %s --check-prefix=WAVE
// RUN: sed -n '1,/^\/\/ PARALLEL/p' %s | loopopt-opt - -p 'loop-reschedule{wavefront}' 2>&1 >/dev/null | filecheck %s --check-prefix=NOWAVE
// RUN: sed -n '/^\/\/ NEGATIVE CASES/,$p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'loop-reschedule'
// RUN: sed -n '/^\/\/ FLOYD/,/^\/\/ NEGATIVE CASES/p' %s | loopopt-opt - -p 'loop-reschedule{split},loop-mark-parallel' | filecheck %s --check-prefix=SPLIT
// RUN: sed -n '/^\/\/ SEIDEL/,/^\/\/ FLOYD/p' %s | loopopt-opt - -p 'loop-reschedule{split}' 2>&1 >/dev/null | filecheck %s --check-prefix=NOSPLIT
// RUN: not loopopt-opt %s -p 'loop-reschedule{func=nope}' 2>&1 | filecheck %s --check-prefix=NOFUNC

// Each top-level nest gets a schedule from isl's scheduler (outer coincidence: an outer
// parallel loop where one exists), regenerated from isl's AST, where that makes some statement
// parallel at a shallower depth and none deeper.

// NOFUNC: error: no function named 'nope'

// No hyperplane for lu: its statements sit in different loops.
// NOWAVE: warning: loop-reschedule: nest 'i' left as it is: no hyperplane carries every dependence (statements in other loops

// lu in place: as written, i and the first j carry dependences, so only the second j loop is
// parallel. Rescheduled right-looking: c0 (the old k, the j of the division) outside; inside it
// (strongly connected components serialized) the division over i, then each update as its own
// parallel (i, j) nest.
// CHECK-LABEL: func.func @lu
// CHECK-SAME:    (%[[A:.*]]: memref<?x?xf64>, %[[N:.*]]: index)
// CHECK:       affine.for %[[C0:.*]] = 0 to affine_map<()[s0] -> ((s0 + -1))>()[%[[N]]] {
// CHECK-NEXT:    affine.for %[[I:.*]] = affine_map<(d0) -> ((d0 + 1))>(%[[C0]]) to %[[N]] {
// CHECK-NEXT:      affine.load %[[A]][%[[I]], %[[C0]]]
// CHECK-NEXT:      affine.load %[[A]][%[[C0]], %[[C0]]]
// CHECK-NEXT:      arith.divf
// CHECK-NEXT:      affine.store %{{.*}}, %[[A]][%[[I]], %[[C0]]]
// CHECK-NEXT:    } {loopopt.name = "i"}
// CHECK-NEXT:    affine.for %[[I1:.*]] = affine_map<(d0) -> ((d0 + 2))>(%[[C0]]) to %[[N]] {
// CHECK-NEXT:      affine.for %[[J:.*]] = affine_map<(d0) -> ((d0 + 1))>(%[[C0]]) to affine_map<(d0) -> (d0)>(%[[I1]]) {
// CHECK-NEXT:        affine.load %[[A]][%[[I1]], %[[J]]]
// CHECK-NEXT:        affine.load %[[A]][%[[I1]], %[[C0]]]
// CHECK-NEXT:        affine.load %[[A]][%[[C0]], %[[J]]]
// CHECK:             affine.store %{{.*}}, %[[A]][%[[I1]], %[[J]]]
// CHECK-NEXT:      } {loopopt.name = "j"}
// CHECK-NEXT:    } {loopopt.name = "i"}
// CHECK-NEXT:    affine.for %[[I2:.*]] = affine_map<(d0) -> ((d0 + 1))>(%[[C0]]) to %[[N]] {
// CHECK-NEXT:      affine.for %[[J2:.*]] = affine_map<(d0) -> (d0)>(%[[I2]]) to %[[N]] {
// CHECK:             affine.store %{{.*}}, %[[A]][%[[I2]], %[[J2]]]
// CHECK-NEXT:      } {loopopt.name = "j"}
// CHECK-NEXT:    } {loopopt.name = "i"}
// CHECK-NEXT:  } {loopopt.name = "c0"}
// CHECK-NEXT:  func.return
func.func @lu(%A: memref<?x?xf64>, %n: index) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %i {
      affine.for %k = 0 to %j {
        %a = affine.load %A[%i, %j] : memref<?x?xf64>
        %b = affine.load %A[%i, %k] : memref<?x?xf64>
        %c = affine.load %A[%k, %j] : memref<?x?xf64>
        %p = arith.mulf %b, %c : f64
        %s = arith.subf %a, %p : f64
        affine.store %s, %A[%i, %j] : memref<?x?xf64>
      } {loopopt.name = "k"}
      %x = affine.load %A[%i, %j] : memref<?x?xf64>
      %d = affine.load %A[%j, %j] : memref<?x?xf64>
      %q = arith.divf %x, %d : f64
      affine.store %q, %A[%i, %j] : memref<?x?xf64>
    } {loopopt.name = "j"}
    affine.for %j = %i to %n {
      affine.for %k = 0 to %i {
        %a = affine.load %A[%i, %j] : memref<?x?xf64>
        %b = affine.load %A[%i, %k] : memref<?x?xf64>
        %c = affine.load %A[%k, %j] : memref<?x?xf64>
        %p = arith.mulf %b, %c : f64
        %s = arith.subf %a, %p : f64
        affine.store %s, %A[%i, %j] : memref<?x?xf64>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// trisolv in place, with the first statement under an affine.if (i >= 1 is always true
// there: the condition joins its domain and is gone from the output). As written, i carries
// every dependence; rescheduled, the initialisations x[i] = b[i] are one parallel loop.
// CHECK-LABEL: func.func @trisolv
// CHECK-NOT:   affine.if
// CHECK:       affine.for %[[I:.*]] = 1 to 10 {
// CHECK-NEXT:    affine.load %{{.*}}[%[[I]]]
// CHECK-NEXT:    affine.store %{{.*}}, %{{.*}}[%[[I]]]
// CHECK-NEXT:  } {loopopt.name = "i"}
func.func @trisolv(%L: memref<10x10xf64>, %x: memref<10xf64>, %b: memref<10xf64>) {
  affine.for %i = 1 to 10 {
    affine.if affine_set<(d0) : (d0 - 1 >= 0)>(%i) {
      %v = affine.load %b[%i] : memref<10xf64>
      affine.store %v, %x[%i] : memref<10xf64>
    }
    affine.for %j = 1 to %i {
      %l = affine.load %L[%i, %j] : memref<10x10xf64>
      %xj = affine.load %x[%j] : memref<10xf64>
      %xi = affine.load %x[%i] : memref<10xf64>
      %p = arith.mulf %l, %xj : f64
      %s = arith.subf %xi, %p : f64
      affine.store %s, %x[%i] : memref<10xf64>
    } {loopopt.name = "j"}
    %y = affine.load %x[%i] : memref<10xf64>
    %d = affine.load %L[%i, %i] : memref<10x10xf64>
    %q = arith.divf %y, %d : f64
    affine.store %q, %x[%i] : memref<10xf64>
  } {loopopt.name = "i"}
  return
}

// -----

// PARALLEL CASE: a perfectly parallel nest is left as it is, with a warning giving the depth of the
// outermost parallel loop of each statement before and after (with force, RUN line 3, isl's
// schedule replaces it anyway: here the same loops).
// CHECK-LABEL: func.func @add
// CHECK:       affine.for %{{.*}} = 0 to 7 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 5 {
// CHECK:         } {loopopt.name = "j"}
// CHECK-NEXT:  } {loopopt.name = "i"}
// FORCE-LABEL: func.func @add
// FORCE:       affine.for %[[I:.*]] = 0 to 7 {
// FORCE-NEXT:    affine.for %[[J:.*]] = 0 to 5 {
// FORCE-NEXT:      affine.load %{{.*}}[%[[I]], %[[J]]]
// FORCE:         } {loopopt.name = "j"}
// FORCE-NEXT:  } {loopopt.name = "i"}
func.func @add(%A: memref<7x5xf32>, %B: memref<7x5xf32>) {
  // expected-warning @+1 {{loop-reschedule: nest 'i' left as it is: isl's schedule makes no statement parallel at a shallower depth (outermost parallel loop depth, old/new: S0 0/0)}}
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 5 {
      %a = affine.load %A[%i, %j] : memref<7x5xf32>
      %b = affine.load %B[%i, %j] : memref<7x5xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %A[%i, %j] : memref<7x5xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// An IV of an affine.parallel around the nest (a parameter to isl) is a dimension of the new
// bounds, not a symbol: MLIR takes no loop IV as a symbol (found by the differential fuzzer).
// FORCE-LABEL: func.func @inside_parallel
// FORCE:       affine.parallel (%[[P:.*]]) = (0) to (%{{.*}}) {
// FORCE:         affine.for %{{.*}} = 1 to affine_map<(d0) -> ((d0 + 3))>(%[[P]]) {
// FORCE-NOT:     ()[%[[P]]]
func.func @inside_parallel(%A: memref<9xf32>, %B: memref<9x9xf32>, %n: index) {
  affine.parallel (%p) = (0) to (%n) {
    affine.for %i = 0 to 2 {
      %b = affine.load %B[%p, %i + 2] : memref<9x9xf32>
      affine.store %b, %B[%p, %i] : memref<9x9xf32>
      affine.for %j = 1 to affine_map<(d0) -> (d0 + 3)>(%p) {
        affine.if affine_set<(d0, d1) : (d0 - d1 >= 0)>(%j, %i) {
          %a = affine.load %A[%p] : memref<9xf32>
          %s = arith.addf %a, %a : f32
          affine.store %s, %A[%p] : memref<9xf32>
        }
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  }
  return
}

// -----

// SEIDEL CASE (RUN line 2): seidel-2d (9 points, in place): t, i and j all carry dependences. isl's schedule is
// a wavefront: c0 = 2t + i sequential, t parallel inside it (floordiv bounds), j sequential.
// SEIDEL-LABEL: func.func @seidel
// SEIDEL:       affine.for %[[C0:.*]] = 1 to 18 {
// SEIDEL-NEXT:    affine.for %[[T:.*]] = max affine_map<(d0) -> (0, ((d0 floordiv 2) + -3))>(%[[C0]]) to min affine_map<(d0) -> (6, ((d0 + 1) floordiv 2))>(%[[C0]]) {
// SEIDEL-NEXT:      affine.for %[[J:.*]] = 1 to 8 {
// SEIDEL-NEXT:        affine.load %{{.*}}[%[[C0]] + %[[T]] * -2 + -1, %[[J]] + -1]
// SEIDEL:             affine.store %{{.*}}, %{{.*}}[%[[C0]] + %[[T]] * -2, %[[J]]]
// SEIDEL-NEXT:      } {loopopt.name = "j"}
// SEIDEL-NEXT:    } {loopopt.name = "t", loopopt.parallel}
// SEIDEL-NEXT:  } {loopopt.name = "c0"}
// With `wavefront`, Lamport's hyperplane instead: c0 = 4t + 2i + j carries every dependence,
// so t and i are both parallel inside it and j is c0 - 4t - 2i.
// WAVE-LABEL: func.func @seidel
// WAVE:       affine.for %[[C0:.*]] = 3 to 42 {
// WAVE-NEXT:    affine.for %[[T:.*]] = max affine_map<(d0) -> (0, (((d0 + 2) floordiv 4) + -5))>(%[[C0]]) to min affine_map<(d0) -> (6, ((d0 + 1) floordiv 4))>(%[[C0]]) {
// WAVE-NEXT:      affine.for %[[I:.*]] = max affine_map<(d0, d1) -> (1, (((d0 * -2) + (d1 floordiv 2)) + -3))>(%[[T]], %[[C0]]) to min affine_map<(d0, d1) -> (8, ((d0 * -2) + ((d1 + 1) floordiv 2)))>(%[[T]], %[[C0]]) {
// WAVE-NEXT:        affine.load %{{.*}}[%[[I]] + -1, %[[C0]] + %[[T]] * -4 + %[[I]] * -2 + -1]
// WAVE:             affine.store %{{.*}}, %{{.*}}[%[[I]], %[[C0]] + %[[T]] * -4 + %[[I]] * -2]
// WAVE-NEXT:      } {loopopt.name = "i", loopopt.parallel}
// WAVE-NEXT:    } {loopopt.name = "t", loopopt.parallel}
// WAVE-NEXT:  } {loopopt.name = "c0"}
func.func @seidel(%A: memref<9x9xf64>) {
  %nine = arith.constant 9.0 : f64
  affine.for %t = 0 to 6 {
    affine.for %i = 1 to 8 {
      affine.for %j = 1 to 8 {
        %a = affine.load %A[%i - 1, %j - 1] : memref<9x9xf64>
        %b = affine.load %A[%i - 1, %j] : memref<9x9xf64>
        %c = affine.load %A[%i - 1, %j + 1] : memref<9x9xf64>
        %d = affine.load %A[%i, %j - 1] : memref<9x9xf64>
        %e = affine.load %A[%i, %j] : memref<9x9xf64>
        %f = affine.load %A[%i, %j + 1] : memref<9x9xf64>
        %g = affine.load %A[%i + 1, %j - 1] : memref<9x9xf64>
        %h = affine.load %A[%i + 1, %j] : memref<9x9xf64>
        %k = affine.load %A[%i + 1, %j + 1] : memref<9x9xf64>
        %s1 = arith.addf %a, %b : f64
        %s2 = arith.addf %s1, %c : f64
        %s3 = arith.addf %s2, %d : f64
        %s4 = arith.addf %s3, %e : f64
        %s5 = arith.addf %s4, %f : f64
        %s6 = arith.addf %s5, %g : f64
        %s7 = arith.addf %s6, %h : f64
        %s8 = arith.addf %s7, %k : f64
        %q = arith.divf %s8, %nine : f64
        affine.store %q, %A[%i, %j] : memref<9x9xf64>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}

// FLOYD CASE (RUN line 6): with `split`, floyd-warshall's statement is cut where its
// self-dependences change direction (i = k, j = k: nine pieces); isl's schedule then runs k
// sequentially and each piece as a parallel nest inside it.
// SPLIT-LABEL: func.func @floyd
// SPLIT:       affine.for %[[C0:.*]] = 0 to 6 {
// SPLIT-NEXT:    affine.for %[[I:.*]] = 0 to affine_map<(d0) -> (d0)>(%[[C0]]) {
// SPLIT-NEXT:      affine.for %[[J:.*]] = 0 to affine_map<(d0) -> (d0)>(%[[C0]]) {
// SPLIT:             affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]]
// SPLIT-NEXT:      } {loopopt.name = "j", loopopt.parallel}
// SPLIT-NEXT:    } {loopopt.name = "i", loopopt.parallel}
// SPLIT:         affine.store %{{.*}}, %{{.*}}[%[[C0]], %[[C0]]]
// SPLIT:           affine.store %{{.*}}, %{{.*}}[%[[C0]], %{{.*}}]
// SPLIT:           affine.store %{{.*}}, %{{.*}}[%{{.*}}, %[[C0]]]
// SPLIT-NEXT:    } {loopopt.name = "i", loopopt.parallel}
// SPLIT-NEXT:    affine.for %[[I5:.*]] = affine_map<(d0) -> ((d0 + 1))>(%[[C0]]) to 6 {
// SPLIT-NEXT:      affine.for %[[J5:.*]] = affine_map<(d0) -> ((d0 + 1))>(%[[C0]]) to 6 {
// SPLIT:             affine.store %{{.*}}, %{{.*}}[%[[I5]], %[[J5]]]
// SPLIT-NEXT:      } {loopopt.name = "j", loopopt.parallel}
// SPLIT-NEXT:    } {loopopt.name = "i", loopopt.parallel}
// SPLIT-NEXT:  } {loopopt.name = "c0"}
// SPLIT-NOT:   affine.for
// NOSPLIT: warning: loop-reschedule: nest 't' left as it is: no statement has a surface to split along
func.func @floyd(%P: memref<6x6xf32>) {
  affine.for %k = 0 to 6 {
    affine.for %i = 0 to 6 {
      affine.for %j = 0 to 6 {
        %a = affine.load %P[%i, %k] : memref<6x6xf32>
        %b = affine.load %P[%k, %j] : memref<6x6xf32>
        %s = arith.addf %a, %b : f32
        %c = affine.load %P[%i, %j] : memref<6x6xf32>
        %m = arith.minimumf %c, %s : f32
        affine.store %m, %P[%i, %j] : memref<6x6xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  } {loopopt.name = "k"}
  return
}

// NEGATIVE CASES (RUN line 4): refused with the op and the reason, the IR unchanged.

func.func @iter_args(%A: memref<8xf32>) {
  %z = arith.constant 0.0 : f32
  // expected-error @+1 {{loop-reschedule: a loop with iter_args (run reduction-to-memory first)}}
  %r = affine.for %i = 0 to 8 iter_args(%acc = %z) -> (f32) {
    %a = affine.load %A[%i] : memref<8xf32>
    %s = arith.addf %acc, %a : f32
    affine.yield %s : f32
  }
  affine.store %r, %A[0] : memref<8xf32>
  return
}

// -----

func.func @indirect(%A: memref<8xf32>, %P: memref<8xindex>) {
  affine.for %i = 0 to 8 {
    %p = affine.load %P[%i] : memref<8xindex>
    // expected-error @+1 {{loop-reschedule: the access A[?] is not affine}}
    %a = memref.load %A[%p] : memref<8xf32>
    memref.store %a, %A[%p] : memref<8xf32>
  } {loopopt.name = "i"}
  return
}

// -----

func.func private @g(f32) -> ()
func.func @call(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<8xf32>
    // expected-error @+1 {{loop-reschedule: 'func.call' may touch any memory}}
    func.call @g(%a) : (f32) -> ()
  } {loopopt.name = "i"}
  return
}

// -----

func.func @crossing(%A: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i, 0] : memref<8x8xf32>
    affine.for %j = 0 to 8 {
      // expected-error @+1 {{loop-reschedule: a value computed in one statement is used in another}}
      affine.store %a, %A[%i, %j] : memref<8x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

func.func @views(%A: memref<16xf32>) {
  %v = memref.subview %A[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<16xf32>
    // expected-error @+1 {{loop-reschedule: A[i] and v[i] may alias (distinct values of one buffer)}}
    affine.store %a, %v[%i] : memref<8xf32, strided<[1]>>
  } {loopopt.name = "i"}
  return
}

// -----

func.func @else_of_a_conjunction(%A: memref<8xf32>) {
  affine.for %i = 1 to 8 {
    %a = affine.load %A[%i - 1] : memref<8xf32>
    // expected-error @+1 {{loop-reschedule: an affine.if with an else region and a condition that is not one inequality}}
    affine.if affine_set<(d0) : (d0 - 2 >= 0, 6 - d0 >= 0)>(%i) {
      affine.store %a, %A[%i] : memref<8xf32>
    } else {
      affine.store %a, %A[%i - 1] : memref<8xf32>
    }
  } {loopopt.name = "i"}
  return
}
