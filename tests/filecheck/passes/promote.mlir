// RUN: loopopt-opt %s -p 'promote{func=matmul loop=k_t arrays=A,B},promote{func=matmul loop=j_t arrays=C}' | filecheck %s --check-prefix=MATMUL
// RUN: loopopt-opt %s -p 'promote{func=conv2d loop=j_t arrays=I}' | filecheck %s --check-prefix=CONV
// RUN: loopopt-opt %s -p 'promote{func=stencil loop=i_t}' | filecheck %s --check-prefix=STENCIL
// RUN: loopopt-opt %s -p 'promote{func=transpose loop=j_t memory-space=shared}' | filecheck %s --check-prefix=SHARED
// RUN: loopopt-opt %s -p 'promote{func=matmul loop=k_t arrays=B memory-space=shared},promote{func=transpose loop=j_t arrays=A pad=3}' | filecheck %s --check-prefix=PAD
// RUN: loopopt-opt %s -p 'promote{func=matmul loop=k_t arrays=A memory-space=shared transpose pad=4}' | filecheck %s --check-prefix=TRANSPOSE
// RUN: sed -n '/^\/\/ NEGATIVE CASES/,$p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'promote{loop=L arrays=X}'
// RUN: loopopt-opt %s -p 'promote{func=matmul loop=k_t arrays=A,B memory-space=shared swizzle}' | filecheck %s --check-prefix=SWIZZLE
// RUN: not loopopt-opt %s -p 'promote{func=matmul loop=k_t arrays=B swizzle pad=4}' 2>&1 | filecheck %s --check-prefix=SWIZZLEPAD
// SWIZZLEPAD: error: promote: swizzle and pad=4 exclude each other
// RUN: not loopopt-opt %s -p 'promote{func=conv2d loop=j_t arrays=I swizzle}' 2>&1 | filecheck %s --check-prefix=SWIZZLEROWS
// SWIZZLEROWS: error: promote: cannot swizzle the buffer of I under 'j_t': its rows of 6 elements are not a whole number of at least two 16-byte chunks
// RUN: not loopopt-opt %s -p promote 2>&1 | filecheck %s --check-prefix=NOLOOP
// RUN: not loopopt-opt %s -p 'promote{loop=i_t memory-space=global}' 2>&1 | filecheck %s --check-prefix=SPACE
// NOLOOP: error: promote: missing option loop=NAME
// RUN: loopopt-opt %s -p 'promote{func=aat loop=k_t arrays=A memory-space=shared indexed-by=i},promote{func=aat loop=k_t arrays=A memory-space=shared indexed-by=j}' | filecheck %s --check-prefix=OPERANDS
// RUN: not loopopt-opt %s -p 'promote{func=aat loop=k_t arrays=A indexed-by=k_t}' 2>&1 | filecheck %s --check-prefix=NOACCESS
// RUN: not loopopt-opt %s -p 'promote{func=aat loop=k_t arrays=C indexed-by=i}' 2>&1 | filecheck %s --check-prefix=WRITTEN
// NOACCESS: error: promote: no access of 'A' under loop 'k_t' is indexed by loop(s) k_t
// WRITTEN: error: promote: 'C' under loop 'k_t' is written there: a part of its accesses cannot be promoted apart
// SPACE: error: promote: memory-space must be local or shared, not 'global'

