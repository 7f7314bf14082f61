"""Loop programs a user might write that no recipe was made for (test_unseen_programs.py).

Plain Python functions in the front-end's subset: normalizations, transposed and batched
contractions, convolutions, stencils with copied borders, resampling with integer index
arithmetic, recurrences, reductions (max, argmax, mean/variance, norms), triangular solves,
time loops, tiny nests, argument bounds, strided and reversed loops, index conditions,
float64/float32/int32 arrays. Each comes with small random inputs whose sizes divide no
tile or block size; the tests run it as Python and compiled, and compare.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def softmax_rows(X, Y):
    for i in range(X.shape[0]):
        m = X[i, 0]
        for j in range(X.shape[1]):
            m = max(m, X[i, j])
        s = 0.0
        for j in range(X.shape[1]):
            e = np.exp(X[i, j] - m)
            Y[i, j] = e
            s += e
        for j in range(X.shape[1]):
            Y[i, j] = Y[i, j] / s


def layernorm(X, Y, gamma, beta, eps):
    n = X.shape[1]
    for i in range(X.shape[0]):
        mean = 0.0
        for j in range(n):
            mean += X[i, j]
        mean = mean / n
        var = 0.0
        for j in range(n):
            d = X[i, j] - mean
            var += d * d
        var = var / n
        inv = 1.0 / math.sqrt(var + eps)
        for j in range(n):
            Y[i, j] = (X[i, j] - mean) * inv * gamma[j] + beta[j]


def rmsnorm(X, Y, w, eps):
    n = X.shape[1]
    for i in range(X.shape[0]):
        ss = 0.0
        for j in range(n):
            ss += X[i, j] * X[i, j]
        r = 1.0 / np.sqrt(ss / n + eps)
        for j in range(n):
            Y[i, j] = X[i, j] * r * w[j]


def transpose(A, B):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            B[j, i] = A[i, j]


def outer(x, y, A):
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            A[i, j] = x[i] * y[j]


def bmm(A, B, C):
    for b in range(C.shape[0]):
        for m in range(C.shape[1]):
            for n in range(C.shape[2]):
                s = 0.0
                for k in range(A.shape[2]):
                    s += A[b, m, k] * B[b, k, n]
                C[b, m, n] = s


def mm_nt(A, B, C):
    for m in range(C.shape[0]):
        for n in range(C.shape[1]):
            C[m, n] = 0.0
            for k in range(A.shape[1]):
                C[m, n] += A[m, k] * B[n, k]


def mm_tn(A, B, C):
    for m in range(C.shape[0]):
        for n in range(C.shape[1]):
            for k in range(A.shape[0]):
                C[m, n] += A[k, m] * B[k, n]


def contract_ijk_kl(A, B, C):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            for l in range(C.shape[2]):  # noqa: E741
                s = 0.0
                for k in range(A.shape[2]):
                    s += A[i, j, k] * B[k, l]
                C[i, j, l] = s


def contract_abcd_cd(A, B, C):
    for a in range(C.shape[0]):
        for b in range(C.shape[1]):
            C[a, b] = 0.0
            for c in range(A.shape[2]):
                for d in range(A.shape[3]):
                    C[a, b] += A[a, b, c, d] * B[c, d]


def conv1d(x, w, y):
    for i in range(y.shape[0]):
        s = 0.0
        for k in range(w.shape[0]):
            s += x[i + k] * w[k]
        y[i] = s


def depthwise_conv2d(X, W, Y):
    for c in range(Y.shape[0]):
        for i in range(Y.shape[1]):
            for j in range(Y.shape[2]):
                s = 0.0
                for p in range(3):
                    for q in range(3):
                        s += X[c, i + p, j + q] * W[c, p, q]
                Y[c, i, j] = s


def stencil_3x3(A, B):
    n, m = A.shape
    for j in range(m):
        B[0, j] = A[0, j]
        B[n - 1, j] = A[n - 1, j]
    for i in range(1, n - 1):
        B[i, 0] = A[i, 0]
        B[i, m - 1] = A[i, m - 1]
        for j in range(1, m - 1):
            s = 0.0
            for p in range(-1, 2):
                for q in range(-1, 2):
                    s += A[i + p, j + q]
            B[i, j] = s / 9.0


def stencil_5pt(A, B):
    n, m = A.shape
    for i in range(n):
        for j in range(m):
            if i == 0 or j == 0 or i == n - 1 or j == m - 1:
                B[i, j] = A[i, j]
            else:
                B[i, j] = 0.2 * (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])


def box_blur(A, B, r):
    for i in range(r, A.shape[0] - r):
        for j in range(r, A.shape[1] - r):
            s = 0.0
            for p in range(i - r, i + r + 1):
                for q in range(j - r, j + r + 1):
                    s += A[p, q]
            B[i, j] = s / ((2 * r + 1) * (2 * r + 1))


def separable_filter(A, T, B, w):
    k = w.shape[0]
    for i in range(A.shape[0]):
        for j in range(A.shape[1] - k + 1):
            s = 0.0
            for q in range(k):
                s += A[i, j + q] * w[q]
            T[i, j] = s
    for i in range(A.shape[0] - k + 1):
        for j in range(A.shape[1] - k + 1):
            s = 0.0
            for p in range(k):
                s += T[i + p, j] * w[p]
            B[i, j] = s


def upsample_bilinear(A, B):
    n, m = A.shape
    for i in range(2 * n - 1):
        for j in range(2 * m - 1):
            i0 = i // 2
            j0 = j // 2
            fi = (i % 2) * 0.5
            fj = (j % 2) * 0.5
            i1 = i0 + i % 2
            j1 = j0 + j % 2
            top = A[i0, j0] * (1.0 - fj) + A[i0, j1] * fj
            bottom = A[i1, j0] * (1.0 - fj) + A[i1, j1] * fj
            B[i, j] = top * (1.0 - fi) + bottom * fi


def upsample_nearest(A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] = A[i // 3, j // 3]


def histogram(A, H):
    for i in range(A.shape[0]):
        H[A[i]] += 1


def prefix_sum(x, y):
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = y[i - 1] + x[i]


def row_cumsum(A, B):
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j]
            B[i, j] = s


def row_max(A, out):
    for i in range(A.shape[0]):
        m = A[i, 0]
        for j in range(1, A.shape[1]):
            m = max(m, A[i, j])
        out[i] = m


def row_argmax(A, idx):
    for i in range(A.shape[0]):
        best = A[i, 0]
        k = 0
        for j in range(1, A.shape[1]):
            if A[i, j] > best:
                best = A[i, j]
                k = j
        idx[i] = k


def global_min_max(x, out):
    lo = x[0]
    hi = x[0]
    for i in range(x.shape[0]):
        lo = min(lo, x[i])
        hi = max(hi, x[i])
    out[0] = lo
    out[1] = hi


def column_mean_var(A, mean, var):
    n = A.shape[0]
    for j in range(A.shape[1]):
        mean[j] = 0.0
        for i in range(n):
            mean[j] += A[i, j]
        mean[j] = mean[j] / n
    for j in range(A.shape[1]):
        var[j] = 0.0
        for i in range(n):
            var[j] += (A[i, j] - mean[j]) * (A[i, j] - mean[j])
        var[j] = var[j] / n


def dot(x, y, out):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    out[0] = s


def norm2(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    out[0] = math.sqrt(s)


def axpy_chain(a, x, y, z):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]
    for i in range(x.shape[0]):
        z[i] = a * y[i] + z[i]


def matrix_power(A, P, T, steps):
    n = A.shape[0]
    for _t in range(steps):
        for i in range(n):
            for j in range(n):
                s = 0.0
                for k in range(n):
                    s += P[i, k] * A[k, j]
                T[i, j] = s
        for i in range(n):
            for j in range(n):
                P[i, j] = T[i, j]


def jacobi_1d_steps(A, B, steps):
    n = A.shape[0]
    for _t in range(steps):
        for i in range(1, n - 1):
            B[i] = (A[i - 1] + A[i] + A[i + 1]) / 3.0
        for i in range(1, n - 1):
            A[i] = B[i]


def lower_solve(L, b, x):
    for i in range(L.shape[0]):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]


def upper_solve(U, b, x):
    n = U.shape[0]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= U[i, j] * x[j]
        x[i] = s / U[i, i]


def tiny_nest(A, B):
    for i in range(3):
        for j in range(4):
            B[i, j] = A[i, j] * 2.0 + 1.0


def single_iteration(A):
    for i in range(1):
        A[i] = A[i] + 1.0


def argument_bounds(A, B, n, m):
    for i in range(n):
        for j in range(m):
            B[i, j] = A[i, j] + A[i + 1, j]


def strided(A, B):
    for i in range(0, A.shape[0], 2):
        for j in range(1, A.shape[1], 3):
            B[i, j] = A[i, j] * 3.0


def reversed_copy(A, B):
    n = A.shape[0]
    for i in range(n - 1, -1, -1):
        B[n - 1 - i] = A[i]


def triangle_masks(A, B):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if i == j:
                B[i, j] = 1.0
            elif j > i:
                B[i, j] = A[i, j]
            else:
                B[i, j] = 0.0


def gemm_f64(alpha, A, B, C):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = alpha * s + C[i, j]


def int_ops(A, B, C):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            C[i, j] = A[i, j] * B[i, j] + A[i, j] // 3 - B[i, j] % 5


def int_row_sums(A, out):
    for i in range(A.shape[0]):
        s = 0
        for j in range(A.shape[1]):
            s += A[i, j]
        out[i] = s


def scale_shift(A, alpha, beta):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] = alpha * A[i, j] + beta


def clamp_relu(A, B, lo, hi):
    for i in range(A.shape[0]):
        x = A[i]
        y = x if x > 0.0 else 0.01 * x
        B[i] = min(max(y, lo), hi)


def several_statements(A, B, C, D):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            t = A[i, j] + B[i, j]
            C[i, j] = t * t
            D[i, j] = t - C[i, j]


def imperfect(A, x, y):
    for i in range(A.shape[0]):
        y[i] = 0.0
        for j in range(A.shape[1]):
            y[i] += A[i, j] * x[j]
        y[i] = y[i] * 0.5


def pipeline_of_nests(A, B, C, out):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            B[i, j] = A[i, j] * A[i, j]
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            C[j, i] = B[i, j] + 1.0
    for j in range(A.shape[1]):
        s = 0.0
        for i in range(A.shape[0]):
            s += C[j, i]
        out[j] = s


def heat_1d_time(A, B, steps):
    n = A.shape[0]
    for _t in range(steps):
        for i in range(1, n - 1):
            B[i] = 0.25 * A[i - 1] + 0.5 * A[i] + 0.25 * A[i + 1]
        for i in range(1, n - 1):
            A[i] = 0.25 * B[i - 1] + 0.5 * B[i] + 0.25 * B[i + 1]


def symmetrize(A, S):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            S[i, j] = 0.5 * (A[i, j] + A[j, i])


def vecmat(A, x, y):
    for j in range(A.shape[1]):
        s = 0.0
        for i in range(A.shape[0]):
            s += x[i] * A[i, j]
        y[j] = s


def max_pool_2x2(A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] = max(
                max(A[2 * i, 2 * j], A[2 * i, 2 * j + 1]),
                max(A[2 * i + 1, 2 * j], A[2 * i + 1, 2 * j + 1]),
            )


def trace(A, out):
    s = 0.0
    for i in range(A.shape[0]):
        s += A[i, i]
    out[0] = s


def frobenius_distance(A, B, out):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            d = A[i, j] - B[i, j]
            s += d * d
    out[0] = np.sqrt(s)


def in_place_row_normalize(A):
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += abs(A[i, j])
        for j in range(A.shape[1]):
            A[i, j] = A[i, j] / (s + 1.0)


def batched_vector_add(A, b, C):
    for n in range(A.shape[0]):
        for c in range(A.shape[1]):
            for h in range(A.shape[2]):
                C[n, c, h] = A[n, c, h] + b[c]


def strided_reversed(A, B):
    n = A.shape[0]
    for i in range(n - 1, 0, -3):
        B[i] = A[i] + A[i - 1]


def modulo_buckets(A, out):
    for i in range(A.shape[0]):
        out[i % 4] += A[i]


def window_min_bounds(A, B, w):
    n = A.shape[0]
    for i in range(n):
        s = 0.0
        for k in range(max(0, i - w), min(n, i + w + 1)):
            s += A[k]
        B[i] = s


def triangular_sum(A, B):
    n = A.shape[0]
    for i in range(n):
        for j in range(i, n):
            B[i, j] = A[i, j] + A[j, i]


def conv2d_nchw(X, W, Y):
    for n in range(Y.shape[0]):
        for k in range(Y.shape[1]):
            for p in range(Y.shape[2]):
                for q in range(Y.shape[3]):
                    s = 0.0
                    for c in range(X.shape[1]):
                        for r in range(W.shape[2]):
                            for t in range(W.shape[3]):
                                s += X[n, c, p + r, q + t] * W[k, c, r, t]
                    Y[n, k, p, q] = s


def accumulate_to_memory(x, out):
    for i in range(x.shape[0]):
        out[0] += x[i] * 2.0


def global_argmax(x, out):
    best = x[0]
    k = 0
    for i in range(1, x.shape[0]):
        if x[i] > best:
            best = x[i]
            k = i
    out[0] = k


def data_dependent_if(A, B, t):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] > t:
                B[i, j] = A[i, j] - t
            else:
                B[i, j] = 0.0


def mixed_precision(A, B, alpha):
    for i in range(A.shape[0]):
        B[i] = A[i] * alpha + np.float32(1.0)


def int_scale_index(A, B, k):
    for i in range(B.shape[0]):
        B[i] = A[k * i] + A[k * i + 1]


def half_bounds(A, B):
    h = A.shape[0] // 2
    for i in range(h):
        B[i] = A[2 * i] - A[2 * i + 1]
        B[h + i] = A[2 * i] + A[2 * i + 1]


def gram_schmidt_like(A, R):
    n = A.shape[1]
    for k in range(n):
        s = 0.0
        for i in range(A.shape[0]):
            s += A[i, k] * A[i, k]
        R[k, k] = math.sqrt(s)
        for i in range(A.shape[0]):
            A[i, k] = A[i, k] / R[k, k]
        for j in range(k + 1, n):
            d = 0.0
            for i in range(A.shape[0]):
                d += A[i, k] * A[i, j]
            R[k, j] = d
            for i in range(A.shape[0]):
                A[i, j] -= A[i, k] * d


def stencil_3d_7pt(A, B):
    n, m, l = A.shape  # noqa: E741
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            for k in range(1, l - 1):
                B[i, j, k] = (
                    A[i - 1, j, k]
                    + A[i + 1, j, k]
                    + A[i, j - 1, k]
                    + A[i, j + 1, k]
                    + A[i, j, k - 1]
                    + A[i, j, k + 1]
                    - 6.0 * A[i, j, k]
                )


def gather_rows_strided(A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] = A[3 * i + 1, B.shape[1] - 1 - j]


def int64_cumsum(A, B):
    s = 0
    for i in range(A.shape[0]):
        s += A[i]
        B[i] = s


def colsum_then_scale(A, s, B):
    for j in range(A.shape[1]):
        s[j] = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s[j] += A[i, j]
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            B[i, j] = A[i, j] / (1.0 + abs(s[j]))


def wavefront(A):
    for i in range(1, A.shape[0]):
        for j in range(1, A.shape[1]):
            A[i, j] = 0.5 * (A[i - 1, j] + A[i, j - 1])


def matvec_time_loop(A, x, y, steps):
    n = A.shape[0]
    for _t in range(steps):
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += A[i, j] * x[j]
            y[i] = s
        for i in range(n):
            x[i] = y[i] * 0.5


def attention_scores(Q, K, S, scale):
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            s = 0.0
            for d in range(Q.shape[1]):
                s += Q[i, d] * K[j, d]
            S[i, j] = s * scale


Inputs = Callable[[np.random.Generator], list[Any]]


def _f(g: np.random.Generator, *shape: int) -> np.ndarray:
    return g.standard_normal(shape).astype(np.float32)


def _d(g: np.random.Generator, *shape: int) -> np.ndarray:
    return g.standard_normal(shape)


def _i(g: np.random.Generator, *shape: int, high: int = 50) -> np.ndarray:
    return g.integers(-high, high, shape).astype(np.int32)


def _z(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return np.zeros(shape, dtype)


def _triangular(g: np.random.Generator, n: int, lower: bool) -> np.ndarray:
    m = g.standard_normal((n, n)) * 0.1 + n * np.eye(n)
    return np.tril(m) if lower else np.triu(m)


CASES: dict[str, tuple[Callable[..., None], Inputs]] = {
    "softmax_rows": (softmax_rows, lambda g: [_f(g, 13, 37), _z(13, 37)]),
    "layernorm": (
        layernorm,
        lambda g: [_f(g, 11, 37), _z(11, 37), _f(g, 37), _f(g, 37), 1e-5],
    ),
    "rmsnorm": (rmsnorm, lambda g: [_f(g, 11, 37), _z(11, 37), _f(g, 37), 1e-6]),
    "transpose": (transpose, lambda g: [_f(g, 37, 61), _z(61, 37)]),
    "outer": (outer, lambda g: [_f(g, 37), _f(g, 61), _z(37, 61)]),
    "bmm": (bmm, lambda g: [_f(g, 3, 13, 9), _f(g, 3, 9, 17), _z(3, 13, 17)]),
    "mm_nt": (mm_nt, lambda g: [_f(g, 19, 11), _f(g, 23, 11), _z(19, 23)]),
    "mm_tn": (mm_tn, lambda g: [_f(g, 11, 19), _f(g, 11, 23), _f(g, 19, 23)]),
    "contract_ijk_kl": (
        contract_ijk_kl,
        lambda g: [_f(g, 5, 7, 9), _f(g, 9, 11), _z(5, 7, 11)],
    ),
    "contract_abcd_cd": (
        contract_abcd_cd,
        lambda g: [_f(g, 7, 9, 5, 3), _f(g, 5, 3), _z(7, 9)],
    ),
    "conv1d": (conv1d, lambda g: [_f(g, 100), _f(g, 5), _z(96)]),
    "depthwise_conv2d": (
        depthwise_conv2d,
        lambda g: [_f(g, 3, 13, 17), _f(g, 3, 3, 3), _z(3, 11, 15)],
    ),
    "stencil_3x3": (stencil_3x3, lambda g: [_f(g, 19, 23), _z(19, 23)]),
    "stencil_5pt": (stencil_5pt, lambda g: [_d(g, 19, 23), _z(19, 23, dtype=np.float64)]),
    "box_blur": (box_blur, lambda g: [_f(g, 19, 23), _z(19, 23), 2]),
    "separable_filter": (
        separable_filter,
        lambda g: [_f(g, 19, 23), _z(19, 23), _z(19, 23), _f(g, 3)],
    ),
    "upsample_bilinear": (upsample_bilinear, lambda g: [_f(g, 9, 11), _z(17, 21)]),
    "upsample_nearest": (upsample_nearest, lambda g: [_f(g, 9, 11), _z(25, 31)]),
    "histogram": (
        histogram,
        lambda g: [g.integers(0, 8, 61).astype(np.int32), _z(8, dtype=np.int32)],
    ),
    "prefix_sum": (prefix_sum, lambda g: [_d(g, 61), _z(61, dtype=np.float64)]),
    "row_cumsum": (row_cumsum, lambda g: [_f(g, 13, 37), _z(13, 37)]),
    "row_max": (row_max, lambda g: [_f(g, 13, 37), _z(13)]),
    "row_argmax": (row_argmax, lambda g: [_f(g, 13, 37), _z(13, dtype=np.int32)]),
    "global_min_max": (global_min_max, lambda g: [_f(g, 130), _z(2)]),
    "column_mean_var": (column_mean_var, lambda g: [_d(g, 37, 13), _d(g, 13), _d(g, 13)]),
    "dot": (dot, lambda g: [_d(g, 130), _d(g, 130), _z(1, dtype=np.float64)]),
    "norm2": (norm2, lambda g: [_f(g, 130), _z(1)]),
    "axpy_chain": (axpy_chain, lambda g: [1.5, _f(g, 100), _f(g, 100), _f(g, 100)]),
    "matrix_power": (
        matrix_power,
        lambda g: [_d(g, 9, 9) * 0.3, np.eye(9), _z(9, 9, dtype=np.float64), 3],
    ),
    "jacobi_1d_steps": (jacobi_1d_steps, lambda g: [_f(g, 37), _z(37), 4]),
    "lower_solve": (
        lower_solve,
        lambda g: [_triangular(g, 13, True), _d(g, 13), _z(13, dtype=np.float64)],
    ),
    "upper_solve": (
        upper_solve,
        lambda g: [_triangular(g, 13, False), _d(g, 13), _z(13, dtype=np.float64)],
    ),
    "tiny_nest": (tiny_nest, lambda g: [_f(g, 3, 4), _z(3, 4)]),
    "single_iteration": (single_iteration, lambda g: [_f(g, 5)]),
    "argument_bounds": (argument_bounds, lambda g: [_f(g, 20, 17), _z(20, 17), 13, 11]),
    "strided": (strided, lambda g: [_f(g, 19, 23), _z(19, 23)]),
    "reversed_copy": (reversed_copy, lambda g: [_f(g, 61), _z(61)]),
    "triangle_masks": (triangle_masks, lambda g: [_f(g, 19, 23), _z(19, 23)]),
    "gemm_f64": (gemm_f64, lambda g: [0.7, _d(g, 13, 9), _d(g, 9, 17), _d(g, 13, 17)]),
    "int_ops": (int_ops, lambda g: [_i(g, 13, 17), _i(g, 13, 17), _z(13, 17, dtype=np.int32)]),
    "int_row_sums": (int_row_sums, lambda g: [_i(g, 13, 37), _z(13, dtype=np.int32)]),
    "scale_shift": (scale_shift, lambda g: [_f(g, 19, 23), 1.5, np.float32(-0.25)]),
    "clamp_relu": (clamp_relu, lambda g: [_f(g, 100), _z(100), -0.5, 0.75]),
    "several_statements": (
        several_statements,
        lambda g: [_f(g, 19, 23), _f(g, 19, 23), _z(19, 23), _z(19, 23)],
    ),
    "imperfect": (imperfect, lambda g: [_f(g, 19, 23), _f(g, 23), _z(19)]),
    "pipeline_of_nests": (
        pipeline_of_nests,
        lambda g: [_f(g, 19, 23), _z(19, 23), _z(23, 19), _z(23)],
    ),
    "heat_1d_time": (heat_1d_time, lambda g: [_d(g, 37), _z(37, dtype=np.float64), 3]),
    "symmetrize": (symmetrize, lambda g: [_f(g, 23, 23), _z(23, 23)]),
    "vecmat": (vecmat, lambda g: [_f(g, 19, 37), _f(g, 19), _z(37)]),
    "max_pool_2x2": (max_pool_2x2, lambda g: [_f(g, 19, 23), _z(9, 11)]),
    "trace": (trace, lambda g: [_d(g, 37, 37), _z(1, dtype=np.float64)]),
    "frobenius_distance": (frobenius_distance, lambda g: [_f(g, 19, 23), _f(g, 19, 23), _z(1)]),
    "in_place_row_normalize": (in_place_row_normalize, lambda g: [_f(g, 13, 37)]),
    "batched_vector_add": (
        batched_vector_add,
        lambda g: [_f(g, 3, 5, 37), _f(g, 5), _z(3, 5, 37)],
    ),
    "strided_reversed": (strided_reversed, lambda g: [_f(g, 61), _z(61)]),
    "modulo_buckets": (modulo_buckets, lambda g: [_d(g, 61), _z(4, dtype=np.float64)]),
    "window_min_bounds": (window_min_bounds, lambda g: [_f(g, 61), _z(61), 3]),
    "triangular_sum": (triangular_sum, lambda g: [_f(g, 23, 23), _z(23, 23)]),
    "conv2d_nchw": (
        conv2d_nchw,
        lambda g: [_f(g, 2, 3, 9, 11), _f(g, 5, 3, 3, 3), _z(2, 5, 7, 9)],
    ),
    "accumulate_to_memory": (accumulate_to_memory, lambda g: [_d(g, 130), _z(1, dtype=np.float64)]),
    "global_argmax": (global_argmax, lambda g: [_f(g, 130), _z(1, dtype=np.int32)]),
    "data_dependent_if": (data_dependent_if, lambda g: [_f(g, 19, 23), _z(19, 23), 0.25]),
    "mixed_precision": (mixed_precision, lambda g: [_f(g, 100), _z(100, dtype=np.float64), 0.3]),
    "int_scale_index": (int_scale_index, lambda g: [_f(g, 100), _z(33), 3]),
    "half_bounds": (half_bounds, lambda g: [_f(g, 61), _z(61)]),
    "gram_schmidt_like": (
        gram_schmidt_like,
        lambda g: [_d(g, 13, 7), _z(7, 7, dtype=np.float64)],
    ),
    "stencil_3d_7pt": (stencil_3d_7pt, lambda g: [_f(g, 9, 11, 13), _z(9, 11, 13)]),
    "gather_rows_strided": (gather_rows_strided, lambda g: [_f(g, 37, 23), _z(12, 23)]),
    "int64_cumsum": (
        int64_cumsum,
        lambda g: [g.integers(-9, 9, 61).astype(np.int64), _z(61, dtype=np.int64)],
    ),
    "colsum_then_scale": (colsum_then_scale, lambda g: [_f(g, 19, 23), _z(23), _z(19, 23)]),
    "wavefront": (wavefront, lambda g: [_d(g, 13, 17)]),
    "matvec_time_loop": (
        matvec_time_loop,
        lambda g: [_d(g, 19, 19) * 0.2, _d(g, 19), _z(19, dtype=np.float64), 3],
    ),
    "attention_scores": (
        attention_scores,
        lambda g: [_f(g, 19, 16), _f(g, 23, 16), _z(19, 23), 0.25],
    ),
}
