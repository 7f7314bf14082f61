// REQUIRES: mlir-opt
// gpu IR in upstream MLIR 22's custom syntax, both ways (loopopt.dialects.gpu_ext).
// Hand-written IR: what mlir-opt prints (custom and generic form) loopopt reads, and what loopopt
// prints back mlir-opt reads, with nothing lost: gpu.module attributes, gpu.func arguments,
// result and argument attributes, workgroup/private attributions (with attributes, in
// #gpu.address_space or NVVM's number), kernel, known_block_size;
// ids with upper bounds, lane/subgroup ids, barrier, return; gpu.launch_func with dynamic
// shared memory, i32 sizes, clusters, async tokens and an async object; gpu.wait.
// RUN: sed -n '/^\/\/ HAND-WRITTEN CASE/,/^\/\/ END OF HAND-WRITTEN/p' %s | %mlir-opt | loopopt-opt | %mlir-opt | filecheck %s
// RUN: sed -n '/^\/\/ HAND-WRITTEN CASE/,/^\/\/ END OF HAND-WRITTEN/p' %s | %mlir-opt --mlir-print-op-generic | loopopt-opt | %mlir-opt | filecheck %s
// RUN: sed -n '/^\/\/ HAND-WRITTEN CASE/,/^\/\/ END OF HAND-WRITTEN/p' %s | %mlir-opt | loopopt-opt | filecheck %s --check-prefix=LOOPOPT
// Mapped loops: what gpu-map-loops makes (tiled, shared memory, barriers) mlir-opt verifies, and
// loopopt compiles mlir-opt's print of it to PTX.
// RUN: sed -n '/^\/\/ MAPPED CASE/,/^\/\/ END OF MAPPED CASE/p' %s | loopopt-opt -p 'loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},gpu-map-loops' | %mlir-opt | filecheck %s --check-prefix=MAPPED
// RUN: sed -n '/^\/\/ MAPPED CASE/,/^\/\/ END OF MAPPED CASE/p' %s | loopopt-opt -p 'loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},gpu-map-loops' | %mlir-opt | loopopt-opt --emit ptx | filecheck %s --check-prefix=PTX
// Upstream's own mapping: the kernel that mlir-opt's convert-affine-for-to-gpu and
// gpu-kernel-outlining make, loopopt reads and compiles to PTX.
// RUN: sed -n '/^\/\/ UPSTREAM CASE/,$p' %s | %mlir-opt --pass-pipeline='builtin.module(func.func(convert-affine-for-to-gpu{gpu-block-dims=1 gpu-thread-dims=1}),gpu-kernel-outlining,lower-affine)' | loopopt-opt | filecheck %s --check-prefix=UPSTREAM
// RUN: sed -n '/^\/\/ UPSTREAM CASE/,$p' %s | %mlir-opt --pass-pipeline='builtin.module(func.func(convert-affine-for-to-gpu{gpu-block-dims=1 gpu-thread-dims=1}),gpu-kernel-outlining,lower-affine)' | loopopt-opt --emit ptx | filecheck %s --check-prefix=UPSTREAM-PTX

