// RUN: sed '/^\/\/ NEGATIVE CASES/,$d' %s | loopopt-opt - --split-input-file -p 'version-guards{loop=k_t}' | filecheck %s
// RUN: sed -n '/^\/\/ NEGATIVE CASES/,$p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'version-guards{loop=L}'
// RUN: sed -n '/^\/\/ NO OPTION/,$p' %s | not loopopt-opt - -p version-guards 2>&1 | filecheck %s --check-prefix=NOLOOP

// A triangle's reduction k < i, padded to tiles of 2 (pad-tiles, loop-unroll, scalar-replace):
// both factors of both steps are selects on k < i. Where k_t + 1 < i (the tightest of the
// four conditions) a copy without them runs; where k_t >= i (none holds: every term is 0) the
// accumulator is what it was; the original ops elsewhere.
// CHECK-LABEL: func.func @triangle
// CHECK:         %[[OUT:.*]] = affine.for %[[KT:.*]] = 0 to 5 step 2 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:      %[[S:.*]] = affine.if affine_set<(d0, d1) : ((((d0 * -1) + d1) + -2) >= 0)>(%[[KT]], %[[I:.*]]) -> (f32) {
// CHECK-NEXT:        %[[A:.*]] = affine.load %{{.*}}[%[[I]], %[[KT]]]
// CHECK-NEXT:        %[[B:.*]] = affine.load %{{.*}}[%[[KT]], %{{.*}}]
// CHECK-NEXT:        %[[P:.*]] = arith.mulf %[[B]], %[[A]] : f32
// CHECK-NEXT:        %[[S0:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:        %[[A1:.*]] = affine.load %{{.*}}[%[[I]], %[[KT]] + 1]
// CHECK-NEXT:        %[[B1:.*]] = affine.load %{{.*}}[%[[KT]] + 1, %{{.*}}]
// CHECK-NEXT:        %[[P1:.*]] = arith.mulf %[[B1]], %[[A1]] : f32
// CHECK-NEXT:        %[[S1:.*]] = arith.addf %[[S0]], %[[P1]] : f32
// CHECK-NEXT:        affine.yield %[[S1]] : f32
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %[[R:.*]] = affine.if affine_set<(d0, d1) : ((d0 + (d1 * -1)) >= 0)>(%[[KT]], %[[I]]) -> (f32) {
// CHECK-NEXT:          affine.yield %[[ACC]] : f32
// CHECK-NEXT:        } else {
// CHECK-COUNT-4:       arith.select {{.*}} {loopopt.padded} : f32
// CHECK:               affine.yield
// CHECK-NEXT:        }
// CHECK-NEXT:        affine.yield %[[R]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      affine.yield %[[S]] : f32
// CHECK-NEXT:    } {loopopt.name = "k_t"}
func.func @triangle(%A: memref<6x6xf32>, %B: memref<6x4xf32>, %T: memref<6x4xf32>) {
  affine.for %i = 0 to 6 {
    affine.for %j = 0 to 4 {
      %t0 = affine.load %T[%i, %j] : memref<6x4xf32>
      %t = affine.for %kt = 0 to 5 step 2 iter_args(%acc = %t0) -> (f32) {
        %a = affine.load %A[%i, %kt] : memref<6x6xf32>
        %b = affine.load %B[%kt, %j] : memref<6x4xf32>
        %e0 = affine.apply affine_map<(d0) -> (d0)> (%i)
        %c0 = arith.cmpi slt, %kt, %e0 : index
        %z0 = arith.constant 0.000000e+00 : f32
        %b0 = arith.select %c0, %b, %z0 {loopopt.padded} : f32
        %c1 = arith.cmpi slt, %kt, %e0 : index
        %a0 = arith.select %c1, %a, %z0 {loopopt.padded} : f32
        %p = arith.mulf %b0, %a0 : f32
        %s = arith.addf %acc, %p : f32
        %k1 = affine.apply affine_map<(d0) -> ((d0 + 1))> (%kt)
        %a_1 = affine.load %A[%i, %kt + 1] : memref<6x6xf32>
        %b_1 = affine.load %B[%kt + 1, %j] : memref<6x4xf32>
        %c2 = arith.cmpi slt, %k1, %e0 : index
        %b1 = arith.select %c2, %b_1, %z0 {loopopt.padded} : f32
        %c3 = arith.cmpi slt, %k1, %e0 : index
        %a1 = arith.select %c3, %a_1, %z0 {loopopt.padded} : f32
        %p_1 = arith.mulf %b1, %a1 : f32
        %s_1 = arith.addf %s, %p_1 : f32
        affine.yield %s_1 : f32
      } {loopopt.name = "k_t"}
      affine.store %t, %T[%i, %j] : memref<6x4xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// A dropped lower bound (trmm's k >= i + 1: `arith.cmpi sge`) and a barrier: only the ops after
// the barrier, which hold the select, are versioned; the barrier stays outside.
// CHECK-LABEL: func.func @lower
// CHECK:         affine.for %[[KT:.*]] = 0 to 8 step 4 iter_args
// CHECK-NEXT:      %[[X:.*]] = affine.load
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      %{{.*}} = affine.if affine_set<(d0, d1) : (((d0 + (d1 * -1)) + -1) >= 0)>(%[[KT]], %{{.*}}) -> (f32) {
// CHECK-NOT:         arith.select
// CHECK:           } else {
// CHECK:             arith.select
func.func @lower(%X: memref<8xf32>, %Y: memref<1xf32>, %i: index) {
  %y0 = affine.load %Y[0] : memref<1xf32>
  %y = affine.for %kt = 0 to 8 step 4 iter_args(%acc = %y0) -> (f32) {
    %x = affine.load %X[%kt] : memref<8xf32>
    gpu.barrier
    %e = affine.apply affine_map<(d0) -> (d0 + 1)> (%i)
    %c = arith.cmpi sge, %kt, %e : index
    %z = arith.constant 0.000000e+00 : f32
    %v = arith.select %c, %x, %z {loopopt.padded} : f32
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  } {loopopt.name = "k_t"}
  affine.store %y, %Y[0] : memref<1xf32>
  return
}

// -----

// A term that no select zeroes (%y) is added too: where every guard fails the body still adds
// something, so there is no version that runs nothing.
// CHECK-LABEL: func.func @no_skip
// CHECK:         affine.if affine_set<(d0, d1) : ((((d0 * -1) + d1) + -1) >= 0)>
// CHECK-NOT:     affine.if
// CHECK:         } else {
// CHECK-NEXT:      affine.load
// CHECK-NEXT:      affine.load
// CHECK-NEXT:      affine.apply
func.func @no_skip(%X: memref<8xf32>, %Y: memref<8xf32>, %O: memref<1xf32>, %i: index) {
  %o0 = affine.load %O[0] : memref<1xf32>
  %o = affine.for %kt = 0 to 8 iter_args(%acc = %o0) -> (f32) {
    %x = affine.load %X[%kt] : memref<8xf32>
    %y = affine.load %Y[%kt] : memref<8xf32>
    %e = affine.apply affine_map<(d0) -> (d0)> (%i)
    %c = arith.cmpi slt, %kt, %e : index
    %z = arith.constant 0.000000e+00 : f32
    %v = arith.select %c, %x, %z {loopopt.padded} : f32
    %s = arith.addf %acc, %v : f32
    %t = arith.addf %s, %y : f32
    affine.yield %t : f32
  } {loopopt.name = "k_t"}
  affine.store %o, %O[0] : memref<1xf32>
  return
}

// -----

// Left alone: a select that pad-tiles did not make (no loopopt.padded), and a padded one whose
// condition compares a value the body computes with arith (not an affine form).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     affine.if
// CHECK:         return
func.func @left_alone(%X: memref<8xf32>, %Y: memref<1xf32>, %n: index) {
  %y0 = affine.load %Y[0] : memref<1xf32>
  %y = affine.for %kt = 0 to 8 iter_args(%acc = %y0) -> (f32) {
    %x = affine.load %X[%kt] : memref<8xf32>
    %z = arith.constant 0.000000e+00 : f32
    %c = arith.cmpi slt, %kt, %n : index
    %v = arith.select %c, %x, %z : f32
    %m = arith.muli %kt, %kt : index
    %d = arith.cmpi slt, %m, %n : index
    %w = arith.select %d, %v, %z {loopopt.padded} : f32
    %s = arith.addf %acc, %w : f32
    affine.yield %s : f32
  } {loopopt.name = "k_t"}
  affine.store %y, %Y[0] : memref<1xf32>
  return
}

// NEGATIVE CASES, from here on: each chunk is refused by 'version-guards{loop=L}'.
// expected-error@unknown {{version-guards: no loop named 'L'}}
func.func @no_such_loop(%X: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %X[%i] : memref<8xf32>
    affine.store %v, %X[%i] : memref<8xf32>
  } {loopopt.name = "i"}
  return
}

// NO OPTION: 'version-guards' without loop= says so.
// NOLOOP: error: version-guards: loop=NAME is required
func.func @no_option() {
  return
}
