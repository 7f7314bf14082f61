// Upstream MLIR 22 prints, loopopt reads: aliases (#map, #set), %argN names, `module`, `return`,
// affine.if/affine.max custom syntax, max/min loop bounds.
// RUN: %mlir-opt %s | loopopt-opt -p loop-name | filecheck %s
// RUN: %mlir-opt %s | loopopt-opt -p loop-name | %mlir-opt | filecheck %s --check-prefix=BACK

// CHECK-LABEL: func.func @f
// CHECK:       affine.for %[[I:.*]] = 0 to %{{.*}} {
// CHECK:         affine.for %[[J:.*]] = max affine_map<(d0) -> (0, (d0 + -4))>(%[[I]]) to min affine_map<(d0)[s0] -> ((d0 + 4), s0)>(%[[I]])[%{{.*}}] step 2 {
// CHECK:           affine.if affine_set<(d0)[s0] : ((d0 + -1) >= 0, (((d0 * -1) + s0) + -2) >= 0)>(%[[I]])[%{{.*}}] {
// CHECK:             affine.max affine_map<(d0) -> (d0, 3)>(%[[J]])
// CHECK:           } {loopopt.name = "i1"}
// CHECK:         } {loopopt.name = "i0"}
// BACK-LABEL:  func.func @f
// BACK:        affine.for
// BACK:          affine.if #set(%{{.*}})[%{{.*}}] {
// BACK:        } {loopopt.name = "i0"}
#set = affine_set<(d0)[s0] : (d0 - 1 >= 0, s0 - d0 - 2 >= 0)>
func.func @f(%A: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %d = memref.dim %A, %c0 : memref<?xf32>
  affine.for %i = 0 to %d {
    affine.for %j = max affine_map<(d0) -> (0, d0 - 4)>(%i) to min affine_map<(d0)[s0] -> (d0 + 4, s0)>(%i)[%n] step 2 {
      affine.if #set(%i)[%n] {
        %v = affine.load %A[%i - 1] : memref<?xf32>
        %w = affine.max affine_map<(d0) -> (d0, 3)>(%j)
        %s = math.sqrt %v : f32
        memref.store %s, %A[%w] : memref<?xf32>
      }
    }
  }
  return
}

// CHECK-LABEL: func.func @select
// CHECK:       affine.if affine_set<(d0) : ((d0 + -2) >= 0)>(%{{.*}}) -> (f32) {
// CHECK:         affine.yield %{{.*}} : f32
// CHECK:       } else {
func.func @select(%A: memref<4xf32>, %i: index) -> f32 {
  %r = affine.if affine_set<(d0) : (d0 - 2 >= 0)>(%i) -> f32 {
    %a = affine.load %A[%i] : memref<4xf32>
    affine.yield %a : f32
  } else {
    %c = arith.constant 1.0 : f32
    affine.yield %c : f32
  }
  return %r : f32
}
