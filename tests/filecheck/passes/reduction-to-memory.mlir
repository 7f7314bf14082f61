// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'reduction-to-memory' | filecheck %s
// RUN: loopopt-opt %s --split-input-file -p 'reduction-to-memory{scratch}' 2>/dev/null | filecheck %s --check-prefix=SCRATCH
// RUN: loopopt-opt %s --split-input-file -p 'reduction-to-memory,scalar-replace{loop=k}' 2>/dev/null | filecheck %s --check-prefix=BACK
// RUN: sed -n '/^\/\/ TRISOLV/,/^\/\/ -----/p' %s | loopopt-opt - -p 'reduction-to-memory{loop=k func=trisolv}' | filecheck %s --check-prefix=ONE
// RUN: not loopopt-opt %s -p 'reduction-to-memory{loop=k func=touched}' 2>&1 | filecheck %s --check-prefix=REFUSED
// RUN: not loopopt-opt %s -p 'reduction-to-memory{loop=j func=lu}' 2>&1 | filecheck %s --check-prefix=NOARGS
// RUN: not loopopt-opt %s -p 'reduction-to-memory{loop=x}' 2>&1 | filecheck %s --check-prefix=NONAME

// REFUSED: reduction-to-memory.mlir:[[# @LINE + 214]]:7: error: reduction-to-memory: loop k left as it is: iter_arg %acc: 'C[k, j]' written in the loop may be 'C[i, j]', where its result is stored
// NOARGS: error: reduction-to-memory: no loop named 'j' has iter_args
// NONAME: error: reduction-to-memory: no loop named 'x'

// lu as the front-end writes it (w = A[i][j]; for k: w -= …; A[i][j] = …): in both j loops,
// the k loop keeps w in A[i, j] (k < j < i: A[i, k] and A[k, j] are other elements; so is
// A[j, j]). The second j loop stores w itself: no load or store is left around its k loop.
// CHECK-LABEL: func.func @lu
// CHECK:         affine.for %[[I:.*]] = 0 to 8 {
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to
// CHECK-NEXT:        affine.for %[[K:.*]] = 0 to
// CHECK-NEXT:          %[[W:.*]] = affine.load %[[A:.*]][%[[I]], %[[J]]]
// CHECK-NEXT:          affine.load %[[A]][%[[I]], %[[K]]]
// CHECK-NEXT:          affine.load %[[A]][%[[K]], %[[J]]]
// CHECK-NEXT:          %[[M:.*]] = arith.mulf
// CHECK-NEXT:          %[[S:.*]] = arith.subf %[[W]], %[[M]] : f64
// CHECK-NEXT:          affine.store %[[S]], %[[A]][%[[I]], %[[J]]]
// CHECK-NEXT:        } {loopopt.name = "k"}
// CHECK-NEXT:        %[[W1:.*]] = affine.load %[[A]][%[[I]], %[[J]]]
// CHECK-NEXT:        %[[D:.*]] = affine.load %[[A]][%[[J]], %[[J]]]
// CHECK-NEXT:        %[[Q:.*]] = arith.divf %[[W1]], %[[D]] : f64
// CHECK-NEXT:        affine.store %[[Q]], %[[A]][%[[I]], %[[J]]]
// CHECK-NEXT:      } {loopopt.name = "j"}
// CHECK-NEXT:      affine.for %[[J2:.*]] = affine_map<(d0) -> (d0)>(%[[I]]) to 8 {
// CHECK-NEXT:        affine.for %[[K2:.*]] = 0 to
// CHECK-NEXT:          %[[W2:.*]] = affine.load %[[A]][%[[I]], %[[J2]]]
// CHECK:               %[[S2:.*]] = arith.subf %[[W2]], %{{.*}} : f64
// CHECK-NEXT:          affine.store %[[S2]], %[[A]][%[[I]], %[[J2]]]
// CHECK-NEXT:        } {loopopt.name = "k"}
// CHECK-NEXT:      } {loopopt.name = "j"}
// CHECK-NOT:     iter_args
// scalar-replace brings the accumulators back into registers (guarded by an affine.if where
// the k loop may run no iteration: j = 0, i = 0).
// BACK-LABEL: func.func @lu
// BACK-COUNT-2: iter_args(%A_acc{{.*}} = %A_reg{{.*}}) -> (f64)
func.func @lu(%A: memref<8x8xf64>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      %0 = affine.load %A[%i, %j] : memref<8x8xf64>
      %1 = affine.for %k = 0 to affine_map<(d0) -> (d0)>(%j) iter_args(%w = %0) -> (f64) {
        %2 = affine.load %A[%i, %k] : memref<8x8xf64>
        %3 = affine.load %A[%k, %j] : memref<8x8xf64>
        %4 = arith.mulf %2, %3 : f64
        %5 = arith.subf %w, %4 : f64
        affine.yield %5 : f64
      } {loopopt.name = "k"}
      %6 = affine.load %A[%j, %j] : memref<8x8xf64>
      %7 = arith.divf %1, %6 : f64
      affine.store %7, %A[%i, %j] : memref<8x8xf64>
    } {loopopt.name = "j"}
    affine.for %j_1 = affine_map<(d0) -> (d0)>(%i) to 8 {
      %8 = affine.load %A[%i, %j_1] : memref<8x8xf64>
      %9 = affine.for %k_1 = 0 to affine_map<(d0) -> (d0)>(%i) iter_args(%w_1 = %8) -> (f64) {
        %10 = affine.load %A[%i, %k_1] : memref<8x8xf64>
        %11 = affine.load %A[%k_1, %j_1] : memref<8x8xf64>
        %12 = arith.mulf %10, %11 : f64
        %13 = arith.subf %w_1, %12 : f64
        affine.yield %13 : f64
      } {loopopt.name = "k"}
      affine.store %9, %A[%i, %j_1] : memref<8x8xf64>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  func.return
}

