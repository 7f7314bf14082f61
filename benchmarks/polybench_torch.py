"""The fastest faithful torch form of each PolyBench kernel of tests/unit/polybench_py.py.

    from polybench_torch import FORMS
    FORMS["gemm"](alpha, beta, C, A, B)       # the plain-Python kernel's arguments, as tensors

Each form takes the plain-Python kernel's arguments (torch tensors for its arrays, numbers for its
scalars) and leaves every array as the loops leave it, in place: outputs, in-out arrays and
scratch arrays alike (doitgen's `total`, durbin's `z`, adi's `p` and `q` hold the loops' last
values). Faithful: the same equations, in the same precision, computed the fastest way torch has;
only the rounding may differ (sums in another order, fused multiply-adds). So:

- matrix products are cuBLAS calls (`addmm_`, `mv`, `addmv_`, `addr_`); syrk and syr2k compute
  the whole product and keep its lower triangle (torch has no syrk), symm multiplies by the
  symmetric matrix the lower triangle of A stands for, trmm by the unit upper triangle Aᵀ stands
  for; correlation and covariance are column sums and one `Dᵀ·D`;
- the solvers are torch.linalg where it computes exactly what the loops compute: cholesky
  (`cholesky_ex`), trisolv and ludcmp's two substitutions (`solve_triangular`), lu and ludcmp's
  factorization (`lu_factor_ex(pivot=False)`: Doolittle without pivoting, CUDA only; on the CPU
  the same factorization right-looking, one rank-1 update per column); durbin and gramschmidt
  are loops over their sequential dimension with vector operations (no host synchronisation);
- the stencils jacobi-1d, jacobi-2d, heat-3d and fdtd-2d are slicing per time step; seidel-2d
  (Gauss-Seidel, in place) runs the loop's own order as wavefronts: point (t, i, j) on the
  hyperplane 4t + 2i + j, every point of one wavefront at once (a 3x3 window sum over a strided
  view), which reads exactly the values the loops read; adi's and deriche's recurrences along
  a row or column are linear, so each sweep is one triangular solve (`solve_triangular` with the
  recurrence's bidiagonal or tridiagonal-banded matrix) for all rows at once;
- floyd-warshall is the k loop over `torch.minimum` with broadcasting; nussinov runs its
  anti-diagonals in order, each as a few vector operations over strided views of the table.

FORMS maps the names of polybench_py.CASES (without the `_f32` variants) to the forms.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

Tensor = torch.Tensor


def gemm(alpha: float, beta: float, C: Tensor, A: Tensor, B: Tensor) -> None:
    C.addmm_(A, B, beta=beta, alpha=alpha)


def two_mm(
    alpha: float, beta: float, tmp: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor
) -> None:
    tmp.addmm_(A, B, beta=0.0, alpha=alpha)  # beta = 0: tmp's old contents (NaN) are ignored
    D.addmm_(tmp, C, beta=beta)


def three_mm(E: Tensor, A: Tensor, B: Tensor, F: Tensor, C: Tensor, D: Tensor, G: Tensor) -> None:
    torch.mm(A, B, out=E)
    torch.mm(C, D, out=F)
    torch.mm(E, F, out=G)


def _keep_lower(C: Tensor, full: Tensor) -> None:
    """C's lower triangle (with the diagonal) becomes full's; its strict upper one stays."""
    C.triu_(1).add_(full.tril_())


def syrk(alpha: float, beta: float, C: Tensor, A: Tensor) -> None:
    _keep_lower(C, torch.addmm(C, A, A.mT, beta=beta, alpha=alpha))


def syr2k(alpha: float, beta: float, C: Tensor, A: Tensor, B: Tensor) -> None:
    full = torch.addmm(C, A, B.mT, beta=beta, alpha=alpha)
    _keep_lower(C, full.addmm_(B, A.mT, alpha=alpha))


def symm(alpha: float, beta: float, C: Tensor, A: Tensor, B: Tensor) -> None:
    """C = beta C + alpha S B, S the symmetric matrix of A's lower triangle (the loops read
    A[i, k] for k <= i only: row i adds A[i, k] B[k, j] to C[i, j] and A[i, k] B[i, j] to
    C[k, j])."""
    S = torch.tril(A)
    S.add_(torch.tril(A, -1).mT)
    C.addmm_(S, B, beta=beta, alpha=alpha)


def trmm(alpha: float, A: Tensor, B: Tensor) -> None:
    """B = alpha (I + L)ᵀ B, L the strict lower triangle of A (row i reads the rows below it
    before they change)."""
    L = torch.tril(A, -1)
    B.copy_(torch.addmm(B, L.mT, B, beta=alpha, alpha=alpha))


def lu(A: Tensor) -> None:
    """Doolittle LU without pivoting in place: unit L below the diagonal, U on and above."""
    if A.is_cuda:
        A.copy_(torch.linalg.lu_factor_ex(A, pivot=False).LU)
        return
    n = A.shape[0]  # torch has no LU without pivoting on the CPU: the same factors, by columns
    for k in range(n - 1):
        column = A[k + 1 :, k].div_(A[k, k])
        A[k + 1 :, k + 1 :].sub_(torch.outer(column, A[k, k + 1 :]))


def ludcmp(A: Tensor, b: Tensor, x: Tensor, y: Tensor) -> None:
    lu(A)
    forward = torch.linalg.solve_triangular(A, b[:, None], upper=False, unitriangular=True)
    y.copy_(forward[:, 0])
    x.copy_(torch.linalg.solve_triangular(A, forward, upper=True)[:, 0])


def cholesky(A: Tensor) -> None:
    """The Cholesky factor in A's lower triangle; the strict upper triangle stays."""
    factor = torch.linalg.cholesky_ex(A).L  # _ex: no check, so no host synchronisation
    A.triu_(1).add_(factor)


