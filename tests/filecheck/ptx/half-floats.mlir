// RUN: loopopt-opt %s --emit ptx | filecheck %s
// RUN: loopopt-opt %s --emit ptx --gpu-arch sm_80 | filecheck %s --check-prefix=SM80
// RUN: %if ptxas %{ loopopt-opt %s --emit ptx -o %t.ptx && %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
// RUN: %if ptxas %{ loopopt-opt %s --emit ptx --gpu-arch sm_80 -o %t80.ptx && %ptxas -arch=sm_80 %t80.ptx -o %t80.cubin %}

// f16 and bf16 elements are 2-byte (.b16) global loads and stores; arith.extf / truncf are
// cvt.f32.{bf16,f16} and cvt.rn.{bf16,f16}.f32 (round to nearest even); f16 arithmetic is
// native; math.exp of a bf16 goes through f32 (ex2.approx of the f32 libdevice expf).
// CHECK-LABEL: .visible .entry mix_k0(
// CHECK:         ld.global.nc.b16 %rs[[X:[0-9]+]],
// CHECK:         ld.global.b16 %rs[[Y:[0-9]+]],
// CHECK-DAG:     cvt.f32.bf16 %r{{[0-9]+}}, %rs[[X]];
// CHECK-DAG:     cvt.f32.f16 %r{{[0-9]+}}, %rs[[Y]];
// CHECK:         ex2.approx
// CHECK:         cvt.rn.bf16.f32 %rs[[E:[0-9]+]],
// CHECK:         cvt.f32.bf16 %r{{[0-9]+}}, %rs[[E]];
// CHECK:         cvt.rn.bf16.f32 %rs[[Z:[0-9]+]],
// CHECK:         st.global.b16 [%rd{{[0-9]+}}], %rs[[Z]];
// CHECK:         cvt.rn.f16.f32 %rs[[H:[0-9]+]],
// CHECK:         add.rn.f16 %rs[[S:[0-9]+]], %rs[[Y]], %rs[[H]];
// CHECK:         st.global.b16 [%rd{{[0-9]+}}], %rs[[S]];
// CHECK:         ret;
// sm_80 (PTX 7.0) widens bf16 by a 16-bit shift (exact), and has cvt.rn.bf16.f32.
// SM80:        .target sm_80
// SM80-LABEL:  .visible .entry mix_k0(
// SM80:          shl.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 16;
// SM80:          cvt.rn.bf16.f32
// SM80:          add.rn.f16

// bf16 arithmetic: native add.rn.bf16 on sm_90, an fma with 1.0 on sm_80 (its only bf16 op).
// CHECK-LABEL: .visible .entry bf16_add_k0(
// CHECK:         add.rn.bf16
// SM80-LABEL:  .visible .entry bf16_add_k0(
// SM80:          fma.rn.bf16
builtin.module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mix_k0(%X: memref<?xbf16>, %Y: memref<?xf16>, %Z: memref<?xbf16>, %n: index) kernel {
      %bx = gpu.block_id x
      %bd = gpu.block_dim x
      %tx = gpu.thread_id x
      %base = arith.muli %bx, %bd : index
      %i = arith.addi %base, %tx : index
      affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%i)[%n] {
        %x = affine.load %X[%i] : memref<?xbf16>
        %y = affine.load %Y[%i] : memref<?xf16>
        %xf = arith.extf %x : bf16 to f32
        %yf = arith.extf %y : f16 to f32
        %s = arith.mulf %xf, %yf : f32
        %e = math.exp %x : bf16
        %ef = arith.extf %e : bf16 to f32
        %t = arith.addf %s, %ef : f32
        %z = arith.truncf %t : f32 to bf16
        affine.store %z, %Z[%i] : memref<?xbf16>
        %h = arith.truncf %t : f32 to f16
        %hh = arith.addf %y, %h : f16
        affine.store %hh, %Y[%i] : memref<?xf16>
      }
      gpu.return
    }
    gpu.func @bf16_add_k0(%X: memref<?xbf16>, %n: index) kernel {
      %bx = gpu.block_id x
      %bd = gpu.block_dim x
      %tx = gpu.thread_id x
      %base = arith.muli %bx, %bd : index
      %i = arith.addi %base, %tx : index
      affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%i)[%n] {
        %x = affine.load %X[%i] : memref<?xbf16>
        %y = arith.addf %x, %x : bf16
        affine.store %y, %X[%i] : memref<?xbf16>
      }
      gpu.return
    }
  }
}
