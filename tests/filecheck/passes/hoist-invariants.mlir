// RUN: loopopt-opt %s --split-input-file -p 'hoist-invariants' | filecheck %s
// RUN: loopopt-opt %s --split-input-file -p 'hoist-invariants{min-reuse=7}' | filecheck %s --check-prefix=REUSE
// RUN: not loopopt-opt %s -p 'hoist-invariants{min-reuse=1}' 2>&1 | filecheck %s --check-prefix=ERR

// ERR: error: hoist-invariants: min-reuse must be at least 2, got 1
// ERR-NOT: Traceback

// gemm: alpha * A[i, k] is the same for every j
// CHECK-LABEL: func.func @gemm
// CHECK-NEXT:    %[[P:.*]] = memref.alloc() : memref<5x7xf32>
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 5 {
// CHECK-NEXT:      affine.for %[[K:.*]] = 0 to 7 {
// CHECK-NEXT:        %[[A:.*]] = affine.load %A[%[[I]], %[[K]]] : memref<5x7xf32>
// CHECK-NEXT:        %[[M:.*]] = arith.mulf %alpha, %[[A]] : f32
// CHECK-NEXT:        affine.store %[[M]], %[[P]][%[[I]], %[[K]]] : memref<5x7xf32>
// CHECK-NEXT:      } {loopopt.name = "k_inv"}
// CHECK-NEXT:    } {loopopt.name = "i_inv"}
// CHECK-NEXT:    affine.for %[[I2:.*]] = 0 to 5 {
// CHECK-NEXT:      affine.for %[[K2:.*]] = 0 to 7 {
// CHECK-NEXT:        affine.for %[[J2:.*]] = 0 to 6 {
// CHECK-NEXT:          affine.load %C
// CHECK-NEXT:          %[[R:.*]] = affine.load %[[P]][%[[I2]], %[[K2]]] : memref<5x7xf32>
// CHECK-NEXT:          %[[B:.*]] = affine.load %B[%[[K2]], %[[J2]]]
// CHECK-NEXT:          arith.mulf %[[R]], %[[B]] : f32
// CHECK-NOT:           arith.mulf
// CHECK:         memref.dealloc %[[P]] : memref<5x7xf32>
// CHECK-NEXT:    func.return

// Each value is computed 6 times (once per j): min-reuse=7 leaves it.
// REUSE-LABEL: func.func @gemm
// REUSE-NOT:     memref.alloc
// REUSE:         arith.mulf %alpha
func.func @gemm(%alpha: f32, %C: memref<5x6xf32>, %A: memref<5x7xf32>, %B: memref<7x6xf32>) {
  affine.for %i = 0 to 5 {
    affine.for %k = 0 to 7 {
      affine.for %j = 0 to 6 {
        %c = affine.load %C[%i, %j] : memref<5x6xf32>
        %a = affine.load %A[%i, %k] : memref<5x7xf32>
        %p = arith.mulf %alpha, %a : f32
        %b = affine.load %B[%k, %j] : memref<7x6xf32>
        %q = arith.mulf %p, %b : f32
        %s = arith.addf %c, %q : f32
        affine.store %s, %C[%i, %j] : memref<5x6xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  func.return
}

// -----


// syr2k: A[j, k] * alpha with j <= i: computed over the box of (j, k)
// CHECK-LABEL: func.func @syr2k
// CHECK-NEXT:    %[[P:.*]] = memref.alloc() : memref<4x6xf64>
// CHECK-NEXT:    affine.for %[[K:.*]] = 0 to 4 {
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to 6 {
// CHECK-NEXT:        %[[A:.*]] = affine.load %A[%[[J]], %[[K]]] : memref<6x4xf64>
// CHECK-NEXT:        %[[M:.*]] = arith.mulf %[[A]], %alpha : f64
// CHECK-NEXT:        affine.store %[[M]], %[[P]][%[[K]], %[[J]]] : memref<4x6xf64>
// CHECK:         affine.for %[[J2:.*]] = 0 to affine_map<(d0) -> ((d0 + 1))>(%{{.*}}) {
// CHECK-NEXT:      affine.load %[[P]][%{{.*}}, %[[J2]]] : memref<4x6xf64>
func.func @syr2k(%alpha: f64, %C: memref<6x6xf64>, %A: memref<6x4xf64>, %B: memref<6x4xf64>) {
  affine.for %i = 0 to 6 {
    affine.for %k = 0 to 4 {
      affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
        %a = affine.load %A[%j, %k] : memref<6x4xf64>
        %p = arith.mulf %a, %alpha : f64
        %b = affine.load %B[%i, %k] : memref<6x4xf64>
        %q = arith.mulf %p, %b : f64
        %c = affine.load %C[%i, %j] : memref<6x6xf64>
        %s = arith.addf %c, %q : f64
        affine.store %s, %C[%i, %j] : memref<6x6xf64>
      } {loopopt.name = "j"}
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  func.return
}

// -----


// Left: A is written in the nest; x / d may divide by zero where the nest never divides;
// the product under the affine.if runs only for some j.
// Nothing hoisted: the function comes out as it went in.
// CHECK-LABEL: func.func @left
// CHECK-NOT:     memref.alloc
// CHECK:         arith.mulf %alpha
// CHECK:         arith.divsi
// CHECK:         affine.if
// CHECK-NEXT:      affine.load %X
// CHECK-NEXT:      arith.muli
func.func @left(%alpha: f32, %d: i32, %A: memref<5x7xf32>, %X: memref<5xi32>, %Y: memref<5x7xi32>) {
  affine.for %i = 0 to 5 {
    affine.for %j = 0 to 7 {
      %a = affine.load %A[%i, 0] : memref<5x7xf32>
      %p = arith.mulf %alpha, %a : f32
      affine.store %p, %A[%i, %j] : memref<5x7xf32>
      %x = affine.load %X[%i] : memref<5xi32>
      %q = arith.divsi %x, %d : i32
      affine.store %q, %Y[%i, %j] : memref<5x7xi32>
      affine.if affine_set<(d0) : (d0 - 3 >= 0)>(%j) {
        %x2 = affine.load %X[%i] : memref<5xi32>
        %r = arith.muli %x2, %x2 : i32
        affine.store %r, %Y[%i, %j] : memref<5x7xi32>
      }
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  func.return
}
