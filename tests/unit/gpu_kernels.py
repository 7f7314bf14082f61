"""GPU programs written by hand in the shape gpu-map-loops produces (gpu.module + host launches).

The gpu ops are in xDSL's generic form, which loopopt still reads (it prints, and reads too,
upstream MLIR's custom syntax: loopopt.dialects.gpu_ext; tests/filecheck uses it). Each program
has a numpy/float64 reference in tests/unit/test_gpu_runtime.py.
"""

from __future__ import annotations

_HEADER = """#inside = affine_set<(d0, d1)[s0, s1] : (s0 - d0 - 1 >= 0, s1 - d1 - 1 >= 0)>
builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
"""
_KERNELS_END = "  }) : () -> ()\n"


def _id(kind: str, dim: str, name: str) -> str:
    return f'      %{name} = "gpu.{kind}"() <{{dimension = #gpu<dim {dim}>}}> : () -> index\n'


def _launch(kernel: str, grid: str, block: str, args: list[tuple[str, str]]) -> str:
    """A gpu.launch_func in generic form; grid/block are three comma-separated SSA names."""
    names = ", ".join(name for name, _ in args)
    types = ", ".join(t for _, t in args)
    return (
        f'    "gpu.launch_func"({grid}, {block}, {names}) <{{kernel = @kernels::@{kernel}, '
        f"operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, {len(args)}, 0>}}> "
        f": (index, index, index, index, index, index, {types}) -> ()\n"
    )


VEC = "memref<?xf32>"
MAT = "memref<?x?xf32>"

VADD = (
    _HEADER
    + f'    "gpu.func"() <{{function_type = ({VEC}, {VEC}, {VEC}, index) -> (), kernel}}> ({{\n'
    + f"    ^bb0(%A: {VEC}, %B: {VEC}, %C: {VEC}, %n: index):\n"
    + _id("block_id", "x", "bx")
    + _id("block_dim", "x", "bd")
    + _id("thread_id", "x", "tx")
    + f"""      %base = arith.muli %bx, %bd : index
      %i = arith.addi %base, %tx : index
      affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%i)[%n] {{
        %a = affine.load %A[%i] : {VEC}
        %b = affine.load %B[%i] : {VEC}
        %c = arith.addf %a, %b : f32
        affine.store %c, %C[%i] : {VEC}
      }}
      "gpu.return"() : () -> ()
    }}) {{sym_name = "vadd_k0"}} : () -> ()
"""
    + _KERNELS_END
    + f"""  func.func @vadd(%A: {VEC}, %B: {VEC}, %C: {VEC}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c255 = arith.constant 255 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %A, %c0 : {VEC}
    %n255 = arith.addi %n, %c255 : index
    %g = arith.divui %n255, %c256 : index
"""
    + _launch(
        "vadd_k0",
        "%g, %c1, %c1",
        "%c256, %c1, %c1",
        [("%A", VEC), ("%B", VEC), ("%C", VEC), ("%n", "index")],
    )
    + "    return\n  }\n}\n"
)

