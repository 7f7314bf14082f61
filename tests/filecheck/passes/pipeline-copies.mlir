// RUN: loopopt-opt %s -p 'loop-tile{func=matmul tile-sizes=2,2,2},promote{func=matmul loop=k_t arrays=A},loop-unroll{func=matmul unroll-full loop=A_copy_in_1},loop-unroll{func=matmul unroll-full loop=A_copy_in_0},pipeline-copies{func=matmul loop=k_t}' | filecheck %s
// RUN: sed -n '/^\/\/ NEGATIVE CASES/,$p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'pipeline-copies{loop=k_t}'
// RUN: not loopopt-opt %s -p pipeline-copies 2>&1 | filecheck %s --check-prefix=NOLOOP
// NOLOOP: error: pipeline-copies: missing option loop=NAME

// A's 2x2 box under k_t, copies unrolled: the prologue loads the first box, each iteration
// stores the carried values and loads the next box (the last one reloads its own: min).
// CHECK-LABEL: func.func @matmul
// CHECK:         %[[FIRST:.*]] = affine.apply affine_map<() -> (0)> ()
// CHECK-NEXT:    %[[P0:.*]] = affine.load %A[%[[IT:.*]], %[[FIRST]]] : memref<4x6xf32>
// CHECK-NEXT:    %[[P1:.*]] = affine.load %A[%[[IT]], %[[FIRST]] + 1] : memref<4x6xf32>
// CHECK-NEXT:    %[[P2:.*]] = affine.load %A[%[[IT]] + 1, %[[FIRST]]] : memref<4x6xf32>
// CHECK-NEXT:    %[[P3:.*]] = affine.load %A[%[[IT]] + 1, %[[FIRST]] + 1] : memref<4x6xf32>
// CHECK-NEXT:    affine.for %[[KT:.*]] = 0 to 6 step 2 iter_args(%[[V0:.*]] = %[[P0]], %[[V1:.*]] = %[[P1]], %[[V2:.*]] = %[[P2]], %[[V3:.*]] = %[[P3]]) -> (f32, f32, f32, f32) {
// CHECK-NEXT:      %[[BUF:.*]] = memref.alloca() : memref<2x2xf32>
// CHECK-NEXT:      affine.store %[[V0]], %[[BUF]][0, 0]
// CHECK-NEXT:      affine.store %[[V1]], %[[BUF]][0, 1]
// CHECK-NEXT:      affine.store %[[V2]], %[[BUF]][1, 0]
// CHECK-NEXT:      affine.store %[[V3]], %[[BUF]][1, 1]
// CHECK-NEXT:      %[[NEXT:.*]] = affine.min affine_map<(d0) -> ((d0 + 2), 4)> (%[[KT]])
// CHECK-NEXT:      %[[N0:.*]] = affine.load %A[%[[IT]], %[[NEXT]]]
// CHECK-NEXT:      %[[N1:.*]] = affine.load %A[%[[IT]], %[[NEXT]] + 1]
// CHECK-NEXT:      %[[N2:.*]] = affine.load %A[%[[IT]] + 1, %[[NEXT]]]
// CHECK-NEXT:      %[[N3:.*]] = affine.load %A[%[[IT]] + 1, %[[NEXT]] + 1]
// CHECK:           affine.load %[[BUF]]
// CHECK:           affine.yield %[[N0]], %[[N1]], %[[N2]], %[[N3]] : f32, f32, f32, f32
// CHECK-NEXT:    } {loopopt.name = "k_t"}
func.func @matmul(%A: memref<4x6xf32>, %B: memref<6x4xf32>, %C: memref<4x4xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      affine.for %k = 0 to 6 {
        %a = affine.load %A[%i, %k] : memref<4x6xf32>
        %b = affine.load %B[%k, %j] : memref<6x4xf32>
        %c = affine.load %C[%i, %j] : memref<4x4xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<4x4xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// NEGATIVE CASES

// The copy loop is still a loop: no load directly in the body of k_t.
func.func @not_unrolled(%A: memref<8xf32>, %B: memref<8xf32>) {
  // expected-error@+1 {{pipeline-copies: no load of a read-only array directly in loop 'k_t' (unroll the copy loops first: loop-unroll{unroll-full loop=A_copy_in})}}
  affine.for %kt = 0 to 8 step 4 {
    %buf = memref.alloca() : memref<4xf32>
    affine.for %c = 0 to 4 {
      %v = affine.load %A[%kt + %c] : memref<8xf32>
      affine.store %v, %buf[%c] : memref<4xf32>
    } {loopopt.name = "A_copy_in_0", loopopt.copy}
    affine.for %c = 0 to 4 {
      %v = affine.load %buf[%c] : memref<4xf32>
      affine.store %v, %B[%kt + %c] : memref<8xf32>
    }
  } {loopopt.name = "k_t"}
  return
}

// -----

// A is written in the function: loading it one iteration early could read a stale value.
func.func @written(%A: memref<8xf32>) {
  // expected-error@+1 {{pipeline-copies: no load of a read-only array directly in loop 'k_t'}}
  affine.for %kt = 0 to 7 {
    %v = affine.load %A[%kt] : memref<8xf32>
    affine.store %v, %A[%kt + 1] : memref<8xf32>
  } {loopopt.name = "k_t"}
  return
}

// -----

func.func @symbolic(%A: memref<?xf32>, %B: memref<?xf32>, %n: index) {
  // expected-error@+1 {{pipeline-copies: loop 'k_t' needs a constant trip count of at least 1 (peel the partial tiles: loop-peel{full-tiles})}}
  affine.for %kt = 0 to %n {
    %v = affine.load %A[%kt] : memref<?xf32>
    affine.store %v, %B[%kt] : memref<?xf32>
  } {loopopt.name = "k_t"}
  return
}
