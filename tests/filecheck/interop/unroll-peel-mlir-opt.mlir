// REQUIRES: mlir-opt
// Upstream MLIR 22 parses and verifies what loop-unroll, loop-unroll-jam and loop-peel print for
// loops bounded by a min/max of loop IVs (point loops: min(%it + 4, 11)). An affine.min of IVs is
// no valid dim upstream, so unrolled copies run under affine.if guards (iter_args come out of the
// if), peeling versions the loop on which result of the bound is the min, and full-tiles versions
// the tile body on whether the tile is full.
// RUN: loopopt-opt %s -p 'loop-unroll{unroll-factor=3 loop=i func=strips}' | %mlir-opt | filecheck %s --check-prefix=UNROLL
// RUN: loopopt-opt %s -p 'loop-unroll-jam{unroll-jam-factor=2 loop=i func=tiled}' | %mlir-opt | filecheck %s --check-prefix=JAM
// RUN: loopopt-opt %s -p 'loop-peel{loop=i count=-2 func=tiled}' | %mlir-opt | filecheck %s --check-prefix=PEEL
// RUN: loopopt-opt %s -p 'loop-peel{loop=js count=1 func=trapezoid}' | %mlir-opt | filecheck %s --check-prefix=FRONT
// RUN: loopopt-opt %s -p 'loop-peel{full-tiles loop=js func=trapezoid}' | %mlir-opt | filecheck %s --check-prefix=TILES
// RUN: loopopt-opt %s -p 'loop-unroll{unroll-factor=3 loop=i func=strips},loop-unroll-jam{unroll-jam-factor=2 loop=i func=tiled},loop-peel{loop=js count=-1 func=trapezoid}' | %mlir-opt --lower-affine | filecheck %s --check-prefix=LOWERED

// Copy u of i runs under i + u <= min(is + 8, n) - 1: one constraint per result of the min but
// those that always hold (copy 1: i + 1 <= is + 7 for i in is, is + 3, is + 6).
// UNROLL-DAG:   #[[SET1:.*]] = affine_set<(d0)[s0] : (-d0 + s0 - 2 >= 0)>
// UNROLL-DAG:   #[[SET2:.*]] = affine_set<(d0, d1)[s0] : (d0 - d1 + 5 >= 0, -d1 + s0 - 3 >= 0)>
// UNROLL-LABEL: func.func @strips
// UNROLL-SAME:    %[[N:[a-z0-9]+]]: index
// UNROLL:       affine.for %[[IS:.*]] = 0 to %[[N]] step 8
// UNROLL-NEXT:    affine.for %[[I:.*]] = #{{.*}}(%[[IS]]) to min #{{.*}}(%[[IS]])[%[[N]]] step 3 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// UNROLL:           %[[S0:.*]] = arith.addf %[[ACC]]
// UNROLL-NEXT:      %[[S1:.*]] = affine.if #[[SET1]](%[[I]])[%[[N]]] -> f32 {
// UNROLL-NEXT:        affine.load %{{.*}}[%[[I]] + 1]
// UNROLL-NEXT:        %[[T1:.*]] = arith.addf %[[S0]]
// UNROLL-NEXT:        affine.yield %[[T1]] : f32
// UNROLL-NEXT:      } else {
// UNROLL-NEXT:        affine.yield %[[S0]] : f32
// UNROLL-NEXT:      }
// UNROLL-NEXT:      %[[S2:.*]] = affine.if #[[SET2]](%[[IS]], %[[I]])[%[[N]]] -> f32 {
// UNROLL:           affine.yield %[[S2]] : f32
// UNROLL-NOT:   affine.min
// UNROLL-NOT:   i_rem
func.func @strips(%A: memref<?xf32>, %out: memref<1xf32>, %n: index) {
  %z = arith.constant 0.0 : f32
  %r = affine.for %is = 0 to %n step 8 iter_args(%acc0 = %z) -> (f32) {
    %t = affine.for %i = affine_map<(d0) -> (d0)>(%is) to min affine_map<(d0)[s0] -> (d0 + 8, s0)>(%is)[%n] iter_args(%acc = %acc0) -> (f32) {
      %v = affine.load %A[%i] : memref<?xf32>
      %s = arith.addf %acc, %v : f32
      affine.yield %s : f32
    } {loopopt.name = "i"}
    affine.yield %t : f32
  } {loopopt.name = "is"}
  affine.store %r, %out[0] : memref<1xf32>
  return
}

