// RUN: loopopt-opt %s --split-input-file -p raise-scf-to-affine 2>/dev/null | filecheck %s
// RUN: loopopt-opt %s --split-input-file -p raise-scf-to-affine 2>&1 >/dev/null | filecheck %s --check-prefix=WARN
// RUN: not loopopt-opt %s --split-input-file -p 'raise-scf-to-affine{func=nothing}' 2>&1 | filecheck %s --check-prefix=NOFUNC
// Loop passes say when a function holds only scf loops (they would match nothing there).
// RUN: loopopt-opt %s --split-input-file -p 'loop-tile{tile-sizes=4},loop-unroll{unroll-factor=2},loop-interchange{permutation=1,0}' 2>&1 >/dev/null | filecheck %s --check-prefix=NOAFFINE
// RUN: loopopt-opt %s --split-input-file -p 'raise-scf-to-affine,loop-tile{tile-sizes=4}' 2>&1 >/dev/null | filecheck %s --check-prefix=RAISED

// NOFUNC: error: no function named 'nothing'
// NOAFFINE:      raise-scf-to-affine.mlir:[[# @LINE + 23]]:1: warning: loop-tile: no affine.for in @bounds (it holds scf.for loops: run raise-scf-to-affine first)
// NOAFFINE-NEXT: raise-scf-to-affine.mlir:[[# @LINE + 22]]:1: warning: loop-unroll: no affine.for in @bounds (it holds scf.for loops: run raise-scf-to-affine first)
// NOAFFINE-NEXT: raise-scf-to-affine.mlir:[[# @LINE + 21]]:1: warning: loop-interchange: no affine.for in @bounds (it holds scf.for loops: run raise-scf-to-affine first)
// NOAFFINE-NEXT: warning: loop-tile: no affine.for in @refused
// NOAFFINE-NEXT: warning: loop-unroll: no affine.for in @refused
// NOAFFINE-NEXT: warning: loop-interchange: no affine.for in @refused
// NOAFFINE-NOT:  warning
// RAISED-NOT:    no affine.for

// Bounds and indices built from constants, symbols, IVs, addi/subi/muli by constants, apply and
// minsi/maxsi; iter_args carried over; the loops named after their IVs; dead index arithmetic gone.
// CHECK-LABEL: func.func @bounds
// CHECK-SAME:    (%[[A:.*]]: memref<?x?xf32>, %[[N:.*]]: index, %[[M:.*]]: index)
// CHECK-NOT:     arith.subi
// CHECK:         %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         affine.for %[[I:.*]] = max affine_map<()[s0] -> (1, s0)>()[%[[M]]] to affine_map<()[s0] -> ((s0 + -1))>()[%[[N]]] {
// CHECK-NEXT:      %{{.*}} = affine.for %[[J:.*]] = 0 to min affine_map<(d0)[s0] -> (((d0 * 2) + 3), s0)>(%[[I]])[%[[N]]] step 4 iter_args(%[[ACC:.*]] = %[[Z]]) -> (f32) {
// CHECK-NEXT:        %[[V:.*]] = affine.load %[[A]][%[[I]] + -1, %[[J]] + 1] : memref<?x?xf32>
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// CHECK-NEXT:        affine.yield %[[S]] : f32
// CHECK-NEXT:      } {loopopt.name = "j"}
// CHECK-NEXT:      affine.store %{{.*}}, %[[A]][%[[I]], 0] : memref<?x?xf32>
// CHECK-NEXT:    } {loopopt.name = "i"}
func.func @bounds(%A: memref<?x?xf32>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  %lo = arith.maxsi %c1, %m : index
  %hi = arith.subi %n, %c1 : index
  scf.for %i = %lo to %hi step %c1 {
    %t = arith.muli %i, %c2 : index
    %u = affine.apply affine_map<(d0) -> (d0 + 3)>(%t)
    %ub = arith.minsi %u, %n : index
    %sum = scf.for %j = %c0 to %ub step %c4 iter_args(%acc = %z) -> (f32) {
      %im = arith.subi %i, %c1 : index
      %jp = arith.addi %j, %c1 : index
      %v = memref.load %A[%im, %jp] : memref<?x?xf32>
      %s = arith.addf %acc, %v : f32
      scf.yield %s : f32
    }
    memref.store %sum, %A[%i, %c0] : memref<?x?xf32>
  }
  return
}

// -----

// What is not affine stays scf or memref, one warning per loop: a step that is not a constant,
// an IV that is not index, an index loaded from memory, a product of two IVs. mlir-opt's %argN
// names are not loop names: the raised loops get i0, i1, … (the IVs renamed too).
// CHECK-LABEL: func.func @refused
// CHECK:         affine.for %[[I0:.*]] = 0 to 10 {
// CHECK-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        affine.for %[[I1:.*]] = 0 to 10 {
// CHECK-NEXT:          %[[K:.*]] = affine.load %{{.*}}[%[[I1]]] : memref<?xindex>
// CHECK-NEXT:          %{{.*}} = memref.load %{{.*}}[%[[K]]] : memref<?xindex>
// CHECK-NEXT:          %[[P:.*]] = arith.muli %[[I0]], %[[I1]] : index
// CHECK-NEXT:          memref.store %{{.*}}, %{{.*}}[%[[P]]] : memref<?xindex>
// CHECK-NEXT:          %{{.*}} = memref.load %{{.*}}[%[[J]]] : memref<?xindex>
// CHECK-NEXT:        } {loopopt.name = "i1"}
// CHECK:         } {loopopt.name = "i0"}
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// WARN: raise-scf-to-affine.mlir:[[# @LINE + 11]]:5: warning: raise-scf-to-affine: scf.for %j stays scf: the step %s is not a constant
// WARN: raise-scf-to-affine.mlir:[[# @LINE + 20]]:3: warning: raise-scf-to-affine: scf.for %x stays scf: its induction variable is i32, not index
// WARN-NOT: warning
func.func @refused(%I: memref<?xindex>, %s: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %c0_i32 = arith.constant 0 : i32
  %c9_i32 = arith.constant 9 : i32
  %c1_i32 = arith.constant 1 : i32
  scf.for %arg3 = %c0 to %c10 step %c1 {
    scf.for %j = %c0 to %c10 step %s {
      scf.for %arg5 = %c0 to %c10 step %c1 {
        %k = memref.load %I[%arg5] : memref<?xindex>
        %v = memref.load %I[%k] : memref<?xindex>
        %p = arith.muli %arg3, %arg5 : index
        memref.store %v, %I[%p] : memref<?xindex>
        %w = memref.load %I[%j] : memref<?xindex>
      }
    }
  }
  scf.for %x = %c0_i32 to %c9_i32 step %c1_i32 : i32 {
  }
  return
}
