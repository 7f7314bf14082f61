"""The loop nests every pass is checked on (MLIR text, loops named), with their inputs.

Each builder returns (mlir_text, function_name, arrays), the arrays being fresh random inputs
in argument order. Sizes are parameters so tests can pick ones that tiles do not divide.
"""

from __future__ import annotations

import numpy as np

# lu in place (loop-reschedule's example): every loop but the second j carries a dependence.
LU = """
func.func @lu(%A: memref<?x?xf64>, %n: index) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %i {
      affine.for %k = 0 to %j {
        %a = affine.load %A[%i, %j] : memref<?x?xf64>
        %b = affine.load %A[%i, %k] : memref<?x?xf64>
        %c = affine.load %A[%k, %j] : memref<?x?xf64>
        %p = arith.mulf %b, %c : f64
        %s = arith.subf %a, %p : f64
        affine.store %s, %A[%i, %j] : memref<?x?xf64>
      } {loopopt.name = "k"}
      %x = affine.load %A[%i, %j] : memref<?x?xf64>
      %d = affine.load %A[%j, %j] : memref<?x?xf64>
      %q = arith.divf %x, %d : f64
      affine.store %q, %A[%i, %j] : memref<?x?xf64>
    } {loopopt.name = "j"}
    affine.for %j = %i to %n {
      affine.for %k = 0 to %i {
        %a = affine.load %A[%i, %j] : memref<?x?xf64>
        %b = affine.load %A[%i, %k] : memref<?x?xf64>
        %c = affine.load %A[%k, %j] : memref<?x?xf64>
        %p = arith.mulf %b, %c : f64
        %s = arith.subf %a, %p : f64
        affine.store %s, %A[%i, %j] : memref<?x?xf64>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""

# C[i, j] += sum_k A[i, k] * B[k, j] with the sum carried in iter_args of k (5x6x7).
REDUCTION = """
func.func @mm(%A: memref<5x7xf32>, %B: memref<7x6xf32>, %C: memref<5x6xf32>) {
  affine.for %i = 0 to 5 {
    affine.for %j = 0 to 6 {
      %c0 = affine.load %C[%i, %j] : memref<5x6xf32>
      %r = affine.for %k = 0 to 7 iter_args(%acc = %c0) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<5x7xf32>
        %b = affine.load %B[%k, %j] : memref<7x6xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %p : f32
        affine.yield %s : f32
      } {loopopt.name = "k"}
      affine.store %r, %C[%i, %j] : memref<5x6xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""

Case = tuple[str, str, list[np.ndarray]]


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def matmul(m: int, n: int, k: int, rng: np.random.Generator) -> Case:
    text = f"""
func.func @matmul(%A: memref<{m}x{k}xf32>, %B: memref<{k}x{n}xf32>, %C: memref<{m}x{n}xf32>) {{
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = 0 to {k} {{
        %a = affine.load %A[%i, %k] : memref<{m}x{k}xf32>
        %b = affine.load %B[%k, %j] : memref<{k}x{n}xf32>
        %c = affine.load %C[%i, %j] : memref<{m}x{n}xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<{m}x{n}xf32>
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""
    return text, "matmul", [_rand(rng, m, k), _rand(rng, k, n), _rand(rng, m, n)]


def conv2d(h: int, w: int, kh: int, kw: int, rng: np.random.Generator) -> Case:
    ih, iw = h + kh - 1, w + kw - 1
    text = f"""
func.func @conv2d(%I: memref<{ih}x{iw}xf32>, %F: memref<{kh}x{kw}xf32>, %O: memref<{h}x{w}xf32>) {{
  affine.for %i = 0 to {h} {{
    affine.for %j = 0 to {w} {{
      affine.for %p = 0 to {kh} {{
        affine.for %q = 0 to {kw} {{
          %x = affine.load %I[%i + %p, %j + %q] : memref<{ih}x{iw}xf32>
          %f = affine.load %F[%p, %q] : memref<{kh}x{kw}xf32>
          %o = affine.load %O[%i, %j] : memref<{h}x{w}xf32>
          %m = arith.mulf %x, %f : f32
          %s = arith.addf %o, %m : f32
          affine.store %s, %O[%i, %j] : memref<{h}x{w}xf32>
        }} {{loopopt.name = "q"}}
      }} {{loopopt.name = "p"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""
    return text, "conv2d", [_rand(rng, ih, iw), _rand(rng, kh, kw), _rand(rng, h, w)]


def syrk(n: int, m: int, rng: np.random.Generator) -> Case:
    """Triangular: C[i, j] += A[i, k] * A[j, k] for j <= i."""
    text = f"""
func.func @syrk(%A: memref<{n}x{m}xf32>, %C: memref<{n}x{n}xf32>) {{
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {{
      affine.for %k = 0 to {m} {{
        %a = affine.load %A[%i, %k] : memref<{n}x{m}xf32>
        %b = affine.load %A[%j, %k] : memref<{n}x{m}xf32>
        %c = affine.load %C[%i, %j] : memref<{n}x{n}xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<{n}x{n}xf32>
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""
    return text, "syrk", [_rand(rng, n, m), _rand(rng, n, n)]


def jacobi_1d(t: int, n: int, rng: np.random.Generator) -> Case:
    """Time-stepped 3-point stencil: loop t holds two loops (an imperfect nest)."""
    text = f"""
func.func @jacobi(%A: memref<{n}xf32>, %B: memref<{n}xf32>) {{
  %third = arith.constant 0.333333343 : f32
  affine.for %t = 0 to {t} {{
    affine.for %i = 1 to {n - 1} {{
      %l = affine.load %A[%i - 1] : memref<{n}xf32>
      %c = affine.load %A[%i] : memref<{n}xf32>
      %r = affine.load %A[%i + 1] : memref<{n}xf32>
      %s0 = arith.addf %l, %c : f32
      %s1 = arith.addf %s0, %r : f32
      %v = arith.mulf %s1, %third : f32
      affine.store %v, %B[%i] : memref<{n}xf32>
    }} {{loopopt.name = "i"}}
    affine.for %j = 1 to {n - 1} {{
      %v = affine.load %B[%j] : memref<{n}xf32>
      affine.store %v, %A[%j] : memref<{n}xf32>
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "t"}}
  return
}}
"""
    return text, "jacobi", [_rand(rng, n), _rand(rng, n)]


def wavefront(n: int, m: int, rng: np.random.Generator) -> Case:
    """A[i, j] depends on A[i-1, j+1]: a dependence with direction (<, >)."""
    text = f"""
func.func @wavefront(%A: memref<{n}x{m}xf32>) {{
  affine.for %i = 1 to {n} {{
    affine.for %j = 0 to {m - 1} {{
      %u = affine.load %A[%i - 1, %j + 1] : memref<{n}x{m}xf32>
      %c = affine.load %A[%i, %j] : memref<{n}x{m}xf32>
      %s = arith.addf %u, %c : f32
      affine.store %s, %A[%i, %j] : memref<{n}x{m}xf32>
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""
    return text, "wavefront", [_rand(rng, n, m)]


def seidel_2d(t: int, m: int, n: int, rng: np.random.Generator, dynamic: bool = False) -> Case:
    """PolyBench seidel-2d's 9-point Gauss-Seidel sweep on an m x n array, t time steps: within
    a step, distances (1, -1), (1, 0), (1, 1), (0, 1) over (i, j). `dynamic`: memref<?x?xf32>
    and the sizes as index arguments (t, m, n)."""
    ty = "memref<?x?xf32>" if dynamic else f"memref<{m}x{n}xf32>"
    if dynamic:
        args = f"%A: {ty}, %tsteps: index, %m: index, %n: index"
        steps = "%tsteps"
        rows = "affine_map<()[s0] -> (s0 - 1)>()[%m]"
        cols = "affine_map<()[s0] -> (s0 - 1)>()[%n]"
    else:
        args, steps, rows, cols = f"%A: {ty}", str(t), str(m - 1), str(n - 1)
    loads, sums = [], []
    for k, (di, dj) in enumerate((a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)):
        index = f"%i {'+' if di >= 0 else '-'} {abs(di)}, %j {'+' if dj >= 0 else '-'} {abs(dj)}"
        loads.append(f"        %a{k} = affine.load %A[{index}] : {ty}")
    for k in range(1, 9):
        previous = "%a0" if k == 1 else f"%s{k - 1}"
        sums.append(f"        %s{k} = arith.addf {previous}, %a{k} : f32")
    body = "\n".join(loads + sums)
    text = f"""
func.func @seidel({args}) {{
  %nine = arith.constant 9.0 : f32
  affine.for %t = 0 to {steps} {{
    affine.for %i = 1 to {rows} {{
      affine.for %j = 1 to {cols} {{
{body}
        %r = arith.divf %s8, %nine : f32
        affine.store %r, %A[%i, %j] : {ty}
      }} {{loopopt.name = "j"}}
    }} {{loopopt.name = "i"}}
  }} {{loopopt.name = "t"}}
  return
}}
"""
    arrays: list = [_rand(rng, m, n), t, m, n] if dynamic else [_rand(rng, m, n)]
    return text, "seidel", arrays
