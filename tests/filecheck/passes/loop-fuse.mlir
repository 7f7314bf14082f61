// RUN: sed -n '/^\/\/ NAMED CASES/,/^\/\/ END OF NAMED CASES/p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'loop-fuse{loops=i,j}' | filecheck %s
// RUN: sed -n '/^\/\/ DEFAULT CASES/,$p' %s | loopopt-opt - --split-input-file -p 'loop-fuse' 2>/dev/null | filecheck %s --check-prefix=DEFAULT
// RUN: sed -n '/^\/\/ DEFAULT CASES/,$p' %s | loopopt-opt - --split-input-file -p 'loop-fuse' 2>&1 >/dev/null | filecheck %s --check-prefix=WARN
// RUN: not loopopt-opt %s -p 'loop-fuse{loops=i}' 2>&1 | filecheck %s --check-prefix=ONE
// RUN: not loopopt-opt %s -p 'loop-fuse{loops=i,x}' 2>&1 | filecheck %s --check-prefix=NONAME

// The body of the second loop goes to the end of the first's, its IV replaced; the fused loop
// is the first (its name and attributes).
// ONE: error: loop-fuse: loops= takes two loop names (A,B), got 1: i
// NONAME: error: loop-fuse: no loop named 'x'

// NAMED CASES: loop-fuse{loops=i,j}, each chunk apart.

// x[i] = 2 a[i], then y[j] = x[j]: the read of x[j] stays after the write in each iteration.
// The constant between the loops moves before them.
// CHECK-LABEL: func.func @producer_consumer
// CHECK:       arith.constant 3 : index
// CHECK-NEXT:  affine.for %[[I:.*]] = 0 to 10 {
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2.0
// CHECK-NEXT:    %[[A:.*]] = affine.load %{{.*}}[%[[I]]]
// CHECK-NEXT:    %[[M:.*]] = arith.mulf %[[A]], %[[TWO]]
// CHECK-NEXT:    affine.store %[[M]], %[[X:.*]][%[[I]]]
// CHECK-NEXT:    %[[V:.*]] = affine.load %[[X]][%[[I]]]
// CHECK-NEXT:    affine.store %[[V]], %{{.*}}[%[[I]]]
// CHECK-NEXT:  } {loopopt.name = "i", loopopt.parallel}
// CHECK-NEXT:  return
func.func @producer_consumer(%a: memref<10xf32>, %x: memref<10xf32>, %y: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    %two = arith.constant 2.0 : f32
    %v = affine.load %a[%i] : memref<10xf32>
    %m = arith.mulf %v, %two : f32
    affine.store %m, %x[%i] : memref<10xf32>
  } {loopopt.name = "i", loopopt.parallel}
  %three = arith.constant 3 : index
  affine.for %j = 0 to 10 {
    %v = affine.load %x[%j] : memref<10xf32>
    affine.store %v, %y[%j] : memref<10xf32>
  } {loopopt.name = "j", loopopt.parallel}
  return
}

// -----

// y[j] = x[j - 2] reads what the previous iteration of the first loop wrote (step 2): still
// forward once fused, but now carried by the fused loop, which is no longer parallel.
// CHECK-LABEL: func.func @shifted
// CHECK-SAME:    %[[N:[a-z0-9_]+]]: index
// CHECK:       affine.for %[[I:.*]] = 1 to %[[N]] step 2 {
// CHECK-NEXT:    affine.load %{{.*}}[%[[I]]]
// CHECK-NEXT:    affine.store %{{.*}}, %[[X:.*]][%[[I]]]
// CHECK-NEXT:    affine.load %[[X]][%[[I]] + -2]
// CHECK-NEXT:    affine.store
// CHECK-NEXT:  } {loopopt.name = "i"}
func.func @shifted(%a: memref<?xf32>, %x: memref<?xf32>, %y: memref<?xf32>, %n: index) {
  affine.for %i = 1 to %n step 2 {
    %v = affine.load %a[%i] : memref<?xf32>
    affine.store %v, %x[%i] : memref<?xf32>
  } {loopopt.name = "i", loopopt.parallel}
  affine.for %j = 1 to %n step 2 {
    %v = affine.load %x[%j - 2] : memref<?xf32>
    affine.store %v, %y[%j] : memref<?xf32>
  } {loopopt.name = "j", loopopt.parallel}
  return
}

