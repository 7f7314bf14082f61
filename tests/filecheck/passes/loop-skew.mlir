// RUN: sed -n '/^\/\/ SKEW CASES/,/^\/\/ END OF SKEW CASES/p' %s | loopopt-opt - --split-input-file -p 'loop-skew{loops=i,j factor=2}' | filecheck %s
// RUN: sed -n '/^\/\/ SEIDEL/,/^\/\/ END OF SEIDEL/p' %s | loopopt-opt - -p 'loop-skew{loops=i,j factor=auto wavefront},loop-mark-parallel' | filecheck %s --check-prefix=WAVE
// RUN: sed -n '/^\/\/ SEIDEL/,/^\/\/ END OF SEIDEL/p' %s | loopopt-opt - -p 'loop-skew{loops=i,j factor=2},loop-interchange{loops=i,j_sk permutation=1,0},gpu-map-loops' | filecheck %s --check-prefix=GPU
// RUN: sed -n '/^\/\/ NEGATIVE CASES/,$p' %s | loopopt-opt - --split-input-file --verify-diagnostics -p 'loop-skew{loops=i,j factor=1 wavefront}'
// RUN: not loopopt-opt %s -p 'loop-skew{loops=i factor=2}' 2>&1 | filecheck %s --check-prefix=LOOPS
// RUN: not loopopt-opt %s -p 'loop-skew{loops=i,j factor=0}' 2>&1 | filecheck %s --check-prefix=FACTOR
// RUN: not loopopt-opt %s -p 'loop-skew{loops=i,j factor=some}' 2>&1 | filecheck %s --check-prefix=FACTOR

// The inner IV becomes j_sk = j + factor * i: bounds shifted by factor * i, uses of j read
// j_sk - factor * i. Skewing is always legal (the iterations keep their order).

// LOOPS:  error: loop-skew: loops= needs two loop names (outer, inner), got 1 (i)
// FACTOR: error: loop-skew: factor must be a positive integer or auto, got {{0|some}}

// SKEW CASES (RUN line 1)

