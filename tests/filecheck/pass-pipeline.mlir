// mlir-opt's nested pipelines (`--pass-pipeline`, or `-p`) and xDSL's passes inside loopopt's.
// RUN: loopopt-opt %s --pass-pipeline='builtin.module(func.func(canonicalize, loop-tile{tile-sizes=4}), cse)' | filecheck %s
// RUN: loopopt-opt %s -p 'canonicalize,loop-tile{tile-sizes=4},cse' | filecheck %s
// RUN: loopopt-opt %s -p 'func.func(loop-tile{tile-sizes=4 func=g})' | filecheck %s --check-prefix=ONE
// RUN: loopopt-opt %s -p 'func.func()' | filecheck %s --check-prefix=NONE
// RUN: not loopopt-opt %s --pass-pipeline='builtin.module(gpu.module(loop-tile))' 2>&1 | filecheck %s --check-prefix=ANCHOR
// RUN: not loopopt-opt %s --pass-pipeline='builtin.module(func.func(loop-tile{tile-sizes=4})' 2>&1 | filecheck %s --check-prefix=UNCLOSED
// RUN: not loopopt-opt %s -p loop-name --pass-pipeline='builtin.module(cse)' 2>&1 | filecheck %s --check-prefix=BOTH

// Each function is canonicalized (2.0 + 1.0 folds) and tiled on its own; cse then merges the
// two products of @f.
// CHECK-LABEL: func.func @f
// CHECK:         affine.for %[[IT:.*]] = 0 to 10 step 4 {
// CHECK-NEXT:      affine.for %[[I:.*]] = {{.*}}(%[[IT]]) to min {{.*}}(%[[IT]]) {
// CHECK-NEXT:        %[[S:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:        %[[V:.*]] = affine.load %{{.*}}[%[[I]]]
// CHECK-NEXT:        %[[W:.*]] = arith.mulf %[[V]], %[[S]] : f32
// CHECK-NEXT:        %{{.*}} = arith.addf %[[W]], %[[W]] : f32
// CHECK-LABEL: func.func @g
// CHECK:         affine.for %{{.*}} = 0 to 10 step 4 {

// ONE-LABEL:   func.func @f
// ONE:           affine.for %{{.*}} = 0 to 10 {
// ONE-LABEL:   func.func @g
// ONE:           affine.for %{{.*}} = 0 to 10 step 4 {

// NONE-LABEL:  func.func @f
// NONE:          arith.addf %{{.*}}, %{{.*}} : f32
// NONE:          affine.for %{{.*}} = 0 to 10 {

// ANCHOR:      <pipeline>:1:16: error: invalid pass pipeline 'builtin.module(gpu.module(loop-tile))': anchor 'gpu.module(...)' inside builtin.module(...) is not supported
// UNCLOSED:    <pipeline>:1:15: error: invalid pass pipeline {{.*}}: this '(' is never closed
// BOTH:        error: argument --pass-pipeline: not allowed with argument -p/--passes

func.func @f(%A: memref<10xf32>) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 10 {
    %s = arith.addf %one, %two : f32
    %v = affine.load %A[%i] : memref<10xf32>
    %w = arith.mulf %v, %s : f32
    %x = arith.mulf %v, %s : f32
    %y = arith.addf %w, %x : f32
    affine.store %y, %A[%i] : memref<10xf32>
  }
  return
}

func.func @g(%A: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<10xf32>
    affine.store %v, %A[%i] : memref<10xf32>
  }
  return
}