def trisolv(L: Tensor, x: Tensor, b: Tensor) -> None:
    x.copy_(torch.linalg.solve_triangular(L, b[:, None], upper=False)[:, 0])


def durbin(r: Tensor, y: Tensor, z: Tensor) -> None:
    """Levinson-Durbin: the loop over k, alpha and beta as 0-d tensors on r's device."""
    n = r.shape[0]
    reverse = r.flip(0)  # reverse[n - k + i] = r[k - 1 - i]
    torch.neg(r[:1], out=y[:1])
    alpha = -r[0]
    beta = torch.ones((), dtype=r.dtype, device=r.device)
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        total = torch.dot(reverse[n - k :], y[:k])
        alpha = -(r[k] + total) / beta
        torch.addcmul(y[:k], y[:k].flip(0), alpha, out=z[:k])
        y[:k].copy_(z[:k])
        y[k].copy_(alpha)


def gramschmidt(A: Tensor, R: Tensor, Q: Tensor) -> None:
    """Modified Gram-Schmidt, the loop over columns k with vector operations."""
    n = A.shape[1]
    for k in range(n):
        R[k, k] = torch.linalg.vector_norm(A[:, k])
        torch.div(A[:, k], R[k, k], out=Q[:, k])
        if k + 1 < n:
            torch.mv(A[:, k + 1 :].mT, Q[:, k], out=R[k, k + 1 :])
            A[:, k + 1 :].addr_(Q[:, k], R[k, k + 1 :], alpha=-1)


def _three_point(src: Tensor, dst: Tensor) -> None:
    torch.add(src[:-2], src[1:-1], out=dst[1:-1]).add_(src[2:]).mul_(0.33333)


def jacobi_1d(tsteps: int, A: Tensor, B: Tensor) -> None:
    for _ in range(tsteps):
        _three_point(A, B)
        _three_point(B, A)