// CHECK-LABEL: func.func @wave
// CHECK:       affine.for %[[I:.*]] = 1 to 9 {
// CHECK-NEXT:    affine.for %[[J:.*]] = affine_map<(d0) -> ((d0 * 2))>(%[[I]]) to affine_map<(d0) -> (((d0 * 2) + 7))>(%[[I]]) {
// CHECK-NEXT:      affine.load %{{.*}}[%[[I]] + -1, %[[J]] + %[[I]] * -2 + 1]
// CHECK-NEXT:      affine.load %{{.*}}[%[[I]], %[[J]] + %[[I]] * -2]
// CHECK:           affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]] + %[[I]] * -2]
// CHECK-NEXT:    } {loopopt.name = "j_sk"}
// CHECK-NEXT:  } {loopopt.name = "i"}
func.func @wave(%A: memref<9x8xf32>) {
  affine.for %i = 1 to 9 {
    affine.for %j = 0 to 7 {
      %u = affine.load %A[%i - 1, %j + 1] : memref<9x8xf32>
      %c = affine.load %A[%i, %j] : memref<9x8xf32>
      %s = arith.addf %u, %c : f32
      affine.store %s, %A[%i, %j] : memref<9x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// An imperfect pair: the ops beside j stay as they are; only j's iterations are renamed
// (the differential fuzzer's nests were refused here, 38% of its loop-skew draws).
// CHECK-LABEL: func.func @imperfect_pair
// CHECK:       affine.for %[[I:.*]] = 1 to 9 {
// CHECK-NEXT:    affine.load %{{.*}}[%[[I]], 0]
// CHECK-NEXT:    affine.store %{{.*}}, %{{.*}}[%[[I]], 7]
// CHECK-NEXT:    affine.for %[[J:.*]] = affine_map<(d0) -> (((d0 * 2) + 1))>(%[[I]]) to affine_map<(d0) -> (((d0 * 2) + 7))>(%[[I]]) {
// CHECK-NEXT:      affine.load %{{.*}}[%[[I]] + -1, %[[J]] + %[[I]] * -2 + 1]
// CHECK:         } {loopopt.name = "j_sk"}
// CHECK-NEXT:  } {loopopt.name = "i"}
func.func @imperfect_pair(%A: memref<10x8xf32>) {
  affine.for %i = 1 to 9 {
    %v = affine.load %A[%i, 0] : memref<10x8xf32>
    affine.store %v, %A[%i, 7] : memref<10x8xf32>
    affine.for %j = 1 to 7 {
      %w = affine.load %A[%i - 1, %j + 1] : memref<10x8xf32>
      affine.store %w, %A[%i, %j] : memref<10x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// max/min bounds: every result is shifted; parallel marks stay valid.
// CHECK-LABEL: func.func @trapezoid
// CHECK-SAME:    %[[M:[a-z0-9_]+]]: index) {
// CHECK:       affine.for %[[I:.*]] = 0 to %{{.*}} {
// CHECK-NEXT:    affine.for %[[J:.*]] = max affine_map<(d0) -> ((d0 * 2), ((d0 * 3) + -2))>(%[[I]]) to min affine_map<(d0)[s0] -> (((d0 * 3) + 3), ((d0 * 2) + s0))>(%[[I]])[%[[M]]] {
// CHECK-NEXT:      affine.load %{{.*}}[%[[J]] + %[[I]] * -2]
// CHECK:         } {loopopt.name = "j_sk", loopopt.parallel}
// CHECK-NEXT:  } {loopopt.name = "i", loopopt.parallel}
func.func @trapezoid(%A: memref<?x?xf32>, %B: memref<?xf32>, %n: index, %m: index) {
  affine.for %i = 0 to %n {
    affine.for %j = max affine_map<(d0) -> (0, d0 - 2)>(%i) to min affine_map<(d0)[s0] -> (d0 + 3, s0)>(%i)[%m] {
      %v = affine.load %B[%j] : memref<?xf32>
      affine.store %v, %A[%i, %j] : memref<?x?xf32>
    } {loopopt.name = "j", loopopt.parallel}
  } {loopopt.name = "i", loopopt.parallel}
  return
}

// -----

// A use of j outside affine maps reads an affine.apply that computes j; maps (the bound of k)
// compose j_sk - 2 * i.
// CHECK-LABEL: func.func @uses
// CHECK:       affine.for %[[I:.*]] = 0 to 10 {
// CHECK-NEXT:    affine.for %[[J:.*]] = affine_map<(d0) -> ((d0 * 2))>(%[[I]]) to affine_map<(d0) -> (((d0 * 2) + 10))>(%[[I]]) {
// CHECK-NEXT:      %[[JOLD:.*]] = affine.apply affine_map<(d0, d1) -> ((d0 + (d1 * -2)))> (%[[J]], %[[I]])
// CHECK-NEXT:      affine.for %[[K:.*]] = affine_map<(d0, d1) -> ((d0 + (d1 * -2)))>(%[[J]], %[[I]]) to 12 {
// CHECK-NEXT:        arith.index_cast %[[JOLD]] : index to i32
func.func @uses(%A: memref<40x40xi32>) {
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      affine.for %k = affine_map<(d0) -> (d0)>(%j) to 12 {
        %x = arith.index_cast %j : index to i32
        affine.store %x, %A[%i, %k] : memref<40x40xi32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// END OF SKEW CASES

// SEIDEL (RUN lines 2 and 3): PolyBench seidel-2d on a 13x10 array. Within one time step the
// distances over (i, j) are (1, -1), (1, 0), (1, 1) and (0, 1); skewed by 2 they become (1, 1),
// (1, 2), (1, 3), (0, 1), all carried by j_sk once it is outside: i is parallel (factor=auto
// finds 2; 1 would leave (1, -1) as (0, 1) after the interchange, carried by i). gpu-map-loops
// keeps t and j_sk on the host around a kernel over i.

// WAVE-LABEL: func.func @seidel
// WAVE:       affine.for %[[T:.*]] = 0 to 3 {
// WAVE-NEXT:    affine.for %[[J:.*]] = 3 to 31 {
// WAVE-NEXT:      affine.for %[[I:.*]] = max affine_map<(d0) -> (1, ((d0 + -8) ceildiv 2))>(%[[J]]) to min affine_map<(d0) -> (12, (((d0 + -1) floordiv 2) + 1))>(%[[J]]) {
// WAVE-NEXT:        affine.load %{{.*}}[%[[I]] + -1, %[[J]] + %[[I]] * -2 + -1]
// WAVE:             affine.store %{{.*}}, %{{.*}}[%[[I]], %[[J]] + %[[I]] * -2]
// WAVE-NEXT:      } {loopopt.name = "i", loopopt.parallel}
// WAVE-NEXT:    } {loopopt.name = "j_sk"}
// WAVE-NEXT:  } {loopopt.name = "t"}

// GPU-LABEL: func.func @seidel
// GPU:         affine.for %{{.*}} = 0 to 3 {
// GPU-NEXT:      affine.for %[[J:.*]] = 3 to 31 {
// GPU:             gpu.launch_func @kernels::@seidel_k0 {{.*}} args(%{{.*}} : memref<13x10xf32>, %[[J]] : index)
// GPU:           } {loopopt.name = "j_sk", loopopt.mapping = "host"}
// GPU-NEXT:    } {loopopt.name = "t", loopopt.mapping = "host"}
// GPU:         gpu.func @seidel_k0({{.*}}) kernel attributes {{{.*}}loopopt.mapping = {block_x = "i_t", thread_x = "i"}}
func.func @seidel(%A: memref<13x10xf32>) {
  %nine = arith.constant 9.0 : f32
  affine.for %t = 0 to 3 {
    affine.for %i = 1 to 12 {
      affine.for %j = 1 to 9 {
        %a0 = affine.load %A[%i - 1, %j - 1] : memref<13x10xf32>
        %a1 = affine.load %A[%i - 1, %j] : memref<13x10xf32>
        %a2 = affine.load %A[%i - 1, %j + 1] : memref<13x10xf32>
        %a3 = affine.load %A[%i, %j - 1] : memref<13x10xf32>
        %a4 = affine.load %A[%i, %j] : memref<13x10xf32>
        %a5 = affine.load %A[%i, %j + 1] : memref<13x10xf32>
        %a6 = affine.load %A[%i + 1, %j - 1] : memref<13x10xf32>
        %a7 = affine.load %A[%i + 1, %j] : memref<13x10xf32>
        %a8 = affine.load %A[%i + 1, %j + 1] : memref<13x10xf32>
        %s0 = arith.addf %a0, %a1 : f32
        %s1 = arith.addf %s0, %a2 : f32
        %s2 = arith.addf %s1, %a3 : f32
        %s3 = arith.addf %s2, %a4 : f32
        %s4 = arith.addf %s3, %a5 : f32
        %s5 = arith.addf %s4, %a6 : f32
        %s6 = arith.addf %s5, %a7 : f32
        %s7 = arith.addf %s6, %a8 : f32
        %r = arith.divf %s7, %nine : f32
        affine.store %r, %A[%i, %j] : memref<13x10xf32>
      } {loopopt.name = "j"}
    } {loopopt.name = "i"}
  } {loopopt.name = "t"}
  return
}

// END OF SEIDEL

// NEGATIVE CASES, from here on: each chunk is refused by
// loop-skew{loops=i,j factor=1 wavefront} (RUN line 4).

func.func @imperfect(%A: memref<9x8xf32>) {
  // expected-error@+1 {{loop-skew: loops i, j do not form a perfect nest ('j' is not the only op in 'i')}}
  affine.for %i = 1 to 9 {
    %c = affine.load %A[%i, 0] : memref<9x8xf32>
    affine.for %j = 0 to 7 {
      affine.store %c, %A[%i, %j] : memref<9x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// Factor 1 turns the distance (1, -1) into (1, 0): after the interchange i still carries it.
func.func @nine(%A: memref<9x8xf32>) {
  // expected-error@+1 {{loop-skew: wavefront (i, j) with factor 1 leaves loop i carrying A[i, j] → A[i - 1, j + 1] (RAW) with direction (<, >); factor=2 would make it parallel}}
  affine.for %i = 1 to 8 {
    affine.for %j = 1 to 7 {
      %u = affine.load %A[%i - 1, %j + 1] : memref<9x8xf32>
      %c = affine.load %A[%i, %j - 1] : memref<9x8xf32>
      %s = arith.addf %u, %c : f32
      affine.store %s, %A[%i, %j] : memref<9x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// Distances (1, -7 .. 7): factor 1 would reverse some of them.
func.func @far(%A: memref<9x8xf32>) {
  // expected-error@+1 {{loop-skew: illegal: skewing (i, j) by 1 and interchanging reverses A[i, j] → A[i - 1, -j + 7] (RAW) with direction (<, *); factor=8 would make the wavefront legal}}
  affine.for %i = 1 to 9 {
    affine.for %j = 0 to 8 {
      %u = affine.load %A[%i - 1, -%j + 7] : memref<9x8xf32>
      affine.store %u, %A[%i, %j] : memref<9x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}

// -----

// The interchanged bounds of a stepped inner loop cannot keep its stride.
func.func @stepped(%A: memref<9x8xf32>) {
  affine.for %i = 1 to 9 {
    // expected-error@+1 {{loop-skew: cannot reorder the non-rectangular band: loop 'j_sk' has step 2 and a lower bound that is a max or uses a loop that would be inside it}}
    affine.for %j = 0 to 7 step 2 {
      %u = affine.load %A[%i - 1, %j] : memref<9x8xf32>
      affine.store %u, %A[%i, %j] : memref<9x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