// -----

// cholesky with its accumulations in registers (as scalar-replace leaves them): A[i, j] and
// A[i, i] hold them again; math.sqrt stays after the loop and reads A[i, i].
// CHECK-LABEL: func.func @cholesky
// CHECK:         affine.for %[[I:.*]] = 0 to 9 {
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to
// CHECK-NEXT:        affine.for %{{.*}} = 0 to
// CHECK-NEXT:          %[[ACC:.*]] = affine.load %[[A:.*]][%[[I]], %[[J]]] : memref<9x9xf64>
// CHECK:             affine.store %{{.*}}, %[[A]][%[[I]], %[[J]]]
// CHECK-NEXT:      } {loopopt.name = "k"}
// CHECK-NEXT:      %[[R:.*]] = affine.load %[[A]][%[[I]], %[[J]]]
// CHECK-NEXT:      %[[D:.*]] = affine.load %[[A]][%[[J]], %[[J]]]
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[R]], %[[D]] : f64
// CHECK-NEXT:      affine.store %[[Q]], %[[A]][%[[I]], %[[J]]]
// CHECK-NEXT:    } {loopopt.name = "j"}
// CHECK-NEXT:    affine.for %{{.*}} = 0 to
// CHECK-NEXT:      %[[ACC2:.*]] = affine.load %[[A]][%[[I]], %[[I]]]
// CHECK:           affine.store %{{.*}}, %[[A]][%[[I]], %[[I]]]
// CHECK-NEXT:    } {loopopt.name = "k"}
// CHECK-NEXT:    %[[R2:.*]] = affine.load %[[A]][%[[I]], %[[I]]]
// CHECK-NEXT:    %[[SQ:.*]] = math.sqrt %[[R2]] : f64
// CHECK-NEXT:    affine.store %[[SQ]], %[[A]][%[[I]], %[[I]]]
func.func @cholesky(%A: memref<9x9xf64>) {
  affine.for %i = 0 to 9 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      %a = affine.load %A[%i, %j] : memref<9x9xf64>
      %r = affine.for %k = 0 to affine_map<(d0) -> (d0)>(%j) iter_args(%acc = %a) -> (f64) {
        %x = affine.load %A[%i, %k] : memref<9x9xf64>
        %y = affine.load %A[%j, %k] : memref<9x9xf64>
        %m = arith.mulf %x, %y : f64
        %s = arith.subf %acc, %m : f64
        affine.yield %s : f64
      } {loopopt.name = "k"}
      %d = affine.load %A[%j, %j] : memref<9x9xf64>
      %q = arith.divf %r, %d : f64
      affine.store %q, %A[%i, %j] : memref<9x9xf64>
    } {loopopt.name = "j"}
    %aii = affine.load %A[%i, %i] : memref<9x9xf64>
    %r2 = affine.for %k2 = 0 to affine_map<(d0) -> (d0)>(%i) iter_args(%acc2 = %aii) -> (f64) {
      %x2 = affine.load %A[%i, %k2] : memref<9x9xf64>
      %m2 = arith.mulf %x2, %x2 : f64
      %s2 = arith.subf %acc2, %m2 : f64
      affine.yield %s2 : f64
    } {loopopt.name = "k"}
    %sq = math.sqrt %r2 : f64
    affine.store %sq, %A[%i, %i] : memref<9x9xf64>
  } {loopopt.name = "i"}
  func.return
}

// -----

