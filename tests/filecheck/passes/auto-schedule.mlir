// RUN: sed -n '/^\/\/ MATMUL/,/^\/\/ END MATMUL/p' %s | loopopt-opt - -p 'auto-schedule{device=sm_90 explain top=2}' 2>&1 | filecheck %s
// RUN: sed -n '/^\/\/ IMPERFECT/,/^\/\/ END IMPERFECT/p' %s | loopopt-opt - -p 'auto-schedule{device=sm_90 explain}' 2>&1 | filecheck %s --check-prefix=DEFAULT
// RUN: sed -n '/^\/\/ MATMUL/,/^\/\/ END MATMUL/p' %s | loopopt-opt - -p 'auto-schedule{device=sm_90 gpu=false}' | filecheck %s --check-prefix=LOOPS
// RUN: not loopopt-opt %s -p 'auto-schedule{device=sm_42}' 2>&1 | filecheck %s --check-prefix=DEVICE
// RUN: sed -n '/^\/\/ ODD/,/^\/\/ END ODD/p' %s | loopopt-opt - -p 'auto-schedule{device=sm_90 explain top=1}' 2>&1 | filecheck %s --check-prefix=ODD
// RUN: sed -n '/^\/\/ INIT/,/^\/\/ END INIT/p' %s | loopopt-opt - -p 'auto-schedule{device=sm_90 explain top=1}' 2>&1 | filecheck %s --check-prefix=INIT

