// RUN: sed '/^\/\/ NEGATIVE CASES/,$d' %s | loopopt-opt - --split-input-file -p scalar-replace | filecheck %s
// RUN: sed -n '/^\/\/ BEGIN k_t/,/^\/\/ END k_t/p' %s | loopopt-opt - -p 'scalar-replace{loop=k_t}' | filecheck %s --check-prefix=NAMED
// RUN: sed '/^\/\/ NEGATIVE CASES/,$d' %s | loopopt-opt - --split-input-file -p 'scalar-replace{arrays=C}' | filecheck %s --check-prefix=ARRAYS
// RUN: sed -n '/^\/\/ NEGATIVE CASES/,$p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'scalar-replace{loop=L arrays=X}'

// C[%i, %j] does not depend on %k: loaded before k, carried as an iter_arg, stored after k.
// A and B vary with k and stay; nothing can be kept across j or i.
// CHECK-LABEL: func.func @matmul
// CHECK:         affine.for %[[I:.*]] = 0 to 4 {
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to 4 {
// CHECK-NEXT:      %[[INIT:.*]] = affine.load %[[C:.*]][%[[I]], %[[J]]] : memref<4x4xf32>
// CHECK-NEXT:      %[[OUT:.*]] = affine.for %[[K:.*]] = 0 to 8 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NEXT:        affine.load %{{.*}}[%[[I]], %[[K]]] : memref<4x8xf32>
// CHECK-NEXT:        affine.load %{{.*}}[%[[K]], %[[J]]] : memref<8x4xf32>
// CHECK-NEXT:        %[[P:.*]] = arith.mulf
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:        affine.yield %[[S]] : f32
// CHECK-NEXT:      } {loopopt.name = "k"}
// CHECK-NEXT:      affine.store %[[OUT]], %[[C]][%[[I]], %[[J]]] : memref<4x4xf32>
// CHECK-NEXT:    } {loopopt.name = "j"}
// ARRAYS-LABEL: func.func @matmul
// ARRAYS:         affine.for %{{.*}} = 0 to 8 iter_args
func.func @matmul(%A: memref<4x8xf32>, %B: memref<8x4xf32>, %C: memref<4x4xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      affine.for %k = 0 to 8 {
        %a = affine.load %A[%i, %k] : memref<4x8xf32>
        %b = affine.load %B[%k, %j] : memref<8x4xf32>
        %c = affine.load %C[%i, %j] : memref<4x4xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<4x4xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// BEGIN k_t: the loops named k_t (the two functions up to END k_t).
// A 2x2 register tile (i, j unrolled inside k_t): four elements, pairwise a constant apart,
// reached through affine.apply ops inside the loop; each is loaded and stored twice.
// Across j around it they would vary: they stay there.
// CHECK-LABEL: func.func @register_tile
// CHECK:         %[[C00:.*]] = affine.load %[[C:.*]][%[[I:.*]], %[[J:.*]]] : memref<4x4xf32>
// CHECK-NEXT:    %[[C01:.*]] = affine.load %[[C]][%[[I]], %[[J]] + 1] : memref<4x4xf32>
// CHECK-NEXT:    %[[C10:.*]] = affine.load %[[C]][%[[I]] + 1, %[[J]]] : memref<4x4xf32>
// CHECK-NEXT:    %[[C11:.*]] = affine.load %[[C]][%[[I]] + 1, %[[J]] + 1] : memref<4x4xf32>
// CHECK-NEXT:    %[[R0:[^,]*]], %[[R1:[^,]*]], %[[R2:[^,]*]], %[[R3:[^,]*]] = affine.for %{{.*}} = 0 to 8 step 2 iter_args(%[[A00:.*]] = %[[C00]], %[[A01:.*]] = %[[C01]], %[[A10:.*]] = %[[C10]], %[[A11:.*]] = %[[C11]]) -> (f32, f32, f32, f32) {
// CHECK-NOT:       %[[C]][
// CHECK:           %[[S00:.*]] = arith.addf %[[A00]]
// CHECK:           %[[T00:.*]] = arith.addf %[[S00]]
// CHECK:           affine.yield %[[T00]], %{{.*}}, %{{.*}}, %{{.*}} : f32, f32, f32, f32
// CHECK-NEXT:    } {loopopt.name = "k_t"}
// CHECK-NEXT:    affine.store %[[R0]], %[[C]][%[[I]], %[[J]]] : memref<4x4xf32>
// CHECK-NEXT:    affine.store %[[R1]], %[[C]][%[[I]], %[[J]] + 1] : memref<4x4xf32>
// CHECK-NEXT:    affine.store %[[R2]], %[[C]][%[[I]] + 1, %[[J]]] : memref<4x4xf32>
// CHECK-NEXT:    affine.store %[[R3]], %[[C]][%[[I]] + 1, %[[J]] + 1] : memref<4x4xf32>
// NAMED-LABEL: func.func @register_tile
// NAMED:         affine.for %{{.*}} = 0 to 8 step 2 iter_args({{.*}}) -> (f32, f32, f32, f32) {
func.func @register_tile(%A: memref<4x8xf32>, %B: memref<8x4xf32>, %C: memref<4x4xf32>) {
  affine.for %i = 0 to 4 step 2 {
    affine.for %j = 0 to 4 step 2 {
      affine.for %kt = 0 to 8 step 2 {
        %i1 = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)
        %j1 = affine.apply affine_map<(d0) -> (d0 + 1)>(%j)
        %k1 = affine.apply affine_map<(d0) -> (d0 + 1)>(%kt)
        %a0 = affine.load %A[%i, %kt] : memref<4x8xf32>
        %a1 = affine.load %A[%i1, %kt] : memref<4x8xf32>
        %b0 = affine.load %B[%kt, %j] : memref<8x4xf32>
        %b1 = affine.load %B[%kt, %j1] : memref<8x4xf32>
        %c00 = affine.load %C[%i, %j] : memref<4x4xf32>
        %p00 = arith.mulf %a0, %b0 : f32
        %s00 = arith.addf %c00, %p00 : f32
        affine.store %s00, %C[%i, %j] : memref<4x4xf32>
        %c01 = affine.load %C[%i, %j1] : memref<4x4xf32>
        %p01 = arith.mulf %a0, %b1 : f32
        %s01 = arith.addf %c01, %p01 : f32
        affine.store %s01, %C[%i, %j1] : memref<4x4xf32>
        %c10 = affine.load %C[%i1, %j] : memref<4x4xf32>
        %p10 = arith.mulf %a1, %b0 : f32
        %s10 = arith.addf %c10, %p10 : f32
        affine.store %s10, %C[%i1, %j] : memref<4x4xf32>
        %c11 = affine.load %C[%i1, %j1] : memref<4x4xf32>
        %p11 = arith.mulf %a1, %b1 : f32
        %s11 = arith.addf %c11, %p11 : f32
        affine.store %s11, %C[%i1, %j1] : memref<4x4xf32>
        %a2 = affine.load %A[%i, %k1] : memref<4x8xf32>
        %b2 = affine.load %B[%k1, %j] : memref<8x4xf32>
        %c00b = affine.load %C[%i, %j] : memref<4x4xf32>
        %p00b = arith.mulf %a2, %b2 : f32
        %t00 = arith.addf %c00b, %p00b : f32
        affine.store %t00, %C[%i, %j] : memref<4x4xf32>
        %c01b = affine.load %C[%i, %j1] : memref<4x4xf32>
        %t01 = arith.addf %c01b, %p00b : f32
        affine.store %t01, %C[%i, %j1] : memref<4x4xf32>
        %c10b = affine.load %C[%i1, %j] : memref<4x4xf32>
        %t10 = arith.addf %c10b, %p00b : f32
        affine.store %t10, %C[%i1, %j] : memref<4x4xf32>
        %c11b = affine.load %C[%i1, %j1] : memref<4x4xf32>
        %t11 = arith.addf %c11b, %p00b : f32
        affine.store %t11, %C[%i1, %j1] : memref<4x4xf32>
      } {loopopt.name = "k_t"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// Across k, then across k_t around it: the element is carried by both loops.
// CHECK-LABEL: func.func @nested
// CHECK:         %[[C0:.*]] = affine.load %[[C:.*]][%[[I:.*]]] : memref<5xf32>
// CHECK-NEXT:    %[[OUTER:.*]] = affine.for %{{.*}} = 0 to 7 step 4 iter_args(%[[X:.*]] = %[[C0]]) -> (f32) {
// CHECK-NEXT:      %[[INNER:.*]] = affine.for %{{.*}} = {{.*}} iter_args(%[[Y:.*]] = %[[X]]) -> (f32) {
// CHECK:           } {loopopt.name = "k"}
// CHECK-NEXT:      affine.yield %[[INNER]] : f32
// CHECK-NEXT:    } {loopopt.name = "k_t"}
// CHECK-NEXT:    affine.store %[[OUTER]], %[[C]][%[[I]]] : memref<5xf32>
// NAMED-LABEL: func.func @nested
// NAMED-NOT:   iter_args
// NAMED:       } {loopopt.name = "i"}
func.func @nested(%A: memref<5x7xf32>, %C: memref<5xf32>) {
  affine.for %i = 0 to 5 {
    affine.for %kt = 0 to 7 step 4 {
      affine.for %k = affine_map<(d0) -> (d0)>(%kt) to min affine_map<(d0) -> (d0 + 4, 7)>(%kt) {
        %a = affine.load %A[%i, %k] : memref<5x7xf32>
        %c = affine.load %C[%i] : memref<5xf32>
        %s = arith.addf %c, %a : f32
        affine.store %s, %C[%i] : memref<5xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "k_t"}
  } {loopopt.name = "i"}
  return
}
// END k_t

// -----

// The loop already carries a sum: N[0] becomes a second iter_arg after it.
// CHECK-LABEL: func.func @existing_iter_args
// CHECK:         %[[N0:.*]] = affine.load %[[N:.*]][0] : memref<1xf32>
// CHECK-NEXT:    %[[R0:[^,]*]], %[[R1:[^,]*]] = affine.for %{{.*}} = 0 to 8 iter_args(%[[ACC:.*]] = %[[ZERO:.*]], %[[CNT:.*]] = %[[N0]]) -> (f32, f32) {
// CHECK:           %[[SUM:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addf %[[CNT]], %{{.*}} : f32
// CHECK-NEXT:      affine.yield %[[SUM]], %[[NEXT]] : f32, f32
// CHECK-NEXT:    } {loopopt.name = "k"}
// CHECK-NEXT:    affine.store %[[R1]], %[[N]][0] : memref<1xf32>
// CHECK-NEXT:    affine.store %[[R0]], %{{.*}}[0] : memref<1xf32>
func.func @existing_iter_args(%A: memref<8xf32>, %B: memref<8xf32>, %N: memref<1xf32>, %D: memref<1xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %r = affine.for %k = 0 to 8 iter_args(%acc = %zero) -> (f32) {
    %a = affine.load %A[%k] : memref<8xf32>
    %b = affine.load %B[%k] : memref<8xf32>
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    %n = affine.load %N[0] : memref<1xf32>
    %n1 = arith.addf %n, %one : f32
    affine.store %n1, %N[0] : memref<1xf32>
    affine.yield %s : f32
  } {loopopt.name = "k"}
  affine.store %r, %D[0] : memref<1xf32>
  return
}

// -----

// S is only read in j: its load is hoisted, no iter_arg. O varies with j and stays.
// CHECK-LABEL: func.func @only_loaded
// CHECK:         affine.for %[[I:.*]] = 0 to 6 {
// CHECK-NEXT:      %[[S:.*]] = affine.load %{{.*}}[%[[I]]] : memref<6xf32>
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to 5 {
// CHECK-NEXT:        %[[X:.*]] = affine.load %{{.*}}[%[[I]], %[[J]]] : memref<6x5xf32>
// CHECK-NEXT:        %[[M:.*]] = arith.mulf %[[X]], %[[S]] : f32
// CHECK-NEXT:        affine.store %[[M]], %{{.*}}[%[[I]], %[[J]]] : memref<6x5xf32>
// CHECK-NEXT:      } {loopopt.name = "j"}
// ARRAYS-LABEL: func.func @only_loaded
// ARRAYS:         affine.for %{{.*}} = 0 to 6 {
// ARRAYS-NEXT:      affine.for %{{.*}} = 0 to 5 {
func.func @only_loaded(%S: memref<6xf32>, %X: memref<6x5xf32>, %O: memref<6x5xf32>) {
  affine.for %i = 0 to 6 {
    affine.for %j = 0 to 5 {
      %x = affine.load %X[%i, %j] : memref<6x5xf32>
      %s = affine.load %S[%i] : memref<6xf32>
      %m = arith.mulf %x, %s : f32
      affine.store %m, %O[%i, %j] : memref<6x5xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// The k loop runs no iteration for i >= 8, where x[i] is out of bounds: the load before and
// the store after it run only where it runs.
// CHECK-LABEL: func.func @maybe_empty
// CHECK:         affine.for %[[I:.*]] = 0 to 10 {
// CHECK-NEXT:      %[[INIT:.*]] = affine.if affine_set<(d0) : (((d0 * -1) + 7) >= 0)>(%[[I]]) -> (f32) {
// CHECK-NEXT:      %[[L:.*]] = affine.load %[[X:.*]][%[[I]]] : memref<8xf32>
// CHECK-NEXT:      affine.yield %[[L]] : f32
// CHECK-NEXT:    } else {
// CHECK:         %[[OUT:.*]] = affine.for %{{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32) {
// CHECK:         } {loopopt.name = "k"}
// CHECK-NEXT:    affine.if affine_set<(d0) : (((d0 * -1) + 7) >= 0)>(%[[I]]) {
// CHECK-NEXT:      affine.store %[[OUT]], %[[X]][%[[I]]] : memref<8xf32>
// CHECK-NEXT:    }
func.func @maybe_empty(%A: memref<8xf32>, %x: memref<8xf32>) {
  affine.for %i = 0 to 10 {
    affine.for %k = 0 to affine_map<(d0) -> (8 - d0)>(%i) {
      %a = affine.load %A[%k] : memref<8xf32>
      %v = affine.load %x[%i] : memref<8xf32>
      %s = arith.addf %v, %a : f32
      affine.store %s, %x[%i] : memref<8xf32>
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  return
}

// -----

// Left alone: C[%i] and C[%m] may be one element; D is also read through a view; E is passed
// to a call.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     iter_args
// CHECK:         return
func.func private @use(memref<4xf32>)
func.func @left_alone(%C: memref<4xf32>, %D: memref<4xf32>, %E: memref<4xf32>, %m: index) {
  %cst = arith.constant 1.000000e+00 : f32
  %V = "memref.cast"(%D) : (memref<4xf32>) -> memref<?xf32>
  affine.for %i = 0 to 4 {
    affine.for %k = 0 to 4 {
      %c = affine.load %C[%i] : memref<4xf32>
      affine.store %c, %C[%m] : memref<4xf32>
      %d = affine.load %D[%i] : memref<4xf32>
      %s = arith.addf %d, %cst : f32
      affine.store %s, %D[%i] : memref<4xf32>
      %v = affine.load %V[%k] : memref<?xf32>
      affine.store %v, %E[%i] : memref<4xf32>
      func.call @use(%E) : (memref<4xf32>) -> ()
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  return
}

// -----

// In a kernel: the global C is kept in registers across k_t; the shared buffer S never is.
// CHECK-LABEL: gpu.func @kernel
// CHECK:         %[[C0:.*]] = affine.load %[[C:.*]][%[[T:.*]]] : memref<64xf32>
// CHECK-NEXT:    %[[R:.*]] = affine.for %{{.*}} = 0 to 64 step 16 iter_args(%{{.*}} = %[[C0]]) -> (f32) {
// CHECK:           affine.load %[[S:.*]][0] : memref<16xf32, 3 : i64>
// CHECK:           gpu.barrier
// CHECK:           affine.store %{{.*}}, %[[S]][0] : memref<16xf32, 3 : i64>
// CHECK:         } {loopopt.name = "k_t"}
// CHECK-NEXT:    affine.store %[[R]], %[[C]][%[[T]]] : memref<64xf32>
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%A: memref<64xf32>, %C: memref<64xf32>) kernel {
      %t = gpu.thread_id x
      %S = memref.alloca() : memref<16xf32, 3 : i64>
      affine.for %kt = 0 to 64 step 16 {
        %a = affine.load %A[%kt] : memref<64xf32>
        affine.store %a, %S[%t] : memref<16xf32, 3 : i64>
        gpu.barrier
        %s = affine.load %S[0] : memref<16xf32, 3 : i64>
        %c = affine.load %C[%t] : memref<64xf32>
        %x = arith.addf %c, %s : f32
        affine.store %x, %C[%t] : memref<64xf32>
        gpu.barrier
        affine.store %x, %S[0] : memref<16xf32, 3 : i64>
      } {loopopt.name = "k_t"}
      gpu.return
    }
  }
}

// -----

// Within a loop body: a load takes the value stored or loaded earlier at equal indices, until
// a store that may write the element (X[%m]) or an unknown op (the call); X[%i + 1] and Y do
// not interfere; shared memory is left alone.
// CHECK-LABEL: func.func @forward
// CHECK:         %[[A:.*]] = affine.load %[[X:.*]][%[[I:.*]]] : memref<8xf32>
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[A]], %[[A]] : f32
// CHECK-NEXT:    affine.store %[[S]], %[[X]][%[[I]] + 1] : memref<8xf32>
// CHECK-NEXT:    %{{.*}} = arith.addf %[[A]], %[[S]] : f32
// CHECK-NEXT:    affine.store
// CHECK-NEXT:    affine.store %[[A]], %[[X]][%{{.*}}] : memref<8xf32>
// CHECK-NEXT:    %[[F:.*]] = affine.load %[[X]][%[[I]]] : memref<8xf32>
// CHECK-NEXT:    affine.load %{{.*}}[%[[I]]] : memref<8xf32, 3 : i64>
// CHECK-NEXT:    affine.load %{{.*}}[%[[I]]] : memref<8xf32, 3 : i64>
// CHECK:         func.call @opaque()
// CHECK-NEXT:    affine.load %[[X]][%[[I]]] : memref<8xf32>
// ARRAYS-LABEL: func.func @forward
// ARRAYS:         %b = affine.load
func.func private @opaque()
func.func @forward(%X: memref<8xf32>, %Y: memref<8xf32>, %m: index) {
  %S = memref.alloca() : memref<8xf32, 3 : i64>
  affine.for %i = 0 to 7 {
    %a = affine.load %X[%i] : memref<8xf32>
    %b = affine.load %X[%i] : memref<8xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %X[%i + 1] : memref<8xf32>
    %c = affine.load %X[%i] : memref<8xf32>
    %d = affine.load %X[%i + 1] : memref<8xf32>
    %cd = arith.addf %c, %d : f32
    affine.store %cd, %Y[%i] : memref<8xf32>
    %e = affine.load %X[%i] : memref<8xf32>
    affine.store %e, %X[%m] : memref<8xf32>
    %f = affine.load %X[%i] : memref<8xf32>
    %g = affine.load %S[%i] : memref<8xf32, 3 : i64>
    %h = affine.load %S[%i] : memref<8xf32, 3 : i64>
    %fg = arith.addf %f, %g : f32
    %fgh = arith.addf %fg, %h : f32
    func.call @opaque() : () -> ()
    %k = affine.load %X[%i] : memref<8xf32>
    %all = arith.addf %fgh, %k : f32
    affine.store %all, %Y[%i + 1] : memref<8xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// Padded accesses (pad-tiles): the tile of C runs past the 10x10 array, every access of C is
// guarded by the same in-bounds condition. Two unrolled k steps: C[%i, %j] is loaded once under
// the guard before k_t, carried, and stored once under the guard after it. A and B vary with
// k_t and stay.
// CHECK-LABEL: func.func @padded_accumulate
// CHECK:         affine.for %[[I:.*]] = 0 to 12 {
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to 12 {
// CHECK-NEXT:      %[[INIT:.*]] = affine.if affine_set<(d0, d1) : (((d0 * -1) + 9) >= 0, ((d1 * -1) + 9) >= 0)>(%[[I]], %[[J]]) -> (f32) {
// CHECK-NEXT:        %[[L:.*]] = affine.load %[[C:.*]][%[[I]], %[[J]]] : memref<10x10xf32>
// CHECK-NEXT:        affine.yield %[[L]] : f32
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        affine.yield %[[Z]] : f32
// CHECK-NEXT:      } {loopopt.padded}
// CHECK-NEXT:      %[[OUT:.*]] = affine.for %{{.*}} = 0 to 8 step 2 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NOT:         %[[C]][
// CHECK:             %[[P0:.*]] = arith.mulf
// CHECK-NEXT:        %[[S0:.*]] = arith.addf %[[ACC]], %[[P0]] : f32
// CHECK-NOT:         %[[C]][
// CHECK:             %[[P1:.*]] = arith.mulf
// CHECK-NEXT:        %[[S1:.*]] = arith.addf %[[S0]], %[[P1]] : f32
// CHECK-NEXT:        affine.yield %[[S1]] : f32
// CHECK-NEXT:      } {loopopt.name = "k_t"}
// CHECK-NEXT:      affine.if affine_set<(d0, d1) : (((d0 * -1) + 9) >= 0, ((d1 * -1) + 9) >= 0)>(%[[I]], %[[J]]) {
// CHECK-NEXT:        affine.store %[[OUT]], %[[C]][%[[I]], %[[J]]] : memref<10x10xf32>
// CHECK-NEXT:      } {loopopt.padded}
// CHECK-NEXT:    } {loopopt.name = "j"}
// ARRAYS-LABEL: func.func @padded_accumulate
// ARRAYS:         affine.for %{{.*}} = 0 to 8 step 2 iter_args
func.func @padded_accumulate(%A: memref<10x8xf32>, %B: memref<8x10xf32>, %C: memref<10x10xf32>) {
  affine.for %i = 0 to 12 {
    affine.for %j = 0 to 12 {
      affine.for %kt = 0 to 8 step 2 {
        %k1 = affine.apply affine_map<(d0) -> (d0 + 1)>(%kt)
        %a0 = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) -> (f32) {
          %x = affine.load %A[%i, %kt] : memref<10x8xf32>
          affine.yield %x : f32
        } else {
          %z = arith.constant 0.000000e+00 : f32
          affine.yield %z : f32
        } {loopopt.padded}
        %b0 = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%j) -> (f32) {
          %x = affine.load %B[%kt, %j] : memref<8x10xf32>
          affine.yield %x : f32
        } else {
          %z = arith.constant 0.000000e+00 : f32
          affine.yield %z : f32
        } {loopopt.padded}
        %c0 = affine.if affine_set<(d0, d1) : (-d0 + 9 >= 0, -d1 + 9 >= 0)>(%i, %j) -> (f32) {
          %x = affine.load %C[%i, %j] : memref<10x10xf32>
          affine.yield %x : f32
        } else {
          %z = arith.constant 0.000000e+00 : f32
          affine.yield %z : f32
        } {loopopt.padded}
        %p0 = arith.mulf %a0, %b0 : f32
        %s0 = arith.addf %c0, %p0 : f32
        affine.if affine_set<(d0, d1) : (-d0 + 9 >= 0, -d1 + 9 >= 0)>(%i, %j) {
          affine.store %s0, %C[%i, %j] : memref<10x10xf32>
        } {loopopt.padded}
        %a1 = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) -> (f32) {
          %x = affine.load %A[%i, %k1] : memref<10x8xf32>
          affine.yield %x : f32
        } else {
          %z = arith.constant 0.000000e+00 : f32
          affine.yield %z : f32
        } {loopopt.padded}
        %b1 = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%j) -> (f32) {
          %x = affine.load %B[%k1, %j] : memref<8x10xf32>
          affine.yield %x : f32
        } else {
          %z = arith.constant 0.000000e+00 : f32
          affine.yield %z : f32
        } {loopopt.padded}
        %c1 = affine.if affine_set<(d0, d1) : (-d0 + 9 >= 0, -d1 + 9 >= 0)>(%i, %j) -> (f32) {
          %x = affine.load %C[%i, %j] : memref<10x10xf32>
          affine.yield %x : f32
        } else {
          %z = arith.constant 0.000000e+00 : f32
          affine.yield %z : f32
        } {loopopt.padded}
        %p1 = arith.mulf %a1, %b1 : f32
        %s1 = arith.addf %c1, %p1 : f32
        affine.if affine_set<(d0, d1) : (-d0 + 9 >= 0, -d1 + 9 >= 0)>(%i, %j) {
          affine.store %s1, %C[%i, %j] : memref<10x10xf32>
        } {loopopt.padded}
      } {loopopt.name = "k_t"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}


// -----

// A padded triangle (syrk's j <= i, kept in pad-tiles' guard): the guard is no in-bounds
// condition, so where it fails the element exists, but neither version touches it there. C is
// kept in a register across k all the same, under the same guard before and after.
// CHECK-LABEL: func.func @padded_triangle
// CHECK:           %[[INIT:.*]] = affine.if affine_set<(d0, d1) : (((d0 * -1) + 9) >= 0, (d0 + (d1 * -1)) >= 0)>(%[[I:.*]], %[[J:.*]]) -> (f32) {
// CHECK-NEXT:        %[[L:.*]] = affine.load %[[C:.*]][%[[I]], %[[J]]] : memref<10x10xf32>
// CHECK:           } {loopopt.padded}
// CHECK-NEXT:      %[[OUT:.*]] = affine.for %{{.*}} = 0 to 8 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NOT:         %[[C]][
// CHECK:             %[[S:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// CHECK-NEXT:        affine.yield %[[S]] : f32
// CHECK-NEXT:      } {loopopt.name = "k"}
// CHECK-NEXT:      affine.if affine_set<(d0, d1) : (((d0 * -1) + 9) >= 0, (d0 + (d1 * -1)) >= 0)>(%[[I]], %[[J]]) {
// CHECK-NEXT:        affine.store %[[OUT]], %[[C]][%[[I]], %[[J]]] : memref<10x10xf32>
// CHECK-NEXT:      } {loopopt.padded}
func.func @padded_triangle(%A: memref<10x8xf32>, %C: memref<10x10xf32>) {
  affine.for %i = 0 to 12 {
    affine.for %j = 0 to 10 {
      affine.for %k = 0 to 8 {
        %a = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) -> (f32) {
          %x = affine.load %A[%i, %k] : memref<10x8xf32>
          affine.yield %x : f32
        } else {
          %z = arith.constant 0.000000e+00 : f32
          affine.yield %z : f32
        } {loopopt.padded}
        %b = affine.load %A[%j, %k] : memref<10x8xf32>
        %c = affine.if affine_set<(d0, d1) : (-d0 + 9 >= 0, d0 - d1 >= 0)>(%i, %j) -> (f32) {
          %x = affine.load %C[%i, %j] : memref<10x10xf32>
          affine.yield %x : f32
        } else {
          %z = arith.constant 0.000000e+00 : f32
          affine.yield %z : f32
        } {loopopt.padded}
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.if affine_set<(d0, d1) : (-d0 + 9 >= 0, d0 - d1 >= 0)>(%i, %j) {
          affine.store %s, %C[%i, %j] : memref<10x10xf32>
        } {loopopt.padded}
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// Within a body: a padded load takes the value of an earlier padded load of the element on the
// same condition (%y), also across a padded store to another array (%u), never the value of a
// padded store (%w: where the guard is false it is 0.0, not %z).
// CHECK-LABEL: func.func @padded_forward
// CHECK:         %[[X:.*]] = affine.if {{.*}} -> (f32) {
// CHECK:         } {loopopt.padded}
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[X]], %[[X]] : f32
// CHECK-NEXT:    affine.if
// CHECK-NEXT:      affine.store %[[S]], %{{.*}}[%{{.*}}] : memref<10xf32>
// CHECK-NEXT:    } {loopopt.padded}
// CHECK-NEXT:    %[[T:.*]] = arith.addf %[[X]], %[[S]] : f32
// CHECK-NEXT:    affine.if
// CHECK-NEXT:      affine.store %[[T]], %{{.*}}[%{{.*}}] : memref<10xf32>
// CHECK-NEXT:    } {loopopt.padded}
// CHECK-NEXT:    %[[W:.*]] = affine.if {{.*}} -> (f32) {
// CHECK-NEXT:      affine.load
// CHECK:         } {loopopt.padded}
// CHECK-NEXT:    affine.if
// CHECK-NEXT:      affine.store %[[W]], %{{.*}}[%{{.*}}] : memref<10xf32>
func.func @padded_forward(%X: memref<10xf32>, %Y: memref<10xf32>) {
  affine.for %i = 0 to 12 {
    %x = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) -> (f32) {
      %v = affine.load %X[%i] : memref<10xf32>
      affine.yield %v : f32
    } else {
      %z = arith.constant 0.000000e+00 : f32
      affine.yield %z : f32
    } {loopopt.padded}
    %y = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) -> (f32) {
      %v = affine.load %X[%i] : memref<10xf32>
      affine.yield %v : f32
    } else {
      %z = arith.constant 0.000000e+00 : f32
      affine.yield %z : f32
    } {loopopt.padded}
    %s = arith.addf %x, %y : f32
    affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) {
      affine.store %s, %Y[%i] : memref<10xf32>
    } {loopopt.padded}
    %u = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) -> (f32) {
      %v = affine.load %X[%i] : memref<10xf32>
      affine.yield %v : f32
    } else {
      %z = arith.constant 0.000000e+00 : f32
      affine.yield %z : f32
    } {loopopt.padded}
    %t = arith.addf %u, %s : f32
    affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) {
      affine.store %t, %X[%i] : memref<10xf32>
    } {loopopt.padded}
    %w = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) -> (f32) {
      %v = affine.load %X[%i] : memref<10xf32>
      affine.yield %v : f32
    } else {
      %z = arith.constant 0.000000e+00 : f32
      affine.yield %z : f32
    } {loopopt.padded}
    affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) {
      affine.store %w, %Y[%i] : memref<10xf32>
    } {loopopt.padded}
  } {loopopt.name = "i"}
  return
}

// -----

// NEGATIVE CASES, from here on: each chunk is refused by 'scalar-replace{loop=L arrays=X}'.
// expected-error@unknown {{scalar-replace: no loop named 'L'}}
func.func @no_such_loop(%X: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %X[%i] : memref<8xf32>
    affine.store %v, %X[%i] : memref<8xf32>
  } {loopopt.name = "i"}
  return
}

// -----

func.func @no_such_array(%Y: memref<8xf32>) {
  // expected-error@+1 {{scalar-replace: no array named 'X' is used under loop 'L'}}
  affine.for %i = 0 to 8 {
    %v = affine.load %Y[%i] : memref<8xf32>
    affine.store %v, %Y[%i] : memref<8xf32>
  } {loopopt.name = "L"}
  return
}

// -----

func.func @varies(%X: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    // expected-error@+1 {{scalar-replace: cannot keep X in registers across loop 'L': X[%i, %k] may touch an element kept in registers}}
    affine.for %k = 0 to 7 {
      %v = affine.load %X[%i, %k] : memref<8x8xf32>
      affine.store %v, %X[%i, 0] : memref<8x8xf32>
    } {loopopt.name = "L"}
  }
  return
}

// -----

func.func @shared(%t: index) {
  %X = memref.alloca() : memref<16xf32, 3 : i64>
  %one = arith.constant 1.000000e+00 : f32
  // expected-error@+1 {{scalar-replace: cannot keep X in registers across loop 'L': X is in GPU shared memory}}
  affine.for %k = 0 to 8 {
    %v = affine.load %X[%t] : memref<16xf32, 3 : i64>
    %s = arith.addf %v, %one : f32
    affine.store %s, %X[%t] : memref<16xf32, 3 : i64>
  } {loopopt.name = "L"}
  return
}

// -----

func.func @nested_access(%X: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    // expected-error@+1 {{scalar-replace: cannot keep X in registers across loop 'L': X[%i] is inside loop 'k', not directly in the loop}}
    affine.for %j = 0 to 8 {
      affine.for %k = 0 to 8 {
        %v = affine.load %X[%i] : memref<8xf32>
        affine.store %v, %X[%i] : memref<8xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "L"}
  }
  return
}

// -----

func.func @overlap(%X: memref<8xf32>, %m: index) {
  affine.for %i = 0 to 8 {
    // expected-error@+1 {{scalar-replace: cannot keep X in registers across loop 'L': X[%i] and X[%m] may or may not be the same element}}
    affine.for %k = 0 to 8 {
      %v = affine.load %X[%i] : memref<8xf32>
      affine.store %v, %X[%m] : memref<8xf32>
    } {loopopt.name = "L"}
  }
  return
}

// -----

func.func @padded_escapes(%X: memref<10xf32>, %D: memref<10xf32>) {
  %one = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 12 {
    // expected-error@+1 {{scalar-replace: cannot keep X in registers across loop 'L': a value read from padded X[%i] reaches D[%i]}}
    affine.for %k = 0 to 4 {
      %x = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) -> (f32) {
        %v = affine.load %X[%i] : memref<10xf32>
        affine.yield %v : f32
      } else {
        %z = arith.constant 0.000000e+00 : f32
        affine.yield %z : f32
      } {loopopt.padded}
      %s = arith.addf %x, %one : f32
      affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) {
        affine.store %s, %X[%i] : memref<10xf32>
      } {loopopt.padded}
      affine.store %s, %D[%i] : memref<10xf32>
    } {loopopt.name = "L"}
  }
  return
}

// -----

func.func @padded_and_plain(%X: memref<10xf32>) {
  %one = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 10 {
    // expected-error@+1 {{scalar-replace: cannot keep X in registers across loop 'L': X[%i] and X[%i] are one element, accessed both padded and plain}}
    affine.for %k = 0 to 4 {
      %x = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) -> (f32) {
        %v = affine.load %X[%i] : memref<10xf32>
        affine.yield %v : f32
      } else {
        %z = arith.constant 0.000000e+00 : f32
        affine.yield %z : f32
      } {loopopt.padded}
      %s = arith.addf %x, %one : f32
      affine.store %s, %X[%i] : memref<10xf32>
    } {loopopt.name = "L"}
  }
  return
}

// -----

func.func @padded_conditions_differ(%X: memref<10xf32>) {
  %one = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 12 {
    // expected-error@+1 {{scalar-replace: cannot keep X in registers across loop 'L': X[%i] and X[%i] are one element, padded under different conditions}}
    affine.for %k = 0 to 4 {
      %x = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%i) -> (f32) {
        %v = affine.load %X[%i] : memref<10xf32>
        affine.yield %v : f32
      } else {
        %z = arith.constant 0.000000e+00 : f32
        affine.yield %z : f32
      } {loopopt.padded}
      %s = arith.addf %x, %one : f32
      affine.if affine_set<(d0) : (-d0 + 9 >= 0, -d0 + 7 >= 0)>(%i) {
        affine.store %s, %X[%i] : memref<10xf32>
      } {loopopt.padded}
    } {loopopt.name = "L"}
  }
  return
}

// -----

func.func @padded_guard_varies(%X: memref<10xf32>) {
  %one = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 10 {
    // expected-error@+1 {{scalar-replace: cannot keep X in registers across loop 'L': the guard of padded X[%i] varies with the loop}}
    affine.for %k = 0 to 4 {
      affine.if affine_set<(d0) : (-d0 + 2 >= 0)>(%k) {
        affine.store %one, %X[%i] : memref<10xf32>
      } {loopopt.padded}
    } {loopopt.name = "L"}
  }
  return
}
