// REQUIRES: mlir-opt
// affine.parallel in MLIR 22's custom syntax (grouped max/min bounds, steps, symbol(%n),
// reductions): loopopt reads what mlir-opt prints and prints it back in a form mlir-opt reads;
// raise-scf-to-affine turns the loop without reductions into affine.for loops marked parallel.
// RUN: %mlir-opt %s | loopopt-opt | filecheck %s
// RUN: %mlir-opt %s | loopopt-opt | %mlir-opt | filecheck %s --check-prefix=UPSTREAM
// RUN: loopopt-opt %s -p raise-scf-to-affine 2>/dev/null | %mlir-opt | filecheck %s --check-prefix=RAISED

// CHECK-LABEL: func.func @copy
// CHECK:         affine.parallel (%[[I:.*]], %[[J:.*]]) = (0, max(0, %[[N:.*]] + -8)) to (%[[N]], min(8, %[[N]] + 3)) step (1, 2) {
// CHECK-NEXT:      %[[V:.*]] = affine.load %{{.*}}[%[[I]], %[[J]]] : memref<8x8xf32>
// CHECK-NEXT:      affine.store %[[V]], %{{.*}}[%[[J]], %[[I]]] : memref<8x8xf32>
// CHECK-NEXT:    }
// CHECK:         %{{.*}} = affine.parallel (%[[K:.*]]) = (0) to (%[[N]]) reduce ("addf") -> (f32) {
// CHECK:           affine.yield %{{.*}} : f32
// CHECK-NEXT:    }

// UPSTREAM-LABEL: func.func @copy
// UPSTREAM:         affine.parallel (%{{.*}}, %{{.*}}) = (0, max(0, %{{.*}} - 8)) to (%{{.*}}, min(8, %{{.*}} + 3)) step (1, 2) {
// UPSTREAM:         affine.parallel (%{{.*}}) = (0) to (%{{.*}}) reduce ("addf") -> (f32) {

// RAISED-LABEL: func.func @copy
// RAISED:         affine.for %{{.*}} = 0 to #{{.*}}(%[[N:.*]]) {
// RAISED-NEXT:      affine.for %{{.*}} = max #{{.*}}(%[[N]]) to min #{{.*}}(%[[N]]) step 2 {
// RAISED:           } {loopopt.name = "{{.*}}", loopopt.parallel}
// RAISED-NEXT:    } {loopopt.name = "{{.*}}", loopopt.parallel}
// RAISED:         affine.parallel (%{{.*}}) = (0) to (%{{.*}}) reduce ("addf") -> (f32) {
func.func @copy(%A: memref<8x8xf32>, %N: index) -> f32 {
  affine.parallel (%i, %j) = (0, max(0, %N - 8)) to (%N, min(8, %N + 3)) step (1, 2) {
    %v = affine.load %A[%i, %j] : memref<8x8xf32>
    affine.store %v, %A[%j, %i] : memref<8x8xf32>
  }
  %s = affine.parallel (%k) = (0) to (symbol(%N)) reduce ("addf") -> (f32) {
    %w = affine.load %A[%k, %k] : memref<8x8xf32>
    affine.yield %w : f32
  }
  return %s : f32
}