TRANSPOSE = (
    _HEADER
    + f'    "gpu.func"() <{{function_type = ({MAT}, {MAT}, index, index) -> (), kernel}}> ({{\n'
    + f"    ^bb0(%A: {MAT}, %B: {MAT}, %n: index, %m: index):\n"
    + _id("block_id", "x", "bx")
    + _id("block_id", "y", "by")
    + _id("thread_id", "x", "tx")
    + _id("thread_id", "y", "ty")
    + f"""      %tile = memref.alloca() : memref<32x33xf32, 3>
      %i = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%by, %ty)
      %j = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%bx, %tx)
      affine.if #inside(%i, %j)[%n, %m] {{
        %v = affine.load %A[%i, %j] : {MAT}
        affine.store %v, %tile[%ty, %tx] : memref<32x33xf32, 3>
      }}
      "gpu.barrier"() : () -> ()
      %oi = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%bx, %ty)
      %oj = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%by, %tx)
      affine.if #inside(%oi, %oj)[%m, %n] {{
        %w = affine.load %tile[%tx, %ty] : memref<32x33xf32, 3>
        affine.store %w, %B[%oi, %oj] : {MAT}
      }}
      "gpu.return"() : () -> ()
    }}) {{sym_name = "transpose_k0"}} : () -> ()
"""
    + _KERNELS_END
    + f"""  func.func @transpose(%A: {MAT}, %B: {MAT}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c31 = arith.constant 31 : index
    %c32 = arith.constant 32 : index
    %n = memref.dim %A, %c0 : {MAT}
    %m = memref.dim %A, %c1 : {MAT}
    %n31 = arith.addi %n, %c31 : index
    %gy = arith.divui %n31, %c32 : index
    %m31 = arith.addi %m, %c31 : index
    %gx = arith.divui %m31, %c32 : index
"""
    + _launch(
        "transpose_k0",
        "%gx, %gy, %c1",
        "%c32, %c32, %c1",
        [("%A", MAT), ("%B", MAT), ("%n", "index"), ("%m", "index")],
    )
    + "    return\n  }\n}\n"
)

MATMUL = (
    _HEADER
    + f'    "gpu.func"() <{{function_type = ({MAT}, {MAT}, {MAT}) -> (), kernel}}> ({{\n'
    + f"    ^bb0(%A: {MAT}, %B: {MAT}, %C: {MAT}):\n"
    + _id("block_id", "x", "bx")
    + _id("block_id", "y", "by")
    + _id("thread_id", "x", "tx")
    + _id("thread_id", "y", "ty")
    + f"""      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = memref.dim %C, %c0 : {MAT}
      %m = memref.dim %C, %c1 : {MAT}
      %K = memref.dim %A, %c1 : {MAT}
      %i = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1)>(%by, %ty)
      %j = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1)>(%bx, %tx)
      affine.if #inside(%i, %j)[%n, %m] {{
        %zero = arith.constant 0.0 : f32
        %sum = affine.for %k = 0 to %K iter_args(%acc = %zero) -> (f32) {{
          %a = affine.load %A[%i, %k] : {MAT}
          %b = affine.load %B[%k, %j] : {MAT}
          %p = arith.mulf %a, %b : f32
          %s = arith.addf %acc, %p : f32
          affine.yield %s : f32
        }}
        affine.store %sum, %C[%i, %j] : {MAT}
      }}
      "gpu.return"() : () -> ()
    }}) {{sym_name = "matmul_k0"}} : () -> ()
"""
    + _KERNELS_END
    + f"""  func.func @matmul(%A: {MAT}, %B: {MAT}, %C: {MAT}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c15 = arith.constant 15 : index
    %c16 = arith.constant 16 : index
    %n = memref.dim %C, %c0 : {MAT}
    %m = memref.dim %C, %c1 : {MAT}
    %n15 = arith.addi %n, %c15 : index
    %gy = arith.divui %n15, %c16 : index
    %m15 = arith.addi %m, %c15 : index
    %gx = arith.divui %m15, %c16 : index
"""
    + _launch(
        "matmul_k0", "%gx, %gy, %c1", "%c16, %c16, %c1", [("%A", MAT), ("%B", MAT), ("%C", MAT)]
    )
    + "    return\n  }\n}\n"
)