// CHECK-LABEL: func.func @host(
// CHECK-SAME:    %[[A:[a-z0-9_]+]]: memref<64xf32>, %[[N:[a-z0-9_]+]]: index, %[[S:[a-z0-9_]+]]: i32, %[[M:[a-z0-9_]+]]: i32, %[[P:[a-z0-9_]+]]: !llvm.ptr)
// CHECK:         gpu.launch_func @kernels::@k blocks in (%[[C4:[a-z0-9_]+]], %[[C1:[a-z0-9_]+]], %[[C1]]) threads in (%[[N]], %[[C1]], %[[C1]]) dynamic_shared_memory_size %[[S]] args(%[[A]] : memref<64xf32>, %[[N]] : index) {loopopt.tag = 1 : i64}
// CHECK-NEXT:    gpu.launch_func @kernels::@k2 clusters in (%[[C1]], %[[C1]], %[[C1]]) blocks in (%[[C4]], %[[C1]], %[[C1]]) threads in (%[[N]], %[[C1]], %[[C1]]){{ *$}}
// CHECK-NEXT:    gpu.launch_func @kernels::@k3 blocks in (%[[M]], %[[ONE:[a-z0-9_]+]], %[[ONE]]) threads in (%[[M]], %[[ONE]], %[[ONE]]) : i32 args(%[[A]] : memref<64xf32>)
// CHECK-NEXT:    gpu.launch_func <%[[P]] : !llvm.ptr> @kernels::@k2 blocks in
// CHECK-NEXT:    %[[T0:[a-z0-9_]+]] = gpu.wait async
// CHECK-NEXT:    %[[T1:[a-z0-9_]+]] = gpu.launch_func async [%[[T0]]] @kernels::@k2 blocks in
// CHECK-NEXT:    gpu.launch_func [%[[T1]]] @kernels::@k2 blocks in
// CHECK-NEXT:    gpu.wait [%[[T1]]]
// CHECK:       gpu.module @kernels attributes {loopopt.note = "kept"} {
// CHECK-NEXT:    gpu.func @k(%{{.*}}: memref<64xf32>, %{{.*}}: index) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 8, 1, 1>, loopopt.mapping = {block_x = "i"}} {
// CHECK-NEXT:      gpu.thread_id x
// CHECK-NEXT:      gpu.block_id y upper_bound 16
// CHECK-NEXT:      gpu.block_dim z
// CHECK-NEXT:      gpu.grid_dim x
// CHECK-NEXT:      gpu.global_id x
// CHECK-NEXT:      gpu.lane_id upper_bound 32
// CHECK-NEXT:      gpu.subgroup_size : index
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      gpu.return
// CHECK:         gpu.func @k2() kernel {
// CHECK:         gpu.func @k3(%{{.*}}: memref<64xf32>) kernel {
// CHECK:         gpu.func @helper(%[[X:[a-z0-9_]+]]: f32 {loopopt.arg}) -> (f32 {loopopt.res}) workgroup(%[[W:[a-z0-9_]+]] : memref<32xf32, #gpu.address_space<workgroup>> {llvm.align = 8 : i64}, %[[W3:[a-z0-9_]+]] : memref<4xf32, 3>) private(%[[PR:[a-z0-9_]+]] : memref<1xf32, #gpu.address_space<private>>) {
// CHECK:           memref.store %[[X]], %[[W]][%{{.*}}] : memref<32xf32, #gpu.address_space<workgroup>>
// CHECK:           memref.store %[[X]], %[[PR]][%{{.*}}] : memref<1xf32, #gpu.address_space<private>>
// CHECK-NEXT:      gpu.return %[[X]] : f32
// LOOPOPT:     gpu.launch_func @kernels::@k blocks in (%c4, %c1, %c1) threads in (%arg1, %c1, %c1) dynamic_shared_memory_size %arg2 args(%arg0 : memref<64xf32>, %arg1 : index) {loopopt.tag = 1 : i64}
// LOOPOPT:     gpu.module @kernels attributes {loopopt.note = "kept"} {
// LOOPOPT-NEXT:  gpu.func @k(%arg0: memref<64xf32>, %arg1: index) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 8, 1, 1>, loopopt.mapping = {block_x = "i"}} {
// LOOPOPT-NEXT:    %thread_id_x = gpu.thread_id x
// LOOPOPT-NEXT:    %block_id_y = gpu.block_id y upper_bound 16

