// RUN: loopopt-opt %s --emit ptx | filecheck %s
// RUN: loopopt-opt %s --emit ptx --gpu-arch sm_80 | filecheck %s
// RUN: %if ptxas %{ loopopt-opt %s --emit ptx -o %t.ptx && %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
// RUN: %if ptxas %{ loopopt-opt %s --emit ptx --gpu-arch sm_80 -o %t80.ptx && %ptxas -arch=sm_80 %t80.ptx -o %t80.cubin %}

// Tensor cores (upstream's nvgpu.ldmatrix / nvgpu.mma.sync): one warp loads a 16x16 bf16 A tile
// (x4) and a 16x8 B tile (x2, transposed: B is k-major in shared memory) and accumulates
// A x B over a k loop, the f32 fragment carried by the loop (in registers), then stores it.
// CHECK-LABEL: .visible .entry mma_bf16_k0(
// CHECK:         ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%r{{d?[0-9]+}}];
// CHECK:         ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r{{[0-9]+}}, %r{{[0-9]+}}}, [%r{{d?[0-9]+}}];
// CHECK:         mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NEXT:      {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}},
// CHECK-NEXT:      {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}},
// CHECK-NEXT:      {%r{{[0-9]+}}, %r{{[0-9]+}}},
// CHECK:         st.global.b32
// CHECK:         ret;
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mma_bf16_k0(%C: memref<16x8xf32>, %n: index) kernel {
      %As = memref.alloca() : memref<16x24xbf16, 3>
      %Bs = memref.alloca() : memref<16x16xbf16, 3>
      %lane = gpu.lane_id
      %c0 = arith.constant 0 : index
      %row = affine.apply affine_map<(d0) -> (d0 mod 16)>(%lane)
      %col = affine.apply affine_map<(d0) -> ((d0 floordiv 16) * 8)>(%lane)
      %z = arith.constant dense<0.0> : vector<2x2xf32>
      %acc = affine.for %k = 0 to %n iter_args(%c = %z) -> (vector<2x2xf32>) {
        %a = nvgpu.ldmatrix %As[%row, %col] {numTiles = 4 : i32, transpose = false} : memref<16x24xbf16, 3> -> vector<4x2xbf16>
        %b = nvgpu.ldmatrix %Bs[%row, %c0] {numTiles = 2 : i32, transpose = true} : memref<16x16xbf16, 3> -> vector<2x2xbf16>
        %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
        affine.yield %d : vector<2x2xf32>
      }
      %g = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%lane)
      %t = affine.apply affine_map<(d0) -> ((d0 mod 4) * 2)>(%lane)
      %x = vector.extract %acc[1, 0] : f32 from vector<2x2xf32>
      memref.store %x, %C[%g, %t] : memref<16x8xf32>
      gpu.return
    }

// f16 operands: the registers are <2 x half> pairs for the intrinsic.
// CHECK-LABEL: .visible .entry mma_f16_k0(
// CHECK:         ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK:         ldmatrix.sync.aligned.m8n8.x2.shared.b16
// CHECK:         mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
    gpu.func @mma_f16_k0(%C: memref<16x8xf32>) kernel {
      %As = memref.alloca() : memref<16x24xf16, 3>
      %Bs = memref.alloca() : memref<8x24xf16, 3>
      %lane = gpu.lane_id
      %c0 = arith.constant 0 : index
      %row = affine.apply affine_map<(d0) -> (d0 mod 16)>(%lane)
      %col = affine.apply affine_map<(d0) -> ((d0 floordiv 16) * 8)>(%lane)
      %brow = affine.apply affine_map<(d0) -> (d0 mod 8)>(%lane)
      %bcol = affine.apply affine_map<(d0) -> (((d0 floordiv 8) mod 2) * 8)>(%lane)
      %z = arith.constant dense<0.0> : vector<2x2xf32>
      %a = nvgpu.ldmatrix %As[%row, %col] {numTiles = 4 : i32, transpose = false} : memref<16x24xf16, 3> -> vector<4x2xf16>
      %b = nvgpu.ldmatrix %Bs[%brow, %bcol] {numTiles = 2 : i32, transpose = false} : memref<8x24xf16, 3> -> vector<2x2xf16>
      %d = nvgpu.mma.sync(%a, %b, %z) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %x = vector.extract %d[0, 1] : f32 from vector<2x2xf32>
      memref.store %x, %C[%row, %c0] : memref<16x8xf32>
      gpu.return
    }

// tf32 (f32 operands, m16n8k8): ldmatrix loads 32-bit elements as pairs of b16; the operands
// are rounded to tf32 (cvt.rna) before the mma.
// CHECK-LABEL: .visible .entry mma_tf32_k0(
// CHECK:         ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK:         cvt.rna.tf32.f32
// CHECK:         mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
    gpu.func @mma_tf32_k0(%C: memref<16x8xf32>) kernel {
      %As = memref.alloca() : memref<16x12xf32, 3>
      %Bs = memref.alloca() : memref<8x12xf32, 3>
      %lane = gpu.lane_id
      %c0 = arith.constant 0 : index
      %row = affine.apply affine_map<(d0) -> (d0 mod 16)>(%lane)
      %col = affine.apply affine_map<(d0) -> ((d0 floordiv 16) * 4)>(%lane)
      %brow = affine.apply affine_map<(d0) -> (d0 mod 8)>(%lane)
      %bcol = affine.apply affine_map<(d0) -> (((d0 floordiv 8) mod 2) * 4)>(%lane)
      %z = arith.constant dense<0.0> : vector<2x2xf32>
      %a = nvgpu.ldmatrix %As[%row, %col] {numTiles = 4 : i32, transpose = false} : memref<16x12xf32, 3> -> vector<4x1xf32>
      %b = nvgpu.ldmatrix %Bs[%brow, %bcol] {numTiles = 2 : i32, transpose = false} : memref<8x12xf32, 3> -> vector<2x1xf32>
      %d = nvgpu.mma.sync(%a, %b, %z) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
      %x = vector.extract %d[1, 1] : f32 from vector<2x2xf32>
      memref.store %x, %C[%row, %c0] : memref<16x8xf32>
      gpu.return
    }
  }
}
