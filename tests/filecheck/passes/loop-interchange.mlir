// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-interchange{permutation=1,0}' | filecheck %s
// RUN: loopopt-opt %s -p 'loop-interchange{permutation=2,0,1 func=matmul}' | filecheck %s --check-prefix=THREE
// RUN: loopopt-opt %s -p 'loop-interchange{permutation=2,0,1 func=syrk}' | filecheck %s --check-prefix=TRI3

// The loop at depth d moves to depth permutation[d]; the loop ops move with their names and
// attributes. The last two RUN lines read the whole file as one module and permute one function.

// A rectangular band keeps its bounds; a permutation shorter than the band permutes its
// outermost loops (k stays innermost).
// CHECK-LABEL: func.func @matmul
// CHECK:       affine.for %[[J:.*]] = 0 to 9 {
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 10 {
// CHECK-NEXT:      affine.for %[[K:.*]] = 0 to 7 {
// CHECK-NEXT:        affine.load %{{.*}}[%[[I]], %[[K]]]
// CHECK:           } {loopopt.name = "k"}
// CHECK-NEXT:    } {loopopt.name = "i", loopopt.parallel}
// CHECK-NEXT:  } {loopopt.name = "j"}
// THREE-LABEL: func.func @matmul
// THREE:       affine.for %[[J:.*]] = 0 to 9 {
// THREE-NEXT:    affine.for %[[K:.*]] = 0 to 7 {
// THREE-NEXT:      affine.for %[[I:.*]] = 0 to 10 {
// THREE-NEXT:        affine.load %{{.*}}[%[[I]], %[[K]]]
// THREE:           } {loopopt.name = "i", loopopt.parallel}
// THREE-NEXT:    } {loopopt.name = "k"}
// THREE-NEXT:  } {loopopt.name = "j"}
func.func @matmul(%A: memref<10x7xf32>, %B: memref<7x9xf32>, %C: memref<10x9xf32>) {
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 9 {
      affine.for %k = 0 to 7 {
        %a = affine.load %A[%i, %k] : memref<10x7xf32>
        %b = affine.load %B[%k, %j] : memref<7x9xf32>
        %c = affine.load %C[%i, %j] : memref<10x9xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<10x9xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i", loopopt.parallel}
  return
}

// -----

// Triangular (syrk, j <= i): the bounds are recomputed, j runs 0..9 and i from j.
// CHECK-LABEL: func.func @syrk
// CHECK:       affine.for %[[J:.*]] = 0 to 10 {
// CHECK-NEXT:    affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[J]]) to 10 {
// CHECK-NEXT:      affine.for %[[K:.*]] = 0 to 7 {
// CHECK-NEXT:        affine.load %{{.*}}[%[[I]], %[[K]]]
// TRI3-LABEL:  func.func @syrk
// TRI3:        affine.for %[[J:.*]] = 0 to 10 {
// TRI3-NEXT:     affine.for %[[K:.*]] = 0 to 7 {
// TRI3-NEXT:       affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[J]]) to 10 {
func.func @syrk(%A: memref<10x7xf32>, %C: memref<10x10xf32>) {
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      affine.for %k = 0 to 7 {
        %a = affine.load %A[%i, %k] : memref<10x7xf32>
        %b = affine.load %A[%j, %k] : memref<10x7xf32>
        %c = affine.load %C[%i, %j] : memref<10x10xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<10x10xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// A band with symbolic max/min bounds: exact projection (Fourier-Motzkin with isl).
// CHECK-LABEL: func.func @trapezoid
// CHECK-SAME:    %[[N:[a-z0-9_]+]]: index, %[[M:[a-z0-9_]+]]: index
// CHECK:       affine.for %[[J:.*]] = 0 to min affine_map<()[s0, s1] -> (s0, (s1 + 2))>()[%[[M]], %[[N]]] {
// CHECK-NEXT:    affine.for %[[I:.*]] = max affine_map<(d0) -> ((d0 + -2), 0)>(%[[J]]) to min affine_map<(d0)[s0] -> ((d0 + 3), s0)>(%[[J]])[%[[N]]] {
// CHECK-NEXT:      affine.load %{{.*}}[%[[J]]]
func.func @trapezoid(%A: memref<?x?xf32>, %B: memref<?xf32>, %n: index, %m: index) {
  affine.for %i = 0 to %n {
    affine.for %j = max affine_map<(d0) -> (0, d0 - 2)>(%i) to min affine_map<(d0)[s0] -> (d0 + 3, s0)>(%i)[%m] {
      %v = affine.load %B[%j] : memref<?xf32>
      affine.store %v, %A[%i, %j] : memref<?x?xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// Steps on a rectangular band: unchanged bounds and steps.
// CHECK-LABEL: func.func @steps
// CHECK:       affine.for %[[J:.*]] = 1 to 12 step 3 {
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 16 step 2 {
// CHECK-NEXT:      affine.load %{{.*}}[%[[I]], %[[J]]]
func.func @steps(%A: memref<16x12xf32>) {
  affine.for %i = 0 to 16 step 2 {
    affine.for %j = 1 to 12 step 3 {
      %v = affine.load %A[%i, %j] : memref<16x12xf32>
      affine.store %v, %A[%i, %j] : memref<16x12xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// A[i, j] depends on A[i - 1, j + 1]: direction (<, >) would become (>, <).
// CHECK-NOT:   func.func @wavefront
func.func @wavefront(%A: memref<9x8xf32>) {
  // expected-error@+1 {{loop-interchange: illegal: permuting loops (i, j) reverses}}
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
