// RUN: loopopt-opt %s -p 'loop-tile{func=matmul tile-sizes=2,2,2},promote{func=matmul loop=k_t arrays=A},loop-unroll{func=matmul unroll-full loop=A_copy_in_1},loop-unroll{func=matmul unroll-full loop=A_copy_in_0},pipeline-copies{func=matmul loop=k_t}' | filecheck %s
// RUN: sed -n '/^\/\/ NEGATIVE CASES/,/^\/\/ ASYNC NEGATIVE CASES/p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'pipeline-copies{loop=k_t}'
// RUN: not loopopt-opt %s -p pipeline-copies 2>&1 | filecheck %s --check-prefix=NOLOOP
// NOLOOP: error: pipeline-copies: missing option loop=NAME
// RUN: loopopt-opt %s -p 'pipeline-copies{func=rows_k0 loop=k_t stages=3 async}' | filecheck %s --check-prefix=ASYNC
// RUN: loopopt-opt %s -p 'pipeline-copies{func=rows_k0 loop=k_t stages=2 async},pipeline-copies{func=cols_k0 loop=k_t stages=2 async}' | filecheck %s --check-prefix=TWO
// RUN: loopopt-opt %s -p 'pipeline-copies{func=padded_k0 loop=k_t stages=3 async},pipeline-copies{func=padded63_k0 loop=k_t stages=3 async},pipeline-copies{func=guarded_k0 loop=k_t stages=2 async},pipeline-copies{func=mixed_k0 loop=k_t stages=3 async}' | filecheck %s --check-prefix=FILL
// RUN: sed -n '/^\/\/ ASYNC NEGATIVE CASES/,$p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'pipeline-copies{loop=k_t stages=3 async}'
// RUN: not loopopt-opt %s -p 'pipeline-copies{loop=k_t stages=1 async}' 2>&1 | filecheck %s --check-prefix=STAGES1
// STAGES1: error: pipeline-copies: stages=1: at least 2 are needed
// RUN: not loopopt-opt %s -p 'pipeline-copies{loop=k_t stages=3}' 2>&1 | filecheck %s --check-prefix=STAGES3
// STAGES3: error: pipeline-copies: stages=3 needs async (registers hold one tile)

// A's 2x2 box under k_t, copies unrolled: the prologue loads the first box, each iteration
// stores the carried values and loads the next box (the last one reloads its own: min).
// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    %[[BUF:.*]] = memref.alloca() {loopopt.scope = [[SCOPE:[0-9]+]] : i64} : memref<2x2xf32>
// CHECK:         %[[FIRST:.*]] = affine.apply affine_map<() -> (0)> ()
// CHECK-NEXT:    %[[P0:.*]] = affine.load %A[%[[IT:.*]], %[[FIRST]]] : memref<4x6xf32>
// CHECK-NEXT:    %[[P1:.*]] = affine.load %A[%[[IT]], %[[FIRST]] + 1] : memref<4x6xf32>
// CHECK-NEXT:    %[[P2:.*]] = affine.load %A[%[[IT]] + 1, %[[FIRST]]] : memref<4x6xf32>
// CHECK-NEXT:    %[[P3:.*]] = affine.load %A[%[[IT]] + 1, %[[FIRST]] + 1] : memref<4x6xf32>
// CHECK-NEXT:    affine.for %[[KT:.*]] = 0 to 6 step 2 iter_args(%[[V0:.*]] = %[[P0]], %[[V1:.*]] = %[[P1]], %[[V2:.*]] = %[[P2]], %[[V3:.*]] = %[[P3]]) -> (f32, f32, f32, f32) {
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
// CHECK-NEXT:    } {loopopt.name = "k_t", loopopt.scope = [[SCOPE]] : i64}
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

