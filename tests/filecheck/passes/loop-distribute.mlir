// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-distribute{loop=i}' 2>/dev/null | filecheck %s
// RUN: loopopt-opt %s --split-input-file -p 'loop-distribute{loop=i}' 2>&1 >/dev/null | filecheck %s --check-prefix=WARN
// RUN: sed -n '/^\/\/ BICG/,$p' %s | loopopt-opt - -p 'loop-distribute{loop=j},loop-distribute{loop=i}' | filecheck %s --check-prefix=BOTH
// RUN: not loopopt-opt %s -p 'loop-distribute' 2>&1 | filecheck %s --check-prefix=NOLOOP
// RUN: not loopopt-opt %s -p 'loop-distribute{loop=x}' 2>&1 | filecheck %s --check-prefix=NONAME

// Each group of statements gets its own copy of the loop, with the loop's name and attributes.
// NOLOOP: error: loop-distribute: loop=NAME is required
// NONAME: error: loop-distribute: no loop named 'x'

// atax: tmp[i] = 0, then tmp[i] += A[i, j] * x[j], then y[j] += A[i, j] * tmp[i]: three groups
// in their original order (each dependence goes forward).
// CHECK-LABEL: func.func @atax
// CHECK:       affine.for %[[I0:.*]] = 0 to 6 {
// CHECK-NEXT:    affine.store %{{.*}}, %{{.*}}[%[[I0]]]
// CHECK-NEXT:  } {loopopt.name = "i", loopopt.parallel}
// CHECK-NEXT:  affine.for %[[I1:.*]] = 0 to 6 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 6 {
// CHECK-NEXT:      affine.load %[[TMP:.*]][%[[I1]]]
// CHECK:         } {loopopt.name = "j"}
// CHECK-NEXT:  } {loopopt.name = "i", loopopt.parallel}
// CHECK-NEXT:  affine.for %[[I2:.*]] = 0 to 6 {
// CHECK-NEXT:    affine.for %[[J:.*]] = 0 to 6 {
// CHECK-NEXT:      affine.load %{{.*}}[%[[J]]]
// CHECK:         } {loopopt.name = "j"}
// CHECK-NEXT:  } {loopopt.name = "i", loopopt.parallel}
// CHECK-NEXT:  return
func.func @atax(%A: memref<6x6xf32>, %x: memref<6xf32>, %y: memref<6xf32>, %tmp: memref<6xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 6 {
    affine.store %zero, %tmp[%i] : memref<6xf32>
    affine.for %j = 0 to 6 {
      %t = affine.load %tmp[%i] : memref<6xf32>
      %a = affine.load %A[%i, %j] : memref<6x6xf32>
      %b = affine.load %x[%j] : memref<6xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %t, %p : f32
      affine.store %s, %tmp[%i] : memref<6xf32>
    } {loopopt.name = "j"}
    affine.for %j = 0 to 6 {
      %v = affine.load %y[%j] : memref<6xf32>
      %a = affine.load %A[%i, %j] : memref<6x6xf32>
      %t = affine.load %tmp[%i] : memref<6xf32>
      %p = arith.mulf %a, %t : f32
      %s = arith.addf %v, %p : f32
      affine.store %s, %y[%j] : memref<6xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i", loopopt.parallel}
  return
}

// -----

// B[i] is written after A[i] reads B[i - 1]: the dependence goes from the second statement to
// the first one of the next iteration, so the second group runs first. The constant and the
// index arithmetic each group uses are duplicated into it.
// CHECK-LABEL: func.func @reorder
// CHECK:       affine.for %[[I0:.*]] = 1 to 9 {
// CHECK-NEXT:    %[[TWO0:.*]] = arith.constant 2.0
// CHECK-NEXT:    %[[C:.*]] = affine.load %{{.*}}[%[[I0]]]
// CHECK-NEXT:    %[[P:.*]] = arith.mulf %[[C]], %[[TWO0]]
// CHECK-NEXT:    affine.store %[[P]], %{{.*}}[%[[I0]]]
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NEXT:  affine.for %[[I1:.*]] = 1 to 9 {
// CHECK-NEXT:    %[[TWO1:.*]] = arith.constant 2.0
// CHECK-NEXT:    %[[K:.*]] = affine.apply {{.*}}(%[[I1]])
// CHECK-NEXT:    %[[B:.*]] = affine.load %{{.*}}[%[[K]]]
// CHECK-NEXT:    %[[Q:.*]] = arith.mulf %[[B]], %[[TWO1]]
// CHECK-NEXT:    affine.store %[[Q]], %{{.*}}[%[[I1]]]
// CHECK-NEXT:  } {loopopt.name = "i"}
func.func @reorder(%A: memref<10xf32>, %B: memref<10xf32>, %C: memref<10xf32>) {
  affine.for %i = 1 to 9 {
    %two = arith.constant 2.0 : f32
    %k = affine.apply affine_map<(d0) -> (d0 - 1)>(%i)
    %b = affine.load %B[%k] : memref<10xf32>
    %a = arith.mulf %b, %two : f32
    affine.store %a, %A[%i] : memref<10xf32>
    %c = affine.load %C[%i] : memref<10xf32>
    %c2 = arith.mulf %c, %two : f32
    affine.store %c2, %B[%i] : memref<10xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// A[i] = B[i - 1] and B[i] = A[i - 1] form a cycle and stay together (the first group, where
// the first of them was); C[i - 1] = C[i] between them gets a loop of its own after it.
// CHECK-LABEL: func.func @cycle
// CHECK:       affine.for %[[I0:.*]] = 1 to 10 {
// CHECK-NEXT:    affine.load %[[B:.*]][%[[I0]] + -1]
// CHECK-NEXT:    affine.store %{{.*}}, %[[A:.*]][%[[I0]]]
// CHECK-NEXT:    affine.load %[[A]][%[[I0]] + -1]
// CHECK-NEXT:    affine.store %{{.*}}, %[[B]][%[[I0]]]
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NEXT:  affine.for %[[I1:.*]] = 1 to 10 {
// CHECK-NEXT:    affine.load %[[C:.*]][%[[I1]]]
// CHECK-NEXT:    affine.store %{{.*}}, %[[C]][%[[I1]] + -1]
// CHECK-NEXT:  } {loopopt.name = "i"}
func.func @cycle(%A: memref<10xf32>, %B: memref<10xf32>, %C: memref<10xf32>) {
  affine.for %i = 1 to 10 {
    %b = affine.load %B[%i - 1] : memref<10xf32>
    affine.store %b, %A[%i] : memref<10xf32>
    %c = affine.load %C[%i] : memref<10xf32>
    affine.store %c, %C[%i - 1] : memref<10xf32>
    %a = affine.load %A[%i - 1] : memref<10xf32>
    affine.store %a, %B[%i] : memref<10xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// A reduction in iter_args stays with the statements that use it; the copy that carries it
// gives the loop's results.
// CHECK-LABEL: func.func @reduction
// CHECK:       %[[R:.*]] = affine.for %[[I0:.*]] = 0 to 7 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:    %[[V:.*]] = affine.load %{{.*}}[%[[I0]]]
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[ACC]], %[[V]]
// CHECK-NEXT:    affine.yield %[[S]] : f32
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NEXT:  affine.for %[[I1:.*]] = 0 to 7 {
// CHECK-NEXT:    affine.load %{{.*}}[%[[I1]]]
// CHECK-NEXT:    affine.store
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NEXT:  affine.store %[[R]]
func.func @reduction(%X: memref<7xf32>, %Y: memref<7xf32>, %Z: memref<7xf32>, %out: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 7 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %X[%i] : memref<7xf32>
    %s = arith.addf %acc, %v : f32
    %w = affine.load %Y[%i] : memref<7xf32>
    affine.store %w, %Z[%i] : memref<7xf32>
    affine.yield %s : f32
  } {loopopt.name = "i"}
  affine.store %r, %out[] : memref<f32>
  return
}

// -----

// A[i] = A[i - 1] + B[i] and B[i + 1] = A[i]: a dependence cycle, so one group: the loop is
// left as it is, with a warning naming a dependence of the cycle.
// CHECK-LABEL: func.func @recurrence
// CHECK:       affine.for
// CHECK-NOT:   affine.for
// WARN:        warning: loop-distribute: loop i left as it is: its 2 statements are tied by a dependence cycle, e.g. B[i + 1] → B[i] (RAW) has direction (<)
func.func @recurrence(%A: memref<10xf32>, %B: memref<10xf32>) {
  // expected-warning @+1 {{loop i left as it is: its 2 statements are tied by a dependence cycle}}
  affine.for %i = 1 to 9 {
    %a = affine.load %A[%i - 1] : memref<10xf32>
    %b = affine.load %B[%i] : memref<10xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %A[%i] : memref<10xf32>
    %t = affine.load %A[%i] : memref<10xf32>
    affine.store %t, %B[%i + 1] : memref<10xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// BICG: the last chunk (RUN line 3 distributes j, then i). The two statements of j are apart
// (q[i] += … is carried by j, s[j] += … is not): with loop=i alone, the statement before j
// and j get a copy of i each; after loop=j, i splits into three.
// CHECK-LABEL: func.func @bicg
// CHECK:       affine.for %[[I0:.*]] = 0 to 7 {
// CHECK-NEXT:    affine.store %{{.*}}, %[[Q:.*]][%[[I0]]]
// CHECK-NEXT:  } {loopopt.name = "i"}
// CHECK-NEXT:  affine.for %[[I1:.*]] = 0 to 7 {
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 5 {
// CHECK-COUNT-2: affine.store
// CHECK-NEXT:    } {loopopt.name = "j"}
// CHECK-NEXT:  } {loopopt.name = "i"}
// BOTH-LABEL:  func.func @bicg
// BOTH:        affine.for %[[I0:.*]] = 0 to 7 {
// BOTH-NEXT:     affine.store %{{.*}}, %[[Q:.*]][%[[I0]]]
// BOTH-NEXT:   } {loopopt.name = "i"}
// BOTH-NEXT:   affine.for %{{.*}} = 0 to 7 {
// BOTH-NEXT:     affine.for %[[J1:.*]] = 0 to 5 {
// BOTH:            affine.store %{{.*}}, %[[S:.*]][%[[J1]]]
// BOTH-NEXT:     } {loopopt.name = "j"}
// BOTH-NEXT:   } {loopopt.name = "i"}
// BOTH-NEXT:   affine.for %[[I2:.*]] = 0 to 7 {
// BOTH-NEXT:     affine.for %{{.*}} = 0 to 5 {
// BOTH:            affine.store %{{.*}}, %[[Q]][%[[I2]]]
// BOTH-NEXT:     } {loopopt.name = "j"}
// BOTH-NEXT:   } {loopopt.name = "i"}
// BOTH-NEXT:   return
func.func @bicg(%A: memref<7x5xf32>, %s: memref<5xf32>, %q: memref<7xf32>, %p: memref<5xf32>, %r: memref<7xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 7 {
    affine.store %zero, %q[%i] : memref<7xf32>
    affine.for %j = 0 to 5 {
      %s0 = affine.load %s[%j] : memref<5xf32>
      %r0 = affine.load %r[%i] : memref<7xf32>
      %a0 = affine.load %A[%i, %j] : memref<7x5xf32>
      %m0 = arith.mulf %r0, %a0 : f32
      %n0 = arith.addf %s0, %m0 : f32
      affine.store %n0, %s[%j] : memref<5xf32>
      %q1 = affine.load %q[%i] : memref<7xf32>
      %a1 = affine.load %A[%i, %j] : memref<7x5xf32>
      %p1 = affine.load %p[%j] : memref<5xf32>
      %m1 = arith.mulf %a1, %p1 : f32
      %n1 = arith.addf %q1, %m1 : f32
      affine.store %n1, %q[%i] : memref<7xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
