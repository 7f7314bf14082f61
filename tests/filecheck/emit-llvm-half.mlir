// RUN: loopopt-opt %s --emit llvm | filecheck %s

// f16 and bf16 elements are LLVM's half and bfloat: 2-byte loads and stores, fpext/fptrunc for
// arith.extf/truncf, bf16 constants in LLVM's exact hex form (0.1 rounds to 0x3DCD).
// CHECK-LABEL: define void @"convert"(ptr %".1", i64 %".2", ptr %".3", i64 %".4", ptr %".5", i64 %".6")
// CHECK:         getelementptr inbounds half, ptr %".1", i64
// CHECK:         %[[H:.*]] = load half, ptr
// CHECK:         %[[W:.*]] = fpext half %[[H]] to float
// CHECK:         %[[S:.*]] = fadd float %[[W]], 0x3fb99999a0000000
// CHECK:         %[[B:.*]] = fptrunc float %[[S]] to bfloat
// CHECK:         getelementptr inbounds bfloat, ptr %".3", i64
// CHECK:         store bfloat %[[B]], ptr
// CHECK:         %[[M:.*]] = fmul bfloat %[[B]], 0xR3DCD
// CHECK:         %[[D:.*]] = fpext bfloat %[[M]] to double
// CHECK:         %[[N:.*]] = fptrunc double %[[D]] to half
// CHECK:         getelementptr inbounds half, ptr %".5", i64
// CHECK:         store half %[[N]], ptr
// CHECK:         ret void
func.func @convert(%H: memref<?xf16>, %B: memref<?xbf16>, %O: memref<?xf16>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %H, %c0 : memref<?xf16>
  %tenth = arith.constant 0.1 : f32
  %k = arith.constant 0.1 : bf16
  affine.for %i = 0 to %n {
    %h = affine.load %H[%i] : memref<?xf16>
    %w = arith.extf %h : f16 to f32
    %s = arith.addf %w, %tenth : f32
    %b = arith.truncf %s : f32 to bf16
    affine.store %b, %B[%i] : memref<?xbf16>
    %m = arith.mulf %b, %k : bf16
    %d = arith.extf %m : bf16 to f64
    %o = arith.truncf %d : f64 to f16
    affine.store %o, %O[%i] : memref<?xf16>
  }
  return
}

// Math functions of f16/bf16 go through f32 (libm and libdevice have none of their own);
// absf only clears the sign bit and keeps the type.
// CHECK-LABEL: define void @"math"(ptr %".1", ptr %".2")
// CHECK:         %[[X:.*]] = load bfloat, ptr
// CHECK:         %[[XW:.*]] = fpext bfloat %[[X]] to float
// CHECK:         %[[E:.*]] = call float @"llvm.exp.f32"(float %[[XW]])
// CHECK:         %[[EN:.*]] = fptrunc float %[[E]] to bfloat
// CHECK:         %[[Y:.*]] = load half, ptr
// CHECK:         %[[YW:.*]] = fpext half %[[Y]] to float
// CHECK:         %[[T:.*]] = call ccc float @"erff"(float %[[YW]])
// CHECK:         %[[TN:.*]] = fptrunc float %[[T]] to half
// CHECK:         call half @"llvm.fabs.f16"(half %[[TN]])
// CHECK:         call bfloat @"llvm.fabs.bf16"(bfloat %[[EN]])
func.func @math(%X: memref<8xbf16>, %Y: memref<8xf16>) {
  affine.for %i = 0 to 8 {
    %x = affine.load %X[%i] : memref<8xbf16>
    %e = math.exp %x : bf16
    %y = affine.load %Y[%i] : memref<8xf16>
    %t = math.erf %y : f16
    %a = math.absf %t : f16
    affine.store %a, %Y[%i] : memref<8xf16>
    %b = math.absf %e : bf16
    affine.store %b, %X[%i] : memref<8xbf16>
  }
  return
}
