// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'pad-tiles{loops=i}' | filecheck %s --check-prefix=ONE
// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'pad-tiles{loops=i,j,k}' | filecheck %s
// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'pad-tiles{loops=i,j,k},promote{arrays=A,B loop=k_t}' | filecheck %s --check-prefix=PROMOTE

// The point loops of a 16x16x8 tile of C += A B on 50x37x21 run their full tiles. Loads that
// may leave A or B read 0.0 there (padded loads); C's load and store are guarded by C's
// bounds only: past k = 21, the update adds 0 * 0 (islpy proves both factors out of bounds),
// and past i = 50 or j = 37 the element is outside C. promote then copies the whole box,
// zeros outside the arrays, and the compute reads the buffers without guards.

// CHECK-LABEL: func.func @matmul
// CHECK:       affine.for %[[I:.*]] = {{.*}}(%[[IT:.*]]) to {{.*}}((d0 + 16))>(%[[IT]]) {
// CHECK:       affine.for %[[J:.*]] = {{.*}}(%{{.*}}) to {{.*}}((d0 + 16))>(%{{.*}}) {
// CHECK:       affine.for %[[K:.*]] = {{.*}}(%{{.*}}) to {{.*}}((d0 + 8))>(%{{.*}}) {
// CHECK-NEXT:    %[[A:.*]] = affine.if affine_set<(d0, d1) : ({{.*}} + 49) >= 0, {{.*}} + 20) >= 0)>(%[[I]], %[[K]]) -> (f32) {
// CHECK-NEXT:      %[[X:.*]] = affine.load %{{.*}}[%[[I]], %[[K]]] : memref<50x21xf32>
// CHECK-NEXT:      affine.yield %[[X]] : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      affine.yield %[[Z]] : f32
// CHECK-NEXT:    } {loopopt.padded}
// CHECK:         affine.if affine_set<(d0, d1) : ({{.*}} + 20) >= 0, {{.*}} + 36) >= 0)>(%[[K]], %[[J]]) -> (f32) {
// CHECK:         %[[O:.*]] = affine.if affine_set<(d0, d1) : ({{.*}} + 49) >= 0, {{.*}} + 36) >= 0)>(%[[I]], %[[J]]) -> (f32) {
// CHECK:         affine.if affine_set<(d0, d1) : ({{.*}} + 49) >= 0, {{.*}} + 36) >= 0)>(%[[I]], %[[J]]) {
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]] : memref<50x37xf32>
// CHECK-NEXT:    } {loopopt.padded}

// Padding i alone: only i's tiles run full; B never leaves its bounds (no guard), A and C
// only past row 49.
// ONE-LABEL: func.func @matmul
// ONE:       affine.for %[[I:.*]] = {{.*}} to affine_map<(d0) -> ((d0 + 16))>(%{{.*}}) {
// ONE-NEXT:    affine.for %{{.*}} = {{.*}} to min affine_map<(d0) -> ((d0 + 16), 37)>
// ONE-NEXT:      affine.for %{{.*}} = {{.*}} to min affine_map<(d0) -> ((d0 + 8), 21)>
// ONE-NEXT:        affine.if affine_set<(d0) : (((d0 * -1) + 49) >= 0)>(%[[I]]) -> (f32) {
// ONE:             %{{.*}} = affine.load %{{.*}} : memref<21x37xf32>
// ONE-NEXT:        affine.if affine_set<(d0) : (((d0 * -1) + 49) >= 0)>(%[[I]]) -> (f32) {
// ONE:             affine.if affine_set<(d0) : (((d0 * -1) + 49) >= 0)>(%[[I]]) {
// ONE-NEXT:          affine.store

