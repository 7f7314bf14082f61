// RUN: loopopt-opt %s -p 'loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,32},promote{arrays=A loop=k_t memory-space=shared pad=4},promote{arrays=B loop=k_t memory-space=shared pad=4},gpu-mma{precision=tf32}' | filecheck %s
// RUN: not loopopt-opt %s -p 'loop-tile{tile-sizes=32,32,16},loop-tile{loops=i,j tile-sizes=16,32},promote{arrays=A loop=k_t memory-space=shared pad=4},promote{arrays=B loop=k_t memory-space=shared pad=4},gpu-mma' 2>&1 | filecheck %s --check-prefix=DEFAULT

// f32 operands run on tensor cores only when asked (precision=tf32: m16n8k8, the operands
// rounded to tf32 by the lowering). ldmatrix loads 32-bit elements as pairs of halves and never
// transposes them: A (k-contiguous) and B[j, k] (k-contiguous) come by ldmatrix.
// CHECK-LABEL: func.func @mm
// CHECK:         %[[A:.*]] = nvgpu.ldmatrix %A_shared[%{{.*}}, %{{.*}}] {transpose = false, numTiles = 4 : i32} : memref<32x20xf32, 3 : i64> -> vector<4x1xf32>
// CHECK:         %[[B:.*]] = nvgpu.ldmatrix %B_shared[%{{.*}}, %{{.*}}] {transpose = false, numTiles = 2 : i32} : memref<32x20xf32, 3 : i64> -> vector<2x1xf32>
// CHECK:         nvgpu.mma.sync(%[[A]], %[[B]], %{{.*}}) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// DEFAULT: error: gpu-mma: operands must be both bf16 or both f16, not f32 (precision=tf32 runs f32 on tensor cores)
func.func @mm(%A: memref<32x16xf32>, %B: memref<32x16xf32>, %C: memref<32x32xf32>) {
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 32 {
      affine.for %k = 0 to 16 {
        %a = affine.load %A[%i, %k] : memref<32x16xf32>
        %b = affine.load %B[%j, %k] : memref<32x16xf32>
        
        
        %p = arith.mulf %a, %b : f32
        %c = affine.load %C[%i, %j] : memref<32x32xf32>
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<32x32xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  func.return
}