# One 5-point sweep dst = 0.2 * (src + 4 neighbours) on the interior; the host loop runs
# T time steps of two sweeps (A → B, B → A), as PolyBench's jacobi-2d.
JACOBI_2D = (
    _HEADER
    + f'    "gpu.func"() <{{function_type = ({MAT}, {MAT}) -> (), kernel}}> ({{\n'
    + f"    ^bb0(%src: {MAT}, %dst: {MAT}):\n"
    + _id("block_id", "x", "bx")
    + _id("block_id", "y", "by")
    + _id("thread_id", "x", "tx")
    + _id("thread_id", "y", "ty")
    + f"""      %c0 = arith.constant 0 : index
      %n = memref.dim %src, %c0 : {MAT}
      %i = affine.apply affine_map<(d0, d1) -> (d0 * 8 + d1 + 1)>(%by, %ty)
      %j = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1 + 1)>(%bx, %tx)
      affine.if affine_set<(d0, d1)[s0] : (s0 - d0 - 2 >= 0, s0 - d1 - 2 >= 0)>(%i, %j)[%n] {{
        %c = affine.load %src[%i, %j] : {MAT}
        %w = affine.load %src[%i, %j - 1] : {MAT}
        %e = affine.load %src[%i, %j + 1] : {MAT}
        %s = affine.load %src[%i + 1, %j] : {MAT}
        %no = affine.load %src[%i - 1, %j] : {MAT}
        %t0 = arith.addf %c, %w : f32
        %t1 = arith.addf %t0, %e : f32
        %t2 = arith.addf %t1, %s : f32
        %t3 = arith.addf %t2, %no : f32
        %fifth = arith.constant 0.2 : f32
        %v = arith.mulf %fifth, %t3 : f32
        affine.store %v, %dst[%i, %j] : {MAT}
      }}
      "gpu.return"() : () -> ()
    }}) {{sym_name = "sweep_k0"}} : () -> ()
"""
    + _KERNELS_END
    + f"""  func.func @jacobi(%A: {MAT}, %B: {MAT}, %T: index) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %n = memref.dim %A, %c0 : {MAT}
    %gy = affine.apply affine_map<()[s0] -> ((s0 + 5) floordiv 8)>()[%n]
    %gx = affine.apply affine_map<()[s0] -> ((s0 + 29) floordiv 32)>()[%n]
    affine.for %t = 0 to %T {{
"""
    + "  "
    + _launch("sweep_k0", "%gx, %gy, %c1", "%c32, %c8, %c1", [("%A", MAT), ("%B", MAT)])
    + "  "
    + _launch("sweep_k0", "%gx, %gy, %c1", "%c32, %c8, %c1", [("%B", MAT), ("%A", MAT)])
    + "    }\n    return\n  }\n}\n"
)

# Each block of 256 threads reverses a chunk of 16384 floats through 64 KB of shared memory
# (more than the 48 KB of static shared memory: dynamic shared memory with an opt-in).
CHUNK = 16384
REVERSE_CHUNKS = (
    _HEADER
    + f'    "gpu.func"() <{{function_type = ({VEC}, {VEC}) -> (), kernel}}> ({{\n'
    + f"    ^bb0(%A: {VEC}, %B: {VEC}):\n"
    + _id("block_id", "x", "bx")
    + _id("thread_id", "x", "tx")
    + f"""      %buf = memref.alloca() : memref<{CHUNK}xf32, 3>
      affine.for %k = 0 to 64 {{
        %v = affine.load %A[%bx * {CHUNK} + %k * 256 + %tx] : {VEC}
        affine.store %v, %buf[%k * 256 + %tx] : memref<{CHUNK}xf32, 3>
      }}
      "gpu.barrier"() : () -> ()
      affine.for %k = 0 to 64 {{
        %w = affine.load %buf[{CHUNK - 1} - %k * 256 - %tx] : memref<{CHUNK}xf32, 3>
        affine.store %w, %B[%bx * {CHUNK} + %k * 256 + %tx] : {VEC}
      }}
      "gpu.return"() : () -> ()
    }}) {{sym_name = "reverse_k0"}} : () -> ()
"""
    + _KERNELS_END
    + f"""  func.func @reverse(%A: {VEC}, %B: {VEC}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %A, %c0 : {VEC}
    %g = affine.apply affine_map<()[s0] -> (s0 floordiv {CHUNK})>()[%n]
"""
    + _launch("reverse_k0", "%g, %c1, %c1", "%c256, %c1, %c1", [("%A", VEC), ("%B", VEC)])
    + "    return\n  }\n}\n"
)

