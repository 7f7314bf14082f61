// REQUIRES: mlir-opt
// What mlir-opt 22 prints for the llvm dialect and with --mlir-print-debuginfo, loopopt reads:
// llvm.mlir.poison, getelementptr no-wrap flags, location aliases defined at the end of the file,
// fused (with metadata), callsite and named locations; and prints it back for mlir-opt.
// RUN: %mlir-opt %s | loopopt-opt | filecheck %s
// RUN: %mlir-opt %s | loopopt-opt | %mlir-opt | filecheck %s
// RUN: %mlir-opt --mlir-print-debuginfo %s | loopopt-opt | filecheck %s
// Diagnostics point at the file mlir-opt's locations name (here: this file's line of the loop).
// RUN: %mlir-opt --mlir-print-debuginfo %s | loopopt-opt -p 'loop-tile{tile-sizes=4}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOC

// CHECK-LABEL: llvm.func @gep
// CHECK:         %[[P:.*]] = llvm.mlir.poison : f32
// CHECK:         %[[A:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[B:.*]] = llvm.getelementptr nuw %[[A]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[C:.*]] = llvm.getelementptr inbounds|nuw %[[B]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         llvm.getelementptr nusw %[[C]][1] : (!llvm.ptr) -> !llvm.ptr, f32
llvm.func @gep(%p: !llvm.ptr, %i: i64) -> f32 {
  %u = llvm.mlir.poison : f32
  %q = llvm.getelementptr inbounds %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %r = llvm.getelementptr nuw %q[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %s = llvm.getelementptr inbounds|nuw %r[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %t = llvm.getelementptr nusw %s[1] : (!llvm.ptr) -> !llvm.ptr, f32
  %v = llvm.load %t : !llvm.ptr -> f32
  llvm.return %v : f32
}

// CHECK-LABEL: func.func @located
// LOC: mlir22-syntax.mlir:[[# @LINE + 1]]:1: warning: loop-tile: no affine.for in @located (it holds scf.for loops: run raise-scf-to-affine first)
func.func @located(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
  } loc(fused<"loop">["a.py":1:2, callsite("f" at "b.py":3:4)])
  return loc("ret"("c.py":5:6))
}
