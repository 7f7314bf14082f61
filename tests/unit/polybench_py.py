"""PolyBench kernels written as plain Python loop nests (the front-end's test suite).

Each function follows its PolyBench/C 4.2 original (linear algebra, solvers, stencils, dynamic
programming, data mining); the tests run it as Python on numpy arrays and as a
`@loopopt.kernel` on the CPU, and compare. Sizes come from the arrays' shapes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def gemm(alpha, beta, C, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] *= beta
        for k in range(A.shape[1]):
            for j in range(C.shape[1]):
                C[i, j] += alpha * A[i, k] * B[k, j]


def two_mm(alpha, beta, tmp, A, B, C, D):
    ni, nj = tmp.shape
    nk, nl = A.shape[1], C.shape[1]
    for i in range(ni):
        for j in range(nj):
            tmp[i, j] = 0.0
            for k in range(nk):
                tmp[i, j] += alpha * A[i, k] * B[k, j]
    for i in range(ni):
        for j in range(nl):
            D[i, j] *= beta
            for k in range(nj):
                D[i, j] += tmp[i, k] * C[k, j]


def three_mm(E, A, B, F, C, D, G):
    ni, nj = E.shape
    nk, nl, nm = A.shape[1], F.shape[1], C.shape[1]
    for i in range(ni):
        for j in range(nj):
            E[i, j] = 0.0
            for k in range(nk):
                E[i, j] += A[i, k] * B[k, j]
    for i in range(nj):
        for j in range(nl):
            F[i, j] = 0.0
            for k in range(nm):
                F[i, j] += C[i, k] * D[k, j]
    for i in range(ni):
        for j in range(nl):
            G[i, j] = 0.0
            for k in range(nj):
                G[i, j] += E[i, k] * F[k, j]


def syrk(alpha, beta, C, A):
    n, m = A.shape
    for i in range(n):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(m):
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]


def syr2k(alpha, beta, C, A, B):
    n, m = A.shape
    for i in range(n):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(m):
            for j in range(i + 1):
                C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]


def symm(alpha, beta, C, A, B):
    m, n = C.shape
    for i in range(m):
        for j in range(n):
            temp2 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2


def trmm(alpha, A, B):
    m, n = B.shape
    for i in range(m):
        for j in range(n):
            for k in range(i + 1, m):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = alpha * B[i, j]


def lu(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            w = A[i][j]
            for k in range(j):
                w -= A[i][k] * A[k][j]
            A[i][j] = w / A[j][j]
        for j in range(i, n):
            w = A[i][j]
            for k in range(i):
                w -= A[i][k] * A[k][j]
            A[i][j] = w


def ludcmp(A, b, x, y):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            w = A[i, j]
            for k in range(j):
                w -= A[i, k] * A[k, j]
            A[i, j] = w / A[j, j]
        for j in range(i, n):
            w = A[i, j]
            for k in range(i):
                w -= A[i, k] * A[k, j]
            A[i, j] = w
    for i in range(n):
        w = b[i]
        for j in range(i):
            w -= A[i, j] * y[j]
        y[i] = w
    for i in range(n - 1, -1, -1):
        w = y[i]
        for j in range(i + 1, n):
            w -= A[i, j] * x[j]
        x[i] = w / A[i, i]


def cholesky(A):
    n = len(A)
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[j, k]
            A[i, j] /= A[j, j]
        for k in range(i):
            A[i, i] -= A[i, k] * A[i, k]
        A[i, i] = math.sqrt(A[i, i])


def trisolv(L, x, b):
    n = x.shape[0]
    for i in range(n):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i][j] * x[j]
        x[i] = x[i] / L[i][i]


def durbin(r, y, z):
    n = r.shape[0]
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        total = 0.0
        for i in range(k):
            total += r[k - i - 1] * y[i]
        alpha = -(r[k] + total) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        for i in range(k):
            y[i] = z[i]
        y[k] = alpha


def gramschmidt(A, R, Q):
    m, n = A.shape
    for k in range(n):
        nrm = 0.0
        for i in range(m):
            nrm += A[i, k] * A[i, k]
        R[k, k] = math.sqrt(nrm)
        for i in range(m):
            Q[i, k] = A[i, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = 0.0
            for i in range(m):
                R[k, j] += Q[i, k] * A[i, j]
            for i in range(m):
                A[i, j] = A[i, j] - Q[i, k] * R[k, j]


def jacobi_1d(tsteps, A, B):
    n = A.shape[0]
    for t in range(tsteps):  # noqa: B007 (the loop is named t)
        for i in range(1, n - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, n - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])


def jacobi_2d(tsteps, A, B):
    n = A.shape[0]
    for t in range(tsteps):  # noqa: B007 (the loop is named t)
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, 1 + j] + A[1 + i, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, 1 + j] + B[1 + i, j] + B[i - 1, j])


def seidel_2d(tsteps, A):
    n = A.shape[0]
    for t in range(tsteps):  # noqa: B007 (the loop is named t)
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (
                    A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                    + A[i, j - 1] + A[i, j] + A[i, j + 1]
                    + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]
                ) / 9.0  # fmt: skip


def fdtd_2d(ex, ey, hz, fict):
    nx, ny = ex.shape
    for t in range(fict.shape[0]):
        for j in range(ny):
            ey[0, j] = fict[t]
        for i in range(1, nx):
            for j in range(ny):
                ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in range(nx):
            for j in range(1, ny):
                ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in range(nx - 1):
            for j in range(ny - 1):
                hz[i, j] = hz[i, j] - 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])


def heat_3d(tsteps, A, B):
    n = A.shape[0]
    for t in range(1, tsteps + 1):  # noqa: B007
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    B[i, j, k] = (
                        0.125 * (A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k])
                        + 0.125 * (A[i, j + 1, k] - 2.0 * A[i, j, k] + A[i, j - 1, k])
                        + 0.125 * (A[i, j, k + 1] - 2.0 * A[i, j, k] + A[i, j, k - 1])
                        + A[i, j, k]
                    )
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    A[i, j, k] = (
                        0.125 * (B[i + 1, j, k] - 2.0 * B[i, j, k] + B[i - 1, j, k])
                        + 0.125 * (B[i, j + 1, k] - 2.0 * B[i, j, k] + B[i, j - 1, k])
                        + 0.125 * (B[i, j, k + 1] - 2.0 * B[i, j, k] + B[i, j, k - 1])
                        + B[i, j, k]
                    )


def adi(tsteps, u, v, p, q):
    n = u.shape[0]
    DX = 1.0 / n
    DY = 1.0 / n
    DT = 1.0 / tsteps
    B1 = 2.0
    B2 = 1.0
    mul1 = B1 * DT / (DX * DX)
    mul2 = B2 * DT / (DY * DY)
    a = -mul1 / 2.0
    b = 1.0 + mul1
    c = a
    d = -mul2 / 2.0
    e = 1.0 + mul2
    f = d
    for t in range(1, tsteps + 1):  # noqa: B007 (the loop is named t)
        # Column sweep
        for i in range(1, n - 1):
            v[0, i] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = v[0, i]
            for j in range(1, n - 1):
                p[i, j] = -c / (a * p[i, j - 1] + b)
                q[i, j] = (
                    -d * u[j, i - 1] + (1.0 + 2.0 * d) * u[j, i] - f * u[j, i + 1] - a * q[i, j - 1]
                ) / (a * p[i, j - 1] + b)
            v[n - 1, i] = 1.0
            for j in range(n - 2, 0, -1):
                v[j, i] = p[i, j] * v[j + 1, i] + q[i, j]
        # Row sweep
        for i in range(1, n - 1):
            u[i, 0] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = u[i, 0]
            for j in range(1, n - 1):
                p[i, j] = -f / (d * p[i, j - 1] + e)
                q[i, j] = (
                    -a * v[i - 1, j] + (1.0 + 2.0 * a) * v[i, j] - c * v[i + 1, j] - d * q[i, j - 1]
                ) / (d * p[i, j - 1] + e)
            u[i, n - 1] = 1.0
            for j in range(n - 2, 0, -1):
                u[i, j] = p[i, j] * u[i, j + 1] + q[i, j]


def floyd_warshall(path):
    n = path.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                through = path[i, k] + path[k, j]
                path[i, j] = path[i, j] if path[i, j] < through else through


def nussinov(seq, table):
    n = seq.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            if j - 1 >= 0:
                table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < n:
                table[i, j] = max(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < n:
                if i < j - 1:
                    match = 1 if seq[i] + seq[j] == 3 else 0
                    table[i, j] = max(table[i, j], table[i + 1, j - 1] + match)
                else:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1])
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])


def atax(A, x, y, tmp):
    m, n = A.shape
    for i in range(n):
        y[i] = 0.0
    for i in range(m):
        tmp[i] = 0.0
        for j in range(n):
            tmp[i] = tmp[i] + A[i, j] * x[j]
        for j in range(n):
            y[j] = y[j] + A[i, j] * tmp[i]


def bicg(A, s, q, p, r):
    n, m = A.shape
    for i in range(m):
        s[i] = 0
    for i in range(n):
        q[i] = 0.0
        for j in range(m):
            s[j] = s[j] + r[i] * A[i, j]
            q[i] = q[i] + A[i, j] * p[j]


def mvt(x1, x2, y_1, y_2, A):
    n = x1.shape[0]
    for i in range(n):
        for j in range(n):
            x1[i] = x1[i] + A[i, j] * y_1[j]
    for i in range(n):
        for j in range(n):
            x2[i] = x2[i] + A[j, i] * y_2[j]


def correlation(float_n, data, corr, mean, stddev):
    n, m = data.shape
    eps = 0.1
    for j in range(m):
        mean[j] = 0.0
        for i in range(n):
            mean[j] += data[i, j]
        mean[j] /= float_n
    for j in range(m):
        stddev[j] = 0.0
        for i in range(n):
            stddev[j] += (data[i, j] - mean[j]) * (data[i, j] - mean[j])
        stddev[j] /= float_n
        stddev[j] = math.sqrt(stddev[j])
        stddev[j] = 1.0 if stddev[j] <= eps else stddev[j]
    for i in range(n):
        for j in range(m):
            data[i, j] -= mean[j]
            data[i, j] /= math.sqrt(float_n) * stddev[j]
    for i in range(m - 1):
        corr[i, i] = 1.0
        for j in range(i + 1, m):
            corr[i, j] = 0.0
            for k in range(n):
                corr[i, j] += data[k, i] * data[k, j]
            corr[j, i] = corr[i, j]
    corr[m - 1, m - 1] = 1.0


def covariance(float_n, data, cov, mean):
    n, m = data.shape
    for j in range(m):
        mean[j] = 0.0
        for i in range(n):
            mean[j] += data[i, j]
        mean[j] /= float_n
    for i in range(n):
        for j in range(m):
            data[i, j] -= mean[j]
    for i in range(m):
        for j in range(i, m):
            cov[i, j] = 0.0
            for k in range(n):
                cov[i, j] += data[k, i] * data[k, j]
            cov[i, j] /= float_n - 1.0
            cov[j, i] = cov[i, j]


def doitgen(A, C4, total):
    nr, nq, np_ = A.shape
    for r in range(nr):
        for q in range(nq):
            for p in range(np_):
                total[p] = 0.0
                for s in range(np_):
                    total[p] += A[r, q, s] * C4[s, p]
            for p in range(np_):
                A[r, q, p] = total[p]


def gesummv(alpha, beta, A, B, tmp, x, y):
    n = A.shape[0]
    for i in range(n):
        tmp[i] = 0.0
        y[i] = 0.0
        for j in range(n):
            tmp[i] = A[i, j] * x[j] + tmp[i]
            y[i] = B[i, j] * x[j] + y[i]
        y[i] = alpha * tmp[i] + beta * y[i]


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    for i in range(n):
        for j in range(n):
            x[i] = x[i] + beta * A[j, i] * y[j]
    for i in range(n):
        x[i] = x[i] + z[i]
    for i in range(n):
        for j in range(n):
            w[i] = w[i] + alpha * A[i, j] * x[j]


def deriche(alpha, imgIn, imgOut, y1, y2):
    w, h = imgIn.shape
    k = (
        (1.0 - math.exp(-alpha))
        * (1.0 - math.exp(-alpha))
        / (1.0 + 2.0 * alpha * math.exp(-alpha) - math.exp(2.0 * alpha))
    )
    a1 = a5 = k
    a2 = a6 = k * math.exp(-alpha) * (alpha - 1.0)
    a3 = a7 = k * math.exp(-alpha) * (alpha + 1.0)
    a4 = a8 = -k * math.exp(-2.0 * alpha)
    b1 = math.pow(2.0, -alpha)
    b2 = -math.exp(-2.0 * alpha)
    c1 = c2 = 1.0
    for i in range(w):
        ym1 = 0.0
        ym2 = 0.0
        xm1 = 0.0
        for j in range(h):
            y1[i, j] = a1 * imgIn[i, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
            xm1 = imgIn[i, j]
            ym2 = ym1
            ym1 = y1[i, j]
    for i in range(w):
        yp1 = 0.0
        yp2 = 0.0
        xp1 = 0.0
        xp2 = 0.0
        for j in range(h - 1, -1, -1):
            y2[i, j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
            xp2 = xp1
            xp1 = imgIn[i, j]
            yp2 = yp1
            yp1 = y2[i, j]
    for i in range(w):
        for j in range(h):
            imgOut[i, j] = c1 * (y1[i, j] + y2[i, j])
    for j in range(h):
        tm1 = 0.0
        ym1 = 0.0
        ym2 = 0.0
        for i in range(w):
            y1[i, j] = a5 * imgOut[i, j] + a6 * tm1 + b1 * ym1 + b2 * ym2
            tm1 = imgOut[i, j]
            ym2 = ym1
            ym1 = y1[i, j]
    for j in range(h):
        tp1 = 0.0
        tp2 = 0.0
        yp1 = 0.0
        yp2 = 0.0
        for i in range(w - 1, -1, -1):
            y2[i, j] = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2
            tp2 = tp1
            tp1 = imgOut[i, j]
            yp2 = yp1
            yp1 = y2[i, j]
    for i in range(w):
        for j in range(h):
            imgOut[i, j] = c2 * (y1[i, j] + y2[i, j])


# Small random inputs for each kernel (the tests' cases): name → (function, inputs).
Inputs = Callable[[np.random.Generator], list[Any]]


def _r(rng: np.random.Generator, *shape: int, dtype: type = np.float64) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _spd(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


CASES: dict[str, tuple[Callable[..., None], Inputs]] = {
    "gemm": (gemm, lambda g: [1.5, 1.2, _r(g, 7, 9), _r(g, 7, 5), _r(g, 5, 9)]),
    "gemm_f32": (
        gemm,
        lambda g: [1.5, 1.2, *(_r(g, *s, dtype=np.float32) for s in ((6, 8), (6, 4), (4, 8)))],
    ),
    "2mm": (
        two_mm,
        lambda g: [1.5, 1.2, _r(g, 6, 7), _r(g, 6, 5), _r(g, 5, 7), _r(g, 7, 8), _r(g, 6, 8)],
    ),
    "3mm": (
        three_mm,
        lambda g: [
            np.zeros((4, 5)),
            _r(g, 4, 6),
            _r(g, 6, 5),
            np.zeros((5, 7)),
            _r(g, 5, 8),
            _r(g, 8, 7),
            np.zeros((4, 7)),
        ],
    ),
    "syrk": (syrk, lambda g: [1.5, 1.2, _r(g, 7, 7), _r(g, 7, 5)]),
    "syr2k": (syr2k, lambda g: [1.5, 1.2, _r(g, 7, 7), _r(g, 7, 5), _r(g, 7, 5)]),
    "symm": (symm, lambda g: [1.5, 1.2, _r(g, 6, 8), _r(g, 6, 6), _r(g, 6, 8)]),
    "trmm": (trmm, lambda g: [1.5, _r(g, 6, 6), _r(g, 6, 8)]),
    "lu": (lu, lambda g: [_spd(g, 8)]),
    "ludcmp": (ludcmp, lambda g: [_spd(g, 8), _r(g, 8), np.zeros(8), np.zeros(8)]),
    "cholesky": (cholesky, lambda g: [_spd(g, 8)]),
    "trisolv": (trisolv, lambda g: [_spd(g, 8), np.zeros(8), _r(g, 8)]),
    "durbin": (durbin, lambda g: [g.uniform(0.05, 0.2, 9), np.zeros(9), np.zeros(9)]),
    "gramschmidt": (gramschmidt, lambda g: [_r(g, 8, 6), np.zeros((6, 6)), np.zeros((8, 6))]),
    "jacobi_1d": (jacobi_1d, lambda g: [3, _r(g, 12), _r(g, 12)]),
    "jacobi_2d": (jacobi_2d, lambda g: [2, _r(g, 9, 9), _r(g, 9, 9)]),
    "seidel_2d": (seidel_2d, lambda g: [2, _r(g, 9, 9)]),
    "fdtd_2d": (fdtd_2d, lambda g: [_r(g, 6, 7), _r(g, 6, 7), _r(g, 6, 7), _r(g, 3)]),
    "heat_3d": (heat_3d, lambda g: [2, _r(g, 6, 6, 6), _r(g, 6, 6, 6)]),
    "adi": (adi, lambda g: [2, _r(g, 7, 7), _r(g, 7, 7), np.zeros((7, 7)), np.zeros((7, 7))]),
    "floyd_warshall": (
        floyd_warshall,
        lambda g: [g.integers(1, 50, (8, 8)).astype(np.int32)],
    ),
    "nussinov": (
        nussinov,
        lambda g: [g.integers(0, 4, 12).astype(np.int32), np.zeros((12, 12), np.int32)],
    ),
    "atax": (atax, lambda g: [_r(g, 6, 6), _r(g, 6), np.zeros(6), np.zeros(6)]),
    "bicg": (bicg, lambda g: [_r(g, 7, 5), np.zeros(5), np.zeros(7), _r(g, 5), _r(g, 7)]),
    "mvt": (mvt, lambda g: [_r(g, 7), _r(g, 7), _r(g, 7), _r(g, 7), _r(g, 7, 7)]),
    "correlation": (
        correlation,
        lambda g: [9.0, _r(g, 9, 6), np.zeros((6, 6)), np.zeros(6), np.zeros(6)],
    ),
    "correlation_f32": (
        correlation,
        lambda g: [
            9.0,
            _r(g, 9, 6, dtype=np.float32),
            *(np.zeros(s, np.float32) for s in ((6, 6), 6, 6)),
        ],
    ),
    "covariance": (covariance, lambda g: [9.0, _r(g, 9, 6), np.zeros((6, 6)), np.zeros(6)]),
    "doitgen": (doitgen, lambda g: [_r(g, 3, 4, 5), _r(g, 5, 5), np.zeros(5)]),
    "gesummv": (
        gesummv,
        lambda g: [1.5, 1.2, _r(g, 6, 6), _r(g, 6, 6), np.zeros(6), _r(g, 6), np.zeros(6)],
    ),
    "gemver": (
        gemver,
        lambda g: [
            1.5,
            1.2,
            _r(g, 7, 7),
            *(_r(g, 7) for _ in range(4)),
            np.zeros(7),
            np.zeros(7),
            _r(g, 7),
            _r(g, 7),
        ],
    ),
    "deriche": (
        deriche,
        lambda g: [0.25, _r(g, 6, 9), np.zeros((6, 9)), np.zeros((6, 9)), np.zeros((6, 9))],
    ),
}