// TRISOLV and gemm, in one module: `loop=k func=trisolv` demotes only trisolv's k loop.
// trisolv: the init value comes from b[i], so it is stored into x[i] (the element the result
// goes to) before the loop; x[j] (j < i) is never x[i].
// CHECK-LABEL: func.func @trisolv
// CHECK:         affine.for %[[I:.*]] = 0 to 7 {
// CHECK-NEXT:      %[[B:.*]] = affine.load %{{.*}}[%[[I]]] : memref<7xf32>
// CHECK-NEXT:      affine.store %[[B]], %[[X:.*]][%[[I]]] : memref<7xf32>
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to
// CHECK-NEXT:        %[[ACC:.*]] = affine.load %[[X]][%[[I]]]
// CHECK:             affine.load %[[X]][%[[J]]]
// CHECK:             %[[S:.*]] = arith.subf %[[ACC]], %{{.*}} : f32
// CHECK-NEXT:        affine.store %[[S]], %[[X]][%[[I]]]
// CHECK-NEXT:      } {loopopt.name = "k"}
// CHECK-NEXT:      %[[R:.*]] = affine.load %[[X]][%[[I]]]
// CHECK-NEXT:      %[[L:.*]] = affine.load %{{.*}}[%[[I]], %[[I]]]
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[R]], %[[L]] : f32
// CHECK-NEXT:      affine.store %[[Q]], %[[X]][%[[I]]]
// ONE-LABEL: func.func @trisolv
// ONE-NOT:     iter_args
// ONE-LABEL: func.func @gemm
// ONE:         iter_args
func.func @trisolv(%L: memref<7x7xf32>, %x: memref<7xf32>, %b: memref<7xf32>) {
  affine.for %i = 0 to 7 {
    %bi = affine.load %b[%i] : memref<7xf32>
    %r = affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) iter_args(%acc = %bi) -> (f32) {
      %l = affine.load %L[%i, %j] : memref<7x7xf32>
      %xj = affine.load %x[%j] : memref<7xf32>
      %m = arith.mulf %l, %xj : f32
      %s = arith.subf %acc, %m : f32
      affine.yield %s : f32
    } {loopopt.name = "k"}
    %lii = affine.load %L[%i, %i] : memref<7x7xf32>
    %q = arith.divf %r, %lii : f32
    affine.store %q, %x[%i] : memref<7xf32>
  } {loopopt.name = "i"}
  func.return
}