// PROMOTE-LABEL: func.func @matmul
// PROMOTE:       %[[BUF:.*]] = memref.alloca() {loopopt.scope = {{[0-9]+}} : i64} : memref<16x8xf32>
// PROMOTE:       affine.for %{{.*}} = 0 to 16 {
// PROMOTE-NEXT:    affine.for %{{.*}} = 0 to 8 {
// PROMOTE-NEXT:      %[[V:.*]] = affine.if
// PROMOTE-NEXT:        affine.load %{{.*}} : memref<50x21xf32>
// PROMOTE:           } else {
// PROMOTE-NEXT:        arith.constant 0.000000e+00 : f32
// PROMOTE:           affine.store %[[V]], %[[BUF]]
// PROMOTE:       } {loopopt.name = "A_copy_in_0", loopopt.copy}
// PROMOTE:       affine.for %{{.*}} = 0 to 8 {
// PROMOTE-NEXT:    affine.for %{{.*}} = 0 to 16 {
// PROMOTE:       } {loopopt.name = "B_copy_in_0", loopopt.copy}
// PROMOTE:       affine.for %{{.*}} = {{.*}} to {{.*}}((d0 + 8))>
// PROMOTE-NEXT:    affine.load %[[BUF]]
// PROMOTE-NEXT:    affine.load %{{.*}}_local
// PROMOTE-NEXT:    affine.if
func.func @matmul(%A: memref<50x21xf32>, %B: memref<21x37xf32>, %C: memref<50x37xf32>) {
  affine.for %i_t = 0 to 50 step 16 {
    affine.for %j_t = 0 to 37 step 16 {
      affine.for %k_t = 0 to 21 step 8 {
        affine.for %i = affine_map<(d0) -> (d0)>(%i_t) to min affine_map<(d0) -> (d0 + 16, 50)>(%i_t) {
          affine.for %j = affine_map<(d0) -> (d0)>(%j_t) to min affine_map<(d0) -> (d0 + 16, 37)>(%j_t) {
            affine.for %k = affine_map<(d0) -> (d0)>(%k_t) to min affine_map<(d0) -> (d0 + 8, 21)>(%k_t) {
              %a = affine.load %A[%i, %k] : memref<50x21xf32>
              %b = affine.load %B[%k, %j] : memref<21x37xf32>
              %o = affine.load %C[%i, %j] : memref<50x37xf32>
              %m = arith.mulf %a, %b : f32
              %s = arith.addf %o, %m : f32
              affine.store %s, %C[%i, %j] : memref<50x37xf32>
            } {loopopt.name = "k"}
          } {loopopt.name = "j"}
        } {loopopt.name = "i"}
      } {loopopt.name = "k_t"}
    } {loopopt.name = "j_t"}
  } {loopopt.name = "i_t"}
  return
}

// -----

// A triangle, C[i, j] += A[i, k] * B[j, k] for j <= i: j (0 to i + 1) runs its bounding box
// (0 to 16). Its dropped bound i + 1 bounds C's element itself (only i and j): it joins the
// guard of C's store and of C's load (scalar-replace sees one guard), and no factor is zeroed
// (past k = 21 A and B are out of bounds: 0 * 0).

// CHECK-LABEL: func.func @triangle
// CHECK:       affine.for %[[I:.*]] = {{.*}} to affine_map<(d0) -> ((d0 + 8))>(%{{.*}}) {
// CHECK-NEXT:    affine.for %[[J:.*]] = 0 to 16 {
// CHECK:           affine.if affine_set<(d0, d1) : ((d0 + (d1 * -1)) >= 0)>(%[[I]], %[[J]]) -> (f32) {
// CHECK-NEXT:        affine.load %C[%[[I]], %[[J]]]
// CHECK-NOT:       arith.select
// CHECK:           affine.if affine_set<(d0, d1) : ((d0 + (d1 * -1)) >= 0)>(%[[I]], %[[J]]) {
// CHECK-NEXT:        affine.store %{{.*}}, %C[%[[I]], %[[J]]]
func.func @triangle(%C: memref<16x16xf32>, %A: memref<16x21xf32>, %B: memref<16x21xf32>) {
  affine.for %it = 0 to 16 step 8 {
    affine.for %kt = 0 to 21 step 8 {
      affine.for %i = affine_map<(d0) -> (d0)>(%it) to affine_map<(d0) -> (d0 + 8)>(%it) {
        affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
          affine.for %k = affine_map<(d0) -> (d0)>(%kt) to min affine_map<(d0) -> (d0 + 8, 21)>(%kt) {
            %c = affine.load %C[%i, %j] : memref<16x16xf32>
            %a = affine.load %A[%i, %k] : memref<16x21xf32>
            %b = affine.load %B[%j, %k] : memref<16x21xf32>
            %p = arith.mulf %a, %b : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %C[%i, %j] : memref<16x16xf32>
          } {loopopt.name = "k"}
        } {loopopt.name = "j"}
      } {loopopt.name = "i"}
    } {loopopt.name = "k_t"}
  } {loopopt.name = "it"}
  return
}

// -----

// Lower bounds that vary (trmm's `k = i + 1 to m`, tiled): j (i to 20, step 1) runs its
// bounding box (0 to 20) and its dropped lower bound i bounds C's element (j >= i joins the
// guards of B's load and store); the point loop k drops i + 1 from its max lower bound and
// runs its full tile, its factors zeroed below it (k >= i + 1).