// async: A's 4 lanes per thread (16 consecutive, 16-byte aligned bytes) become one 16-byte
// cp.async.cg into a ring of 3 tiles; the prologue issues tiles 0 and 1, each iteration waits
// for its tile, then (after the barrier) issues the tile 2 ahead into the stage tile t-1 used,
// and reads its own stage. Only the ring is shared: the trailing barrier goes.
// ASYNC-LABEL: gpu.func @rows_k0
// ASYNC:         %[[RING:.*]] = memref.alloca() : memref<3x4x16xf32, 3 : i64>
// ASYNC:         %[[S0:.*]] = arith.constant 0 : index
// ASYNC:         %[[C:.*]] = affine.apply affine_map<(d0) -> ((d0 + ((d0 floordiv 16) * -16)))>
// ASYNC:         %{{.*}} = nvgpu.device_async_copy %A[%{{.*}}, %{{.*}}], %[[RING]][%[[S0]], %{{.*}}, %[[C]]], 4 {bypassL1} : memref<4x64xf32> to memref<3x4x16xf32, 3 : i64>
// ASYNC-NEXT:    %{{.*}} = nvgpu.device_async_create_group
// ASYNC:         %[[S1:.*]] = arith.constant 1 : index
// ASYNC:         %{{.*}} = nvgpu.device_async_copy %A[{{.*}}], %[[RING]][%[[S1]], {{.*}}], 4 {bypassL1}
// ASYNC-NEXT:    %{{.*}} = nvgpu.device_async_create_group
// ASYNC-NOT:     nvgpu.device_async_copy
// ASYNC:         affine.for %[[KT:.*]] = 0 to 64 step 16 {
// ASYNC-NEXT:      %[[STAGE:.*]] = affine.apply affine_map<(d0) -> (((d0 floordiv 16) + (((d0 floordiv 16) floordiv 3) * -3)))> (%[[KT]])
// ASYNC-NEXT:      nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// ASYNC-NEXT:      gpu.barrier
// ASYNC-NEXT:      %[[AHEAD:.*]] = affine.min affine_map<(d0) -> ((d0 + 32), 48)> (%[[KT]])
// ASYNC-NEXT:      %[[ASTAGE:.*]] = affine.apply affine_map<(d0) -> ((((d0 floordiv 16) + ((((d0 floordiv 16) + 2) floordiv 3) * -3)) + 2))> (%[[KT]])
// ASYNC:           %[[COL:.*]] = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%[[AHEAD]], %{{.*}})
// ASYNC-NEXT:      %{{.*}} = nvgpu.device_async_copy %A[%{{.*}}, %[[COL]]], %[[RING]][%[[ASTAGE]], %{{.*}}, %{{.*}}], 4 {bypassL1}
// ASYNC-NEXT:      %{{.*}} = nvgpu.device_async_create_group
// ASYNC-NEXT:      affine.for %[[I:.*]] = 0 to 4 {
// ASYNC-NEXT:        affine.load %[[RING]][%[[STAGE]], %[[I]], %tx] : memref<3x4x16xf32, 3 : i64>
// ASYNC:           } {loopopt.name = "i"}
// ASYNC-NEXT:    } {loopopt.name = "k_t"}
// ASYNC-NEXT:    nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
gpu.module @kernels {
  gpu.func @rows_k0(%A: memref<4x64xf32>, %C: memref<4x64xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>, loopopt.pointer_align = 16 : i32} {
    %tx = gpu.thread_id x
    %A_shared = memref.alloca() : memref<4x16xf32, 3>
    affine.for %k_t = 0 to 64 step 16 {
      %e = affine.apply affine_map<(d0) -> (d0 * 4)> (%tx)
      %r = affine.apply affine_map<(d0) -> (d0 floordiv 16)> (%e)
      %c0 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16)> (%e)
      %v0 = affine.load %A[%r, %k_t + %c0] : memref<4x64xf32>
      affine.store %v0, %A_shared[%r, %c0] : memref<4x16xf32, 3>
      %c1 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 1)> (%e)
      %v1 = affine.load %A[%r, %k_t + %c1] : memref<4x64xf32>
      affine.store %v1, %A_shared[%r, %c1] : memref<4x16xf32, 3>
      %c2 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 2)> (%e)
      %v2 = affine.load %A[%r, %k_t + %c2] : memref<4x64xf32>
      affine.store %v2, %A_shared[%r, %c2] : memref<4x16xf32, 3>
      %c3 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 3)> (%e)
      %v3 = affine.load %A[%r, %k_t + %c3] : memref<4x64xf32>
      affine.store %v3, %A_shared[%r, %c3] : memref<4x16xf32, 3>
      gpu.barrier
      affine.for %i = 0 to 4 {
        %v = affine.load %A_shared[%i, %tx] : memref<4x16xf32, 3>
        affine.store %v, %C[%i, %k_t + %tx] : memref<4x64xf32>
      } {loopopt.name = "i"}
      gpu.barrier
    } {loopopt.name = "k_t"}
    gpu.return
  }
}