// Hand-tiled matmul 40x40x20, tiles 32x32x8, point loops clipped with min (partial tiles).
// A (32x8) and B (8x32) are promoted under k_t, C (32x32) under j_t: C is read and written, so
// it is copied in before k_t and back after it. Copies are clipped to the array like the tiles.
// The buffers of an iteration of k_t (j_t) are written at the function's entry, paired with the
// loop by loopopt.scope (upstream's lowering would allocate them anew in every iteration).
// MATMUL-LABEL: func.func @matmul
// MATMUL-NEXT:  %[[CBUF:.*]] = memref.alloca() {loopopt.scope = [[JSCOPE:[0-9]+]] : i64} : memref<32x32xf32>
// MATMUL-NEXT:  %[[ABUF:.*]] = memref.alloca() {loopopt.scope = [[KSCOPE:[0-9]+]] : i64} : memref<32x8xf32>
// MATMUL-NEXT:  %[[BBUF:.*]] = memref.alloca() {loopopt.scope = [[KSCOPE]] : i64} : memref<8x32xf32>
// MATMUL-NEXT:  affine.for %[[IT:.*]] = 0 to 40 step 32 {
// MATMUL-NEXT:    affine.for %[[JT:.*]] = 0 to 40 step 32 {
// MATMUL-NEXT:      affine.for %[[C0:.*]] = 0 to min affine_map<(d0) -> (32, ((d0 * -1) + 40))>(%[[IT]]) {
// MATMUL-NEXT:        affine.for %[[C1:.*]] = 0 to min affine_map<(d0) -> (32, ((d0 * -1) + 40))>(%[[JT]]) {
// MATMUL-NEXT:          %[[V:.*]] = affine.load %C[%[[IT]] + %[[C0]], %[[JT]] + %[[C1]]] : memref<40x40xf32>
// MATMUL-NEXT:          affine.store %[[V]], %[[CBUF]][%[[C0]], %[[C1]]] : memref<32x32xf32>
// MATMUL-NEXT:        } {loopopt.name = "C_copy_in_1", loopopt.copy}
// MATMUL-NEXT:      } {loopopt.name = "C_copy_in_0", loopopt.copy}
// MATMUL-NEXT:      affine.for %[[KT:.*]] = 0 to 20 step 8 {
// MATMUL-NEXT:        affine.for %[[A0:.*]] = 0 to min affine_map<(d0) -> (32, ((d0 * -1) + 40))>(%[[IT]]) {
// MATMUL-NEXT:          affine.for %[[A1:.*]] = 0 to min affine_map<(d0) -> (8, ((d0 * -1) + 20))>(%[[KT]]) {
// MATMUL-NEXT:            %[[W:.*]] = affine.load %A[%[[IT]] + %[[A0]], %[[KT]] + %[[A1]]] : memref<40x20xf32>
// MATMUL-NEXT:            affine.store %[[W]], %[[ABUF]][%[[A0]], %[[A1]]] : memref<32x8xf32>
// MATMUL-NEXT:          } {loopopt.name = "A_copy_in_1", loopopt.copy}
// MATMUL-NEXT:        } {loopopt.name = "A_copy_in_0", loopopt.copy}
// MATMUL-NEXT:        affine.for %{{.*}} = 0 to min
// MATMUL:             } {loopopt.name = "B_copy_in_0", loopopt.copy}
// MATMUL-NEXT:        affine.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IT]]) to
// MATMUL-NEXT:          affine.for %[[J:.*]] = affine_map<(d0) -> (d0)>(%[[JT]]) to
// MATMUL-NEXT:            affine.for %[[K:.*]] = affine_map<(d0) -> (d0)>(%[[KT]]) to
// MATMUL-NEXT:              affine.load %[[ABUF]][%[[I]] + %[[IT]] * -1, %[[K]] + %[[KT]] * -1] : memref<32x8xf32>
// MATMUL-NEXT:              affine.load %[[BBUF]][%[[K]] + %[[KT]] * -1, %[[J]] + %[[JT]] * -1] : memref<8x32xf32>
// MATMUL-NEXT:              affine.load %[[CBUF]][%[[I]] + %[[IT]] * -1, %[[J]] + %[[JT]] * -1] : memref<32x32xf32>
// MATMUL:                   affine.store %{{.*}}, %[[CBUF]][%[[I]] + %[[IT]] * -1, %[[J]] + %[[JT]] * -1] : memref<32x32xf32>
// MATMUL:             } {loopopt.name = "i"}
// MATMUL-NEXT:      } {loopopt.name = "k_t", loopopt.scope = [[KSCOPE]] : i64}
// MATMUL-NEXT:      affine.for %[[O0:.*]] = 0 to min affine_map<(d0) -> (32, ((d0 * -1) + 40))>(%[[IT]]) {
// MATMUL-NEXT:        affine.for %[[O1:.*]] = 0 to min affine_map<(d0) -> (32, ((d0 * -1) + 40))>(%[[JT]]) {
// MATMUL-NEXT:          %[[R:.*]] = affine.load %[[CBUF]][%[[O0]], %[[O1]]] : memref<32x32xf32>
// MATMUL-NEXT:          affine.store %[[R]], %C[%[[IT]] + %[[O0]], %[[JT]] + %[[O1]]] : memref<40x40xf32>
// MATMUL-NEXT:        } {loopopt.name = "C_copy_out_1", loopopt.copy}
// MATMUL-NEXT:      } {loopopt.name = "C_copy_out_0", loopopt.copy}
// MATMUL-NEXT:    } {loopopt.name = "j_t", loopopt.scope = [[JSCOPE]] : i64}
// Shared memory: B's innermost extent 32 gets a padding of 1 (bank conflicts), in address space 3.
// A (32x8 box of A[i, k]) stored k-major: A_shared[k - kt, i - it], rows padded to 36 floats
// (16-byte aligned); the copy loops keep A's order (contiguous global reads).
// TRANSPOSE-LABEL: func.func @matmul
// swizzle: no padding; rows of 8 floats (two 16-byte chunks) permute their chunks by row mod 2,
// rows of 32 (eight chunks) by row mod 8; the accesses keep their logical indices (the
// lowering swizzles them: lowering/swizzle.py).
// SWIZZLE-LABEL: func.func @matmul
// SWIZZLE:         %[[A:.*]] = memref.alloca() {{.*}} : memref<32x8xf32, #loopopt.swizzle<4, 2>, 3 : i64>
// SWIZZLE-NEXT:    %[[B:.*]] = memref.alloca() {{.*}} : memref<8x32xf32, #loopopt.swizzle<4, 8>, 3 : i64>
// SWIZZLE:         affine.load %[[A]][%{{.*}} + %{{.*}} * -1, %{{.*}} + %{{.*}} * -1] : memref<32x8xf32, #loopopt.swizzle<4, 2>, 3 : i64>
// SWIZZLE-NEXT:    affine.load %[[B]][%{{.*}} + %{{.*}} * -1, %{{.*}} + %{{.*}} * -1] : memref<8x32xf32, #loopopt.swizzle<4, 8>, 3 : i64>

