// RUN: sed -n '/^\/\/ DEFAULT CASES/,/^\/\/ END OF DEFAULT CASES/p' %s | loopopt-opt - --split-input-file -p gpu-map-loops | filecheck %s
// RUN: sed -n '/^\/\/ DEFAULT CASES/,/^\/\/ END OF DEFAULT CASES/p' %s | loopopt-opt - --split-input-file -p 'gpu-map-loops{grid=2}' | filecheck %s --check-prefix=GRID
// RUN: sed -n '/^\/\/ TILED CASE/,/^\/\/ END OF TILED CASE/p' %s | loopopt-opt - -p 'loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},gpu-map-loops' | filecheck %s --check-prefix=TILED
// RUN: sed -n '/^\/\/ TILED CASE/,/^\/\/ END OF TILED CASE/p' %s | loopopt-opt - -p 'loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},gpu-map-loops{block=16,8}' | filecheck %s --check-prefix=SMALL
// RUN: sed -n '/^\/\/ TILED CASE/,/^\/\/ END OF TILED CASE/p' %s | loopopt-opt - -p 'loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},gpu-map-loops{block=16,8 copy-vector=4}' | filecheck %s --check-prefix=VECTOR
// RUN: sed -n '/^\/\/ NEGATIVE CASES/,$p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p gpu-map-loops
// RUN: sed -n '/^\/\/ TILED CASE/,/^\/\/ END OF TILED CASE/p' %s | loopopt-opt - -p 'loop-tile{tile-sizes=32,32,8},gpu-map-loops{block-group=8}' | filecheck %s --check-prefix=GROUP
// RUN: sed -n '/^\/\/ TILED CASE/,/^\/\/ END OF TILED CASE/p' %s | loopopt-opt - -p 'loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},loop-tile{loops=i,j tile-sizes=2,2},gpu-map-loops{block=8,8 warp-lanes=4,8}' | filecheck %s --check-prefix=LANETILE
// RUN: sed -n '/^\/\/ CYCLIC CASE/,/^\/\/ END OF CYCLIC CASE/p' %s | loopopt-opt - -p 'loop-tile{tile-sizes=32,64},loop-tile{loops=i,j tile-sizes=4,4},gpu-map-loops{block=8,4}' | filecheck %s --check-prefix=CYCLIC
// RUN: not loopopt-opt %s -p 'gpu-map-loops{block=16,16 warp-lanes=8,8}' 2>&1 | filecheck %s --check-prefix=LANES
// LANES: error: gpu-map-loops: warp-lanes=8,8 must be two sizes whose product is 32
// RUN: not loopopt-opt %s -p 'gpu-map-loops{block=4,64 warp-lanes=8,4}' 2>&1 | filecheck %s --check-prefix=LANEFIT
// LANEFIT: error: gpu-map-loops: warp-lanes=8,4 does not divide the block of 4x64x1 threads (x by 8, y by 4, no z)
// RUN: not loopopt-opt %s -p 'gpu-map-loops{warp-lanes=8,4}' 2>&1 | filecheck %s --check-prefix=LANEBLOCK
// LANEBLOCK: error: gpu-map-loops: warp-lanes=8,4 needs block=
// RUN: not loopopt-opt %s -p 'gpu-map-loops{block-group=0}' 2>&1 | filecheck %s --check-prefix=GROUP0
// GROUP0: error: gpu-map-loops: block-group=0 must be at least 1
// RUN: not loopopt-opt %s -p 'gpu-map-loops{block=16,16,16}' 2>&1 | filecheck %s --check-prefix=SIZES
// RUN: not loopopt-opt %s -p 'gpu-map-loops{block=2048}' 2>&1 | filecheck %s --check-prefix=BIG
// RUN: sed -n '/^\/\/ TILED CASE/,/^\/\/ END OF TILED CASE/p' %s | loopopt-opt - -p 'loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},gpu-map-loops{block=16,16 min-blocks-per-sm=2 max-registers=cap}' | filecheck %s --check-prefix=REGS
// RUN: not loopopt-opt %s -p 'gpu-map-loops{max-registers=300}' 2>&1 | filecheck %s --check-prefix=MAXREG
// RUN: not loopopt-opt %s -p 'gpu-map-loops{region-threads=2048}' 2>&1 | filecheck %s --check-prefix=REGION
// REGION: error: gpu-map-loops: region-threads=2048 is outside 1..1024
// RUN: not loopopt-opt %s -p 'gpu-map-loops{reductions=warp}' 2>&1 | filecheck %s --check-prefix=REDUCTIONS
// REDUCTIONS: error: gpu-map-loops: reductions must be auto, thread, block, lanes, grid-atomic, not 'warp'
// RUN: sed -n '/^\/\/ GRID SUM/,/^\/\/ END OF GRID SUM/p' %s | loopopt-opt - -p gpu-map-loops | filecheck %s --check-prefix=PARTIALS
// RUN: sed -n '/^\/\/ GRID SUM/,/^\/\/ END OF GRID SUM/p' %s | loopopt-opt - -p 'gpu-map-loops{reductions=grid-atomic}' | filecheck %s --check-prefix=ATOMIC
// RUN: sed -n '/^\/\/ ROW SUMS/,/^\/\/ END OF ROW SUMS/p' %s | loopopt-opt - -p 'gpu-map-loops{reductions=thread}' | filecheck %s --check-prefix=THREAD
// SIZES: error: gpu-map-loops: block=16,16,16 has 3 sizes but 1 loop(s) are mapped (x=i)
// MAXREG: error: gpu-map-loops: max-registers=300 is outside 16..255 (the most that blocks of 256 threads allow; use cap)
// max-registers=cap: what 2 blocks of 256 threads can have (.maxnreg 128 in the PTX).
// REGS: gpu.func @{{.*}} kernel attributes {{{.*}}loopopt.min_blocks_per_sm = 2 : i32, loopopt.max_registers = 128 : i32}
// BIG: error: gpu-map-loops: block size 2048 along x (i) is outside 1..1024

// gpu ops print in upstream MLIR's custom syntax (loopopt.dialects.gpu_ext); the block shape
// is the kernel's known_block_size, as in MLIR.

// DEFAULT CASES: gpu-map-loops with its default options (RUN lines 1 and 2).

