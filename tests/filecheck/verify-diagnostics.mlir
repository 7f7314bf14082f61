// --verify-diagnostics with MLIR's expected-error, -warning, -remark and -note annotations, in
// each location form MLIR has. Here loop-tile warns at each function that holds scf loops and
// no affine.for, and refuses a band that is not fully permutable.
// RUN: loopopt-opt %s --split-input-file --verify-diagnostics -p 'loop-tile{tile-sizes=4,4}'
// RUN: sed 's/expected-warning @below/expected-note @below/' %s | not loopopt-opt - --split-input-file --verify-diagnostics -p 'loop-tile{tile-sizes=4,4}' 2>&1 | filecheck %s --check-prefix=KIND
// RUN: sed 's/expected-warning @+1/expected-remark @+1/' %s | not loopopt-opt - --split-input-file --verify-diagnostics -p 'loop-tile{tile-sizes=4,4}' 2>&1 | filecheck %s --check-prefix=REMARK
// RUN: sed 's/expected-warning @above/expected-warning @-2/' %s | not loopopt-opt - --split-input-file --verify-diagnostics -p 'loop-tile{tile-sizes=4,4}' 2>&1 | filecheck %s --check-prefix=LINE

// A warning is checked like an error: of another severity (a note expected), it is unexpected
// and the note is not produced.
// KIND:        <stdin>:[[# @LINE + 6]]:1: error: unexpected warning: loop-tile: no affine.for in @below
// KIND-NEXT:   <stdin>:[[# @LINE + 5]]: error: expected note "loop-tile: no affine.for in @below (it holds
// REMARK:      <stdin>:[[# @LINE + 17]]:1: error: unexpected warning: loop-tile: no affine.for in @plus_one
// REMARK-NEXT: <stdin>:[[# @LINE + 16]]: error: expected remark "no affine.for in @plus_one" was not produced
// LINE:        error: expected warning "no affine.for in @above" was not produced
// expected-warning @below {{loop-tile: no affine.for in @below (it holds scf.for loops: run raise-scf-to-affine first)}}
func.func @below(%A: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %A[%i] : memref<8xf32>
    memref.store %v, %A[%i] : memref<8xf32>
  }
  return
}

// -----

// expected-warning @+1 {{no affine.for in @plus_one}}
func.func @plus_one(%A: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %A[%i] : memref<8xf32>
    memref.store %v, %A[%i] : memref<8xf32>
  }
  return
}

// -----

func.func @same_line(%A: memref<8xf32>, %n: index) { // expected-warning {{no affine.for in @same_line}}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %A[%i] : memref<8xf32>
    memref.store %v, %A[%i] : memref<8xf32>
  }
  return
}

// -----

func.func @above(%A: memref<8xf32>, %n: index) {
  // expected-warning @above {{no affine.for in @above}}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %A[%i] : memref<8xf32>
    memref.store %v, %A[%i] : memref<8xf32>
  }
  return
}

// -----

// A warning and an error of one run, each where it is said.
func.func @minus_two(%A: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  // expected-warning @-2 {{no affine.for in @minus_two}}
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %A[%i] : memref<8xf32>
    memref.store %v, %A[%i] : memref<8xf32>
  }
  return
}

func.func @wavefront(%A: memref<8x8xf32>) {
  // expected-error @+1 {{loop-tile: illegal: band (i, j) is not fully permutable}}
  affine.for %i = 1 to 8 {
    affine.for %j = 0 to 7 {
      %v = affine.load %A[%i - 1, %j + 1] : memref<8x8xf32>
      affine.store %v, %A[%i, %j] : memref<8x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