// Two stages: wait for everything (wait.group 0) and issue the next tile into the other stage.
// Without the kernel's pointer alignment (no copy-vector), the lanes stay 4-byte copies (.ca).
// TWO-LABEL: gpu.func @rows_k0
// TWO:         affine.for %[[KT:.*]] = 0 to 64 step 16 {
// TWO:           nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// TWO-NEXT:      gpu.barrier
// TWO-NEXT:      affine.min affine_map<(d0) -> ((d0 + 16), 48)> (%[[KT]])
// TWO:           %{{.*}} = nvgpu.device_async_copy {{.*}}, 4 {bypassL1}
// TWO-LABEL: gpu.func @cols_k0
// TWO-COUNT-4:   %{{.*}} = nvgpu.device_async_copy %A[{{.*}}], %A_shared[{{.*}}], 1 : memref<4x64xf32> to memref<2x4x16xf32, 3 : i64>
// TWO-NEXT:      %{{.*}} = nvgpu.device_async_create_group
// TWO:           affine.for
// TWO-COUNT-4:     %{{.*}} = nvgpu.device_async_copy {{.*}}, 1 :
gpu.module @kernels_cols {
  gpu.func @cols_k0(%A: memref<4x64xf32>, %C: memref<4x64xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
    %tx = gpu.thread_id x
    %A_shared = memref.alloca() : memref<4x16xf32, 3>
    affine.for %k_t = 0 to 64 step 16 {
      %e = affine.apply affine_map<(d0) -> (d0 * 4)> (%tx)
      %r = affine.apply affine_map<(d0) -> (d0 floordiv 16)> (%e)
      %c0 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16)> (%e)
      %v0 = affine.load %A[%r, %k_t + %c0] : memref<4x64xf32>
      affine.store %v0, %A_shared[%r, %c0] : memref<4x16xf32, 3>
      %c1 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 1)> (%e)
      %v1 = affine.load %A[%r, %k_t + %c1] : memref<4x64xf32>
      affine.store %v1, %A_shared[%r, %c1] : memref<4x16xf32, 3>
      %c2 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 2)> (%e)
      %v2 = affine.load %A[%r, %k_t + %c2] : memref<4x64xf32>
      affine.store %v2, %A_shared[%r, %c2] : memref<4x16xf32, 3>
      %c3 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 3)> (%e)
      %v3 = affine.load %A[%r, %k_t + %c3] : memref<4x64xf32>
      affine.store %v3, %A_shared[%r, %c3] : memref<4x16xf32, 3>
      gpu.barrier
      affine.for %i = 0 to 4 {
        %v = affine.load %A_shared[%i, %tx] : memref<4x16xf32, 3>
        affine.store %v, %C[%i, %k_t + %tx] : memref<4x64xf32>
      } {loopopt.name = "i"}
      gpu.barrier
    } {loopopt.name = "k_t"}
    gpu.return
  }
}