// Vector add, 1000 elements: 1-D blocks of 256 threads, 4 blocks; 1000 is no multiple of 256,
// so the thread's index is guarded (i <= 999). The arrays become the kernel's arguments.
// CHECK-LABEL: func.func @vadd
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c256 = arith.constant 256 : index
// CHECK-NEXT:    gpu.launch_func @kernels::@vadd_k0 blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
// CHECK-SAME:      args(%A : memref<1000xf32>, %B : memref<1000xf32>, %C : memref<1000xf32>){{$}}
// CHECK-NEXT:    func.return
// CHECK:       gpu.module @kernels {
// CHECK-NEXT:    gpu.func @vadd_k0(%A: memref<1000xf32>, %B: memref<1000xf32>, %C: memref<1000xf32>) kernel
// CHECK-SAME:      attributes {known_block_size = array<i32: 256, 1, 1>, loopopt.mapping = {block_x = "i_t", thread_x = "i"}} {
// CHECK-NEXT:      %bx = gpu.block_id x
// CHECK-NEXT:      %tx = gpu.thread_id x
// CHECK-NEXT:      %i_t = affine.apply affine_map<(d0) -> ((d0 * 256))> (%bx)
// CHECK-NEXT:      %i = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%tx, %i_t)
// CHECK-NEXT:      affine.if affine_set<(d0) : (((d0 * -1) + 999) >= 0)>(%i) {
// CHECK-NEXT:        affine.load %A[%i]
// CHECK:             affine.store %{{.*}}, %C[%i]
// CHECK:           } {loopopt.name = "i", loopopt.mapping = "thread x"}
// CHECK-NEXT:      gpu.return
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// With grid=2 the two blocks loop over the four tiles.
// GRID-LABEL: func.func @vadd
// GRID:         gpu.launch_func @kernels::@vadd_k0 blocks in (%c2, %c1, %c1) threads in (%c256, %c1, %c1) args(%A : {{.*}}, %B : {{.*}}, %C : {{.*}})
// GRID:         affine.for %i_t = affine_map<(d0) -> ((d0 * 256))>(%bx) to 1000 step 512 {
// GRID:         } {loopopt.name = "i_t", loopopt.mapping = "block x"}
func.func @vadd(%A: memref<1000xf32>, %B: memref<1000xf32>, %C: memref<1000xf32>) {
  affine.for %i = 0 to 1000 {
    %a = affine.load %A[%i] : memref<1000xf32>
    %b = affine.load %B[%i] : memref<1000xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %C[%i] : memref<1000xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// Transpose: A[i, j] is contiguous in j, B[j, i] in i; the store decides, so threadIdx.x runs
// along i (the outer loop) and consecutive threads write consecutive elements of B. 64 x 48
// divides into 16x16 blocks: no guards.
// CHECK-LABEL: func.func @transpose
// CHECK:         gpu.launch_func @kernels::@transpose_k0 blocks in (%c4, %c3, %c1) threads in (%c16, %c16, %c1) args(%A : memref<64x48xf32>, %B : memref<48x64xf32>)
// CHECK:         gpu.func @transpose_k0
// CHECK-SAME:      known_block_size = array<i32: 16, 16, 1>, loopopt.mapping = {block_x = "i_t", thread_x = "i", block_y = "j_t", thread_y = "j"}
// CHECK:         %i_t = affine.apply affine_map<(d0) -> ((d0 * 16))> (%bx)
// CHECK-NEXT:    %j_t = affine.apply affine_map<(d0) -> ((d0 * 16))> (%by)
// CHECK-NEXT:    %i = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%tx, %i_t)
// CHECK-NEXT:    %j = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%ty, %j_t)
// CHECK-NEXT:    %[[A:.*]] = affine.load %A[%i, %j] : memref<64x48xf32>
// CHECK-NEXT:    affine.store %[[A]], %B[%j, %i] : memref<48x64xf32>
// CHECK-NEXT:    gpu.return
// CHECK-NEXT:  }
func.func @transpose(%A: memref<64x48xf32>, %B: memref<48x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 48 {
      %a = affine.load %A[%i, %j] : memref<64x48xf32>
      affine.store %a, %B[%j, %i] : memref<48x64xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// Naive matmul: i and j are parallel, j is contiguous in B and C (threadIdx.x); k carries
// C[i, j] → C[i, j] and stays a sequential loop in each thread. 100 x 90 in 16x16 blocks:
// 6 x 7 blocks, both indices guarded.
// CHECK-LABEL: func.func @matmul
// CHECK:         gpu.launch_func @kernels::@matmul_k0 blocks in (%c6, %c7, %c1) threads in (%c16, %c16, %c1)
// CHECK:         gpu.func @matmul_k0
// CHECK-SAME:      loopopt.mapping = {block_x = "j_t", thread_x = "j", block_y = "i_t", thread_y = "i"}
// CHECK:         %i_t = affine.apply affine_map<(d0) -> ((d0 * 16))> (%by)
// CHECK-NEXT:    %j_t = affine.apply affine_map<(d0) -> ((d0 * 16))> (%bx)
// CHECK-NEXT:    %i = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%ty, %i_t)
// CHECK-NEXT:    affine.if affine_set<(d0) : (((d0 * -1) + 99) >= 0)>(%i) {
// CHECK-NEXT:      %j = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%tx, %j_t)
// CHECK-NEXT:      affine.if affine_set<(d0) : (((d0 * -1) + 89) >= 0)>(%j) {
// CHECK-NEXT:        affine.for %k = 0 to 70 {
// CHECK:             } {loopopt.name = "k", loopopt.mapping = "sequential"}
// CHECK:           } {loopopt.name = "j", loopopt.mapping = "thread x"}
// CHECK:         } {loopopt.name = "i", loopopt.mapping = "thread y"}
// CHECK-NOT:     gpu.barrier
// CHECK:         gpu.return
func.func @matmul(%A: memref<100x70xf32>, %B: memref<70x90xf32>, %C: memref<100x90xf32>) {
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

// -----

// Jacobi 2-D: the time loop t carries dependences (B from A, then A from B) and stays on the
// host, launching one kernel per inner nest and step, in order. The stencil's constant is
// rematerialized in the kernel; %steps stays on the host.
// CHECK-LABEL: func.func @jacobi2d
// CHECK:         affine.for %t = 0 to %steps {
// CHECK:           gpu.launch_func @kernels::@jacobi2d_k0 {{.*}} args(%A : memref<64x64xf32>, %B : memref<64x64xf32>)
// CHECK:           gpu.launch_func @kernels::@jacobi2d_k1 {{.*}} args(%A : memref<64x64xf32>, %B : memref<64x64xf32>)
// CHECK-NEXT:    } {loopopt.name = "t", loopopt.mapping = "host"}
// CHECK:         gpu.func @jacobi2d_k0(%A: memref<64x64xf32>, %B: memref<64x64xf32>) kernel
// CHECK:           %fifth = arith.constant 2.000000e-01 : f32
// CHECK-NEXT:      %i_t = affine.apply affine_map<(d0) -> (((d0 * 16) + 1))> (%by)
// CHECK:           affine.store %{{.*}}, %B[%i, %j] : memref<64x64xf32>
// CHECK:         gpu.func @jacobi2d_k1(%A: memref<64x64xf32>, %B: memref<64x64xf32>) kernel
// CHECK:           affine.store %{{.*}}, %A[%i2, %j2] : memref<64x64xf32>
func.func @jacobi2d(%A: memref<64x64xf32>, %B: memref<64x64xf32>, %steps: index) {
  %fifth = arith.constant 0.2 : f32
  affine.for %t = 0 to %steps {
    affine.for %i = 1 to 63 {
      affine.for %j = 1 to 63 {
        %c = affine.load %A[%i, %j] : memref<64x64xf32>
        %n = affine.load %A[%i - 1, %j] : memref<64x64xf32>
        %s = affine.load %A[%i + 1, %j] : memref<64x64xf32>
        %w = affine.load %A[%i, %j - 1] : memref<64x64xf32>
        %e = affine.load %A[%i, %j + 1] : memref<64x64xf32>
        %s0 = arith.addf %c, %n : f32
        %s1 = arith.addf %s0, %s : f32
        %s2 = arith.addf %s1, %w : f32
        %s3 = arith.addf %s2, %e : f32
        %v = arith.mulf %s3, %fifth : f32
        affine.store %v, %B[%i, %j] : memref<64x64xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
    affine.for %i2 = 1 to 63 {
      affine.for %j2 = 1 to 63 {
        %v = affine.load %B[%i2, %j2] : memref<64x64xf32>
        affine.store %v, %A[%i2, %j2] : memref<64x64xf32>
      } {loopopt.name = "j2"}
    } {loopopt.name = "i2"}
  } {loopopt.name = "t"}
  return
}

// -----

// Dynamic sizes: the host computes the grid (ceil(size / 16), at most the device limit) and
// launches only a non-empty grid; in the kernel the blocks loop over tiles (the limit is not
// known to cover the range) and the thread indices are guarded by the runtime sizes.
// CHECK-LABEL: func.func @scale
// CHECK:         %[[MX:.*]] = affine.min affine_map<()[s0] -> ((s0 ceildiv 16), 2147483647)> ()[%m]
// CHECK-NEXT:    %gx = affine.max affine_map<(d0) -> (d0, 0)>(%[[MX]])
// CHECK:         %[[MY:.*]] = affine.min affine_map<()[s0] -> ((s0 ceildiv 16), 65535)> ()[%n]
// CHECK-NEXT:    %gy = affine.max affine_map<(d0) -> (d0, 0)>(%[[MY]])
// CHECK:         scf.if %{{.*}} {
// CHECK-NEXT:      gpu.launch_func @kernels::@scale_k0 blocks in (%gx, %gy, %c1) threads in (%c16, %c16, %c1) args(%A : memref<?x?xf32>, %n : index, %m : index)
// CHECK:         affine.for %i_t = affine_map<(d0) -> ((d0 * 16))>(%by) to %n step 1048560 {
// CHECK-NEXT:      affine.for %j_t = affine_map<(d0) -> ((d0 * 16))>(%bx) to %m step 34359738352 {
// CHECK:             affine.if affine_set<(d0)[s0] : ((((d0 * -1) + s0) + -1) >= 0)>(%i)[%n] {
func.func @scale(%A: memref<?x?xf32>, %n: index, %m: index) {
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %m {
      %a = affine.load %A[%i, %j] : memref<?x?xf32>
      %b = arith.mulf %a, %two : f32
      affine.store %b, %A[%i, %j] : memref<?x?xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
// -----

// A prefix sum: no loop is parallel, so the nest runs as a region of its own: one kernel of
// one block, here a single thread (nothing in it can be spread), the loop sequential in it.
// CHECK-LABEL: func.func @prefix
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    gpu.launch_func @kernels::@prefix_k0 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%A : memref<64xf32>)
// CHECK-NEXT:    func.return
// CHECK:         gpu.func @prefix_k0(%A: memref<64xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>, loopopt.mapping = {region = "one thread"}} {
// CHECK-NEXT:      affine.for %i = 1 to 64 {
// CHECK:             affine.store %{{.*}}, %A[%i] : memref<64xf32>
// CHECK-NEXT:      } {loopopt.name = "i", loopopt.mapping = "sequential"}
// CHECK-NEXT:      gpu.return
func.func @prefix(%A: memref<64xf32>) {
  affine.for %i = 1 to 64 {
    %p = affine.load %A[%i - 1] : memref<64xf32>
    %c = affine.load %A[%i] : memref<64xf32>
    %s = arith.addf %p, %c : f32
    affine.store %s, %A[%i] : memref<64xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// The time loop t stays on the host (its two statements feed each other, so it cannot be
// split); the store in it runs on the device as a one-thread region kernel before the launch of
// the parallel nest, in the order of the source. The host loop's IV is an argument of both
// kernels.
// CHECK-LABEL: func.func @host_store
// CHECK:         affine.for %t = 1 to 8 {
// CHECK:           gpu.launch_func @kernels::@host_store_k0 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%A : memref<8x32xf32>, %t : index)
// CHECK:           gpu.launch_func @kernels::@host_store_k1 {{.*}} args(%A : memref<8x32xf32>, %t : index)
// CHECK-NEXT:    } {loopopt.name = "t", loopopt.mapping = "host"}
// CHECK:         gpu.func @host_store_k0(%A: memref<8x32xf32>, %t: index) kernel
// CHECK-SAME:      loopopt.mapping = {region = "one thread"}
// CHECK-NEXT:      %z = affine.load %A[%t + -1, 1] : memref<8x32xf32>
// CHECK-NEXT:      affine.store %z, %A[%t, 0] : memref<8x32xf32>
// CHECK-NEXT:      gpu.return
// CHECK:         gpu.func @host_store_k1(%A: memref<8x32xf32>, %t: index) kernel
// CHECK-SAME:      loopopt.mapping = {block_x = "i_t", thread_x = "i"}
func.func @host_store(%A: memref<8x32xf32>) {
  affine.for %t = 1 to 8 {
    %z = affine.load %A[%t - 1, 1] : memref<8x32xf32>
    affine.store %z, %A[%t, 0] : memref<8x32xf32>
    affine.for %i = 1 to 32 {
      %p = affine.load %A[%t - 1, %i - 1] : memref<8x32xf32>
      affine.store %p, %A[%t, %i] : memref<8x32xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}

// -----

// The parallel j loop uses %s, a sum the device computes: values cannot cross from one kernel
// to another, so both nests form one region of one block. The sum is a reduction: each of the
// 256 threads adds every 256th element from 0.0, the block combines the partial sums in a
// workgroup buffer (halving the active threads, a barrier after each step) down to 32, and every
// warp combines those 32 by 5 butterfly shuffles (no barrier among them); thread 0 hands its
// total to all through the %reduced cell (a block-uniform value), which add the initial value.
// The j loop is spread over the threads.
// CHECK-LABEL: func.func @normalize
// CHECK:         gpu.launch_func @kernels::@normalize_k0 blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%X : memref<100xf32>, %Y : memref<100xf32>)
// CHECK:         gpu.func @normalize_k0
// CHECK-SAME:      workgroup(%reduced : memref<1xf32, 3 : i64> {llvm.align = 16 : i64}, %partials : memref<256xf32, 3 : i64> {llvm.align = 16 : i64}) kernel
// CHECK-SAME:      known_block_size = array<i32: 256, 1, 1>, loopopt.mapping = {region = "one block", threads_x = "j, i"}
// CHECK-NEXT:      %tx = gpu.thread_id x
// CHECK:           %[[ZERO:[0-9]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %s = affine.for %i = affine_map<(d0) -> (d0)>(%tx) to 100 step 256 iter_args(%acc = %[[ZERO]]) -> (f32) {
// CHECK:           } {loopopt.name = "i", loopopt.mapping = "threads x reduction"}
// CHECK-NEXT:      affine.store %s, %partials[%tx]
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      affine.if affine_set<(d0) : (((d0 * -1) + 127) >= 0)>(%tx) {
// CHECK-NEXT:        %[[MINE:.*]] = affine.load %partials[%tx]
// CHECK-NEXT:        %[[THEIRS:.*]] = affine.load %partials[%tx + 128]
// CHECK-NEXT:        %[[BOTH:.*]] = arith.addf %[[MINE]], %[[THEIRS]] : f32
// CHECK-NEXT:        affine.store %[[BOTH]], %partials[%tx]
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.barrier
// CHECK-COUNT-2:   gpu.barrier
// CHECK-NEXT:      %[[P:.*]] = affine.load %partials[%tx mod 32]
// CHECK-NEXT:      %[[ALL:.*]] = arith.constant -1 : i32
// CHECK-NEXT:      %[[CLAMP:.*]] = arith.constant 31 : i32
// CHECK-NEXT:      %[[C16:.*]] = arith.constant 16 : i32
// CHECK-NEXT:      %[[S16:.*]] = nvvm.shfl.sync bfly %[[ALL]], %[[P]], %[[C16]], %[[CLAMP]] : f32 -> f32
// CHECK-NEXT:      %[[P16:.*]] = arith.addf %[[P]], %[[S16]] : f32
// CHECK-COUNT-4:   nvvm.shfl.sync bfly %[[ALL]]
// CHECK-NEXT:      %[[WARP:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      affine.if affine_set<(d0) : (d0 == 0)>(%tx) {
// CHECK-NEXT:        affine.store %[[WARP]], %reduced[0] : memref<1xf32, 3 : i64>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      %[[TOTAL:.*]] = affine.load %reduced[0]
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %zero, %[[TOTAL]] : f32
// CHECK-NEXT:      affine.for %j = affine_map<(d0) -> (d0)>(%tx) to 100 step 256 {
// CHECK:             arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK:           } {loopopt.name = "j", loopopt.mapping = "threads x"}
// CHECK-NEXT:      gpu.return
func.func @normalize(%X: memref<100xf32>, %Y: memref<100xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = affine.for %i = 0 to 100 iter_args(%acc = %zero) -> (f32) {
    %x = affine.load %X[%i] : memref<100xf32>
    %a = arith.addf %acc, %x : f32
    affine.yield %a : f32
  } {loopopt.name = "i"}
  affine.for %j = 0 to 100 {
    %x = affine.load %X[%j] : memref<100xf32>
    %y = arith.divf %x, %s : f32
    affine.store %y, %Y[%j] : memref<100xf32>
  } {loopopt.name = "j"}
  return
}

// -----

// A recurrence with parallel work in each step (durbin's shape): one block runs the k loop;
// its parallel loops are spread over the threads, the scalar store runs on thread 0, and
// barriers separate what one thread writes from what others read: after the first loop (the
// second reads Z), and at the end of each step (the next step reads Y).
// CHECK-LABEL: func.func @steps
// CHECK:         gpu.func @steps_k0
// CHECK-SAME:      loopopt.mapping = {region = "one block", threads_x = "i, i2"}
// CHECK:           affine.for %k = 1 to 64 {
// CHECK:             affine.for %i = affine_map<(d0) -> (d0)>(%tx) to %k step 256 {
// CHECK:               affine.store %{{.*}}, %Z[%i]
// CHECK:             } {loopopt.name = "i", loopopt.mapping = "threads x"}
// CHECK-NEXT:        gpu.barrier
// CHECK-NEXT:        affine.for %i2 = affine_map<(d0) -> (d0)>(%tx) to %k step 256 {
// CHECK:             } {loopopt.name = "i2", loopopt.mapping = "threads x"}
// CHECK-NEXT:        affine.if affine_set<(d0) : (d0 == 0)>(%tx) {
// CHECK-NEXT:          affine.store %{{.*}}, %Y[%k]
// CHECK-NEXT:        } {loopopt.mapping = "one thread"}
// CHECK-NEXT:        gpu.barrier
// CHECK-NEXT:      } {loopopt.name = "k", loopopt.mapping = "sequential"}
func.func @steps(%Y: memref<64xf32>, %Z: memref<64xf32>) {
  affine.for %k = 1 to 64 {
    %a = affine.load %Y[%k - 1] : memref<64xf32>
    affine.for %i = 0 to %k {
      %y = affine.load %Y[%i] : memref<64xf32>
      %m = arith.mulf %y, %a : f32
      affine.store %m, %Z[%i] : memref<64xf32>
    } {loopopt.name = "i"}
    affine.for %i2 = 0 to %k {
      %z = affine.load %Z[%i2] : memref<64xf32>
      affine.store %z, %Y[%i2] : memref<64xf32>
    } {loopopt.name = "i2"}
    affine.store %a, %Y[%k] : memref<64xf32>
  } {loopopt.name = "k"}
  return
}

// -----

// ROW SUMS: the j loop reduces A's rows, contiguous along j, while a thread per row (i, the
// loop threadIdx.x would get) would read along columns. So each row gets a block: blockIdx.x
// picks i, its 256 threads share out j (coalesced), combine their sums in a tree and warp
// shuffles, and thread 0 stores. reductions=thread keeps a thread per row (the THREAD prefix).
// CHECK-LABEL: func.func @rowsums
// CHECK:         gpu.launch_func @kernels::@rowsums_k0 blocks in (%c300, %c1, %c1) threads in (%c256, %c1, %c1)
// CHECK:         gpu.func @rowsums_k0
// CHECK-SAME:      loopopt.mapping = {region = "one block", threads_x = "j", block_x = "i"}
// CHECK:           %i = affine.apply affine_map<(d0) -> (d0)> (%bx)
// CHECK:           %s = affine.for %j = affine_map<(d0) -> (d0)>(%tx) to 500 step 256 iter_args
// CHECK-NEXT:        affine.load %A[%i, %j]
// CHECK:           } {loopopt.name = "j", loopopt.mapping = "threads x reduction"}
// CHECK:           affine.load %partials[%tx mod 32]
// CHECK-COUNT-5:   nvvm.shfl.sync bfly
// CHECK:           %[[TOTAL:.*]] = affine.load %reduced[0]
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %zero, %[[TOTAL]] : f32
// CHECK:           affine.if affine_set<(d0) : (d0 == 0)>(%tx) {
// CHECK-NEXT:        affine.store %[[SUM]], %out[%i]
// THREAD:        gpu.launch_func @kernels::@rowsums_k0 blocks in (%c2, %c1, %c1) threads in (%c256, %c1, %c1)
// THREAD:        loopopt.mapping = {block_x = "i_t", thread_x = "i"}
// THREAD:        } {loopopt.name = "j", loopopt.mapping = "sequential"}
func.func @rowsums(%A: memref<300x500xf32>, %out: memref<300xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 300 {
    %s = affine.for %j = 0 to 500 iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %A[%i, %j] : memref<300x500xf32>
      %n = arith.addf %acc, %a : f32
      affine.yield %n : f32
    } {loopopt.name = "j"}
    affine.store %s, %out[%i] : memref<300xf32>
  } {loopopt.name = "i"}
  return
}
// END OF ROW SUMS

// -----

// Column sums of 45 columns: a thread per column would leave the GPU idle, and each column's
// reduction can be shared out. So a block runs 32 columns side by side (thread x: the lanes,
// whose loads of a row are contiguous), each column shared out over 32 threads along y with
// a tree per lane in a 32x32 workgroup buffer (no shuffles: a warp holds 32 lanes, not one
// lane's partial sums). Lanes past column 44 compute column 44 again
// (the index is clamped, so every load stays in bounds) and store nothing.
// CHECK-LABEL: func.func @colsums
// CHECK:         gpu.launch_func @kernels::@colsums_k0 blocks in (%c2, %c1, %c1) threads in (%c32, %c32_1, %c1)
// CHECK:         gpu.func @colsums_k0
// CHECK-SAME:      workgroup(%partials : memref<32x32xf32, 3 : i64> {llvm.align = 16 : i64}) kernel
// CHECK-SAME:      known_block_size = array<i32: 32, 32, 1>, loopopt.mapping = {region = "one block", threads_y = "i", block_x = "j", thread_x = "j"}
// CHECK:           %lane = affine.apply affine_map<(d0, d1) -> (((d0 * 32) + d1))> (%bx, %tx)
// CHECK-NEXT:      %[[LAST:.*]] = affine.min affine_map<(d0) -> (d0, 44)> (%lane)
// CHECK-NEXT:      %j = affine.apply affine_map<(d0) -> (d0)> (%[[LAST]])
// CHECK:           %s = affine.for %i = affine_map<(d0) -> (d0)>(%ty) to 53 step 32 iter_args
// CHECK:           } {loopopt.name = "i", loopopt.mapping = "threads y reduction"}
// CHECK-NEXT:      affine.store %s, %partials[%ty, %tx]
// CHECK:           affine.load %partials[%ty + 16, %tx]
// CHECK:           affine.load %partials[0, %tx]
// CHECK:           affine.if affine_set<(d0, d1) : (((d0 * -1) + 44) >= 0, d1 == 0)>(%lane, %ty) {
// CHECK-NEXT:        affine.store %{{.*}}, %out[%j]
func.func @colsums(%A: memref<53x45xf32>, %out: memref<45xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %j = 0 to 45 {
    %s = affine.for %i = 0 to 53 iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %A[%i, %j] : memref<53x45xf32>
      %n = arith.addf %acc, %a : f32
      affine.yield %n : f32
    } {loopopt.name = "i"}
    affine.store %s, %out[%j] : memref<45xf32>
  } {loopopt.name = "j"}
  return
}

// -----

// A sum of 2^18 elements at the start of a region: one block would read it alone, so a grid
// of 1024 blocks does (thread tx of block bx from element bx * 256 + tx, step 1024 * 256),
// each block combines its 256 sums and thread 0 stores the block's in @__partials_0, an array
// in global memory (space 1) of the kernels' module. The region then sums the 1024 partial
// results in order (a loop its threads share out) onto the initial 0.0 and stores it.
// CHECK-LABEL: func.func @grid_sum
// CHECK:         gpu.launch_func @kernels::@grid_sum_k0 blocks in (%c1024, %c1, %c1) threads in (%c256, %c1, %c1) args(%X : memref<262144xf32>)
// CHECK:         gpu.launch_func @kernels::@grid_sum_k1 blocks in (%c1_1, %c1_1, %c1_1) threads in (%c256_1, %c1_1, %c1_1) args(%out : memref<1xf32>)
// CHECK:         "memref.global"() <{sym_name = "__partials_0", type = memref<1024xf32, 1 : i64>, initial_value, sym_visibility = "private"}> : () -> ()
// CHECK:         gpu.func @grid_sum_k0
// CHECK-SAME:      loopopt.mapping = {grid_reduction = "i", blocks = "partials"}
// CHECK:           %g = affine.apply affine_map<(d0, d1) -> (((d0 * 256) + d1))> (%bx, %tx)
// CHECK:           %s = affine.for %i = affine_map<(d0) -> (d0)>(%g) to 262144 step 262144 iter_args
// CHECK:           affine.store %{{.*}}, %reduced[0]
// CHECK:           affine.if affine_set<(d0) : (d0 == 0)>(%tx) {
// CHECK-NEXT:        %[[P:.*]] = memref.get_global @__partials_0 : memref<1024xf32, 1 : i64>
// CHECK-NEXT:        affine.store %{{.*}}, %[[P]][%bx] : memref<1024xf32, 1 : i64>
// CHECK:         gpu.func @grid_sum_k1
// CHECK-SAME:      loopopt.mapping = {region = "one block", threads_x = "i_blocks"}
// CHECK:           affine.for %i_blocks = affine_map<(d0) -> (d0)>(%tx) to 1024 step 256 iter_args
// CHECK-NEXT:        %[[Q:.*]] = memref.get_global @__partials_0
// CHECK-NEXT:        affine.load %[[Q]][%i_blocks]
// CHECK:           affine.store %{{.*}}, %out[0]
func.func @grid_sum(%X: memref<262144xf32>, %out: memref<1xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = affine.for %i = 0 to 262144 iter_args(%acc = %zero) -> (f32) {
    %x = affine.load %X[%i] : memref<262144xf32>
    %a = arith.addf %acc, %x : f32
    affine.yield %a : f32
  } {loopopt.name = "i"}
  affine.store %s, %out[0] : memref<1xf32>
  return
}

// -----

// PolyBench's gemm as written: i carries nothing and holds two nests, so it is distributed
// over them (loop-distribute's groups); in the second, j moves outside k (legal: k carries
// only C[i, j] → C[i, j] at distance 0 on j), so both are 2-D kernels, a thread per C[i, j].
// CHECK-LABEL: func.func @gemm_imperfect
// CHECK:         gpu.launch_func @kernels::@gemm_imperfect_k0
// CHECK:         gpu.launch_func @kernels::@gemm_imperfect_k1
// CHECK:         gpu.func @gemm_imperfect_k0
// CHECK-SAME:      loopopt.mapping = {block_x = "j_t", thread_x = "j", block_y = "i_t", thread_y = "i"}
// CHECK:           arith.mulf %{{.*}}, %beta
// CHECK:         gpu.func @gemm_imperfect_k1
// CHECK-SAME:      loopopt.mapping = {block_x = "j2_t", thread_x = "j2", block_y = "i_t", thread_y = "i"}
// CHECK:           affine.for %k = 0 to 30 {
// CHECK:           } {loopopt.name = "k", loopopt.mapping = "sequential"}
func.func @gemm_imperfect(%C: memref<40x50xf32>, %A: memref<40x30xf32>, %B: memref<30x50xf32>, %beta: f32) {
  affine.for %i = 0 to 40 {
    affine.for %j = 0 to 50 {
      %c = affine.load %C[%i, %j] : memref<40x50xf32>
      %d = arith.mulf %c, %beta : f32
      affine.store %d, %C[%i, %j] : memref<40x50xf32>
    } {loopopt.name = "j"}
    affine.for %k = 0 to 30 {
      affine.for %j2 = 0 to 50 {
        %a = affine.load %A[%i, %k] : memref<40x30xf32>
        %b = affine.load %B[%k, %j2] : memref<30x50xf32>
        %c = affine.load %C[%i, %j2] : memref<40x50xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j2] : memref<40x50xf32>
      } {loopopt.name = "j2"}
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  return
}

// -----

// A loop that carries a dependence but whose statements do not feed each other is split into
// one loop per statement group (gpu_host.split_sequential): the zeroing of column 0 becomes a
// kernel of its own, and in the copy loop the parallel i moves outside t, so two launches
// replace a host loop of 14.
// CHECK-LABEL: func.func @split_time
// CHECK-NOT:     affine.for
// CHECK:         gpu.launch_func @kernels::@split_time_k0
// CHECK-NOT:     affine.for
// CHECK:         gpu.launch_func @kernels::@split_time_k1
// CHECK:         gpu.func @split_time_k0
// CHECK-SAME:      loopopt.mapping = {block_x = "t_t", thread_x = "t"}
// CHECK:         gpu.func @split_time_k1
// CHECK-SAME:      loopopt.mapping = {block_x = "i_t", thread_x = "i"}
// CHECK:           affine.for %t = 1 to 8 {
func.func @split_time(%A: memref<8x32xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %t = 1 to 8 {
    affine.store %z, %A[%t, 0] : memref<8x32xf32>
    affine.for %i = 1 to 32 {
      %p = affine.load %A[%t - 1, %i] : memref<8x32xf32>
      affine.store %p, %A[%t, %i] : memref<8x32xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}
// END OF DEFAULT CASES

// -----

// TILED CASE: matmul tiled 32x32x8, A and B promoted to shared memory under k_t (RUN lines 3
// and 4). Tile loops i_t, j_t become the block indices, the point loops i, j the thread
// indices (32x32 threads, the tile size); k_t carries C and stays a loop that every thread
// runs. The shared buffers become workgroup attributions of the kernel (one per block, what
// upstream MLIR lowers to `.shared`); each copy is spread over the 1024 threads
// (element l = tx + 32 * ty, consecutive threads on consecutive elements of a row), guarded by
// its clipped bounds. Barriers: after the copies (the tiles must be complete before any thread
// reads them) and at the end of k_t (no thread may overwrite a tile another still reads), both
// outside every thread-dependent affine.if.
// TILED-LABEL: func.func @tiled
// TILED:         gpu.launch_func @kernels::@tiled_k0 blocks in (%c3, %c4, %c1) threads in (%c32, %c32, %c1)
// TILED:         gpu.func @tiled_k0({{.*}}) workgroup(%A_shared : memref<32x8xf32, 3 : i64> {llvm.align = 16 : i64}, %B_shared : memref<8x33xf32, 3 : i64> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 32, 32, 1>
// TILED:         %tx = gpu.thread_id x
// TILED-NEXT:    %ty = gpu.thread_id y
// TILED-NEXT:    %i_t = affine.apply affine_map<(d0) -> ((d0 * 32))> (%by)
// TILED-NEXT:    %j_t = affine.apply affine_map<(d0) -> ((d0 * 32))> (%bx)
// TILED-NEXT:    affine.for %k_t = 0 to 70 step 8 {
// TILED-NEXT:      %A_copy_in_l = affine.apply affine_map<(d0, d1) -> ((d0 + (d1 * 32)))> (%tx, %ty)
// TILED-NEXT:      %A_in0 = affine.apply affine_map<(d0) -> ((d0 floordiv 8))> (%A_copy_in_l)
// TILED-NEXT:      %A_in1 = affine.apply affine_map<(d0) -> ((d0 + ((d0 floordiv 8) * -8)))> (%A_copy_in_l)
// TILED-NEXT:      affine.if affine_set<(d0, d1, d2, d3, d4) : (((d0 * -1) + 255) >= 0, (((d1 * -1) + (d2 * -1)) + 99) >= 0, (((d3 * -1) + (d4 * -1)) + 69) >= 0)>(%A_copy_in_l, %A_in0, %i_t, %A_in1, %k_t) {
// TILED-NEXT:        %[[V:.*]] = affine.load %A[%i_t + %A_in0, %k_t + %A_in1] : memref<100x70xf32>
// TILED-NEXT:        affine.store %[[V]], %A_shared[%A_in0, %A_in1] : memref<32x8xf32, 3 : i64>
// TILED-NEXT:      } {loopopt.name = "A_copy_in", loopopt.mapping = "threads"}
// TILED:           } {loopopt.name = "B_copy_in", loopopt.mapping = "threads"}
// TILED-NEXT:      %i = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%ty, %i_t)
// TILED-NEXT:      gpu.barrier
// TILED-NEXT:      affine.if affine_set<(d0) : (((d0 * -1) + 99) >= 0)>(%i) {
// TILED:               affine.for %k = affine_map<(d0) -> (d0)>(%k_t) to min affine_map<(d0) -> ((d0 + 8), 70)>(%k_t) {
// TILED-NEXT:            affine.load %A_shared[%i + %i_t * -1, %k + %k_t * -1]
// TILED:             } {loopopt.name = "j", loopopt.mapping = "thread x"}
// TILED:           } {loopopt.name = "i", loopopt.mapping = "thread y"}
// TILED-NEXT:      gpu.barrier
// TILED-NEXT:    } {loopopt.name = "k_t", loopopt.mapping = "sequential"}
// TILED-NEXT:    gpu.return
// With block=16,8 (smaller than the 32x32 tile) each thread loops over its points with strides
// 16 and 8, and the 256 elements of a copy take two rounds of 128 threads (a constant trip
// count: element tid + 128 * r).
// SMALL:         gpu.launch_func @kernels::@tiled_k0 blocks in (%c3, %c4, %c1) threads in (%c16, %c8, %c1)
// SMALL:         known_block_size = array<i32: 16, 8, 1>
// SMALL:         affine.for %A_copy_in_r = 0 to 2 {
// SMALL-NEXT:      %A_copy_in_l = affine.apply affine_map<(d0, d1, d2) -> (((d0 + (d1 * 16)) + (d2 * 128)))> (%tx, %ty, %A_copy_in_r)
// SMALL:         } {loopopt.name = "A_copy_in", loopopt.mapping = "threads"}
// SMALL:         gpu.barrier
// SMALL-NEXT:    affine.for %i = affine_map<(d0, d1) -> ((d0 + d1))>(%ty, %i_t) to min affine_map<(d0) -> ((d0 + 32), 100)>(%i_t) step 8 {
// SMALL-NEXT:      affine.for %j = affine_map<(d0, d1) -> ((d0 + d1))>(%tx, %j_t) to min affine_map<(d0) -> ((d0 + 32), 90)>(%j_t) step 16 {
// SMALL:         } {loopopt.name = "i", loopopt.mapping = "thread y"}
// SMALL-NEXT:    gpu.barrier
// copy-vector=4: a thread copies 4 consecutive elements of a row (the first one, e, is shared
// by the lanes; the lanes add 0..3 to the column), unrolled so that LLVM can merge them into
// 128-bit accesses; the kernel's array arguments must be 16-byte aligned.
// VECTOR:        gpu.func @tiled_k0({{.*}}loopopt.pointer_align = 16 : i32
// VECTOR:        %A_copy_in_l = affine.apply affine_map<(d0, d1) -> ((d0 + (d1 * 16)))> (%tx, %ty)
// VECTOR-NEXT:   %A_copy_in_e = affine.apply affine_map<(d0) -> ((d0 * 4))> (%A_copy_in_l)
// VECTOR-NEXT:   %A_in0 = affine.apply affine_map<(d0) -> ((d0 floordiv 8))> (%A_copy_in_e)
// VECTOR-NEXT:   %A_in1 = affine.apply affine_map<(d0) -> ((d0 + ((d0 floordiv 8) * -8)))> (%A_copy_in_e)
// VECTOR-NEXT:   affine.if affine_set<(d0, d1, d2, d3, d4) : (((d0 * -1) + 255) >= 0, {{.*}}>(%A_copy_in_e, %A_in0, %i_t, %A_in1, %k_t) {
// VECTOR-NEXT:     affine.load %A[%i_t + %A_in0, %k_t + %A_in1]
// VECTOR:        %A_in1_1 = affine.apply affine_map<(d0) -> (((d0 + ((d0 floordiv 8) * -8)) + 1))> (%A_copy_in_e)
// VECTOR:        %A_in1_3 = affine.apply affine_map<(d0) -> (((d0 + ((d0 floordiv 8) * -8)) + 3))> (%A_copy_in_e)
// VECTOR:        %B_copy_in_e = affine.apply affine_map<(d0) -> ((d0 * 4))> (%B_copy_in_l)
// VECTOR:        gpu.barrier
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
// END OF TILED CASE
// warp-lanes=4,8 on 8 x 8 threads: each warp runs a 4 x 8 (x, y) sub-grid of the threads (two
// warps side by side along x); the point loops read the renumbered ids, the copies the plain
// ones (consecutive lanes on consecutive elements). The 2 x 2 fragments of a 32 x 32 tile are
// spread cyclically: thread (tx', ty') runs rows 2 ty' + 16 s, columns 2 tx' + 16 s.
// LANETILE:         gpu.func @tiled_k0({{.*}}) kernel attributes {{{.*}}warp_lanes = "4x8"
// LANETILE:         %tx = gpu.thread_id x
// LANETILE-NEXT:    %ty = gpu.thread_id y
// LANETILE-NEXT:    %tx_warp = affine.apply affine_map<(d0, d1) -> (((((((d1 * 8) + d0) floordiv 32) mod 2) * 4) + ((((d1 * 8) + d0) mod 32) mod 4)))> (%tx, %ty)
// LANETILE-NEXT:    %ty_warp = affine.apply affine_map<(d0, d1) -> (((((((d1 * 8) + d0) floordiv 32) floordiv 2) * 8) + ((((d1 * 8) + d0) mod 32) floordiv 4)))> (%tx, %ty)
// LANETILE:         %A_copy_in_l = affine.apply affine_map<(d0, d1, d2) -> (((d0 + (d1 * 8)) + (d2 * 64)))> (%tx, %ty, %A_copy_in_r)
// LANETILE:         affine.for %i_t2 = affine_map<(d0, d1) -> (((d0 * 2) + d1))>(%ty_warp, %i_t) to min affine_map<(d0) -> ((d0 + 32), 100)>(%i_t) step 16 {
// LANETILE-NEXT:      affine.for %j_t2 = affine_map<(d0, d1) -> (((d0 * 2) + d1))>(%tx_warp, %j_t) to min affine_map<(d0) -> ((d0 + 32), 90)>(%j_t) step 16 {
// block-group=8 on the 3 x 4 grid of 32 x 32 tiles: groups of 4 block rows (the largest divisor
// of 4 within 8); consecutive blocks walk down the 4 rows of a column, then the next column.
// GROUP:         gpu.launch_func @kernels::@tiled_k0 blocks in (%c3, %c4, %c1)
// GROUP:         gpu.func @tiled_k0({{.*}}) kernel attributes {{{.*}}block_group = "4 rows"
// GROUP:         %bx_group = affine.apply affine_map<(d0, d1) -> (((((d1 * 3) + d0) mod 12) floordiv 4))> (%bx, %by)
// GROUP-NEXT:    %by_group = affine.apply affine_map<(d0, d1) -> ((((((d1 * 3) + d0) floordiv 12) * 4) + (((d1 * 3) + d0) mod 4)))> (%bx, %by)
// GROUP-NEXT:    %i_t = affine.apply affine_map<(d0) -> ((d0 * 32))> (%by_group)
// GROUP-NEXT:    %j_t = affine.apply affine_map<(d0) -> ((d0 * 32))> (%bx_group)

// -----

// GRID SUM: a sum of 2^20 elements from %init. By default (PARTIALS) 1024 blocks write their
// totals to @__partials_0 and the region adds them in order to %init: deterministic. With
// reductions=grid-atomic (ATOMIC) a one-thread kernel sets the accumulator @__total_0 to 0.0,
// the blocks add into it atomically, and the region adds %init to it, once.
// PARTIALS-LABEL: func.func @atomic_sum
// PARTIALS:         gpu.launch_func @kernels::@atomic_sum_k0 blocks in (%c1024
// PARTIALS:         gpu.launch_func @kernels::@atomic_sum_k1 blocks in (%c1
// PARTIALS:         gpu.func @atomic_sum_k0
// PARTIALS-SAME:      loopopt.mapping = {grid_reduction = "i", blocks = "partials"}
// PARTIALS:           affine.store %{{.*}}, %{{.*}}[%bx] : memref<1024xf32, 1 : i64>
// PARTIALS:         gpu.func @atomic_sum_k1
// PARTIALS:           affine.for %i_blocks = {{.*}} to 1024 step 256 iter_args
// ATOMIC-LABEL: func.func @atomic_sum
// ATOMIC:         gpu.launch_func @kernels::@atomic_sum_k0 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
// ATOMIC:         gpu.launch_func @kernels::@atomic_sum_k1 blocks in (%c1024
// ATOMIC:         gpu.launch_func @kernels::@atomic_sum_k2 blocks in (%c1
// ATOMIC:         "memref.global"() <{sym_name = "__total_0", type = memref<1xf32, 1 : i64>
// ATOMIC:         gpu.func @atomic_sum_k0()
// ATOMIC-NEXT:      %total = memref.get_global @__total_0
// ATOMIC-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// ATOMIC-NEXT:      affine.store %[[ZERO]], %total[0]
// ATOMIC:         gpu.func @atomic_sum_k1
// ATOMIC-SAME:      loopopt.mapping = {grid_reduction = "i", blocks = "atomics"}
// ATOMIC:           affine.store %{{.*}}, %reduced[0]
// ATOMIC:           affine.if affine_set<(d0) : (d0 == 0)>(%tx) {
// ATOMIC-NEXT:        %total = memref.get_global @__total_0
// ATOMIC-NEXT:        %[[C0:.*]] = arith.constant 0 : index
// ATOMIC-NEXT:        "memref.atomic_rmw"(%{{.*}}, %total, %[[C0]]) <{kind = 0 : i64}>
// ATOMIC:         gpu.func @atomic_sum_k2(%out: memref<1xf32>, %init: f32)
// ATOMIC-NEXT:      %total = memref.get_global @__total_0
// ATOMIC-NEXT:      %[[T:.*]] = affine.load %total[0]
// ATOMIC-NEXT:      %[[S:.*]] = arith.addf %init, %[[T]] : f32
// ATOMIC-NEXT:      affine.store %[[S]], %out[0]
func.func @atomic_sum(%X: memref<1048576xf32>, %out: memref<1xf32>, %init: f32) {
  %s = affine.for %i = 0 to 1048576 iter_args(%acc = %init) -> (f32) {
    %x = affine.load %X[%i] : memref<1048576xf32>
    %a = arith.addf %acc, %x : f32
    affine.yield %a : f32
  } {loopopt.name = "i"}
  affine.store %s, %out[0] : memref<1xf32>
  return
}
// END OF GRID SUM

// CYCLIC CASE: 4 x 4 fragments of full 32 x 64 tiles on 8 x 4 threads: 16 column chunks on 8
// threads and 8 row chunks on 4, each thread runs 2 of each, a constant trip count (the upper
// bound counts from the thread's first chunk), so that loop-unroll can unroll them.
func.func @cyclic(%A: memref<64x128xf32>, %B: memref<64x128xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      %v = affine.load %A[%i, %j] : memref<64x128xf32>
      %w = arith.addf %v, %v : f32
      affine.store %w, %B[%i, %j] : memref<64x128xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
// END OF CYCLIC CASE
// CYCLIC:       affine.for %i_t2 = affine_map<(d0, d1) -> (((d0 * 4) + d1))>(%ty, %i_t) to affine_map<(d0, d1) -> ((((d0 * 4) + d1) + 32))>(%ty, %i_t) step 16 {
// CYCLIC-NEXT:    affine.for %j_t2 = affine_map<(d0, d1) -> (((d0 * 4) + d1))>(%tx, %j_t) to affine_map<(d0, d1) -> ((((d0 * 4) + d1) + 64))>(%tx, %j_t) step 32 {

// -----

// NEGATIVE CASES, from here on: each chunk is refused by gpu-map-loops (RUN line 5).
// A 64x32 tile would need 2048 threads per block.
func.func @big_tiles(%A: memref<128x128xf32>) {
  // expected-error@+1 {{gpu-map-loops: a block of 32x64 threads (x=j, y=i) has 2048 threads, more than 1024; pass block= with fewer threads (e.g. block=32,32) or tile with smaller sizes}}
  affine.for %it = 0 to 128 step 64 {
    affine.for %jt = 0 to 128 step 32 {
      affine.for %i = affine_map<(d0) -> (d0)>(%it) to affine_map<(d0) -> (d0 + 64)>(%it) {
        affine.for %j = affine_map<(d0) -> (d0)>(%jt) to affine_map<(d0) -> (d0 + 32)>(%jt) {
          %v = affine.load %A[%i, %j] : memref<128x128xf32>
          %w = arith.addf %v, %v : f32
          affine.store %w, %A[%i, %j] : memref<128x128xf32>
        } {loopopt.name = "j"}
      } {loopopt.name = "i"}
    } {loopopt.name = "j_t"}
  } {loopopt.name = "i_t"}
  return
}

// -----

// A function that returns a value computed on the device cannot leave it there.
func.func @total(%X: memref<100xf32>) -> f32 {
  %zero = arith.constant 0.0 : f32
  %s = affine.for %i = 0 to 100 iter_args(%acc = %zero) -> (f32) {
    %x = affine.load %X[%i] : memref<100xf32>
    %a = arith.addf %acc, %x : f32
    affine.yield %a : f32
  } {loopopt.name = "i"}
  // expected-error@+1 {{gpu-map-loops: the function returns a value computed on the device; return results through arrays}}
  return %s : f32
}

// -----

// A buffer used by all threads of a block must be in workgroup memory (promote's
// memory-space=shared); in the default space every thread would have its own.
func.func @local_tile(%A: memref<64xf32>, %B: memref<64xf32>) {
  affine.for %it = 0 to 64 step 16 {
    // expected-error@+1 {{gpu-map-loops: buffer %A_local is allocated outside the thread-mapped loops, where each thread would get its own copy; promote it with memory-space=shared (a static workgroup buffer) or under a thread-mapped loop}}
    %A_local = memref.alloca() : memref<16xf32>
    affine.for %c = 0 to 16 {
      %v = affine.load %A[%it + %c] : memref<64xf32>
      affine.store %v, %A_local[%c] : memref<16xf32>
    } {loopopt.name = "A_copy_in_0", loopopt.copy}
    affine.for %i = affine_map<(d0) -> (d0)>(%it) to affine_map<(d0) -> (d0 + 16)>(%it) {
      %v = affine.load %A_local[%i - %it] : memref<16xf32>
      affine.store %v, %B[%i] : memref<64xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "i_t"}
  return
}

