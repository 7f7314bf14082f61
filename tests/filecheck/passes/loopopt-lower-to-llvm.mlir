// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p loopopt-lower-to-llvm | filecheck %s

// A static memref is one pointer; accesses are row-major offsets.
// CHECK-LABEL: llvm.func @static(%A: !llvm.ptr, %B: !llvm.ptr) {
// CHECK:         llvm.br ^[[HEAD:.*]](%{{.*}} : i64)
// CHECK:       ^[[HEAD]](%[[I:.*]]: i64):
// CHECK:         %[[C:.*]] = llvm.icmp "slt" %[[I]], %{{.*}} : i64
// CHECK:         llvm.cond_br %[[C]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK:       ^[[BODY]]:
// CHECK:         %[[ROW:.*]] = llvm.mul %[[I]], %{{.*}} overflow<nsw> : i64
// CHECK:         %[[OFF:.*]] = llvm.add %[[ROW]], %{{.*}} overflow<nsw> : i64
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %A[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[V:.*]] = llvm.load %[[P]] : !llvm.ptr -> f32
// CHECK:         %[[Q:.*]] = llvm.getelementptr inbounds %B[%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         llvm.store %[[V]], %[[Q]] : f32, !llvm.ptr
// CHECK:       ^[[EXIT]]:
// CHECK-NEXT:    llvm.return
func.func @static(%A: memref<4x8xf32>, %B: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    %v = affine.load %A[%i, 3] : memref<4x8xf32>
    affine.store %v, %B[%i] : memref<4xf32>
  }
  return
}

// -----

// Each dynamic size follows its pointer as an i64; memref.dim reads it; index is i64.
// CHECK-LABEL: llvm.func @dynamic(%A: !llvm.ptr, %A_d0: i64, %A_d2: i64, %n: i64) -> i64 {
// CHECK:         %[[SUM:.*]] = llvm.add %A_d2, %n : i64
// CHECK:         llvm.return %[[SUM]] : i64
func.func @dynamic(%A: memref<?x4x?xf64>, %n: index) -> index {
  %c2 = arith.constant 2 : index
  %d = memref.dim %A, %c2 : memref<?x4x?xf64>
  %s = arith.addi %d, %n : index
  return %s : index
}

// -----

// Lower bounds take the max of their results, upper bounds the min; the step is kept.
// CHECK-LABEL: llvm.func @bounds(%A: !llvm.ptr, %n: i64) {
// CHECK:         %[[LO:.*]] = llvm.icmp "sgt" %{{.*}}, %{{.*}} : i64
// CHECK:         %[[LB:.*]] = llvm.select %[[LO]], %{{.*}}, %{{.*}} : i1, i64
// CHECK:         %[[HI:.*]] = llvm.icmp "slt" %{{.*}}, %n : i64
// CHECK:         %[[UB:.*]] = llvm.select %[[HI]], %{{.*}}, %n : i1, i64
// CHECK:         %[[STEP:.*]] = llvm.mlir.constant(3) : i64
// CHECK:         llvm.br ^[[HEAD:.*]](%[[LB]] : i64)
// CHECK:       ^[[HEAD]](%[[I:.*]]: i64):
// CHECK:         llvm.icmp "slt" %[[I]], %[[UB]] : i64
// CHECK:         llvm.add %[[I]], %[[STEP]] : i64
func.func @bounds(%A: memref<16xf32>, %n: index) {
  affine.for %i = max affine_map<()[s0] -> (1, s0 - 8)>()[%n] to min affine_map<()[s0] -> (16, s0)>()[%n] step 3 {
    %v = affine.load %A[%i] : memref<16xf32>
    affine.store %v, %A[%i] : memref<16xf32>
  }
  return
}

// -----

// Loop-carried values become block arguments of the loop header.
// CHECK-LABEL: llvm.func @reduce(%A: !llvm.ptr) -> f32 {
// CHECK:       ^[[HEAD:.*]](%{{.*}}: i64, %[[ACC:.*]]: f32):
// CHECK:         %[[T:.*]] = llvm.fadd %[[ACC]], %{{.*}} : f32
// CHECK:         llvm.br ^[[HEAD]](%{{.*}}, %[[T]] : i64, f32)
// CHECK:         llvm.return %[[ACC]] : f32
func.func @reduce(%A: memref<8xf32>) -> f32 {
  %zero = arith.constant 0.0 : f32
  %s = affine.for %i = 0 to 8 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %A[%i] : memref<8xf32>
    %t = arith.addf %acc, %v : f32
    affine.yield %t : f32
  }
  return %s : f32
}

// -----

// A static local buffer is allocated once, in the entry block, even when made in a loop.
// CHECK-LABEL: llvm.func @local(%A: !llvm.ptr) {
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(32) : i64
// CHECK-NEXT:    %[[BUF:.*]] = llvm.alloca %[[N]] x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK:         llvm.getelementptr inbounds %[[BUF]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
func.func @local(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %buf = memref.alloca() : memref<4x8xf32>
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %buf[0, %i] : memref<4x8xf32>
  }
  return
}

// -----

// Math: LLVM intrinsics where they exist, libm calls otherwise.
// CHECK-LABEL: llvm.func @math(%x: f32, %y: f64) -> f64 {
// CHECK:         llvm.call_intrinsic "llvm.tanh.f32"(%x) : (f32) -> f32
// CHECK:         llvm.call_intrinsic "llvm.pow.f64"(%y, %y) : (f64, f64) -> f64
// CHECK:         llvm.call @erf(%{{.*}}) : (f64) -> f64
// CHECK:       llvm.func @erf(f64) -> f64
func.func @math(%x: f32, %y: f64) -> f64 {
  %t = math.tanh %x : f32
  %p = math.powf %y, %y : f64
  %w = arith.extf %t : f32 to f64
  %s = arith.addf %w, %p : f64
  %e = math.erf %s : f64
  return %e : f64
}

// -----

func.func @unsupported(%A: memref<4xf32>, %B: memref<4xf32>) {
  // expected-error@+1 {{cannot lower 'memref.copy' to LLVM}}
  "memref.copy"(%A, %B) : (memref<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// expected-error@+1 {{cannot lower memref with a layout}}
func.func @strided(%A: memref<4xf32, strided<[2]>>) {
  return
}

// -----

// Float types other than f16, bf16, f32 and f64 are refused with their name.
// expected-error@+1 {{cannot lower values of type f8E4M3FN to LLVM}}
func.func @fp8(%A: memref<4xf8E4M3FN>) {
  return
}

// -----

// expected-error@+1 {{cannot lower values of type tf32 to LLVM}}
func.func @tf32(%A: memref<4xtf32>) {
  return
}