// -----

// y[j] = x[j + 1] would read x[j + 1] before iteration j + 1 of the first loop wrote it.
// CHECK-NOT:   func.func @reversed
func.func @reversed(%a: memref<11xf32>, %x: memref<11xf32>, %y: memref<11xf32>) {
  // expected-error@+1 {{loop-fuse: illegal: fusing loops (i, j) reverses x[i] → x[j + 1] (RAW) at distance -1}}
  affine.for %i = 0 to 10 {
    %v = affine.load %a[%i] : memref<11xf32>
    affine.store %v, %x[%i] : memref<11xf32>
  } {loopopt.name = "i"}
  affine.for %j = 0 to 10 {
    %v = affine.load %x[%j + 1] : memref<11xf32>
    affine.store %v, %y[%j] : memref<11xf32>
  } {loopopt.name = "j"}
  return
}

// -----

// Different trip counts: no peeling, an error.
// CHECK-NOT:   func.func @bounds
func.func @bounds(%x: memref<10xf32>, %y: memref<10xf32>) {
  // expected-error@+1 {{loop-fuse: loops (i, j) have different bounds or steps: 0 to 10 and 0 to 9}}
  affine.for %i = 0 to 10 {
    %v = affine.load %x[%i] : memref<10xf32>
    affine.store %v, %y[%i] : memref<10xf32>
  } {loopopt.name = "i"}
  affine.for %j = 0 to 9 {
    %v = affine.load %x[%j] : memref<10xf32>
    affine.store %v, %y[%j] : memref<10xf32>
  } {loopopt.name = "j"}
  return
}

// -----

// A store between the loops: they are not adjacent.
// CHECK-NOT:   func.func @apart
func.func @apart(%x: memref<10xf32>, %y: memref<10xf32>, %v: f32) {
  // expected-error@+1 {{loop-fuse: no loop named 'j' follows a loop named 'i' in the same block}}
  affine.for %i = 0 to 10 {
    affine.store %v, %x[%i] : memref<10xf32>
  } {loopopt.name = "i"}
  affine.store %v, %y[0] : memref<10xf32>
  affine.for %j = 0 to 10 {
    affine.store %v, %y[%j] : memref<10xf32>
  } {loopopt.name = "j"}
  return
}

// -----

// A reduction in iter_args: refused.
// CHECK-NOT:   func.func @reduction
func.func @reduction(%x: memref<10xf32>, %y: memref<10xf32>, %s: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  // expected-error@+1 {{loop-fuse: loop j of (i, j) carries iter_args}}
  affine.for %i = 0 to 10 {
    affine.store %zero, %y[%i] : memref<10xf32>
  } {loopopt.name = "i"}
  %r = affine.for %j = 0 to 10 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %x[%j] : memref<10xf32>
    %n = arith.addf %acc, %v : f32
    affine.yield %n : f32
  } {loopopt.name = "j"}
  affine.store %r, %s[] : memref<f32>
  return
}

// END OF NAMED CASES

// DEFAULT CASES: loop-fuse without options fuses every legal pair with the same iterations.