// TRANSPOSE:         %[[BUF:.*]] = memref.alloca() {loopopt.scope = {{[0-9]+}} : i64} : memref<8x36xf32, 3 : i64>
// TRANSPOSE:         affine.for %[[A0:.*]] = 0 to min affine_map<(d0) -> (32, ((d0 * -1) + 40))>(%{{.*}}) {
// TRANSPOSE-NEXT:      affine.for %[[A1:.*]] = 0 to min affine_map<(d0) -> (8, ((d0 * -1) + 20))>(%{{.*}}) {
// TRANSPOSE-NEXT:        %[[V:.*]] = affine.load %A[%{{.*}} + %[[A0]], %{{.*}} + %[[A1]]] : memref<40x20xf32>
// TRANSPOSE-NEXT:        affine.store %[[V]], %[[BUF]][%[[A1]], %[[A0]]] : memref<8x36xf32, 3 : i64>
// TRANSPOSE:         affine.load %[[BUF]][%[[K:.*]] + %[[KT:.*]] * -1, %[[I:.*]] + %[[IT:.*]] * -1] : memref<8x36xf32, 3 : i64>

// PAD-LABEL: func.func @matmul
// PAD:         memref.alloca() {loopopt.scope = {{[0-9]+}} : i64} : memref<8x33xf32, 3 : i64>
// PAD-NOT:     memref.alloca
// PAD-LABEL: func.func @transpose
// PAD:         %[[BUF:.*]] = memref.alloca() {loopopt.scope = {{[0-9]+}} : i64} : memref<32x35xf32>
// PAD:         affine.load %[[BUF]][%{{.*}}, %{{.*}}] : memref<32x35xf32>
// PAD-NOT:     memref.alloca
func.func @matmul(%A: memref<40x20xf32>, %B: memref<20x40xf32>, %C: memref<40x40xf32>) {
  affine.for %it = 0 to 40 step 32 {
    affine.for %jt = 0 to 40 step 32 {
      affine.for %kt = 0 to 20 step 8 {
        affine.for %i = affine_map<(d0) -> (d0)>(%it) to min affine_map<(d0) -> (d0 + 32, 40)>(%it) {
          affine.for %j = affine_map<(d0) -> (d0)>(%jt) to min affine_map<(d0) -> (d0 + 32, 40)>(%jt) {
            affine.for %k = affine_map<(d0) -> (d0)>(%kt) to min affine_map<(d0) -> (d0 + 8, 20)>(%kt) {
              %a = affine.load %A[%i, %k] : memref<40x20xf32>
              %b = affine.load %B[%k, %j] : memref<20x40xf32>
              %c = affine.load %C[%i, %j] : memref<40x40xf32>
              %p = arith.mulf %a, %b : f32
              %s = arith.addf %c, %p : f32
              affine.store %s, %C[%i, %j] : memref<40x40xf32>
            } {loopopt.name = "k"}
          } {loopopt.name = "j"}
        } {loopopt.name = "i"}
      } {loopopt.name = "k_t"}
    } {loopopt.name = "j_t"}
  } {loopopt.name = "i_t"}
  return
}

