// RUN: loopopt-opt %s --split-input-file --verify-diagnostics

// The verifier refuses what PTX has no instruction for.
func.func @global(%G: memref<16x16xf16>, %i: index) {
  // expected-error @+1 {{nvgpu.ldmatrix: loads from a workgroup (shared) memref}}
  %a = nvgpu.ldmatrix %G[%i, %i] {numTiles = 4 : i32, transpose = false} : memref<16x16xf16> -> vector<4x2xf16>
  func.return
}

// -----

func.func @tiles(%S: memref<16x16xf16, 3>, %i: index) {
  // expected-error @+1 {{nvgpu.ldmatrix: numTiles is 1, 2 or 4, not 3}}
  %a = nvgpu.ldmatrix %S[%i, %i] {numTiles = 3 : i32, transpose = false} : memref<16x16xf16, 3> -> vector<3x2xf16>
  func.return
}

// -----

func.func @trans32(%S: memref<16x16xf32, 3>, %i: index) {
  // expected-error @+1 {{nvgpu.ldmatrix: transposes 16-bit elements only}}
  %a = nvgpu.ldmatrix %S[%i, %i] {numTiles = 4 : i32, transpose = true} : memref<16x16xf32, 3> -> vector<4x1xf32>
  func.return
}

// -----

func.func @shape(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) {
  // expected-error @+1 {{nvgpu.mma.sync: f16 operands take mmaShape [16, 8, 16]}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 8]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  func.return
}

// -----

func.func @f32(%a: vector<4x1xf32>, %b: vector<2x1xf32>, %c: vector<2x2xf32>) {
  // expected-error @+1 {{nvgpu.mma.sync: f32 operands need tf32Enabled}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 8]} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
  func.return
}

// -----

func.func @fragment(%a: vector<4x2xbf16>, %b: vector<4x2xbf16>, %c: vector<2x2xf32>) {
  // expected-error @+1 {{nvgpu.mma.sync: operand B is vector<2x2xbf16>}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<4x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
  func.return
}