// Zero-filled copies (promote of padded tiles): A is 60 columns wide, k_t runs to 64. Each
// lane's condition `k_t + c + v <= 59` (k_t a multiple of 16, c of 4, 60 of 4) holds exactly
// where lane 0's does: one 16-byte cp.async whose source size is 16 there and 0 elsewhere,
// from A's first element there (a safe address); the prologue's and the clamped tiles'
// conditions are recomputed from their k_t.
// FILL-LABEL: gpu.func @padded_k0
// FILL:         %[[RING:.*]] = memref.alloca() : memref<3x4x16xf32, 3 : i64>
// FILL-NEXT:    %[[FIRST:.*]] = affine.apply affine_map<() -> (0)> ()
// FILL-NEXT:    %[[S0:.*]] = arith.constant 0 : index
// FILL:         %[[R:.*]] = affine.apply affine_map<(d0) -> ((d0 floordiv 16))>
// FILL-NEXT:    %[[C:.*]] = affine.apply affine_map<(d0) -> ((d0 + ((d0 floordiv 16) * -16)))>
// FILL-NEXT:    %[[COL:.*]] = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%[[FIRST]], %[[C]])
// FILL-NEXT:    %[[SR:.*]], %[[SC:.*]], %[[ELEMS:.*]] = affine.if affine_set<(d0, d1) : ((((d0 * -1) + (d1 * -1)) + 59) >= 0)>(%[[FIRST]], %[[C]]) -> (index, index, index) {
// FILL-NEXT:      %[[N:.*]] = arith.constant 4 : index
// FILL-NEXT:      affine.yield %[[R]], %[[COL]], %[[N]] : index, index, index
// FILL-NEXT:    } else {
// FILL-NEXT:      %[[Z:.*]] = arith.constant 0 : index
// FILL-NEXT:      affine.yield %[[Z]], %[[Z]], %[[Z]] : index, index, index
// FILL-NEXT:    }
// FILL-NEXT:    %{{.*}} = nvgpu.device_async_copy %A[%[[SR]], %[[SC]]], %[[RING]][%[[S0]], %[[R]], %[[C]]], 4, %[[ELEMS]] {bypassL1} : memref<4x60xf32> to memref<3x4x16xf32, 3 : i64>
// FILL-NEXT:    %{{.*}} = nvgpu.device_async_create_group
// FILL:         affine.if affine_set<{{.*}} + 59) >= 0)>(%{{.*}}, %{{.*}}) -> (index, index, index)
// FILL:         %{{.*}} = nvgpu.device_async_copy {{.*}}, 4, %{{.*}} {bypassL1}
// FILL-NEXT:    %{{.*}} = nvgpu.device_async_create_group
// FILL-NEXT:    affine.for %[[KT:.*]] = 0 to 64 step 16 {
// FILL:           nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// FILL-NEXT:      gpu.barrier
// FILL-NEXT:      %[[AHEAD:.*]] = affine.min affine_map<(d0) -> ((d0 + 32), 48)> (%[[KT]])
// FILL:           %[[C2:.*]] = affine.apply affine_map<(d0) -> ((d0 + ((d0 floordiv 16) * -16)))>
// FILL:           affine.if affine_set<(d0, d1) : ((((d0 * -1) + (d1 * -1)) + 59) >= 0)>(%[[AHEAD]], %[[C2]]) -> (index, index, index) {
// FILL:           %{{.*}} = nvgpu.device_async_copy {{.*}}, 4, %{{.*}} {bypassL1}
// FILL-NEXT:      %{{.*}} = nvgpu.device_async_create_group
// FILL-NOT:       affine.load %A[
// FILL:         } {loopopt.name = "k_t"}
// FILL-NEXT:    nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
gpu.module @kernels_padded {
  gpu.func @padded_k0(%A: memref<4x60xf32>, %C: memref<4x64xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>, loopopt.pointer_align = 16 : i32} {
    %tx = gpu.thread_id x
    %A_shared = memref.alloca() : memref<4x16xf32, 3>
    affine.for %k_t = 0 to 64 step 16 {
      %e = affine.apply affine_map<(d0) -> (d0 * 4)> (%tx)
      %r = affine.apply affine_map<(d0) -> (d0 floordiv 16)> (%e)
      %c0 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16)> (%e)
      %v0 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 59 >= 0)>(%k_t, %c0) -> f32 {
        %x0 = affine.load %A[%r, %k_t + %c0] : memref<4x60xf32>
        affine.yield %x0 : f32
      } else {
        %z0 = arith.constant 0.0 : f32
        affine.yield %z0 : f32
      }
      affine.store %v0, %A_shared[%r, %c0] : memref<4x16xf32, 3>
      %c1 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 1)> (%e)
      %v1 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 59 >= 0)>(%k_t, %c1) -> f32 {
        %x1 = affine.load %A[%r, %k_t + %c1] : memref<4x60xf32>
        affine.yield %x1 : f32
      } else {
        %z1 = arith.constant 0.0 : f32
        affine.yield %z1 : f32
      }
      affine.store %v1, %A_shared[%r, %c1] : memref<4x16xf32, 3>
      %c2 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 2)> (%e)
      %v2 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 59 >= 0)>(%k_t, %c2) -> f32 {
        %x2 = affine.load %A[%r, %k_t + %c2] : memref<4x60xf32>
        affine.yield %x2 : f32
      } else {
        %z2 = arith.constant 0.0 : f32
        affine.yield %z2 : f32
      }
      affine.store %v2, %A_shared[%r, %c2] : memref<4x16xf32, 3>
      %c3 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 3)> (%e)
      %v3 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 59 >= 0)>(%k_t, %c3) -> f32 {
        %x3 = affine.load %A[%r, %k_t + %c3] : memref<4x60xf32>
        affine.yield %x3 : f32
      } else {
        %z3 = arith.constant 0.0 : f32
        affine.yield %z3 : f32
      }
      affine.store %v3, %A_shared[%r, %c3] : memref<4x16xf32, 3>
      gpu.barrier
      affine.for %i = 0 to 4 {
        %v = affine.load %A_shared[%i, %tx] : memref<4x16xf32, 3>
        affine.store %v, %C[%i, %k_t + %tx] : memref<4x64xf32>
      } {loopopt.name = "i"}
      gpu.barrier
    } {loopopt.name = "k_t"}
    gpu.return
  }
}


