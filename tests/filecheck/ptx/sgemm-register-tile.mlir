// RUN: loopopt-opt %s -p 'loop-tile{tile-sizes=64,64,8},promote{arrays=A loop=k_t memory-space=shared transpose pad=4},promote{arrays=B loop=k_t memory-space=shared pad=4},loop-tile{loops=i,j tile-sizes=4,4},gpu-map-loops{block=16,16 min-blocks-per-sm=2 max-registers=cap},loop-unroll{unroll-full loop=A_copy_in},loop-unroll{unroll-full loop=B_copy_in},pipeline-copies{loop=k_t},loop-unroll{unroll-full loop=k},loop-unroll{unroll-full loop=j},loop-unroll{unroll-full loop=i},scalar-replace{loop=k_t}' --emit ptx -o %t.ptx
// RUN: filecheck %s < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// The SGEMM schedule's kernel: launch bounds from the block size and min-blocks-per-sm (2 blocks
// of 256 threads: at most 128 registers), the
// register tile's operands read from shared memory as 128-bit vectors (A stored k-major),
// multiply-adds fused, the 4x4 accumulators in registers (C read once before and written
// once after the k_t loop), the next slices' global loads in flight during the compute.
// CHECK-LABEL: .visible .entry matmul_k0(
// CHECK:       .maxntid 16, 16, 1
// CHECK-NEXT:  .minnctapersm 2
// CHECK-NEXT:  .maxnreg 128
// CHECK-COUNT-16: ld.global.b32
// CHECK:       bar.sync 0;
// CHECK:       ld.shared.v4.b32
// CHECK:       fma.rn.f32
// CHECK-NOT:   mul.rn.f32
// CHECK-NOT:   ld.global.b32
// CHECK:       bar.sync 0;
// CHECK-COUNT-16: st.global.b32
func.func @matmul(%A: memref<128x64xf32>, %B: memref<64x128xf32>, %C: memref<128x128xf32>) {
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 128 {
      affine.for %k = 0 to 64 {
        %a = affine.load %A[%i, %k] : memref<128x64xf32>
        %b = affine.load %B[%k, %j] : memref<64x128xf32>
        %c = affine.load %C[%i, %j] : memref<128x128xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<128x128xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
