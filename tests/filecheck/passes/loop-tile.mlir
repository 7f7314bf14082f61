// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-tile{tile-sizes=4,3}' | filecheck %s
// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-tile{tile-sizes=0,4}' | filecheck %s --check-prefix=ZERO
// RUN: loopopt-opt %s -p 'loop-tile{tile-sizes=4,3,2 func=syrk}' | filecheck %s --check-prefix=TRI3

// Tile loops `<name>_t` step by size * step over the original bounds; the original loops become
// the point loops (same name). With a size of 0 (prefix ZERO) a loop is not tiled and sits
// inside the tile loops. The TRI3 RUN line reads the whole file as one module and tiles @syrk.

// Sizes that divide constant trip counts: no min in the point loops.
// CHECK-LABEL: func.func @divisible
// CHECK:       affine.for %[[IT:.*]] = 0 to 8 step 4 {
// CHECK-NEXT:    affine.for %[[JT:.*]] = 0 to 9 step 3 {
// CHECK-NEXT:      affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to affine_map<(d0) -> ((d0 + 4))>(%[[IT]]) {
// CHECK-NEXT:        affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JT]]) to affine_map<(d0) -> ((d0 + 3))>(%[[JT]]) {
// CHECK-NEXT:          affine.load %{{.*}}[%[[I]], %[[J]]]
// CHECK:             } {loopopt.name = "j"}
// CHECK-NEXT:      } {loopopt.name = "i"}
// CHECK-NEXT:    } {loopopt.name = "j_t"}
// CHECK-NEXT:  } {loopopt.name = "i_t"}
// ZERO-LABEL:  func.func @divisible
// ZERO:        affine.for %[[JT:.*]] = 0 to 9 step 4 {
// ZERO-NEXT:     affine.for %[[I:.*]] = 0 to 8 {
// ZERO-NEXT:       affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JT]]) to min affine_map<(d0) -> ((d0 + 4), 9)>(%[[JT]]) {
func.func @divisible(%A: memref<8x9xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 9 {
      %v = affine.load %A[%i, %j] : memref<8x9xf32>
      affine.store %v, %A[%i, %j] : memref<8x9xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// Sizes that do not divide: min with the original bound. Two sizes for a band of three: k is
// not tiled and stays innermost.
// CHECK-LABEL: func.func @matmul
// CHECK:       affine.for %[[IT:.*]] = 0 to 10 step 4 {
// CHECK-NEXT:    affine.for %[[JT:.*]] = 0 to 10 step 3 {
// CHECK-NEXT:      affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to min affine_map<(d0) -> ((d0 + 4), 10)>(%[[IT]]) {
// CHECK-NEXT:        affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JT]]) to min affine_map<(d0) -> ((d0 + 3), 10)>(%[[JT]]) {
// CHECK-NEXT:          affine.for %[[K:.*]] = 0 to 7 {
// CHECK-NEXT:            affine.load %{{.*}}[%[[I]], %[[K]]]
// CHECK:               } {loopopt.name = "k"}
// CHECK-NEXT:        } {loopopt.name = "j"}
// CHECK-NEXT:      } {loopopt.name = "i", loopopt.parallel}
// CHECK-NEXT:    } {loopopt.name = "j_t"}
// CHECK-NEXT:  } {loopopt.name = "i_t", loopopt.parallel}
// ZERO-LABEL:  func.func @matmul
// ZERO:        affine.for %[[JT:.*]] = 0 to 10 step 4 {
// ZERO-NEXT:     affine.for %[[I:.*]] = 0 to 10 {
// ZERO-NEXT:       affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JT]]) to min affine_map<(d0) -> ((d0 + 4), 10)>(%[[JT]]) {
// ZERO-NEXT:         affine.for %[[K:.*]] = 0 to 7 {
func.func @matmul(%A: memref<10x7xf32>, %B: memref<7x10xf32>, %C: memref<10x10xf32>) {
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      affine.for %k = 0 to 7 {
        %a = affine.load %A[%i, %k] : memref<10x7xf32>
        %b = affine.load %B[%k, %j] : memref<7x10xf32>
        %c = affine.load %C[%i, %j] : memref<10x10xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<10x10xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i", loopopt.parallel}
  return
}

// -----

// Triangular (syrk): j <= i. The tile loop of j runs up to the largest i of the i tile plus 1;
// the point loop of j clips to the exact bound i + 1.
// CHECK-LABEL: func.func @syrk
// CHECK:       affine.for %[[IT:.*]] = 0 to 10 step 4 {
// CHECK-NEXT:    affine.for %[[JT:.*]] = 0 to affine_map<(d0) -> ((d0 + 4))>(%[[IT]]) step 3 {
// CHECK-NEXT:      affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to min affine_map<(d0) -> ((d0 + 4), 10)>(%[[IT]]) {
// CHECK-NEXT:        affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JT]]) to min affine_map<(d0, d1) -> ((d0 + 3), (d1 + 1))>(%[[JT]], %[[I]]) {
// CHECK-NEXT:          affine.for %{{.*}} = 0 to 7 {
// TRI3-LABEL:  func.func @syrk
// TRI3:        affine.for %[[IT:.*]] = 0 to 10 step 4 {
// TRI3-NEXT:     affine.for %[[JT:.*]] = 0 to affine_map<(d0) -> ((d0 + 4))>(%[[IT]]) step 3 {
// TRI3-NEXT:       affine.for %[[KT:.*]] = 0 to 7 step 2 {
// TRI3-NEXT:         affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to min affine_map<(d0) -> ((d0 + 4), 10)>(%[[IT]]) {
// TRI3-NEXT:           affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JT]]) to min affine_map<(d0, d1) -> ((d0 + 3), (d1 + 1))>(%[[JT]], %[[I]]) {
// TRI3-NEXT:             affine.for %[[K:.*]] = affine_map<(d0) -> (d0)>(%[[KT]]) to min affine_map<(d0) -> ((d0 + 2), 7)>(%[[KT]]) {
// TRI3-NEXT:               affine.load %{{.*}}[%[[I]], %[[K]]]
// TRI3-NEXT:               affine.load %{{.*}}[%[[J]], %[[K]]]
// ZERO-LABEL:  func.func @syrk
// ZERO:        affine.for %[[JT:.*]] = 0 to 10 step 4 {
// ZERO-NEXT:     affine.for %[[I:.*]] = 0 to 10 {
// ZERO-NEXT:       affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JT]]) to min affine_map<(d0, d1) -> ((d0 + 4), (d1 + 1))>(%[[JT]], %[[I]]) {
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

// A lower bound that depends on the outer loop: the point loop takes the max.
// CHECK-LABEL: func.func @upper_triangle
// CHECK:       affine.for %[[IT:.*]] = 0 to 10 step 4 {
// CHECK-NEXT:    affine.for %[[JT:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to 10 step 3 {
// CHECK-NEXT:      affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to min affine_map<(d0) -> ((d0 + 4), 10)>(%[[IT]]) {
// CHECK-NEXT:        affine.for %[[J:.*]] = max affine_map<(d0, d1) -> (d0, d1)>(%[[JT]], %[[I]]) to min affine_map<(d0) -> ((d0 + 3), 10)>(%[[JT]]) {
// ZERO-LABEL:  func.func @upper_triangle
// ZERO:        affine.for %[[JT:.*]] = 0 to 10 step 4 {
// ZERO-NEXT:     affine.for %[[I:.*]] = 0 to 10 {
// ZERO-NEXT:       affine.for %[[J:.*]] = max affine_map<(d0, d1) -> (d0, d1)>(%[[JT]], %[[I]]) to min affine_map<(d0) -> ((d0 + 4), 10)>(%[[JT]]) {
func.func @upper_triangle(%A: memref<10x10xf32>) {
  affine.for %i = 0 to 10 {
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to 10 {
      %v = affine.load %A[%i, %j] : memref<10x10xf32>
      affine.store %v, %A[%j, %i] : memref<10x10xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// Steps: a tile covers size * step; the step-2 loop has 8 iterations (divisible by 4), the
// step-3 loop 4 (not divisible by 3).
// CHECK-LABEL: func.func @steps
// CHECK:       affine.for %[[IT:.*]] = 0 to 16 step 8 {
// CHECK-NEXT:    affine.for %[[JT:.*]] = 0 to 12 step 9 {
// CHECK-NEXT:      affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to affine_map<(d0) -> ((d0 + 8))>(%[[IT]]) step 2 {
// CHECK-NEXT:        affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JT]]) to min affine_map<(d0) -> ((d0 + 9), 12)>(%[[JT]]) step 3 {
func.func @steps(%A: memref<16x12xf32>) {
  affine.for %i = 0 to 16 step 2 {
    affine.for %j = 0 to 12 step 3 {
      %v = affine.load %A[%i, %j] : memref<16x12xf32>
      affine.store %v, %A[%i, %j] : memref<16x12xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// Symbolic bounds.
// CHECK-LABEL: func.func @symbolic
// CHECK-SAME:    (%{{.*}}: memref<?x?xf32>, %[[N:.*]]: index, %[[M:.*]]: index)
// CHECK:       affine.for %[[IT:.*]] = 1 to %[[N]] step 4 {
// CHECK-NEXT:    affine.for %[[JT:.*]] = 0 to %[[M]] step 3 {
// CHECK-NEXT:      affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to min affine_map<(d0)[s0] -> ((d0 + 4), s0)>(%[[IT]])[%[[N]]] {
// CHECK-NEXT:        affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JT]]) to min affine_map<(d0)[s0] -> ((d0 + 3), s0)>(%[[JT]])[%[[M]]] {
func.func @symbolic(%A: memref<?x?xf32>, %n: index, %m: index) {
  affine.for %i = 1 to %n {
    affine.for %j = 0 to %m {
      %v = affine.load %A[%i, %j] : memref<?x?xf32>
      affine.store %v, %A[%i, %j] : memref<?x?xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// A step with a lower bound on an outer band loop: the point loop starts on the loop's stride.
// CHECK-LABEL: func.func @strided
// CHECK:       affine.for %[[IT:.*]] = 0 to 10 step 4 {
// CHECK-NEXT:    affine.for %[[JT:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to 20 step 6 {
// CHECK-NEXT:      affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to min affine_map<(d0) -> ((d0 + 4), 10)>(%[[IT]]) {
// CHECK-NEXT:        affine.for %[[J:.*]] = max affine_map<(d0, d1) -> (d1, (d1 + (((d0 + (d1 * -1)) ceildiv 2) * 2)))>(%[[JT]], %[[I]]) to min affine_map<(d0) -> ((d0 + 6), 20)>(%[[JT]]) step 2 {
// ZERO-LABEL:  func.func @strided
// ZERO:        affine.for %[[JT:.*]] = 0 to 20 step 8 {
// ZERO-NEXT:     affine.for %[[I:.*]] = 0 to 10 {
// ZERO-NEXT:       affine.for %[[J:.*]] = max affine_map<(d0, d1) -> (d1, (d1 + (((d0 + (d1 * -1)) ceildiv 2) * 2)))>(%[[JT]], %[[I]]) to min affine_map<(d0) -> ((d0 + 8), 20)>(%[[JT]]) step 2 {
func.func @strided(%A: memref<10x20xf32>) {
  affine.for %i = 0 to 10 {
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to 20 step 2 {
      %v = affine.load %A[%i, %j] : memref<10x20xf32>
      affine.store %v, %A[%i, %j] : memref<10x20xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// An imperfect nest: the default band is the outer loop alone; the size past it is ignored
// with a warning, as MLIR's affine-loop-tile does (it was the differential fuzzer's most
// common refusal). With sizes 0,4 (ZERO) the band's one size is 0: nothing is tiled.
// CHECK-LABEL: func.func @short_band
// CHECK:       affine.for %[[IT:.*]] = 0 to 10 step 4 {
// CHECK-NEXT:    affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to min affine_map<(d0) -> ((d0 + 4), 10)>(%[[IT]]) {
// CHECK-NEXT:      affine.load %{{.*}}[%[[I]], %[[I]]]
// CHECK:           affine.for %{{.*}} = 0 to 10 {
// ZERO-LABEL:  func.func @short_band
// ZERO-NEXT:     affine.for %{{.*}} = 0 to 10 {
// ZERO-NEXT:       affine.load
func.func @short_band(%A: memref<10x10xf32>) {
  // expected-warning@+1 {{loop-tile: 2 tile sizes for the band (i) of 1 loops:}}
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i, %i] : memref<10x10xf32>
    affine.store %v, %A[%i, %i] : memref<10x10xf32>
    affine.for %j = 0 to 10 {
      %w = affine.load %A[%i, %j] : memref<10x10xf32>
      affine.store %w, %A[%j, %i] : memref<10x10xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// A[i, j] depends on A[i - 1, j + 1]: direction (<, >), the band is not fully permutable.
// CHECK-NOT:   func.func @wavefront
func.func @wavefront(%A: memref<9x8xf32>) {
  // expected-error@+1 {{loop-tile: illegal: band (i, j) is not fully permutable}}
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