// Jamming i (min(it + 4, 11)) into k: i + 1 <= it + 3 always holds, so the jammed copy only
// checks i + 1 <= 10. The load before k yields the copy's value (else: the first
// copy's), the update in k the new sum (else: the copy's own iter_arg); the store is guarded.
// JAM-DAG:     #[[SET:.*]] = affine_set<(d0) : (-d0 + 9 >= 0)>
// JAM-LABEL:   func.func @tiled
// JAM:         affine.for %[[I:.*]] = #{{.*}}(%{{.*}}) to min #{{.*}}(%{{.*}}) step 2 {
// JAM-NEXT:      affine.for %[[J:.*]] = 0 to 12 {
// JAM-NEXT:        %[[C0:.*]] = affine.load %{{.*}}[%[[I]], %[[J]]]
// JAM-NEXT:        %[[C1:.*]] = affine.if #[[SET]](%[[I]]) -> f32 {
// JAM-NEXT:          %[[L:.*]] = affine.load %{{.*}}[%[[I]] + 1, %[[J]]]
// JAM-NEXT:          affine.yield %[[L]] : f32
// JAM-NEXT:        } else {
// JAM-NEXT:          affine.yield %[[C0]] : f32
// JAM-NEXT:        }
// JAM-NEXT:        %[[R:.*]]:2 = affine.for %{{.*}} = 0 to 7 iter_args(%{{.*}} = %[[C0]], %[[ACC1:.*]] = %[[C1]]) -> (f32, f32) {
// JAM:               affine.if #[[SET]](%[[I]]) -> f32 {
// JAM:               } else {
// JAM-NEXT:            affine.yield %[[ACC1]] : f32
// JAM:             affine.store %[[R]]#0, %{{.*}}[%[[I]], %[[J]]]
// JAM-NEXT:        affine.if #[[SET]](%[[I]]) {
// JAM-NEXT:          affine.store %[[R]]#1, %{{.*}}[%[[I]] + 1, %[[J]]]
// JAM-NOT:     i_rem