// HAND-WRITTEN CASE
module attributes {gpu.container_module} {
  func.func @host(%A: memref<64xf32>, %n: index, %s: i32, %m: i32, %stream: !llvm.ptr) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %one = arith.constant 1 : i32
    gpu.launch_func @kernels::@k blocks in (%c4, %c1, %c1) threads in (%n, %c1, %c1)
        dynamic_shared_memory_size %s args(%A : memref<64xf32>, %n : index) {loopopt.tag = 1}
    gpu.launch_func @kernels::@k2 clusters in (%c1, %c1, %c1) blocks in (%c4, %c1, %c1)
        threads in (%n, %c1, %c1)
    gpu.launch_func @kernels::@k3 blocks in (%m, %one, %one) threads in (%m, %one, %one) : i32
        args(%A : memref<64xf32>)
    gpu.launch_func <%stream : !llvm.ptr> @kernels::@k2 blocks in (%c4, %c1, %c1)
        threads in (%n, %c1, %c1)
    %t0 = gpu.wait async
    %t1 = gpu.launch_func async [%t0] @kernels::@k2 blocks in (%c4, %c1, %c1)
        threads in (%n, %c1, %c1)
    gpu.launch_func [%t1] @kernels::@k2 blocks in (%c4, %c1, %c1) threads in (%n, %c1, %c1)
    gpu.wait [%t1]
    return
  }
  gpu.module @kernels attributes {loopopt.note = "kept"} {
    gpu.func @k(%A: memref<64xf32>, %n: index) kernel attributes {
        known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 8, 1, 1>,
        loopopt.mapping = {block_x = "i"}} {
      %tx = gpu.thread_id x
      %by = gpu.block_id y upper_bound 16
      %bz = gpu.block_dim z
      %gx = gpu.grid_dim x
      %ix = gpu.global_id x
      %l = gpu.lane_id upper_bound 32
      %w = gpu.subgroup_size : index
      gpu.barrier
      gpu.return
    }
    gpu.func @k2() kernel {
      gpu.return
    }
    gpu.func @k3(%A: memref<64xf32>) kernel {
      gpu.return
    }
    gpu.func @helper(%x: f32 {loopopt.arg}) -> (f32 {loopopt.res})
        workgroup(%wg : memref<32xf32, #gpu.address_space<workgroup>> {llvm.align = 8 : i64},
                  %wg3 : memref<4xf32, 3>)
        private(%pr : memref<1xf32, #gpu.address_space<private>>) {
      %c0 = arith.constant 0 : index
      memref.store %x, %wg[%c0] : memref<32xf32, #gpu.address_space<workgroup>>
      memref.store %x, %pr[%c0] : memref<1xf32, #gpu.address_space<private>>
      gpu.return %x : f32
    }
  }
}
// END OF HAND-WRITTEN

// MAPPED CASE
// MAPPED-LABEL: func.func @tiled(
// MAPPED:         gpu.launch_func  @kernels::@tiled_k0 blocks in (%{{.*}}) threads in (%c32, %c32, %c1) args(%arg0 : memref<100x70xf32>, %arg1 : memref<70x90xf32>, %arg2 : memref<100x90xf32>)
// MAPPED:       gpu.module @kernels {
// MAPPED-NEXT:    gpu.func @tiled_k0(%arg0: memref<100x70xf32>, %arg1: memref<70x90xf32>, %arg2: memref<100x90xf32>) workgroup(%arg3 : memref<32x8xf32, 3> {llvm.align = 16 : i64}, %arg4 : memref<8x33xf32, 3> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 32, 32, 1>
// MAPPED:           gpu.thread_id x
// MAPPED:           gpu.barrier
// MAPPED:           gpu.barrier
// MAPPED:           gpu.return
// PTX:         .visible .entry tiled_k0(
// PTX:         .shared .align 16
// PTX:         bar.sync 0;
// PTX:         ret;
func.func @tiled(%A: memref<100x70xf32>, %B: memref<70x90xf32>, %C: memref<100x90xf32>) {
  affine.for %i = 0 to 100 {
    affine.for %j = 0 to 90 {
      affine.for %k = 0 to 70 {
        %a = affine.load %A[%i, %k] : memref<100x70xf32>
        %b = affine.load %B[%k, %j] : memref<70x90xf32>
        %c = affine.load %C[%i, %j] : memref<100x90xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<100x90xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
// END OF MAPPED CASE

// UPSTREAM CASE
// UPSTREAM:       gpu.launch_func @scale_kernel::@scale_kernel blocks in (%{{.*}}, %[[ONE:[a-z0-9_]+]], %[[ONE]]) threads in (%{{.*}}, %[[ONE]], %[[ONE]]) args(
// UPSTREAM:       gpu.module @scale_kernel {
// UPSTREAM-NEXT:    gpu.func @scale_kernel({{.*}}) kernel {
// UPSTREAM:           gpu.block_id x
// UPSTREAM:           gpu.thread_id x
// UPSTREAM:           gpu.return
// UPSTREAM-PTX:   .visible .entry scale_kernel(
// UPSTREAM-PTX:   %ctaid.x
// UPSTREAM-PTX:   ld.global
// UPSTREAM-PTX:   st.global
func.func @scale(%A: memref<1024xf32>) {
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 256 {
      %k = affine.apply affine_map<(d0, d1) -> (d0 * 256 + d1)>(%i, %j)
      %a = affine.load %A[%k] : memref<1024xf32>
      %b = arith.mulf %a, %two : f32
      affine.store %b, %A[%k] : memref<1024xf32>
    }
  }
  return
}
