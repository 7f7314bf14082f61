// REQUIRES: mlir-opt
// What `mlir-opt --lower-affine` makes of the bundled matmul (scf.for, memref.load/store) is
// raised back to affine loops, then tiled and mapped to the GPU like the affine form; the result
// is valid upstream MLIR 22.
// RUN: %mlir-opt --lower-affine %S/../../../src/loopopt/examples/matmul.mlir | loopopt-opt -p raise-scf-to-affine | filecheck %s --check-prefix=RAISED
// RUN: %mlir-opt --lower-affine %S/../../../src/loopopt/examples/matmul.mlir | loopopt-opt -p 'raise-scf-to-affine,loop-tile{tile-sizes=32,32,8},gpu-map-loops' | filecheck %s
// RUN: %mlir-opt --lower-affine %S/../../../src/loopopt/examples/matmul.mlir | loopopt-opt -p 'raise-scf-to-affine,loop-tile{tile-sizes=32,32,8},gpu-map-loops' | %mlir-opt | filecheck %s --check-prefix=UPSTREAM
// RUN: loopopt-opt %S/../../../src/loopopt/examples/matmul.mlir -p 'loop-tile{tile-sizes=32,32,8},gpu-map-loops' | filecheck %s --check-prefix=AFFINE

// RAISED-LABEL: func.func @matmul
// RAISED-NOT:   arith.constant
// RAISED:       affine.for %[[I:.*]] = 0 to 100 {
// RAISED-NEXT:    affine.for %[[J:.*]] = 0 to 120 {
// RAISED-NEXT:      affine.for %[[K:.*]] = 0 to 80 {
// RAISED-NEXT:        affine.load %{{.*}}[%[[I]], %[[K]]] : memref<100x80xf32>
// RAISED-NEXT:        affine.load %{{.*}}[%[[K]], %[[J]]] : memref<80x120xf32>
// RAISED-NEXT:        affine.load %{{.*}}[%[[I]], %[[J]]] : memref<100x120xf32>
// RAISED:             affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]] : memref<100x120xf32>
// RAISED-NEXT:      } {loopopt.name = "i2"}
// RAISED-NEXT:    } {loopopt.name = "i1"}
// RAISED-NEXT:  } {loopopt.name = "i0"}

// The same launch and kernel as the affine form, the loops named i0, i1, i2 instead of i, j, k.
// CHECK:       gpu.launch_func @kernels::@matmul_k0 blocks in (%c4, %c4, %c1) threads in (%c32, %c32, %c1)
// CHECK:       gpu.func @matmul_k0({{.*}}) kernel attributes {known_block_size = array<i32: 32, 32, 1>, loopopt.mapping = {block_x = "i1_t", thread_x = "i1", block_y = "i0_t", thread_y = "i0"}}
// CHECK:       affine.for %i2_t = 0 to 80 step 8 {
// CHECK-NEXT:    affine.for %i2 = affine_map<(d0) -> (d0)>(%i2_t) to affine_map<(d0) -> ((d0 + 8))>(%i2_t) {
// CHECK:         } {loopopt.name = "i2", loopopt.mapping = "sequential"}
// CHECK:       } {loopopt.name = "i1", loopopt.mapping = "thread x"}
// CHECK:     } {loopopt.name = "i0", loopopt.mapping = "thread y"}
// AFFINE:      gpu.launch_func @kernels::@matmul_k0 blocks in (%c4, %c4, %c1) threads in (%c32, %c32, %c1)
// AFFINE:      loopopt.mapping = {block_x = "j_t", thread_x = "j", block_y = "i_t", thread_y = "i"}
// AFFINE:      affine.for %k_t = 0 to 80 step 8 {
// UPSTREAM:    gpu.launch_func  @kernels::@matmul_k0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in
// UPSTREAM:    gpu.func @matmul_k0
// UPSTREAM:    affine.for