// Peeling the last 2 iterations of i: one version for each result of min(it + 4, 11).
// PEEL-DAG:    #[[FULL:.*]] = affine_set<(d0) : (-d0 + 7 >= 0)>
// PEEL-LABEL:  func.func @tiled
// PEEL:        affine.for %[[IT:.*]] = 0 to 11 step 4 {
// PEEL-NEXT:     affine.if #[[FULL]](%[[IT]]) {
// PEEL-NEXT:       affine.for %{{.*}} = #{{.*}}(%[[IT]]) to #{{.*}}(%[[IT]]) {
// PEEL:            } {loopopt.name = "i"}
// PEEL-NEXT:       affine.for %{{.*}} = #{{.*}}(%[[IT]]) to #{{.*}}(%[[IT]]) {
// PEEL:            } {loopopt.name = "i_peel"}
// PEEL-NEXT:     } else {
// PEEL-NEXT:       affine.for %{{.*}} = #{{.*}}(%[[IT]]) to 9 {
// PEEL:            } {loopopt.name = "i"}
// PEEL-NEXT:       affine.for %{{.*}} = max #{{.*}}(%[[IT]]) to 11 {
// PEEL:            } {loopopt.name = "i_peel"}
func.func @tiled(%A: memref<11x7xf32>, %B: memref<7x12xf32>, %C: memref<11x12xf32>) {
  affine.for %it = 0 to 11 step 4 {
    affine.for %i = affine_map<(d0) -> (d0)>(%it) to min affine_map<(d0) -> (d0 + 4, 11)>(%it) {
      affine.for %j = 0 to 12 {
        %c0 = affine.load %C[%i, %j] : memref<11x12xf32>
        %r = affine.for %k = 0 to 7 iter_args(%acc = %c0) -> (f32) {
          %a = affine.load %A[%i, %k] : memref<11x7xf32>
          %b = affine.load %B[%k, %j] : memref<7x12xf32>
          %p = arith.mulf %a, %b : f32
          %s = arith.addf %acc, %p : f32
          affine.yield %s : f32
        } {loopopt.name = "k"}
        affine.store %r, %C[%i, %j] : memref<11x12xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  } {loopopt.name = "it"}
  return
}

// Peeling the first iteration of js, which starts at max(0, i - 2): a version per result.
// FRONT-DAG:   #[[ZERO_MAX:.*]] = affine_set<(d0) : (-d0 + 2 >= 0)>
// FRONT-LABEL: func.func @trapezoid
// FRONT:       affine.for %[[I:.*]] = 0 to %{{.*}} {
// FRONT-NEXT:    affine.if #[[ZERO_MAX]](%[[I]]) {
// FRONT-NEXT:      affine.for %{{.*}} = 0 to min #{{.*}}(%[[I]])[%{{.*}}] step 2 {
// FRONT:           } {loopopt.name = "js_peel"}
// FRONT-NEXT:      affine.for %{{.*}} = 2 to min #{{.*}}(%[[I]])[%{{.*}}] step 2 {
// FRONT:           } {loopopt.name = "js"}
// FRONT-NEXT:    } else {
// FRONT-NEXT:      affine.for %{{.*}} = #{{.*}}(%[[I]]) to min #{{.*}}(%[[I]])[%{{.*}}] step 2 {
// FRONT:           } {loopopt.name = "js_peel"}
// FRONT-NEXT:      affine.for %{{.*}} = #{{.*}}(%[[I]]) to min #{{.*}}(%[[I]])[%{{.*}}] step 2 {
// FRONT:           } {loopopt.name = "js"}

// A strip of js is full when js + 2 <= i + 3 and js + 2 <= m: the body of js is versioned.
// TILES-DAG:   #[[STRIP:.*]] = affine_set<(d0, d1)[s0] : (-d0 + d1 + 1 >= 0, -d0 + s0 - 2 >= 0)>
// TILES-LABEL: func.func @trapezoid
// TILES-SAME:    %[[M:[a-z0-9]+]]: index) {
// TILES:       affine.for %[[I:.*]] = 0 to %{{.*}} {
// TILES-NEXT:    affine.for %[[JS:.*]] = max #{{.*}}(%[[I]]) to min #{{.*}}(%[[I]])[%[[M]]] step 2 {
// TILES-NEXT:      affine.if #[[STRIP]](%[[JS]], %[[I]])[%[[M]]] {
// TILES-NEXT:        affine.for %{{.*}} = #{{.*}}(%[[JS]]) to #{{.*}}(%[[JS]]) {
// TILES:           } else {
// TILES-NEXT:        affine.for %{{.*}} = #{{.*}}(%[[JS]]) to min #{{.*}}(%[[JS]], %[[I]])[%[[M]]] {
func.func @trapezoid(%A: memref<?x?xf32>, %B: memref<?xf32>, %n: index, %m: index) {
  affine.for %i = 0 to %n {
    affine.for %js = max affine_map<(d0) -> (0, d0 - 2)>(%i) to min affine_map<(d0)[s0] -> (d0 + 3, s0)>(%i)[%m] step 2 {
      affine.for %j = affine_map<(d0) -> (d0)>(%js) to min affine_map<(d0, d1)[s0] -> (d0 + 2, d1 + 3, s0)>(%js, %i)[%m] {
        %v = affine.load %B[%j] : memref<?xf32>
        affine.store %v, %A[%i, %j] : memref<?x?xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "js"}
  } {loopopt.name = "i"}
  return
}

// Upstream lowers the guards and versions: affine.if becomes scf.if.
// LOWERED-LABEL: func.func @strips
// LOWERED:         scf.if
// LOWERED-LABEL: func.func @tiled
// LOWERED:         scf.if
// LOWERED-LABEL: func.func @trapezoid
// LOWERED:         scf.if
// LOWERED-NOT:   affine.
