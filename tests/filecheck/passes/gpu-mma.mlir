// RUN: loopopt-opt %s -p 'loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,32},promote{arrays=A loop=k_t memory-space=shared pad=8},promote{arrays=B loop=k_t memory-space=shared pad=8},gpu-mma' | filecheck %s
// RUN: not loopopt-opt %s -p 'loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,32},promote{arrays=A loop=k_t memory-space=shared pad=8},promote{arrays=B loop=k_t memory-space=shared pad=8},gpu-mma{precision=tf32}' 2>&1 | filecheck %s --check-prefix=TF32
// RUN: not loopopt-opt %s -p 'loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,32},promote{arrays=A loop=k_t memory-space=shared pad=1},promote{arrays=B loop=k_t memory-space=shared pad=1},gpu-mma' 2>&1 | filecheck %s --check-prefix=UNPADDED
// RUN: not loopopt-opt %s -p 'loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,32},gpu-mma' 2>&1 | filecheck %s --check-prefix=GLOBAL
// RUN: not loopopt-opt %s -p 'loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,16},promote{arrays=A loop=k_t memory-space=shared pad=8},promote{arrays=B loop=k_t memory-space=shared pad=8},gpu-mma' 2>&1 | filecheck %s --check-prefix=SHAPE
// RUN: not loopopt-opt %s -p 'loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,32},promote{arrays=A loop=k_t memory-space=shared pad=8},promote{arrays=B loop=k_t memory-space=shared pad=8},gpu-mma{arch=sm_75}' 2>&1 | filecheck %s --check-prefix=ARCH
// RUN: loopopt-opt %s -p 'loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,32},promote{arrays=A loop=k_t memory-space=shared pad=8},promote{arrays=B loop=k_t memory-space=shared pad=8},gpu-mma,gpu-map-loops{block=32,2},scalar-replace{loop=k_t}' --emit ptx --gpu-arch sm_80 | filecheck %s --check-prefix=PTX
// RUN: loopopt-opt %s -p 'loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,32},promote{arrays=A loop=k_t memory-space=shared pad=8},promote{arrays=B loop=k_t memory-space=shared pad=8},gpu-mma,gpu-map-loops{block=32,2}' | filecheck %s --check-prefix=MAP

// A 32x32 bf16 block tile in two 16x32 warp tiles: j_t2 runs one iteration per lane (step 1),
// each lane holds four 16x8 C fragments (its elements loaded at the PTX layout), A's fragment
// comes by ldmatrix.x4 and B's (k-major: .trans) by ldmatrix.x2, one mma.sync per 16x8 tile.
// CHECK-LABEL: func.func @mm
// CHECK:         affine.for %[[WARP:i_t2]] = {{.*}} step 16 {
// CHECK-NEXT:      affine.for %[[LANES:.*]] = affine_map<(d0) -> (d0)>(%j_t) to affine_map<(d0) -> ((d0 + 32))>(%j_t) {
// CHECK-NEXT:        %[[LANE:.*]] = affine.apply affine_map<(d0, d1) -> ((((d1 + (d0 * -1)) floordiv 1) mod 32))> (%j_t, %[[LANES]])
// CHECK:             %[[ROW:.*]] = affine.apply affine_map<(d0, d1) -> ((d0 + (d1 floordiv 4)))> (%[[WARP]], %[[LANE]])
// CHECK:             affine.load %C[%[[ROW]], %{{.*}}] : memref<32x32xf32>
// CHECK:             vector.insert %{{.*}}, %{{.*}} [0, 0] : f32 into vector<2x2xf32>
// CHECK:             %[[A:.*]] = nvgpu.ldmatrix %A_shared[%{{.*}}, %{{.*}}] {transpose = false, numTiles = 4 : i32} : memref<32x24xbf16, 3 : i64> -> vector<4x2xbf16>
// CHECK:             %[[B:.*]] = nvgpu.ldmatrix %B_shared[%{{.*}}, %{{.*}}] {transpose = true, numTiles = 2 : i32} : memref<16x40xbf16, 3 : i64> -> vector<2x2xbf16>
// CHECK-COUNT-3:     nvgpu.ldmatrix %B_shared
// CHECK:             %[[D:.*]] = nvgpu.mma.sync(%[[A]], %[[B]], %{{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-COUNT-3:     nvgpu.mma.sync
// CHECK:             %[[X:.*]] = vector.extract %[[D]][0, 0] : f32 from vector<2x2xf32>
// CHECK-NEXT:        affine.store %[[X]], %C[%[[ROW]], %{{.*}}] : memref<32x32xf32>
// CHECK-NOT:         affine.for
// CHECK:           } {loopopt.name = "j_t2"}
// Refusals, one line each: tf32 takes f32 operands only; ldmatrix reads 16-byte aligned rows;
// operands come from shared memory; warp tiles are multiples of the mma shapes; sm_80+.
// TF32: error: gpu-mma: precision=tf32 takes f32 operands, not bf16
// UNPADDED: error: gpu-mma: rows of 'A_shared' must be multiples of 16 bytes (pad it)
// GLOBAL: error: gpu-mma: operand 'A' is not in shared memory (promote it)
// SHAPE: error: gpu-mma: the warp tile 16x16x16 (m x n x k) must be constant multiples of 16 x 32 x 16 (pad partial tiles: pad-tiles)
// gpu-map-loops places a barrier between the copies and the ldmatrix reads, and one at the
// end of k_t (the next copies overwrite what the ldmatrix ops read).
// MAP:       affine.for %k_t
// MAP:         gpu.barrier
// MAP-NEXT:    nvgpu.ldmatrix %A_shared
// MAP:         nvgpu.mma.sync
// MAP:         gpu.barrier
// MAP-NEXT:  } {loopopt.name = "k_t"
// Through gpu-map-loops (a warp per 16x32 warp tile: blocks of 32x2 threads) to PTX.
// PTX:       .maxntid 32, 2, 1
// PTX:       ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX:       ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// PTX-COUNT-4: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// ARCH: error: gpu-mma: tensor cores need sm_80 or later, not 'sm_75'
func.func @mm(%A: memref<32x16xbf16>, %B: memref<16x32xbf16>, %C: memref<32x32xf32>) {
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 32 {
      affine.for %k = 0 to 16 {
        %a = affine.load %A[%i, %k] : memref<32x16xbf16>
        %b = affine.load %B[%k, %j] : memref<16x32xbf16>
        %ae = arith.extf %a : bf16 to f32
        %be = arith.extf %b : bf16 to f32
        %p = arith.mulf %ae, %be : f32
        %c = affine.load %C[%i, %j] : memref<32x32xf32>
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<32x32xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  func.return
}