// -----

// Convolution: a 4x4 output tile reads a 6x6 input window (a halo of 2 for the 3x3 filter).
// CONV-LABEL: func.func @conv2d
// CONV-NEXT:    %[[BUF:.*]] = memref.alloca() {loopopt.scope = [[SCOPE:[0-9]+]] : i64} : memref<6x6xf32>
// CONV-NEXT:    affine.for %[[IT:.*]] = 0 to 13 step 4 {
// CONV-NEXT:      affine.for %[[JT:.*]] = 0 to 11 step 4 {
// CONV-NEXT:        affine.for %[[C0:.*]] = 0 to min affine_map<(d0) -> (6, ((d0 * -1) + 15))>(%[[IT]]) {
// CONV-NEXT:          affine.for %[[C1:.*]] = 0 to min affine_map<(d0) -> (6, ((d0 * -1) + 13))>(%[[JT]]) {
// CONV-NEXT:            %[[V:.*]] = affine.load %I[%[[IT]] + %[[C0]], %[[JT]] + %[[C1]]] : memref<15x13xf32>
// CONV-NEXT:            affine.store %[[V]], %[[BUF]][%[[C0]], %[[C1]]] : memref<6x6xf32>
// CONV:             affine.for %[[I:.*]] = affine_map
// CONV-NEXT:          affine.for %[[J:.*]] = affine_map
// CONV-NEXT:            affine.for %[[P:.*]] = 0 to 3 {
// CONV-NEXT:              affine.for %[[Q:.*]] = 0 to 3 {
// CONV-NEXT:                affine.load %[[BUF]][%[[I]] + %[[P]] + %[[IT]] * -1, %[[J]] + %[[Q]] + %[[JT]] * -1] : memref<6x6xf32>
// CONV-NEXT:                affine.load %F[%[[P]], %[[Q]]]
// CONV-NOT:     copy_out
// CONV:           } {loopopt.name = "j_t", loopopt.scope = [[SCOPE]] : i64}
func.func @conv2d(%I: memref<15x13xf32>, %F: memref<3x3xf32>, %O: memref<13x11xf32>) {
  affine.for %it = 0 to 13 step 4 {
    affine.for %jt = 0 to 11 step 4 {
      affine.for %i = affine_map<(d0) -> (d0)>(%it) to min affine_map<(d0) -> (d0 + 4, 13)>(%it) {
        affine.for %j = affine_map<(d0) -> (d0)>(%jt) to min affine_map<(d0) -> (d0 + 4, 11)>(%jt) {
          affine.for %p = 0 to 3 {
            affine.for %q = 0 to 3 {
              %x = affine.load %I[%i + %p, %j + %q] : memref<15x13xf32>
              %f = affine.load %F[%p, %q] : memref<3x3xf32>
              %o = affine.load %O[%i, %j] : memref<13x11xf32>
              %m = arith.mulf %x, %f : f32
              %s = arith.addf %o, %m : f32
              affine.store %s, %O[%i, %j] : memref<13x11xf32>
            } {loopopt.name = "q"}
          } {loopopt.name = "p"}
        } {loopopt.name = "j"}
      } {loopopt.name = "i"}
    } {loopopt.name = "j_t"}
  } {loopopt.name = "i_t"}
  return
}