// gemm with a scalar accumulator that starts at beta * C[i, j]: that value is stored into
// C[i, j] first; the store after the loop (of the result itself) is gone.
// CHECK-LABEL: func.func @gemm
// CHECK:         %[[C:.*]] = affine.load %[[CM:.*]][%[[I:.*]], %[[J:.*]]] : memref<5x6xf32>
// CHECK-NEXT:    %[[CB:.*]] = arith.mulf %[[C]], %{{.*}} : f32
// CHECK-NEXT:    affine.store %[[CB]], %[[CM]][%[[I]], %[[J]]]
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 7 {
// CHECK-NEXT:      %[[ACC:.*]] = affine.load %[[CM]][%[[I]], %[[J]]]
// CHECK:           %[[S:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// CHECK-NEXT:      affine.store %[[S]], %[[CM]][%[[I]], %[[J]]]
// CHECK-NEXT:    } {loopopt.name = "k"}
// CHECK-NEXT:  } {loopopt.name = "j"}
// BACK-LABEL: func.func @gemm
// BACK:         affine.store %[[CB:.*]], %[[CM:.*]][%[[I:.*]], %[[J:.*]]]
// BACK-NEXT:    %[[R:.*]] = affine.load %[[CM]][%[[I]], %[[J]]]
// BACK-NEXT:    %[[OUT:.*]] = affine.for {{.*}} iter_args(%{{.*}} = %[[R]]) -> (f32) {
// BACK:         } {loopopt.name = "k"}
// BACK-NEXT:    affine.store %[[OUT]], %[[CM]][%[[I]], %[[J]]]
func.func @gemm(%alpha: f32, %beta: f32, %C: memref<5x6xf32>, %A: memref<5x7xf32>, %B: memref<7x6xf32>) {
  affine.for %i = 0 to 5 {
    affine.for %j = 0 to 6 {
      %c = affine.load %C[%i, %j] : memref<5x6xf32>
      %cb = arith.mulf %c, %beta : f32
      %r = affine.for %k = 0 to 7 iter_args(%acc = %cb) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<5x7xf32>
        %bb = affine.load %B[%k, %j] : memref<7x6xf32>
        %m = arith.mulf %a, %bb : f32
        %am = arith.mulf %alpha, %m : f32
        %s = arith.addf %acc, %am : f32
        affine.yield %s : f32
      } {loopopt.name = "k"}
      affine.store %r, %C[%i, %j] : memref<5x6xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  func.return
}

// -----

// The element is touched in the loop: C[k, j] is C[i, j] when k = i. Left as it is; with
// `scratch`, the accumulator lives in a rank-0 buffer instead (an iteration buffer of j).
// CHECK-LABEL: func.func @touched
// CHECK:         iter_args
// SCRATCH-LABEL: func.func @touched
// SCRATCH:         %[[M:.*]] = memref.alloca() {loopopt.scope = 0 : i64} : memref<f32>
// SCRATCH:         affine.store %{{.*}}, %[[M]][] : memref<f32>
// SCRATCH-NEXT:    affine.for
// SCRATCH-NEXT:      %[[ACC:.*]] = affine.load %[[M]][] : memref<f32>
// SCRATCH:           affine.store %{{.*}}, %[[M]][] : memref<f32>
// SCRATCH-NEXT:    } {loopopt.name = "k"}
// SCRATCH-NEXT:    %[[R:.*]] = affine.load %[[M]][] : memref<f32>
// SCRATCH-NEXT:    affine.store %[[R]], %{{.*}}[%{{.*}}, %{{.*}}] : memref<6x6xf32>
// SCRATCH-NEXT:  } {loopopt.name = "j", loopopt.scope = 0 : i64}
func.func @touched(%C: memref<6x6xf32>, %A: memref<6x6xf32>) {
  affine.for %i = 0 to 6 {
    affine.for %j = 0 to 6 {
      %c = affine.load %C[%i, %j] : memref<6x6xf32>
      // expected-warning @+1 {{reduction-to-memory: loop k left as it is: iter_arg %acc: 'C[k, j]' written in the loop may be 'C[i, j]', where its result is stored}}
      %r = affine.for %k = 0 to 6 iter_args(%acc = %c) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<6x6xf32>
        %s = arith.addf %acc, %a : f32
        affine.store %a, %C[%k, %j] : memref<6x6xf32>
        affine.yield %s : f32
      } {loopopt.name = "k"}
      affine.store %r, %C[%i, %j] : memref<6x6xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  func.return
}

// -----

// The result is stored elsewhere: under an affine.if (another block), at an index computed
// after the loop, or with a call between that may read the element.
// CHECK-LABEL: func.func @elsewhere
// CHECK-COUNT-3: iter_args
// SCRATCH-LABEL: func.func @elsewhere
// SCRATCH-NOT:     iter_args
// SCRATCH:         func.return
func.func private @g()
func.func @elsewhere(%x: memref<8xf64>, %n: index) {
  affine.for %i = 0 to 8 {
    %0 = arith.constant 0.0 : f64
    // expected-warning @+1 {{loop k left as it is: iter_arg %a: its result is not stored to memory after the loop in the same block}}
    %r = affine.for %k = 0 to 4 iter_args(%a = %0) -> (f64) {
      %s = arith.addf %a, %a : f64
      affine.yield %s : f64
    } {loopopt.name = "k"}
    affine.if affine_set<(d0) : (d0 - 2 >= 0)>(%i) {
      affine.store %r, %x[%i] : memref<8xf64>
    }
    // expected-warning @+1 {{loop k left as it is: iter_arg %b: the indices of the store of its result are computed after the loop}}
    %r2 = affine.for %k = 0 to 4 iter_args(%b = %0) -> (f64) {
      %s = arith.addf %b, %b : f64
      affine.yield %s : f64
    } {loopopt.name = "k"}
    %t = affine.apply affine_map<(d0) -> (7 - d0)>(%i)
    affine.store %r2, %x[%t] : memref<8xf64>
    // expected-warning @+1 {{loop k left as it is: iter_arg %c: 'call @g' read after the loop may be 'x[i]', where its result is stored}}
    %r3 = affine.for %k = 0 to 4 iter_args(%c = %0) -> (f64) {
      %s = arith.addf %c, %c : f64
      affine.yield %s : f64
    } {loopopt.name = "k"}
    func.call @g() : () -> ()
    affine.store %r3, %x[%i] : memref<8xf64>
  } {loopopt.name = "i"}
  func.return
}

// -----

// No loop with iter_args: the pass says so.
// expected-warning @+1 {{reduction-to-memory: no affine.for with iter_args in the module}}
module {
  func.func @none(%x: memref<4xf64>) {
    affine.for %i = 0 to 4 {
      %v = affine.load %x[%i] : memref<4xf64>
      affine.store %v, %x[%i] : memref<4xf64>
    } {loopopt.name = "k"}
    func.return
  }
}