// CHECK-LABEL: func.func @lower_bound
// CHECK:       affine.for %[[J:.*]] = 0 to 20 {
// CHECK-NEXT:    affine.for %[[K:.*]] = affine_map<(d0) -> (d0)>(%{{.*}}) to affine_map<(d0) -> ((d0 + 8))>(%{{.*}}) {
// CHECK-NEXT:      affine.if affine_set<(d0, d1) : (((d0 * -1) + d1) >= 0)>(%{{.*}}, %[[J]]) -> (f32) {
// CHECK:           %[[A:.*]] = affine.load %A[%[[K]], %{{.*}}]
// CHECK:           %[[LO:.*]] = affine.apply affine_map<(d0) -> ((d0 + 1))> (%{{.*}})
// CHECK-NEXT:      %[[ABOVE:.*]] = arith.cmpi sge, %[[K]], %[[LO]] : index
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      arith.select %[[ABOVE]], %[[A]], %[[ZERO]] {loopopt.padded} : f32
// CHECK:           affine.if affine_set<(d0, d1) : (((d0 * -1) + d1) >= 0)>(%{{.*}}, %[[J]]) {
// CHECK-NEXT:        affine.store
func.func @lower_bound(%B: memref<16x20xf32>, %A: memref<16x16xf32>, %S: memref<16x20xf32>) {
  affine.for %kt = 0 to 16 step 8 {
    affine.for %i = 0 to 16 {
      affine.for %j = affine_map<(d0) -> (d0)>(%i) to 20 {
        affine.for %k = max affine_map<(d0, d1) -> (d0, d1 + 1)>(%kt, %i) to min affine_map<(d0) -> (d0 + 8, 16)>(%kt) {
          %b = affine.load %B[%i, %j] : memref<16x20xf32>
          %a = affine.load %A[%k, %i] : memref<16x16xf32>
          %s = affine.load %S[%k, %j] : memref<16x20xf32>
          %p = arith.mulf %a, %s : f32
          %n = arith.addf %b, %p : f32
          affine.store %n, %B[%i, %j] : memref<16x20xf32>
        } {loopopt.name = "k"}
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  } {loopopt.name = "k_t"}
  return
}

// -----

// Not an accumulation: C = A * B overwrites C. Past k = 21 the store would write A * B with
// zero factors, so it keeps k's bound (%k <= 20) in its guard.

// CHECK-LABEL: func.func @overwrite
// CHECK:       affine.if affine_set<(d0, d1, d2) : ({{.*}} + 49) >= 0, {{.*}} + 36) >= 0, {{.*}} + 20) >= 0)>(%{{.*}}, %{{.*}}, %{{.*}}) {
// CHECK-NEXT:    affine.store
func.func @overwrite(%A: memref<50x21xf32>, %B: memref<21x37xf32>, %C: memref<50x37xf32>) {
  affine.for %i_t = 0 to 50 step 16 {
    affine.for %j_t = 0 to 37 step 16 {
      affine.for %k_t = 0 to 21 step 8 {
        affine.for %i = affine_map<(d0) -> (d0)>(%i_t) to min affine_map<(d0) -> (d0 + 16, 50)>(%i_t) {
          affine.for %j = affine_map<(d0) -> (d0)>(%j_t) to min affine_map<(d0) -> (d0 + 16, 37)>(%j_t) {
            affine.for %k = affine_map<(d0) -> (d0)>(%k_t) to min affine_map<(d0) -> (d0 + 8, 21)>(%k_t) {
              %a = affine.load %A[%i, %k] : memref<50x21xf32>
              %b = affine.load %B[%k, %j] : memref<21x37xf32>
              %m = arith.mulf %a, %b : f32
              affine.store %m, %C[%i, %j] : memref<50x37xf32>
            } {loopopt.name = "k"}
          } {loopopt.name = "j"}
        } {loopopt.name = "i"}
      } {loopopt.name = "k_t"}
    } {loopopt.name = "j_t"}
  } {loopopt.name = "i_t"}
  return
}

// -----

// C += alpha * A * v[i] * B (2mm's alpha; v[i] exists past k = 21): an accumulation whose
// factors are not all loads that leave their arrays there. Each such factor is made 0 past the
// bound (`select (k < 21), x, 0`, so that an infinite alpha cannot turn 0 into NaN); A's and B's
// loads read 0 there already. C's store keeps C's bounds only, as C's load does.

// CHECK-LABEL: func.func @scaled
// CHECK:         %[[E:.*]] = affine.apply affine_map<() -> (21)> ()
// CHECK-NEXT:    %[[BELOW:.*]] = arith.cmpi slt, %[[K:.*]], %[[E]] : index
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %{{.*}} = arith.select %[[BELOW]], %{{.*}}, %[[Z]] {loopopt.padded} : f32
// CHECK-NEXT:    arith.mulf
// CHECK:         arith.cmpi slt, %[[K]], %{{.*}} : index
// CHECK:         arith.select
// CHECK:         affine.if affine_set<(d0, d1) : ({{.*}} + 49) >= 0, {{.*}} + 36) >= 0)>(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) {
// CHECK-NEXT:      affine.store
func.func @scaled(%alpha: f32, %A: memref<50x21xf32>, %B: memref<21x37xf32>, %v: memref<50xf32>, %C: memref<50x37xf32>) {
  affine.for %i_t = 0 to 50 step 16 {
    affine.for %j_t = 0 to 37 step 16 {
      affine.for %k_t = 0 to 21 step 8 {
        affine.for %i = affine_map<(d0) -> (d0)>(%i_t) to min affine_map<(d0) -> (d0 + 16, 50)>(%i_t) {
          affine.for %j = affine_map<(d0) -> (d0)>(%j_t) to min affine_map<(d0) -> (d0 + 16, 37)>(%j_t) {
            affine.for %k = affine_map<(d0) -> (d0)>(%k_t) to min affine_map<(d0) -> (d0 + 8, 21)>(%k_t) {
              %a = affine.load %A[%i, %k] : memref<50x21xf32>
              %s = arith.mulf %alpha, %a : f32
              %w = affine.load %v[%i] : memref<50xf32>
              %t = arith.mulf %s, %w : f32
              %b = affine.load %B[%k, %j] : memref<21x37xf32>
              %m = arith.mulf %t, %b : f32
              %o = affine.load %C[%i, %j] : memref<50x37xf32>
              %n = arith.addf %o, %m : f32
              affine.store %n, %C[%i, %j] : memref<50x37xf32>
            } {loopopt.name = "k"}
          } {loopopt.name = "j"}
        } {loopopt.name = "i"}
      } {loopopt.name = "k_t"}
    } {loopopt.name = "j_t"}
  } {loopopt.name = "i_t"}
  return
}

// -----

// Tiles that divide: nothing is padded, nothing guarded.

// CHECK-LABEL: func.func @divides
// CHECK-NOT:   affine.if
// CHECK:       return
func.func @divides(%A: memref<32x32xf32>, %B: memref<32x32xf32>, %C: memref<32x32xf32>) {
  affine.for %i_t = 0 to 32 step 16 {
    affine.for %j_t = 0 to 32 step 16 {
      affine.for %k_t = 0 to 32 step 8 {
        affine.for %i = affine_map<(d0) -> (d0)>(%i_t) to affine_map<(d0) -> (d0 + 16)>(%i_t) {
          affine.for %j = affine_map<(d0) -> (d0)>(%j_t) to affine_map<(d0) -> (d0 + 16)>(%j_t) {
            affine.for %k = affine_map<(d0) -> (d0)>(%k_t) to affine_map<(d0) -> (d0 + 8)>(%k_t) {
              %a = affine.load %A[%i, %k] : memref<32x32xf32>
              %b = affine.load %B[%k, %j] : memref<32x32xf32>
              %o = affine.load %C[%i, %j] : memref<32x32xf32>
              %m = arith.mulf %a, %b : f32
              %s = arith.addf %o, %m : f32
              affine.store %s, %C[%i, %j] : memref<32x32xf32>
            } {loopopt.name = "k"}
          } {loopopt.name = "j"}
        } {loopopt.name = "i"}
      } {loopopt.name = "k_t"}
    } {loopopt.name = "j_t"}
  } {loopopt.name = "i_t"}
  return
}

// -----

func.func @not_a_tile(%A: memref<10xf32>) {
  affine.for %it = 0 to 10 step 4 {
    // expected-error@+1 {{pad-tiles: loop 'i' is not a tile (no upper bound 'lower + N', N a multiple of the step) nor a loop whose bounds vary with outer loops (its lower bound constant, or its step 1)}}
    affine.for %i = affine_map<(d0) -> (d0)>(%it) to min affine_map<(d0) -> (d0 * 2, 10)>(%it) step 3 {
      %a = affine.load %A[%i] : memref<10xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "it"}
  return
}

// -----

func.func private @effect(index) -> ()
func.func @call(%A: memref<10xf32>) {
  affine.for %it = 0 to 10 step 4 {
    affine.for %i = affine_map<(d0) -> (d0)>(%it) to min affine_map<(d0) -> (d0 + 4, 10)>(%it) {
      // expected-error@+1 {{pad-tiles: 'func.call' in padded loop 'i' has effects that cannot be guarded}}
      func.call @effect(%i) : (index) -> ()
    } {loopopt.name = "i"}
  } {loopopt.name = "it"}
  return
}