// -----

// 3-point stencil, tiles of 8 from 1: A's window is [it - 1, it + 9), 10 elements; B is only
// written, so it is copied back (its exact written region) but never copied in.
// STENCIL-LABEL: func.func @stencil
// STENCIL-NEXT:    %[[ABUF:.*]] = memref.alloca() {loopopt.scope = [[SCOPE:[0-9]+]] : i64} : memref<10xf32>
// STENCIL-NEXT:    %[[BBUF:.*]] = memref.alloca() {loopopt.scope = [[SCOPE]] : i64} : memref<8xf32>
// STENCIL-NEXT:    affine.for %[[IT:.*]] = 1 to 63 step 8 {
// STENCIL-NEXT:      affine.for %[[C:.*]] = 0 to min affine_map<(d0) -> (10, ((d0 * -1) + 65))>(%[[IT]]) {
// STENCIL-NEXT:        %[[V:.*]] = affine.load %A[%[[IT]] + %[[C]] + -1] : memref<64xf32>
// STENCIL-NEXT:        affine.store %[[V]], %[[ABUF]][%[[C]]] : memref<10xf32>
// STENCIL-NEXT:      } {loopopt.name = "A_copy_in_0", loopopt.copy}
// STENCIL-NEXT:      affine.for %[[I:.*]] = affine_map
// STENCIL-NEXT:        affine.load %[[ABUF]][%[[I]] + %[[IT]] * -1] : memref<10xf32>
// STENCIL-NEXT:        affine.load %[[ABUF]][%[[I]] + %[[IT]] * -1 + 1] : memref<10xf32>
// STENCIL-NEXT:        affine.load %[[ABUF]][%[[I]] + %[[IT]] * -1 + 2] : memref<10xf32>
// STENCIL:             affine.store %{{.*}}, %[[BBUF]][%[[I]] + %[[IT]] * -1] : memref<8xf32>
// STENCIL-NEXT:      } {loopopt.name = "i"}
// STENCIL-NEXT:      affine.for %[[O:.*]] = 0 to min affine_map<(d0) -> (8, ((d0 * -1) + 63))>(%[[IT]]) {
// STENCIL-NEXT:        %[[R:.*]] = affine.load %[[BBUF]][%[[O]]] : memref<8xf32>
// STENCIL-NEXT:        affine.store %[[R]], %B[%[[IT]] + %[[O]]] : memref<64xf32>
// STENCIL-NEXT:      } {loopopt.name = "B_copy_out_0", loopopt.copy}
// STENCIL-NEXT:    } {loopopt.name = "i_t", loopopt.scope = [[SCOPE]] : i64}
// STENCIL-NOT:       B_copy_in
func.func @stencil(%A: memref<64xf32>, %B: memref<64xf32>) {
  affine.for %it = 1 to 63 step 8 {
    affine.for %i = affine_map<(d0) -> (d0)>(%it) to min affine_map<(d0) -> (d0 + 8, 63)>(%it) {
      %l = affine.load %A[%i - 1] : memref<64xf32>
      %c = affine.load %A[%i] : memref<64xf32>
      %r = affine.load %A[%i + 1] : memref<64xf32>
      %s0 = arith.addf %l, %c : f32
      %s1 = arith.addf %s0, %r : f32
      affine.store %s1, %B[%i] : memref<64xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "i_t"}
  return
}

// -----

// Shared memory (address space 3), full tiles: no guards; innermost extent 32 -> padding 1.
// SHARED-LABEL: func.func @transpose
// SHARED-NEXT:    %[[ABUF:.*]] = memref.alloca() {loopopt.scope = [[SCOPE:[0-9]+]] : i64} : memref<32x33xf32, 3 : i64>
// SHARED-NEXT:    %[[BBUF:.*]] = memref.alloca() {loopopt.scope = [[SCOPE]] : i64} : memref<32x33xf32, 3 : i64>
// SHARED-NEXT:    affine.for %[[IT:.*]] = 0 to 64 step 32 {
// SHARED-NEXT:      affine.for %[[JT:.*]] = 0 to 64 step 32 {
// SHARED-NEXT:        affine.for %[[C0:.*]] = 0 to 32 {
// SHARED-NEXT:          affine.for %[[C1:.*]] = 0 to 32 {
// SHARED-NEXT:            %[[V:.*]] = affine.load %A[%[[JT]] + %[[C0]], %[[IT]] + %[[C1]]] : memref<64x64xf32>
// SHARED-NEXT:            affine.store %[[V]], %[[ABUF]][%[[C0]], %[[C1]]] : memref<32x33xf32, 3 : i64>
// SHARED:                 affine.load %[[ABUF]][%{{.*}} + %[[JT]] * -1, %{{.*}} + %[[IT]] * -1] : memref<32x33xf32, 3 : i64>
// SHARED-NEXT:            affine.store %{{.*}}, %[[BBUF]]
// SHARED:             } {loopopt.name = "B_copy_out_0", loopopt.copy}
func.func @transpose(%A: memref<64x64xf32>, %B: memref<64x64xf32>) {
  affine.for %it = 0 to 64 step 32 {
    affine.for %jt = 0 to 64 step 32 {
      affine.for %i = affine_map<(d0) -> (d0)>(%it) to affine_map<(d0) -> (d0 + 32)>(%it) {
        affine.for %j = affine_map<(d0) -> (d0)>(%jt) to affine_map<(d0) -> (d0 + 32)>(%jt) {
          %a = affine.load %A[%j, %i] : memref<64x64xf32>
          affine.store %a, %B[%i, %j] : memref<64x64xf32>
        } {loopopt.name = "j"}
      } {loopopt.name = "i"}
    } {loopopt.name = "j_t"}
  } {loopopt.name = "i_t"}
  return
}

// -----

// C[i, j] += A[i, k] * A[j, k] (AAᵀ, syrk's product): A is read on both sides, each read gets
// a buffer of its own (A_i_shared: rows i_t.., A_j_shared: rows j_t..), copy loops named so.
// OPERANDS-LABEL: func.func @aat
// OPERANDS-DAG:  %[[AI:.*]] = memref.alloca() {{.*}} : memref<16x8xf32, 3 : i64>
// OPERANDS-DAG:  %[[AJ:.*]] = memref.alloca() {{.*}} : memref<16x8xf32, 3 : i64>
// OPERANDS:      affine.for %[[IT:.*]] = 0 to 37 step 16 {
// OPERANDS-NEXT:   affine.for %[[JT:.*]] = 0 to 29 step 16 {
// OPERANDS-NEXT:     affine.for %[[KT:.*]] = 0 to 23 step 8 {
// OPERANDS:            affine.load %A[%[[JT]] + %{{.*}}, %[[KT]] + %{{.*}}] : memref<37x23xf32>
// OPERANDS:          } {loopopt.name = "A_j_copy_in_0", loopopt.copy}
// OPERANDS:            affine.load %A[%[[IT]] + %{{.*}}, %[[KT]] + %{{.*}}] : memref<37x23xf32>
// OPERANDS:          } {loopopt.name = "A_i_copy_in_0", loopopt.copy}
// OPERANDS:              affine.load %[[AI]][%[[I:.*]] + %[[IT]] * -1, %[[K:.*]] + %[[KT]] * -1]
// OPERANDS:              affine.load %[[AJ]][%[[J:.*]] + %[[JT]] * -1, %[[K]] + %[[KT]] * -1]
// OPERANDS-NOT:          affine.load %A
func.func @aat(%C: memref<37x29xf32>, %A: memref<37x23xf32>) {
  affine.for %it = 0 to 37 step 16 {
    affine.for %jt = 0 to 29 step 16 {
      affine.for %kt = 0 to 23 step 8 {
        affine.for %i = affine_map<(d0) -> (d0)>(%it) to min affine_map<(d0) -> (d0 + 16, 37)>(%it) {
          affine.for %j = affine_map<(d0) -> (d0)>(%jt) to min affine_map<(d0) -> (d0 + 16, 29)>(%jt) {
            affine.for %k = affine_map<(d0) -> (d0)>(%kt) to min affine_map<(d0) -> (d0 + 8, 23)>(%kt) {
              %c = affine.load %C[%i, %j] : memref<37x29xf32>
              %x = affine.load %A[%i, %k] : memref<37x23xf32>
              %y = affine.load %A[%j, %k] : memref<37x23xf32>
              %p = arith.mulf %x, %y : f32
              %s = arith.addf %c, %p : f32
              affine.store %s, %C[%i, %j] : memref<37x29xf32>
            } {loopopt.name = "k"}
          } {loopopt.name = "j"}
        } {loopopt.name = "i"}
      } {loopopt.name = "k_t"}
    } {loopopt.name = "j_t"}
  } {loopopt.name = "i_t"}
  func.return
}

// -----

// NEGATIVE CASES, from here on: each chunk is refused by 'promote{loop=L arrays=X}'.
// expected-error@unknown {{promote: no loop named 'L'}}
func.func @no_such_loop(%X: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %X[%i] : memref<8xf32>
    affine.store %v, %X[%i] : memref<8xf32>
  } {loopopt.name = "i"}
  return
}

