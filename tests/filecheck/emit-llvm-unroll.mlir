// RUN: loopopt-opt %s -p 'loop-unroll{unroll-full in-llvm loop=k}' | filecheck %s --check-prefix=MARK
// RUN: loopopt-opt %s -p 'loop-unroll{unroll-full in-llvm loop=k}' --emit llvm | filecheck %s
// RUN: loopopt-opt %s --emit llvm | filecheck %s --check-prefix=PLAIN
// RUN: not loopopt-opt %s -p 'loop-unroll{in-llvm loop=k}' 2>&1 | filecheck %s --check-prefix=ERR

// `loop-unroll{unroll-full in-llvm}` leaves the loop rolled, marked; the lowering carries the
// mark to the loop's back edge, which LLVM IR gets as loop metadata asking for a full unroll.
// MARK-LABEL: func.func @dot
// MARK:         affine.for %{{.*}} = 0 to 128 iter_args
// MARK:         } {loopopt.name = "k", loopopt.unroll_in_llvm}

// CHECK-LABEL: define void @"dot"
// CHECK:         br label %[[HEADER:".*"]]{{$}}
// CHECK:         br i1 %{{.*}}, label %{{.*}}, label %{{.*}}{{$}}
// CHECK:         fmul float
// CHECK:         br label %[[HEADER]], !llvm.loop ![[LOOP:[0-9]+]]
// CHECK:       ![[FULL:[0-9]+]] = !{ !"llvm.loop.unroll.full" }
// CHECK:       ![[LOOP]] = distinct !{ ![[LOOP]], ![[FULL]] }

// Without the mark, no loop metadata.
// PLAIN-LABEL: define void @"dot"
// PLAIN-NOT:     !llvm.loop

// ERR: error: loop-unroll: in-llvm needs unroll-full
func.func @dot(%A: memref<128xf32>, %B: memref<128xf32>, %C: memref<1xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = affine.for %k = 0 to 128 iter_args(%acc = %zero) -> (f32) {
    %a = affine.load %A[%k] : memref<128xf32>
    %b = affine.load %B[%k] : memref<128xf32>
    %m = arith.mulf %a, %b : f32
    %n = arith.addf %acc, %m : f32
    affine.yield %n : f32
  } {loopopt.name = "k"}
  affine.store %s, %C[0] : memref<1xf32>
  return
}