// A is 63 columns wide: no lane of a row is 8 or 16 bytes aligned; four 4-byte copies, each
// with its own condition and source size.
// FILL-LABEL: gpu.func @padded63_k0
// FILL-COUNT-4: %{{.*}} = nvgpu.device_async_copy %A[%A_src{{.*}}], %A_shared[{{.*}}], 1, %A_elements{{.*}} : memref<4x63xf32> to memref<3x4x16xf32, 3 : i64>
// FILL-NEXT:    %{{.*}} = nvgpu.device_async_create_group
gpu.module @kernels_padded63 {
  gpu.func @padded63_k0(%A: memref<4x63xf32>, %C: memref<4x64xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>, loopopt.pointer_align = 16 : i32} {
    %tx = gpu.thread_id x
    %A_shared = memref.alloca() : memref<4x16xf32, 3>
    affine.for %k_t = 0 to 64 step 16 {
      %e = affine.apply affine_map<(d0) -> (d0 * 4)> (%tx)
      %r = affine.apply affine_map<(d0) -> (d0 floordiv 16)> (%e)
      %c0 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16)> (%e)
      %v0 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 62 >= 0)>(%k_t, %c0) -> f32 {
        %x0 = affine.load %A[%r, %k_t + %c0] : memref<4x63xf32>
        affine.yield %x0 : f32
      } else {
        %z0 = arith.constant 0.0 : f32
        affine.yield %z0 : f32
      }
      affine.store %v0, %A_shared[%r, %c0] : memref<4x16xf32, 3>
      %c1 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 1)> (%e)
      %v1 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 62 >= 0)>(%k_t, %c1) -> f32 {
        %x1 = affine.load %A[%r, %k_t + %c1] : memref<4x63xf32>
        affine.yield %x1 : f32
      } else {
        %z1 = arith.constant 0.0 : f32
        affine.yield %z1 : f32
      }
      affine.store %v1, %A_shared[%r, %c1] : memref<4x16xf32, 3>
      %c2 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 2)> (%e)
      %v2 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 62 >= 0)>(%k_t, %c2) -> f32 {
        %x2 = affine.load %A[%r, %k_t + %c2] : memref<4x63xf32>
        affine.yield %x2 : f32
      } else {
        %z2 = arith.constant 0.0 : f32
        affine.yield %z2 : f32
      }
      affine.store %v2, %A_shared[%r, %c2] : memref<4x16xf32, 3>
      %c3 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 3)> (%e)
      %v3 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 62 >= 0)>(%k_t, %c3) -> f32 {
        %x3 = affine.load %A[%r, %k_t + %c3] : memref<4x63xf32>
        affine.yield %x3 : f32
      } else {
        %z3 = arith.constant 0.0 : f32
        affine.yield %z3 : f32
      }
      affine.store %v3, %A_shared[%r, %c3] : memref<4x16xf32, 3>
      gpu.barrier
      affine.for %i = 0 to 4 {
        %v = affine.load %A_shared[%i, %tx] : memref<4x16xf32, 3>
        affine.store %v, %C[%i, %k_t + %tx] : memref<4x64xf32>
      } {loopopt.name = "i"}
      gpu.barrier
    } {loopopt.name = "k_t"}
    gpu.return
  }
}