// -----

func.func @no_such_array(%Y: memref<8xf32>) {
  // expected-error@+1 {{promote: no array named 'X' is used under loop 'L'}}
  affine.for %i = 0 to 8 {
    %v = affine.load %Y[%i] : memref<8xf32>
    affine.store %v, %Y[%i] : memref<8xf32>
  } {loopopt.name = "L"}
  return
}

// -----

func.func @non_affine_op(%X: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    // expected-error@+1 {{promote: 'X' under loop 'L' is accessed by 'memref.load', not an affine access}}
    %v = memref.load %X[%i] : memref<8xf32>
    affine.store %v, %X[%i] : memref<8xf32>
  } {loopopt.name = "L"}
  return
}

// -----

func.func @non_affine_index(%X: memref<8xf32>) {
  %one = arith.constant 1 : index
  affine.for %i = 0 to 7 {
    %j = arith.addi %i, %one : index
    // expected-error@+1 {{promote: 'X' under loop 'L' has a non-affine index (defined by arith.addi)}}
    %v = affine.load %X[%j] : memref<8xf32>
    affine.store %v, %X[%i] : memref<8xf32>
  } {loopopt.name = "L"}
  return
}

// -----

func.func @unbounded(%X: memref<?xf32>, %n: index) {
  // expected-error@+1 {{promote: 'X' under loop 'L': the footprint's extent in dimension 0 is not bounded by a constant}}
  affine.for %t = 0 to 4 {
    affine.for %i = 0 to %n {
      %v = affine.load %X[%i] : memref<?xf32>
      affine.store %v, %X[%i] : memref<?xf32>
    }
  } {loopopt.name = "L"}
  return
}

// -----

func.func @aliased(%X: memref<8xf32>) {
  %V = "memref.cast"(%X) : (memref<8xf32>) -> memref<?xf32>
  affine.for %i = 0 to 8 {
    %v = affine.load %X[%i] : memref<8xf32>
    // expected-error@+1 {{promote: 'X' under loop 'L' may alias 'V' (a view of the same memref), and one of them is written}}
    affine.store %v, %V[%i] : memref<?xf32>
  } {loopopt.name = "L"}
  return
}