// The choice for a 64x64x32 matmul on the built-in sm_90 table (H100 SXM), pinned: the model
// ranks the candidates of the matmul class (two-level tiles, shared A and B, register tile,
// pipelined or not, scalar or vector copies) and the first one's pipeline is applied. `explain` prints the
// ranking (to stderr, before the IR) with each candidate's breakdown and the chosen pipeline.
// CHECK:       auto-schedule @mm, nest 'i' on H100 SXM (sm_90): {{[0-9]+}} candidates, best first
// CHECK-NEXT:    #1 matmul bm=32 bn=32 bk=32 tm=4 tn=4 pipelined=1 copy_vector=4: {{[0-9.]+}} us {{[a-z]+}}-bound: {{.*}} regs, {{.*}} KB shared, {{[0-9]+}} blocks/SM
// CHECK-NEXT:    #2 matmul
// CHECK-NEXT:    pipeline: loop-tile{tile-sizes=32,32,32},promote{arrays=A loop=k_t memory-space=shared pad=4 transpose},promote{arrays=B loop=k_t memory-space=shared pad=4},loop-tile{loops=i,j tile-sizes=4,4},gpu-map-loops{block=8,8 max-registers=cap copy-vector=4},
// CHECK:       gpu.launch_func @kernels::@mm_k0 blocks in (%c2, %c2, %c1) threads in (%c8, %c8, %c1)
// CHECK:       gpu.func @mm_k0({{.*}}) workgroup(%A_shared : memref<32x36xf32, 3 : i64> {llvm.align = 16 : i64}, %B_shared : memref<32x36xf32, 3 : i64> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 8, 8, 1>
// CHECK:         affine.for %k_t = 0 to 32 step 32 iter_args(
// CHECK:         gpu.barrier
// CHECK-NOT:     affine.for %k =
// CHECK:         gpu.return
// With gpu=false (the CPU path of loopopt.compile) only the loop-level part applies: tiles and
// local copies, no kernel.
// LOOPS-LABEL: func.func @mm
// LOOPS:         memref.alloca() {loopopt.scope = {{[0-9]+}} : i64} : memref<32x36xf32, 3 : i64>
// LOOPS:         affine.for %i_t = 0 to 64 step 32 {
// LOOPS-NOT:     gpu.
// MATMUL
func.func @mm(%A: memref<64x32xf32>, %B: memref<32x64xf32>, %C: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 32 {
        %a = affine.load %A[%i, %k] : memref<64x32xf32>
        %b = affine.load %B[%k, %j] : memref<32x64xf32>
        %c = affine.load %C[%i, %j] : memref<64x64xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<64x64xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
// END MATMUL

// A nest the summary cannot describe (the time loop holds two loops) is a host loop: each of
// its two nests gets a schedule of its own (a block of 32 threads for 64 elements), launched
// from the time loop.
// DEFAULT:      auto-schedule @jacobi1d, nest 't' on H100 SXM (sm_90): default mapping (summarize: imperfect nest: loop 't' holds 2 loops)
// DEFAULT-NEXT: auto-schedule @jacobi1d, nest 'i' on H100 SXM (sm_90): 2 candidates, best first
// DEFAULT:        pipeline: loop-tile{loops=i tile-sizes=32},gpu-map-loops{block=32}
// DEFAULT:      auto-schedule @jacobi1d, nest 'i' on H100 SXM (sm_90): 2 candidates, best first
// DEFAULT:      affine.for %t = 0 to 4 {
// DEFAULT:        gpu.launch_func @kernels::@jacobi1d_k0 blocks in (%c2, %c1, %c1) threads in (%c32, %c1, %c1)
// DEFAULT:        gpu.launch_func @kernels::@jacobi1d_k1
// DEFAULT:      } {loopopt.name = "t", loopopt.mapping = "host"}
// IMPERFECT
func.func @jacobi1d(%A: memref<66xf32>, %B: memref<66xf32>) {
  affine.for %t = 0 to 4 {
    affine.for %i = 1 to 65 {
      %l = affine.load %A[%i - 1] : memref<66xf32>
      %r = affine.load %A[%i + 1] : memref<66xf32>
      %s = arith.addf %l, %r : f32
      affine.store %s, %B[%i] : memref<66xf32>
    } {loopopt.name = "i"}
    affine.for %i = 1 to 65 {
      %v = affine.load %B[%i] : memref<66xf32>
      affine.store %v, %A[%i] : memref<66xf32>
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}
// END IMPERFECT

// DEVICE: error: unknown device 'sm_42'; known: sm_80, sm_89, sm_90, A100, L40S, H100, H200

// Sizes no tile divides (100x70x44): padded tiles (pad-tiles), pinned. The partial tiles run the
// full tiles' unrolled code; C's guarded accumulators stay in registers across k_t.
// ODD:       auto-schedule @odd, nest 'i' on H100 SXM (sm_90): {{[0-9]+}} candidates, best first
// ODD-NEXT:    #1 matmul bm=32 bn=32 bk=32 tm=4 tn=2 pipelined=1 padded=1:
// ODD-NEXT:    pipeline: loop-tile{tile-sizes=32,32,32},loop-tile{loops=i,j tile-sizes=4,2},pad-tiles{loops=i_t2,j_t2,i,j,k},promote{{.*}},pipeline-copies{loop=k_t},{{.*}},scalar-replace{loop=k_t}
// ODD:       gpu.func @odd_k0
// ODD:         affine.for %k_t = 0 to 44 step 32 iter_args(
// ODD:         } {loopopt.padded}
// ODD:         gpu.return
// ODD
func.func @odd(%A: memref<100x44xf32>, %B: memref<44x70xf32>, %C: memref<100x70xf32>) {
  affine.for %i = 0 to 100 {
    affine.for %j = 0 to 70 {
      affine.for %k = 0 to 44 {
        %a = affine.load %A[%i, %k] : memref<100x44xf32>
        %b = affine.load %B[%k, %j] : memref<44x70xf32>
        %c = affine.load %C[%i, %j] : memref<100x70xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<100x70xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
// END ODD

// A convolution that sets each output to 0 ahead of its filter loops (O = I * F, as cuDNN):
// summarized as an initialized nest, scheduled by the conv recipe, the zero stored first.
// The pick has 4 adjacent outputs of a row per thread (cols=4: 32 threads per 128 columns).
// INIT:       auto-schedule @conv, nest 'i' on H100 SXM (sm_90): {{[0-9]+}} candidates, best first
// INIT-NEXT:    #1 conv by=4 bx=128 rows=1 cols=4:
// INIT:       threads in (%c32, %c4, %c1)
// INIT:       gpu.func @conv_k0
// INIT:         %j_t2 = affine.apply affine_map<(d0, d1) -> (((d0 * 4) + d1))> (%tx, %j_t)
// INIT:         affine.store %zero, %O[%i_t2, %j_t2]
// INIT:         affine.store %zero_3, %O[%i_t2, %j_t2 + 3]
// INIT-NOT:     affine.for
// INIT:         gpu.return
// INIT
func.func @conv(%I: memref<66x130xf32>, %F: memref<3x3xf32>, %O: memref<64x128xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      %zero = arith.constant 0.0 : f32
      affine.store %zero, %O[%i, %j] : memref<64x128xf32>
      affine.for %p = 0 to 3 {
        affine.for %q = 0 to 3 {
          %x = affine.load %I[%i + %p, %j + %q] : memref<66x130xf32>
          %f = affine.load %F[%p, %q] : memref<3x3xf32>
          %o = affine.load %O[%i, %j] : memref<64x128xf32>
          %m = arith.mulf %x, %f : f32
          %s = arith.addf %o, %m : f32
          affine.store %s, %O[%i, %j] : memref<64x128xf32>
        } {loopopt.name = "q"}
      } {loopopt.name = "p"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
// END INIT

// Whole functions: PolyBench's gemm scales C inside the i loop, ahead of its k loop. The i loop
// is split (gpu_host.split_nests), so the scaling gets a map schedule and the update, now a
// perfect nest (i, k, j), the matmul recipe, each outlined, scheduled and inlined back.
// RUN: sed -n '/^\/\/ GEMM/,/^\/\/ END GEMM/p' %s | loopopt-opt - -p 'auto-schedule{device=sm_90 explain top=1}' 2>&1 | filecheck %s --check-prefix=GEMM
// GEMM:       auto-schedule @gemm, nest 'i' on H100 SXM (sm_90): {{[0-9]+}} candidates, best first
// GEMM-NEXT:    #1 map
// GEMM:       auto-schedule @gemm, nest 'i' on H100 SXM (sm_90): {{[0-9]+}} candidates, best first
// GEMM-NEXT:    #1 matmul
// GEMM-NEXT:    pipeline: loop-interchange{loops=i,k,j permutation=0,2,1},loop-tile
// GEMM-LABEL: func.func @gemm
// GEMM-NEXT:    arith.constant
// GEMM:         gpu.launch_func @kernels::@gemm_k0 {{.*}} args(%beta : f32, %C : memref<256x256xf32>)
// GEMM:         gpu.launch_func @kernels::@gemm_k1 {{.*}} args(%alpha : f32, %C : memref<256x256xf32>, %A : memref<256x128xf32>, %B : memref<128x256xf32>)
// GEMM-NEXT:    func.return
// GEMM-NOT:   func.func
// GEMM:       gpu.func @gemm_k1
// GEMM-SAME:    workgroup(%A_shared : memref<{{.*}}xf32, 3 : i64> {llvm.align = 16 : i64}
// GEMM
func.func @gemm(%alpha: f32, %beta: f32, %C: memref<256x256xf32>, %A: memref<256x128xf32>, %B: memref<128x256xf32>) {
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 256 {
      %0 = affine.load %C[%i, %j] : memref<256x256xf32>
      %1 = arith.mulf %0, %beta : f32
      affine.store %1, %C[%i, %j] : memref<256x256xf32>
    } {loopopt.name = "j"}
    affine.for %k = 0 to 128 {
      affine.for %j2 = 0 to 256 {
        %2 = affine.load %C[%i, %j2] : memref<256x256xf32>
        %3 = affine.load %A[%i, %k] : memref<256x128xf32>
        %4 = arith.mulf %alpha, %3 : f32
        %5 = affine.load %B[%k, %j2] : memref<128x256xf32>
        %6 = arith.mulf %4, %5 : f32
        %7 = arith.addf %2, %6 : f32
        affine.store %7, %C[%i, %j2] : memref<256x256xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  return
}
// END GEMM

// A fill ahead of the k loop inside a perfect band (2mm's `tmp[i, j] = 0`): the band is split
// (expose_nests) because the part with the k loop then gets the matmul recipe.
// RUN: sed -n '/^\/\/ FILL/,/^\/\/ END FILL/p' %s | loopopt-opt - -p 'auto-schedule{device=sm_90 explain top=1}' 2>&1 | filecheck %s --check-prefix=FILL
// FILL:       auto-schedule @mm0, nest 'i' on H100 SXM (sm_90): default mapping (a sequential loop around or inside the parallel ones: gpu-map-loops' reduction strategies and loop order)
// FILL-NEXT:  auto-schedule @mm0, nest 'i' on H100 SXM (sm_90): {{[0-9]+}} candidates, best first
// FILL-NEXT:    #1 map
// FILL:       auto-schedule @mm0, nest 'i' on H100 SXM (sm_90): {{[0-9]+}} candidates, best first
// FILL-NEXT:    #1 matmul
// FILL:         gpu.launch_func @kernels::@mm0_k0
// FILL:         gpu.launch_func @kernels::@mm0_k1
// FILL
func.func @mm0(%T: memref<128x128xf32>, %A: memref<128x64xf32>, %B: memref<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 128 {
      affine.store %zero, %T[%i, %j] : memref<128x128xf32>
      affine.for %k = 0 to 64 {
        %t = affine.load %T[%i, %j] : memref<128x128xf32>
        %a = affine.load %A[%i, %k] : memref<128x64xf32>
        %b = affine.load %B[%k, %j] : memref<64x128xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %t, %p : f32
        affine.store %s, %T[%i, %j] : memref<128x128xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
// END FILL

// Negative: row sums with the output zeroed ahead of the reduction. Split, the reduction part
// would get no schedule of its own (a sequential loop inside its parallel one), so the band
// stays whole and gpu-map-loops maps it with a reduction strategy (a warp or more per row).
// RUN: sed -n '/^\/\/ ROWS/,/^\/\/ END ROWS/p' %s | loopopt-opt - -p 'auto-schedule{device=sm_90 explain}' 2>&1 | filecheck %s --check-prefix=ROWS
// ROWS:       auto-schedule @rows, nest 'i' on H100 SXM (sm_90): default mapping (a sequential loop around or inside the parallel ones
// ROWS-NOT:   auto-schedule
// ROWS:       gpu.launch_func @kernels::@rows_k0
// ROWS-NOT:   gpu.launch_func
// ROWS:       gpu.func @rows_k0
// ROWS-SAME:    loopopt.mapping = {{.*}}threads_
// ROWS
func.func @rows(%A: memref<512x300xf32>, %out: memref<512xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 512 {
    affine.store %zero, %out[%i] : memref<512xf32>
    affine.for %j = 0 to 300 {
      %o = affine.load %out[%i] : memref<512xf32>
      %a = affine.load %A[%i, %j] : memref<512x300xf32>
      %s = arith.addf %o, %a : f32
      affine.store %s, %out[%i] : memref<512xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
// END ROWS

// MLIR as written: scf.for loops and memref accesses are raised to affine ones and unnamed
// loops named i0, i1, … before the model reads the function (they got a single thread, and the
// default mapping where the matmul recipe was due). No warning about scf loops.
// RUN: sed -n '/^\/\/ SCF/,/^\/\/ END SCF/p' %s | loopopt-opt - -p 'auto-schedule{device=sm_90}' 2>&1 | filecheck %s --check-prefix=SCF
// SCF-NOT:    warning
// SCF:        gpu.func @addu_k0
// SCF-SAME:     loopopt.mapping = {block_x = "i_t", thread_x = "i"}
// SCF:        gpu.func @mmu_k0
// SCF-SAME:     loopopt.mapping = {block_x = "i1_t", thread_x = "i1_t2", block_y = "i0_t", thread_y = "i0_t2"}
// SCF-NOT:    scf.for
// SCF
func.func @addu(%A: memref<1000xf32>, %B: memref<1000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1000 : index
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.load %A[%i] : memref<1000xf32>
    %s = arith.addf %a, %a : f32
    memref.store %s, %B[%i] : memref<1000xf32>
  }
  return
}
func.func @mmu(%A: memref<256x128xf32>, %B: memref<128x256xf32>, %C: memref<256x256xf32>) {
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 256 {
      affine.for %k = 0 to 128 {
        %a = affine.load %A[%i, %k] : memref<256x128xf32>
        %b = affine.load %B[%k, %j] : memref<128x256xf32>
        %c = affine.load %C[%i, %j] : memref<256x256xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<256x256xf32>
      }
    }
  }
  return
}
// END SCF

// A matmul accumulated in a scalar (iter_args, as the Python front-end writes `s += …`): its
// accumulator goes to C (reduction-to-memory), then a fill and the matmul recipe. A row sum
// (ROWS above, in registers: no recipe either way) keeps its iter_args.
// RUN: sed -n '/^\/\/ SCALAR/,/^\/\/ END SCALAR/p' %s | loopopt-opt - -p 'auto-schedule{device=sm_90}' 2>&1 | filecheck %s --check-prefix=SCALAR
// SCALAR:       gpu.func @mms_k0
// SCALAR-SAME:    loopopt.mapping = {block_x = "j_t", thread_x = "j", block_y = "i_t", thread_y = "i"}
// SCALAR:       gpu.func @mms_k1
// SCALAR-SAME:    loopopt.mapping = {block_x = "j_t", thread_x = "j_t2", block_y = "i_t", thread_y = "i_t2"}
// SCALAR:       gpu.func @sums_k0
// SCALAR-SAME:    loopopt.mapping = {region = "one block", threads_x = "j", block_x = "i"}
// SCALAR:         iter_args
// SCALAR
func.func @mms(%A: memref<256x128xf32>, %B: memref<128x256xf32>, %C: memref<256x256xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 256 {
      %s = affine.for %k = 0 to 128 iter_args(%acc = %zero) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<256x128xf32>
        %b = affine.load %B[%k, %j] : memref<128x256xf32>
        %p = arith.mulf %a, %b : f32
        %n = arith.addf %acc, %p : f32
        affine.yield %n : f32
      } {loopopt.name = "k"}
      affine.store %s, %C[%i, %j] : memref<256x256xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
func.func @sums(%A: memref<512x300xf32>, %out: memref<512xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 512 {
    %s = affine.for %j = 0 to 300 iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %A[%i, %j] : memref<512x300xf32>
      %n = arith.addf %acc, %a : f32
      affine.yield %n : f32
    } {loopopt.name = "j"}
    affine.store %s, %out[%i] : memref<512xf32>
  } {loopopt.name = "i"}
  return
}
// END SCALAR