// Aligned, but the condition `k_t + c + v <= 62` holds for lanes 0 and 1 wherever it does for
// lane 0 (k_t + c <= 60 or not at all) and not for lane 2 (k_t + c = 60): one 8-byte copy,
// then lanes 2 and 3 (k_t + c + 2 = 62 takes lane 2, not lane 3) with 4 bytes each.
// FILL-LABEL: gpu.func @guarded_k0
// FILL:         affine.if affine_set<{{.*}} + 62) >= 0)>
// FILL:         %{{.*}} = nvgpu.device_async_copy %A[{{.*}}], %A_shared[{{.*}}], 2, %A_elements : memref<4x64xf32>
// FILL:         affine.if affine_set<{{.*}} + 62) >= 0)>
// FILL:         %{{.*}} = nvgpu.device_async_copy %A[{{.*}}], %A_shared[{{.*}}], 1, %A_elements_1 : memref<4x64xf32>
// FILL:         affine.if affine_set<{{.*}} + 62) >= 0)>
// FILL:         %{{.*}} = nvgpu.device_async_copy %A[{{.*}}], %A_shared[{{.*}}], 1, %A_elements_2 : memref<4x64xf32>
// FILL-NEXT:    %{{.*}} = nvgpu.device_async_create_group
gpu.module @kernels_guarded {
  gpu.func @guarded_k0(%A: memref<4x64xf32>, %C: memref<4x64xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>, loopopt.pointer_align = 16 : i32} {
    %tx = gpu.thread_id x
    %A_shared = memref.alloca() : memref<4x16xf32, 3>
    affine.for %k_t = 0 to 64 step 16 {
      %e = affine.apply affine_map<(d0) -> (d0 * 4)> (%tx)
      %r = affine.apply affine_map<(d0) -> (d0 floordiv 16)> (%e)
      %c0 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16)> (%e)
      %v0 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 62 >= 0)>(%k_t, %c0) -> f32 {
        %x0 = affine.load %A[%r, %k_t + %c0] : memref<4x64xf32>
        affine.yield %x0 : f32
      } else {
        %z0 = arith.constant 0.0 : f32
        affine.yield %z0 : f32
      }
      affine.store %v0, %A_shared[%r, %c0] : memref<4x16xf32, 3>
      %c1 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 1)> (%e)
      %v1 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 62 >= 0)>(%k_t, %c1) -> f32 {
        %x1 = affine.load %A[%r, %k_t + %c1] : memref<4x64xf32>
        affine.yield %x1 : f32
      } else {
        %z1 = arith.constant 0.0 : f32
        affine.yield %z1 : f32
      }
      affine.store %v1, %A_shared[%r, %c1] : memref<4x16xf32, 3>
      %c2 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 2)> (%e)
      %v2 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 62 >= 0)>(%k_t, %c2) -> f32 {
        %x2 = affine.load %A[%r, %k_t + %c2] : memref<4x64xf32>
        affine.yield %x2 : f32
      } else {
        %z2 = arith.constant 0.0 : f32
        affine.yield %z2 : f32
      }
      affine.store %v2, %A_shared[%r, %c2] : memref<4x16xf32, 3>
      %c3 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 3)> (%e)
      %v3 = affine.if affine_set<(d0, d1) : (-d0 - d1 + 62 >= 0)>(%k_t, %c3) -> f32 {
        %x3 = affine.load %A[%r, %k_t + %c3] : memref<4x64xf32>
        affine.yield %x3 : f32
      } else {
        %z3 = arith.constant 0.0 : f32
        affine.yield %z3 : f32
      }
      affine.store %v3, %A_shared[%r, %c3] : memref<4x16xf32, 3>
      gpu.barrier
      affine.for %i = 0 to 4 {
        %v = affine.load %A_shared[%i, %tx] : memref<4x16xf32, 3>
        affine.store %v, %C[%i, %k_t + %tx] : memref<4x64xf32>
      } {loopopt.name = "i"}
      gpu.barrier
    } {loopopt.name = "k_t"}
    gpu.return
  }
}


