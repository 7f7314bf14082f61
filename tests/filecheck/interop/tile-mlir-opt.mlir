// REQUIRES: mlir-opt
// Upstream MLIR 22 parses and verifies what loop-tile, loop-interchange and loop-strip-mine
// print: min/max bound maps, symbols, triangular tile bounds, iter_args strips.
// RUN: loopopt-opt %s -p 'loop-tile{tile-sizes=4,3,2 func=syrk},loop-interchange{permutation=1,0 func=trapezoid},loop-strip-mine{factor=5 func=sum}' | %mlir-opt | filecheck %s
// RUN: loopopt-opt %s -p 'loop-tile{tile-sizes=4,3,2 func=syrk},loop-interchange{permutation=1,0 func=trapezoid},loop-strip-mine{factor=5 func=sum}' | %mlir-opt --lower-affine | filecheck %s --check-prefix=LOWERED

// CHECK-DAG:   #[[TILE_J:.*]] = affine_map<(d0) -> (d0 + 4)>
// CHECK-DAG:   #[[ID:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG:   #[[MIN_I:.*]] = affine_map<(d0)[s0] -> (d0 + 4, s0)>
// CHECK-DAG:   #[[MIN_J:.*]] = affine_map<(d0, d1) -> (d0 + 3, d1 + 1)>
// CHECK-DAG:   #[[MIN_K:.*]] = affine_map<(d0) -> (d0 + 2, 7)>
// CHECK-DAG:   #[[J_UB:.*]] = affine_map<()[s0, s1] -> (s0, s1 + 2)>
// CHECK-DAG:   #[[I_LB:.*]] = affine_map<(d0) -> (d0 - 2, 0)>
// CHECK-DAG:   #[[I_UB:.*]] = affine_map<(d0)[s0] -> (d0 + 3, s0)>
// CHECK-DAG:   #[[STRIP:.*]] = affine_map<(d0) -> (d0 + 5, 23)>
// CHECK-LABEL: func.func @syrk
// CHECK-SAME:    %[[N:[a-z0-9]+]]: index
// CHECK:       affine.for %[[IT:.*]] = 0 to %[[N]] step 4 {
// CHECK-NEXT:    affine.for %[[JT:.*]] = 0 to #[[TILE_J]](%[[IT]]) step 3 {
// CHECK-NEXT:      affine.for %[[KT:.*]] = 0 to 7 step 2 {
// CHECK-NEXT:        affine.for %[[I:.*]] = #[[ID]](%[[IT]]) to min #[[MIN_I]](%[[IT]])[%[[N]]] {
// CHECK-NEXT:          affine.for %[[J:.*]] = #[[ID]](%[[JT]]) to min #[[MIN_J]](%[[JT]], %[[I]]) {
// CHECK-NEXT:            affine.for %[[K:.*]] = #[[ID]](%[[KT]]) to min #[[MIN_K]](%[[KT]]) {
// CHECK-LABEL: func.func @trapezoid
// CHECK-SAME:    %[[N:[a-z0-9]+]]: index, %[[M:[a-z0-9]+]]: index
// CHECK:       affine.for %[[J:.*]] = 0 to min #[[J_UB]]()[%[[M]], %[[N]]] {
// CHECK-NEXT:    affine.for %[[I:.*]] = max #[[I_LB]](%[[J]]) to min #[[I_UB]](%[[J]])[%[[N]]] {
// CHECK-LABEL: func.func @sum
// CHECK:       affine.for %[[IS:.*]] = 0 to 23 step 5 iter_args(%[[ACC0:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:    affine.for %{{.*}} = #[[ID]](%[[IS]]) to min #[[STRIP]](%[[IS]]) iter_args(%{{.*}} = %[[ACC0]]) -> (f32) {
// LOWERED-LABEL: func.func @syrk
// LOWERED-NOT:   affine.for
// LOWERED:       scf.for
// LOWERED-LABEL: func.func @sum
// LOWERED:       scf.for

func.func @syrk(%A: memref<?x7xf32>, %C: memref<?x?xf32>, %n: index) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      affine.for %k = 0 to 7 {
        %a = affine.load %A[%i, %k] : memref<?x7xf32>
        %b = affine.load %A[%j, %k] : memref<?x7xf32>
        %c = affine.load %C[%i, %j] : memref<?x?xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<?x?xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

func.func @trapezoid(%A: memref<?x?xf32>, %B: memref<?xf32>, %n: index, %m: index) {
  affine.for %i = 0 to %n {
    affine.for %j = max affine_map<(d0) -> (0, d0 - 2)>(%i) to min affine_map<(d0)[s0] -> (d0 + 3, s0)>(%i)[%m] {
      %v = affine.load %B[%j] : memref<?xf32>
      affine.store %v, %A[%i, %j] : memref<?x?xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

func.func @sum(%A: memref<23xf32>, %out: memref<1xf32>) {
  %zero = arith.constant 0.0 : f32
  %total = affine.for %i = 0 to 23 iter_args(%acc = %zero) -> (f32) {
    %a = affine.load %A[%i] : memref<23xf32>
    %s = arith.addf %acc, %a : f32
    affine.yield %s : f32
  } {loopopt.name = "i"}
  affine.store %total, %out[0] : memref<1xf32>
  return
}