# A butterfly warp sum with nvvm.shfl.sync: out[w] = sum of A[32 w .. 32 w + 31].
WARP_SUM = (
    _HEADER
    + f'    "gpu.func"() <{{function_type = ({VEC}, {VEC}) -> (), kernel}}> ({{\n'
    + f"    ^bb0(%A: {VEC}, %out: {VEC}):\n"
    + _id("block_id", "x", "bx")
    + _id("thread_id", "x", "tx")
    + f"""      %w = affine.apply affine_map<(d0, d1) -> (d0 * 4 + d1 floordiv 32)>(%bx, %tx)
      %i = affine.apply affine_map<(d0, d1) -> (d0 * 128 + d1)>(%bx, %tx)
      %v0 = affine.load %A[%i] : {VEC}
      %all = arith.constant -1 : i32
      %clamp = arith.constant 31 : i32
"""
    + "".join(
        f"      %c{o} = arith.constant {o} : i32\n"
        f"      %s{o} = nvvm.shfl.sync bfly %all, %v{k}, %c{o}, %clamp : f32 -> f32\n"
        f"      %v{k + 1} = arith.addf %v{k}, %s{o} : f32\n"
        for k, o in enumerate((16, 8, 4, 2, 1))
    )
    + f"""      %lane = "gpu.lane_id"() : () -> index
      affine.if affine_set<(d0) : (d0 == 0)>(%lane) {{
        affine.store %v5, %out[%w] : {VEC}
      }}
      "gpu.return"() : () -> ()
    }}) {{sym_name = "warp_sum_k0"}} : () -> ()
"""
    + _KERNELS_END
    + f"""  func.func @warp_sum(%A: {VEC}, %out: {VEC}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %n = memref.dim %A, %c0 : {VEC}
    %g = affine.apply affine_map<()[s0] -> (s0 floordiv 128)>()[%n]
"""
    + _launch("warp_sum_k0", "%g, %c1, %c1", "%c128, %c1, %c1", [("%A", VEC), ("%out", VEC)])
    + "    return\n  }\n}\n"
)

# Math from libdevice: out = exp(a) + tanh(a) * sin(a) + pow(|a|, 1.5).
MATH = (
    _HEADER
    + f'    "gpu.func"() <{{function_type = ({VEC}, {VEC}, index) -> (), kernel}}> ({{\n'
    + f"    ^bb0(%A: {VEC}, %out: {VEC}, %n: index):\n"
    + _id("block_id", "x", "bx")
    + _id("thread_id", "x", "tx")
    + f"""      %i = affine.apply affine_map<(d0, d1) -> (d0 * 128 + d1)>(%bx, %tx)
      affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%i)[%n] {{
        %a = affine.load %A[%i] : {VEC}
        %e = math.exp %a : f32
        %t = math.tanh %a : f32
        %s = math.sin %a : f32
        %abs = math.absf %a : f32
        %p15 = arith.constant 1.5 : f32
        %p = math.powf %abs, %p15 : f32
        %ts = arith.mulf %t, %s : f32
        %r0 = arith.addf %e, %ts : f32
        %r = arith.addf %r0, %p : f32
        affine.store %r, %out[%i] : {VEC}
      }}
      "gpu.return"() : () -> ()
    }}) {{sym_name = "math_k0"}} : () -> ()
"""
    + _KERNELS_END
    + f"""  func.func @math(%A: {VEC}, %out: {VEC}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %n = memref.dim %A, %c0 : {VEC}
    %g = affine.apply affine_map<()[s0] -> ((s0 + 127) floordiv 128)>()[%n]
"""
    + _launch(
        "math_k0", "%g, %c1, %c1", "%c128, %c1, %c1", [("%A", VEC), ("%out", VEC), ("%n", "index")]
    )
    + "    return\n  }\n}\n"
)

ALL = {
    "vadd": VADD,
    "transpose": TRANSPOSE,
    "matmul": MATMUL,
    "jacobi": JACOBI_2D,
    "reverse": REVERSE_CHUNKS,
    "warp_sum": WARP_SUM,
    "math": MATH,
}
