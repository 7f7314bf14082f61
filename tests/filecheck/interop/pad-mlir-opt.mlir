// REQUIRES: mlir-opt
// Upstream MLIR 22 parses, verifies and lowers what pad-tiles, promote and scalar-replace print
// for a padded tile: affine.if with results (padded loads yielding 0.0), guarded stores, the
// zero-filled copy of promote, the padded accumulators carried as iter_args.
// RUN: loopopt-opt %s -p 'loop-tile{tile-sizes=4,4,8},pad-tiles{loops=i,j,k},promote{arrays=A,B loop=k_t},loop-unroll{unroll-full loop=k},loop-unroll{unroll-full loop=j},loop-unroll{unroll-full loop=i},scalar-replace{loop=k_t}' | %mlir-opt | filecheck %s
// RUN: loopopt-opt %s -p 'loop-tile{tile-sizes=4,4,8},pad-tiles{loops=i,j,k},promote{arrays=A,B loop=k_t},loop-unroll{unroll-full loop=k},loop-unroll{unroll-full loop=j},loop-unroll{unroll-full loop=i},scalar-replace{loop=k_t}' | %mlir-opt --lower-affine | filecheck %s --check-prefix=LOWERED

// CHECK-LABEL: func.func @matmul
// CHECK:         memref.alloca() {loopopt.scope = {{[0-9]+}} : i64} : memref<4x8xf32>
// CHECK:         affine.if #{{.*}}(%{{.*}}) -> f32 {
// CHECK:         } else {
// CHECK:           arith.constant 0.000000e+00 : f32
// CHECK:         affine.for %{{.*}} = 0 to 21 step 8 iter_args(
// CHECK:           affine.if #{{.*}}(%{{.*}}) -> f32 {
// CHECK:         affine.if #{{.*}}(%{{.*}}) {
// CHECK-NEXT:      affine.store
// LOWERED-LABEL: func.func @matmul
// LOWERED-NOT:   affine.
// LOWERED:       scf.if
// LOWERED:       return
func.func @matmul(%A: memref<50x21xf32>, %B: memref<21x37xf32>, %C: memref<50x37xf32>) {
  affine.for %i = 0 to 50 {
    affine.for %j = 0 to 37 {
      affine.for %k = 0 to 21 {
        %a = affine.load %A[%i, %k] : memref<50x21xf32>
        %b = affine.load %B[%k, %j] : memref<21x37xf32>
        %o = affine.load %C[%i, %j] : memref<50x37xf32>
        %m = arith.mulf %a, %b : f32
        %s = arith.addf %o, %m : f32
        affine.store %s, %C[%i, %j] : memref<50x37xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