// gemver: the x[i] += z[i] loop joins the loop that computes x[i]; A (read transposed) and x
// (read whole by the last loop) keep the others apart, with a warning each.
// DEFAULT-LABEL: func.func @gemver
// DEFAULT:       affine.for %[[I0:.*]] = 0 to 7 {
// DEFAULT-NEXT:    affine.for %{{.*}} = 0 to 7 {
// DEFAULT:         } {loopopt.name = "j"}
// DEFAULT-NEXT:  } {loopopt.name = "i"}
// DEFAULT-NEXT:  affine.for %[[I1:.*]] = 0 to 7 {
// DEFAULT-NEXT:    affine.for %{{.*}} = 0 to 7 {
// DEFAULT:         } {loopopt.name = "j"}
// DEFAULT-NEXT:    affine.load %[[X:.*]][%[[I1]]]
// DEFAULT-NEXT:    affine.load %{{.*}}[%[[I1]]]
// DEFAULT-NEXT:    arith.addf
// DEFAULT-NEXT:    affine.store %{{.*}}, %[[X]][%[[I1]]]
// DEFAULT-NEXT:  } {loopopt.name = "i"}
// DEFAULT-NEXT:  affine.for %[[I2:.*]] = 0 to 7 {
// DEFAULT-NEXT:    affine.for %{{.*}} = 0 to 7 {
// DEFAULT:         } {loopopt.name = "j"}
// DEFAULT-NEXT:  } {loopopt.name = "i"}
// DEFAULT-NEXT:  return
// WARN: warning: loop-fuse: illegal: fusing loops (i, i) reverses A[i, j] → A[j, i] (RAW) at negative distances (e.g. -1); left apart
// WARN: warning: loop-fuse: illegal: fusing loops (i, i) reverses x[i] → x[j] (RAW) at negative distances (e.g. -1); left apart
func.func @gemver(%alpha: f32, %beta: f32, %A: memref<7x7xf32>, %u1: memref<7xf32>, %v1: memref<7xf32>, %w: memref<7xf32>, %x: memref<7xf32>, %y: memref<7xf32>, %z: memref<7xf32>) {
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 7 {
      %0 = affine.load %A[%i, %j] : memref<7x7xf32>
      %1 = affine.load %u1[%i] : memref<7xf32>
      %2 = affine.load %v1[%j] : memref<7xf32>
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      affine.store %4, %A[%i, %j] : memref<7x7xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 7 {
      %5 = affine.load %x[%i] : memref<7xf32>
      %6 = affine.load %A[%j, %i] : memref<7x7xf32>
      %7 = arith.mulf %beta, %6 : f32
      %8 = affine.load %y[%j] : memref<7xf32>
      %9 = arith.mulf %7, %8 : f32
      %10 = arith.addf %5, %9 : f32
      affine.store %10, %x[%i] : memref<7xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  affine.for %i = 0 to 7 {
    %11 = affine.load %x[%i] : memref<7xf32>
    %12 = affine.load %z[%i] : memref<7xf32>
    %13 = arith.addf %11, %12 : f32
    affine.store %13, %x[%i] : memref<7xf32>
  } {loopopt.name = "i"}
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 7 {
      %14 = affine.load %w[%i] : memref<7xf32>
      %15 = affine.load %A[%i, %j] : memref<7x7xf32>
      %16 = arith.mulf %alpha, %15 : f32
      %17 = affine.load %x[%j] : memref<7xf32>
      %18 = arith.mulf %16, %17 : f32
      %19 = arith.addf %14, %18 : f32
      affine.store %19, %w[%i] : memref<7xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// Two triangular nests: the inner loops of each are fused first, then the outer loops, then the
// inner loops that this brings together: one loop of each.
// DEFAULT-LABEL: func.func @triangles
// DEFAULT:       affine.for %[[I:.*]] = 0 to 8 {
// DEFAULT-NEXT:    affine.for %[[J:.*]] = 0 to affine_map<{{.*}}>(%[[I]]) {
// DEFAULT-COUNT-4:   affine.store %{{.*}}[%[[I]], %[[J]]]
// DEFAULT-NEXT:    } {loopopt.name = "j"}
// DEFAULT-NEXT:  } {loopopt.name = "i"}
// DEFAULT-NEXT:  return
func.func @triangles(%A: memref<8x8xf32>, %B: memref<8x8xf32>, %C: memref<8x8xf32>, %D: memref<8x8xf32>, %v: f32) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      affine.store %v, %A[%i, %j] : memref<8x8xf32>
    } {loopopt.name = "j"}
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      affine.store %a, %B[%i, %j] : memref<8x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %b = affine.load %B[%i, %j] : memref<8x8xf32>
      affine.store %b, %C[%i, %j] : memref<8x8xf32>
    } {loopopt.name = "j"}
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %c = affine.load %C[%i, %j] : memref<8x8xf32>
      affine.store %c, %D[%i, %j] : memref<8x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