// An affine.if that yields 1.0 where its condition fails is no zero fill: B's copy stays as it
// is (a plain store into B_shared, every iteration), A's goes into a ring.
// FILL-LABEL: gpu.func @mixed_k0
// FILL:         %[[ARING:.*]] = memref.alloca() : memref<3x4x16xf32, 3 : i64>
// FILL-NEXT:    %[[BS:.*]] = memref.alloca() : memref<4x16xf32, 3 : i64>
// FILL:         %{{.*}} = nvgpu.device_async_copy %A[{{.*}}], %[[ARING]][{{.*}}], 4 {bypassL1}
// FILL:         affine.for %[[KT:.*]] = 0 to 64 step 16 {
// FILL:           %[[ONE:.*]] = affine.if affine_set<(d0) : (((d0 * -1) + 59) >= 0)>(%[[KT]]) -> (f32) {
// FILL-NEXT:        affine.load %B
// FILL:             arith.constant 1.000000e+00 : f32
// FILL:           affine.store %[[ONE]], %[[BS]]
// FILL-NEXT:      nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// FILL-NEXT:      gpu.barrier
// FILL:           %{{.*}} = nvgpu.device_async_copy %A[{{.*}}], %[[ARING]][{{.*}}], 4 {bypassL1}
// FILL:           gpu.barrier
// FILL-NEXT:    } {loopopt.name = "k_t"}
gpu.module @kernels_mixed {
  gpu.func @mixed_k0(%A: memref<4x64xf32>, %B: memref<4x64xf32>, %C: memref<4x64xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>, loopopt.pointer_align = 16 : i32} {
    %tx = gpu.thread_id x
    %A_shared = memref.alloca() : memref<4x16xf32, 3>
    %B_shared = memref.alloca() : memref<4x16xf32, 3>
    affine.for %k_t = 0 to 64 step 16 {
      %e = affine.apply affine_map<(d0) -> (d0 * 4)> (%tx)
      %r = affine.apply affine_map<(d0) -> (d0 floordiv 16)> (%e)
      %c0 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 0)> (%e)
      %a0 = affine.load %A[%r, %k_t + %c0] : memref<4x64xf32>
      affine.store %a0, %A_shared[%r, %c0] : memref<4x16xf32, 3>
      %c1 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 1)> (%e)
      %a1 = affine.load %A[%r, %k_t + %c1] : memref<4x64xf32>
      affine.store %a1, %A_shared[%r, %c1] : memref<4x16xf32, 3>
      %c2 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 2)> (%e)
      %a2 = affine.load %A[%r, %k_t + %c2] : memref<4x64xf32>
      affine.store %a2, %A_shared[%r, %c2] : memref<4x16xf32, 3>
      %c3 = affine.apply affine_map<(d0) -> (d0 - (d0 floordiv 16) * 16 + 3)> (%e)
      %a3 = affine.load %A[%r, %k_t + %c3] : memref<4x64xf32>
      affine.store %a3, %A_shared[%r, %c3] : memref<4x16xf32, 3>
      %b = affine.if affine_set<(d0) : (-d0 + 59 >= 0)>(%k_t) -> f32 {
        %x = affine.load %B[%r, %k_t + %c0] : memref<4x64xf32>
        affine.yield %x : f32
      } else {
        %one = arith.constant 1.0 : f32
        affine.yield %one : f32
      }
      affine.store %b, %B_shared[%r, %c0] : memref<4x16xf32, 3>
      gpu.barrier
      affine.for %i = 0 to 4 {
        %v = affine.load %A_shared[%i, %tx] : memref<4x16xf32, 3>
        %w = affine.load %B_shared[%i, %tx] : memref<4x16xf32, 3>
        %s = arith.addf %v, %w : f32
        affine.store %s, %C[%i, %k_t + %tx] : memref<4x64xf32>
      } {loopopt.name = "i"}
      gpu.barrier
    } {loopopt.name = "k_t"}
    gpu.return
  }
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

