// C += A * B with sizes that 32 does not divide: the bundled example of `loopopt-opt`.
func.func @matmul(%A: memref<100x80xf32>, %B: memref<80x120xf32>, %C: memref<100x120xf32>) {
  affine.for %i = 0 to 100 {
    affine.for %j = 0 to 120 {
      affine.for %k = 0 to 80 {
        %a = affine.load %A[%i, %k] : memref<100x80xf32>
        %b = affine.load %B[%k, %j] : memref<80x120xf32>
        %c = affine.load %C[%i, %j] : memref<100x120xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<100x120xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
