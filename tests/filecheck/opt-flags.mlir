// loopopt-opt's flags in mlir-opt's conventions.
// RUN: loopopt-opt %s --split-input-file --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: loopopt-opt %s --split-input-file --mlir-print-debuginfo | filecheck %s --check-prefix=DEBUGINFO
// RUN: loopopt-opt %s --split-input-file --mlir-print-debuginfo --mlir-print-op-generic | loopopt-opt --mlir-print-debuginfo | filecheck %s --check-prefix=DEBUGINFO
// RUN: loopopt-opt --version | filecheck %s --check-prefix=VERSION
// RUN: sed -n '/^.. MLIR.s spelling/,$p' %s | loopopt-opt - --verify-diagnostics -p 'loop-tile{tile-sizes=4,4}'
// RUN: sed -n '/^.. MLIR.s spelling/,$p' %s | sed 's/@+1/@+2/' | not loopopt-opt - --verify-diagnostics -p 'loop-tile{tile-sizes=4,4}' 2>&1 | filecheck %s --check-prefix=DIAG

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "func.func"() <{sym_name = "f", function_type = (memref<8xf32>) -> ()}> ({
// GENERIC:          "affine.for"() <{lowerBoundMap = affine_map<() -> (0)>
// DEBUGINFO:    func.func @f(%{{.*}}: memref<8xf32>{{.*}}) {
// DEBUGINFO:      } {loopopt.name = "i"} loc("{{.*}}opt-flags.mlir":[[# @LINE + 6]]:3)
// DEBUGINFO:    } loc("{{.*}}opt-flags.mlir":[[# @LINE + 4]]:1)
// VERSION:      loopopt-opt {{.*}} (xDSL 0.74.0)
// DIAG:         <stdin>:4:3: error: unexpected warning: loop-tile: 2 tile sizes for the band (i) of 1 loops: 4 ignored
// DIAG:         <stdin>:5: error: expected warning "loop-tile: 2 tile sizes for the band (i) of 1 loops: 4 ignored" was not produced
func.func @f(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %A[%i] : memref<8xf32>
  } {loopopt.name = "i"}
  return
}

// -----

// MLIR's spelling, with a space before the `@`.
func.func @g(%A: memref<8xf32>) {
  // expected-warning @+1 {{loop-tile: 2 tile sizes for the band (i) of 1 loops: 4 ignored}}
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %A[%i] : memref<8xf32>
  } {loopopt.name = "i"}
  return
}