// ASYNC NEGATIVE CASES

// Not in a kernel: there is no shared memory to copy into asynchronously.
func.func @host(%A: memref<8xf32>, %B: memref<8xf32>) {
  // expected-error@+1 {{pipeline-copies{async}: loop 'k_t': it is not in a GPU kernel (map it with gpu-map-loops first)}}
  affine.for %kt = 0 to 8 step 4 {
    %v = affine.load %A[%kt] : memref<8xf32>
    affine.store %v, %B[%kt] : memref<8xf32>
  } {loopopt.name = "k_t"}
  return
}

// -----

// A kernel loop whose copy stores into a global array: nothing goes to shared memory.
gpu.module @kernels_global {
  gpu.func @global_k0(%A: memref<64xf32>, %B: memref<64xf32>) kernel {
    %tx = gpu.thread_id x
    // expected-error@+1 {{pipeline-copies{async}: loop 'k_t': no load of a read-only global array stored into a shared buffer before its first barrier (promote{memory-space=shared}, unroll the copy loops)}}
    affine.for %kt = 0 to 64 step 16 {
      %v = affine.load %A[%kt + %tx] : memref<64xf32>
      affine.store %v, %B[%kt + %tx] : memref<64xf32>
      gpu.barrier
    } {loopopt.name = "k_t"}
    gpu.return
  }
}

// -----

// No barrier between the copies and their readers.
gpu.module @kernels_unmapped {
  gpu.func @unmapped_k0(%A: memref<64xf32>, %B: memref<64xf32>) kernel {
    %tx = gpu.thread_id x
    %s = memref.alloca() : memref<16xf32, 3>
    // expected-error@+1 {{pipeline-copies{async}: loop 'k_t': it has no gpu.barrier between its copies and its compute}}
    affine.for %kt = 0 to 64 step 16 {
      %v = affine.load %A[%kt + %tx] : memref<64xf32>
      affine.store %v, %s[%tx] : memref<16xf32, 3>
      %w = affine.load %s[%tx] : memref<16xf32, 3>
      affine.store %w, %B[%kt + %tx] : memref<64xf32>
    } {loopopt.name = "k_t"}
    gpu.return
  }
}

// -----

// A copy under a condition whose other branch yields 1.0, not 0: no cp.async zero fill can
// stand for it.
gpu.module @kernels_ones {
  gpu.func @ones_k0(%A: memref<64xf32>, %B: memref<64xf32>) kernel {
    %tx = gpu.thread_id x
    %s = memref.alloca() : memref<16xf32, 3>
    // expected-error@+1 {{pipeline-copies{async}: loop 'k_t': no load of a read-only global array stored into a shared buffer before its first barrier (promote{memory-space=shared}, unroll the copy loops)}}
    affine.for %kt = 0 to 64 step 16 {
      %v = affine.if affine_set<(d0, d1) : (-d0 - d1 + 59 >= 0)>(%kt, %tx) -> f32 {
        %x = affine.load %A[%kt + %tx] : memref<64xf32>
        affine.yield %x : f32
      } else {
        %one = arith.constant 1.0 : f32
        affine.yield %one : f32
      }
      affine.store %v, %s[%tx] : memref<16xf32, 3>
      gpu.barrier
      %w = affine.load %s[%tx] : memref<16xf32, 3>
      affine.store %w, %B[%kt + %tx] : memref<64xf32>
      gpu.barrier
    } {loopopt.name = "k_t"}
    gpu.return
  }
}