def _five_point(src: Tensor, dst: Tensor) -> None:
    out = dst[1:-1, 1:-1]
    torch.add(src[1:-1, 1:-1], src[1:-1, :-2], out=out)
    out.add_(src[1:-1, 2:]).add_(src[2:, 1:-1]).add_(src[:-2, 1:-1]).mul_(0.2)


def jacobi_2d(tsteps: int, A: Tensor, B: Tensor) -> None:
    for _ in range(tsteps):
        _five_point(A, B)
        _five_point(B, A)


def seidel_fronts(tsteps: int, n: int) -> list[tuple[int, int, int, int]]:
    """The wavefronts of seidel-2d: point (t, i, j) runs at 4t + 2i + j, after every point it
    reads (the new A[i-1, j-1..j+1] and A[i, j-1] of step t: 4t + 2i + j - 3 .. - 1) and before
    every point that overwrites what it reads (A[i, j+1] and A[i+1, j-1..j+1] of step t: + 1 ..
    + 3). Per wavefront: (steps, columns, i0, j0), a rectangle of points (t, i, j) = (t_hi - s,
    i0 + 2s + m, j0 - 2m) for s < steps and m < columns, with t and j in range and i maybe
    outside 1 .. n-2 (those points are not the loop's: they write rows that nothing reads)."""
    fronts = []
    for tau in range(3, 4 * (tsteps - 1) + 3 * (n - 2) + 1):
        t_lo = max(0, -((3 * (n - 2) - tau) // 4))
        t_hi = min(tsteps - 1, (tau - 3) // 4)
        j_first = 1 if tau % 2 else 2
        if t_lo > t_hi or j_first > n - 2:
            continue
        columns = (n - 2 - j_first) // 2 + 1
        j0 = j_first + 2 * (columns - 1)
        fronts.append((t_hi - t_lo + 1, columns, (tau - 4 * t_hi - j0) // 2, j0))
    return fronts


def seidel_2d(tsteps: int, A: Tensor) -> None:
    """Gauss-Seidel in the loops' own order, one wavefront (`seidel_fronts`) at a time: each
    point's new value is the mean of its 3x3 window, summed over a strided view of a copy of A
    padded with rows above and below (where the rectangle's points outside 1 .. n-2 land), so
    one wavefront is a sum, a division and a copy. Rows 0 and n-1, which such points may
    overwrite, are put back after each wavefront."""
    n = A.shape[0]
    fronts = seidel_fronts(tsteps, n) if n >= 3 else []
    if not fronts:
        return
    top = min(0, *(i0 - 1 for _, _, i0, _ in fronts))
    bottom = max(n - 1, *(i0 + 2 * (steps - 1) + columns for steps, columns, i0, _ in fronts))
    padded = A.new_zeros((bottom - top + 1, n))
    padded[-top : n - top] = A
    first, last = A[0].clone(), A[n - 1].clone()
    for steps, columns, i0, j0 in fronts:
        at = (i0 - top) * n + j0
        window = padded.as_strided((steps, columns, 3, 3), (2 * n, n - 2, n, 1), at - n - 1)
        target = padded.as_strided((steps, columns), (2 * n, n - 2), at)
        target.copy_(window.sum((2, 3)).div_(9.0))
        rows = range(i0, i0 + 2 * (steps - 1) + columns)
        if 0 in rows:
            padded[-top].copy_(first)
        if n - 1 in rows:
            padded[n - 1 - top].copy_(last)
    A.copy_(padded[-top : n - top])


def fdtd_2d(ex: Tensor, ey: Tensor, hz: Tensor, fict: Tensor) -> None:
    for t in range(fict.shape[0]):
        ey[0].copy_(fict[t])
        ey[1:].add_(torch.sub(hz[1:], hz[:-1]), alpha=-0.5)
        ex[:, 1:].add_(torch.sub(hz[:, 1:], hz[:, :-1]), alpha=-0.5)
        curl = torch.sub(ex[:-1, 1:], ex[:-1, :-1]).add_(ey[1:, :-1]).sub_(ey[:-1, :-1])
        hz[:-1, :-1].add_(curl, alpha=-0.7)


def _heat(src: Tensor, dst: Tensor) -> None:
    """dst = 0.125 (sum of the 6 neighbours - 6 src) + src on the interior."""
    inner = slice(1, -1)
    out = dst[inner, inner, inner]
    centre = src[inner, inner, inner]
    torch.add(src[2:, inner, inner], src[:-2, inner, inner], out=out)
    out.add_(src[inner, 2:, inner]).add_(src[inner, :-2, inner])
    out.add_(src[inner, inner, 2:]).add_(src[inner, inner, :-2])
    out.add_(centre, alpha=-6.0).mul_(0.125).add_(centre)


def heat_3d(tsteps: int, A: Tensor, B: Tensor) -> None:
    for _ in range(tsteps):
        _heat(A, B)
        _heat(B, A)


def _adi_systems(x: float, y: float, z: float, n: int, like: Tensor) -> tuple[Tensor, ...]:
    """For the recurrences p[j] = -z / (x p[j-1] + y), q[j] = (rhs[j] - x q[j-1]) / (x p[j-1]
    + y) and back v[j] = p[j] v[j+1] + q[j], j = 1 .. n-2, p[0] = 0: the p's (j = 0 .. n-2, a
    loop on the device: they do not depend on the data), the lower bidiagonal matrix of the
    q's (diagonal x p[j-1] + y, below it x) and the unit upper bidiagonal one of the v's
    (above the diagonal -p[j])."""
    p = like.new_zeros(n - 1)
    for j in range(1, n - 1):
        p[j] = -z / (x * p[j - 1] + y)
    forward = like.new_zeros((n - 2, n - 2))
    forward.diagonal().copy_(p[:-1] * x + y)
    forward.diagonal(-1).fill_(x)
    back = torch.eye(n - 2, dtype=like.dtype, device=like.device)
    back.diagonal(1).copy_(-p[1:-1])
    return p, forward, back


def _adi_rhs(before: Tensor, centre: Tensor, after: Tensor, x: float, y: float) -> Tensor:
    """-x before + (1 + 2x) centre - y after."""
    return torch.mul(before, -x).add_(centre, alpha=1.0 + 2.0 * x).sub_(after, alpha=y)


def adi(tsteps: int, u: Tensor, v: Tensor, p: Tensor, q: Tensor) -> None:
    """Each sweep's recurrences along j, for all i at once: the forward one (q) and the back
    substitution (v or u) are triangular solves with the matrices of `_adi_systems`; the
    boundary values q[i, 0] = 1 and v[n-1, i] = u[i, n-1] = 1 move to the right-hand sides."""
    n = u.shape[0]
    if n < 3 or tsteps < 1:
        return
    mul1 = 2.0 * (1.0 / tsteps) / ((1.0 / n) * (1.0 / n))
    mul2 = 1.0 * (1.0 / tsteps) / ((1.0 / n) * (1.0 / n))
    a, b = -mul1 / 2.0, 1.0 + mul1
    c = a
    d, e = -mul2 / 2.0, 1.0 + mul2
    f = d
    solve = torch.linalg.solve_triangular
    p_col, forward_col, back_col = _adi_systems(a, b, c, n, u)
    p_row, forward_row, back_row = _adi_systems(d, e, f, n, u)
    inner = slice(1, -1)
    for _ in range(tsteps):
        # column sweep, indexed [j, i]: q along j, then v[j, i] from v[n-1, i] = 1 upwards
        rhs = _adi_rhs(u[inner, :-2], u[inner, inner], u[inner, 2:], d, f)
        rhs[0].sub_(a)
        qs = solve(forward_col, rhs, upper=False)
        qs[-1].add_(p_col[-1])
        v[inner, inner] = solve(back_col, qs, upper=True, unitriangular=True)
        v[0, inner] = 1.0
        v[-1, inner] = 1.0
        # row sweep, indexed [i, j]: the same along each row (systems on the right)
        rhs = _adi_rhs(v[:-2, inner], v[inner, inner], v[2:, inner], a, c)
        rhs[:, 0].sub_(d)
        qs = solve(forward_row.mT, rhs, upper=True, left=False)
        q[inner, inner] = qs
        qs[:, -1].add_(p_row[-1])
        u[inner, inner] = solve(back_row.mT, qs, upper=False, left=False, unitriangular=True)
        u[inner, 0] = 1.0
        u[inner, -1] = 1.0
    p[inner, :-1] = p_row
    q[inner, 0] = 1.0


def floyd_warshall(path: Tensor) -> None:
    """Step k as one `torch.minimum`; row and column k do not change in step k when path[k, k]
    >= 0 (no negative cycle through k), so reading them all at once is what the loops read."""
    for k in range(path.shape[0]):
        torch.minimum(path, path[:, k, None] + path[k], out=path)


def nussinov(seq: Tensor, table: Tensor) -> None:
    """Anti-diagonal d = j - i at a time (every cell reads cells of lower diagonals only):
    table[i, j-1], table[i+1, j] and table[i+1, j-1] are diagonals of the table, and the k
    terms table[i, k] + table[k+1, j] are two strided (n - d) x (d - 1) views."""
    n = seq.shape[0]
    if not table.is_contiguous():
        raise ValueError("nussinov's torch form needs a contiguous table")
    start = table.storage_offset()
    for d in range(1, n):
        length = n - d
        best = torch.maximum(table.diagonal(d), table.diagonal(d - 1)[:length])
        best = torch.maximum(best, table.diagonal(d - 1)[1:])
        if d == 1:
            best = torch.maximum(best, table.diagonal(-1))
        else:
            match = (seq[:length] + seq[d:] == 3).to(table.dtype)
            best = torch.maximum(best, table.diagonal(d - 2)[1 : length + 1] + match)
            left = table.as_strided((length, d - 1), (n + 1, 1), start + 1)
            right = table.as_strided((length, d - 1), (n + 1, n), start + 2 * n + d)
            best = torch.maximum(best, (left + right).amax(1))
        table.diagonal(d).copy_(best)


def atax(A: Tensor, x: Tensor, y: Tensor, tmp: Tensor) -> None:
    torch.mv(A, x, out=tmp)
    torch.mv(A.mT, tmp, out=y)


def bicg(A: Tensor, s: Tensor, q: Tensor, p: Tensor, r: Tensor) -> None:
    torch.mv(A.mT, r, out=s)
    torch.mv(A, p, out=q)


def mvt(x1: Tensor, x2: Tensor, y_1: Tensor, y_2: Tensor, A: Tensor) -> None:
    x1.addmv_(A, y_1)
    x2.addmv_(A.mT, y_2)


def correlation(float_n: float, data: Tensor, corr: Tensor, mean: Tensor, stddev: Tensor) -> None:
    torch.sum(data, 0, out=mean).div_(float_n)
    data.sub_(mean)
    torch.linalg.vector_norm(data, dim=0, out=stddev).div_(math.sqrt(float_n))
    stddev.masked_fill_(stddev <= 0.1, 1.0)
    data.div_(stddev * math.sqrt(float_n))
    torch.mm(data.mT, data, out=corr)
    corr.fill_diagonal_(1.0)


def covariance(float_n: float, data: Tensor, cov: Tensor, mean: Tensor) -> None:
    torch.sum(data, 0, out=mean).div_(float_n)
    data.sub_(mean)
    torch.mm(data.mT, data, out=cov).div_(float_n - 1.0)


def doitgen(A: Tensor, C4: Tensor, total: Tensor) -> None:
    product = torch.mm(A.reshape(-1, A.shape[2]), C4)
    A.copy_(product.view(A.shape))
    total.copy_(product[-1])


def gesummv(
    alpha: float, beta: float, A: Tensor, B: Tensor, tmp: Tensor, x: Tensor, y: Tensor
) -> None:
    torch.mv(A, x, out=tmp)
    torch.addmv(tmp, B, x, beta=alpha, alpha=beta, out=y)


def gemver(
    alpha: float,
    beta: float,
    A: Tensor,
    u1: Tensor,
    v1: Tensor,
    u2: Tensor,
    v2: Tensor,
    w: Tensor,
    x: Tensor,
    y: Tensor,
    z: Tensor,
) -> None:
    A.addr_(u1, v1).addr_(u2, v2)
    x.addmv_(A.mT, y, alpha=beta).add_(z)
    w.addmv_(A, x, alpha=alpha)


def _recurrence(b1: float, b2: float, n: int, like: Tensor) -> Tensor:
    """The unit lower triangular matrix of y[j] - b1 y[j-1] - b2 y[j-2] (n x n)."""
    matrix = torch.eye(n, dtype=like.dtype, device=like.device)
    matrix.diagonal(-1).fill_(-b1)
    matrix.diagonal(-2).fill_(-b2)
    return matrix


def deriche(alpha: float, imgIn: Tensor, imgOut: Tensor, y1: Tensor, y2: Tensor) -> None:
    """The four recursive passes (causal and anticausal, along rows then columns), each one
    triangular solve with the recurrence's banded unit triangular matrix for all rows or
    columns at once; the right-hand sides are the loops' input terms."""
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
    solve = torch.linalg.solve_triangular
    rows, columns = _recurrence(b1, b2, h, imgIn), _recurrence(b1, b2, w, imgIn)
    rhs = torch.mul(imgIn, a1)
    rhs[:, 1:].add_(imgIn[:, :-1], alpha=a2)
    y1.copy_(solve(rows.mT, rhs, upper=True, left=False, unitriangular=True))
    rhs = torch.zeros_like(imgIn)
    torch.mul(imgIn[:, 1:], a3, out=rhs[:, :-1])
    rhs[:, :-2].add_(imgIn[:, 2:], alpha=a4)
    y2.copy_(solve(rows, rhs, upper=False, left=False, unitriangular=True))
    torch.add(y1, y2, out=imgOut).mul_(c1)
    rhs = torch.mul(imgOut, a5)
    rhs[1:].add_(imgOut[:-1], alpha=a6)
    y1.copy_(solve(columns, rhs, upper=False, unitriangular=True))
    rhs = torch.zeros_like(imgOut)
    torch.mul(imgOut[1:], a7, out=rhs[:-1])
    rhs[:-2].add_(imgOut[2:], alpha=a8)
    y2.copy_(solve(columns.mT, rhs, upper=True, unitriangular=True))
    torch.add(y1, y2, out=imgOut).mul_(c2)


FORMS: dict[str, Callable[..., None]] = {
    "gemm": gemm,
    "2mm": two_mm,
    "3mm": three_mm,
    "syrk": syrk,
    "syr2k": syr2k,
    "symm": symm,
    "trmm": trmm,
    "lu": lu,
    "ludcmp": ludcmp,
    "cholesky": cholesky,
    "trisolv": trisolv,
    "durbin": durbin,
    "gramschmidt": gramschmidt,
    "jacobi_1d": jacobi_1d,
    "jacobi_2d": jacobi_2d,
    "seidel_2d": seidel_2d,
    "fdtd_2d": fdtd_2d,
    "heat_3d": heat_3d,
    "adi": adi,
    "floyd_warshall": floyd_warshall,
    "nussinov": nussinov,
    "atax": atax,
    "bicg": bicg,
    "mvt": mvt,
    "correlation": correlation,
    "covariance": covariance,
    "doitgen": doitgen,
    "gesummv": gesummv,
    "gemver": gemver,
    "deriche": deriche,
}
"""polybench_py.CASES name → torch form (30 kernels)."""
