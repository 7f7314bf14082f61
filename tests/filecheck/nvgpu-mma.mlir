// RUN: loopopt-opt %s | filecheck %s
// RUN: loopopt-opt %s | loopopt-opt | filecheck %s

// The tensor-core ops print and parse in upstream MLIR's syntax.
// CHECK-LABEL: gpu.func @frag
// CHECK:         %{{.*}} = nvgpu.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<16x24xbf16, 3 : i64> -> vector<4x2xbf16>
// CHECK:         %{{.*}} = nvgpu.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}] {numTiles = 2 : i32, transpose = true} : memref<16x16xbf16, 3 : i64> -> vector<2x2xbf16>
// CHECK:         %{{.*}} = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %{{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK:         %{{.*}} = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %{{.*}}) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @frag(%c: vector<2x2xf32>, %a32: vector<4x1xf32>, %b32: vector<2x1xf32>) kernel {
      %As = memref.alloca() : memref<16x24xbf16, 3>
      %Bs = memref.alloca() : memref<16x16xbf16, 3>
      %i = gpu.lane_id
      %a = nvgpu.ldmatrix %As[%i, %i] {numTiles = 4 : i32, transpose = false} : memref<16x24xbf16, 3> -> vector<4x2xbf16>
      %b = nvgpu.ldmatrix %Bs[%i, %i] {numTiles = 2 : i32, transpose = true} : memref<16x16xbf16, 3> -> vector<2x2xbf16>
      %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %t = nvgpu.mma.sync(%a32, %b32, %d) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
      gpu.return
    }
  }
}
