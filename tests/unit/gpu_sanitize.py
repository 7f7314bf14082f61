"""Run every kernel of gpu_kernels.py once on small inputs and check it (for compute-sanitizer).

    compute-sanitizer --tool memcheck  python3 tests/unit/gpu_sanitize.py
    compute-sanitizer --tool racecheck python3 tests/unit/gpu_sanitize.py
    python3 tests/unit/gpu_sanitize.py --bench      # sizes worth timing, with CUDA events

Exits 1 if a result is wrong. Not collected by pytest (no test_ prefix).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import gpu_kernels as g  # noqa: E402

import loopopt  # noqa: E402
from loopopt.runtime import cuda  # noqa: E402
from loopopt.universe import all_passes  # noqa: E402


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def check(name: str, ok: bool, detail: str = "") -> bool:
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}".rstrip())
    return ok


def run_all(rng: np.random.Generator, n: int) -> bool:
    ok = True
    a, b = _rand(rng, n), _rand(rng, n)
    c = np.full(n, np.nan, np.float32)
    loopopt.compile(g.VADD, "vadd", target="gpu")(a, b, c)
    ok &= check("vadd", bool(np.array_equal(c, a + b)))

    m = _rand(rng, n // 4 + 3, n // 8 + 5)
    t = np.full(m.T.shape, np.nan, np.float32)
    loopopt.compile(g.TRANSPOSE, "transpose", target="gpu")(m, t)
    ok &= check("transpose", bool(np.array_equal(t, m.T)))

    x, y = _rand(rng, 67, 45), _rand(rng, 45, 51)
    z = np.full((67, 51), np.nan, np.float32)
    loopopt.compile(g.MATMUL, "matmul", target="gpu")(x, y, z)
    ref = x.astype(np.float64) @ y.astype(np.float64)
    ok &= check("matmul", bool(np.allclose(z, ref, rtol=1e-4, atol=1e-4)))

    r = _rand(rng, 2 * 16384)
    out = np.full_like(r, np.nan)
    loopopt.compile(g.REVERSE_CHUNKS, "reverse", target="gpu")(r, out)
    ok &= check(
        "reverse (dynamic shared)", bool(np.array_equal(out, r.reshape(2, -1)[:, ::-1].ravel()))
    )

    w = _rand(rng, 128 * 3)
    sums = np.full(12, np.nan, np.float32)
    loopopt.compile(g.WARP_SUM, "warp_sum", target="gpu")(w, sums)
    ok &= check("warp_sum", bool(np.allclose(sums, w.reshape(-1, 32).sum(1), atol=1e-4)))

    e = _rand(rng, 300)
    out = np.full_like(e, np.nan)
    loopopt.compile(g.MATH, "math", target="gpu")(e, out)
    x = e.astype(np.float64)
    ref = np.exp(x) + np.tanh(x) * np.sin(x) + np.abs(x) ** 1.5
    ok &= check("math (libdevice)", bool(np.allclose(out, ref, rtol=2e-6, atol=1e-6)))

    p, q = _rand(rng, 37, 37), _rand(rng, 37, 37)
    ref_p, ref_q = p.astype(np.float64), q.astype(np.float64)
    for _ in range(3):
        for src, dst in ((ref_p, ref_q), (ref_q, ref_p)):
            dst[1:-1, 1:-1] = 0.2 * (
                src[1:-1, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:] + src[2:, 1:-1] + src[:-2, 1:-1]
            )
    loopopt.compile(g.JACOBI_2D, "jacobi", target="gpu")(p, q, 3)
    ok &= check("jacobi (host time loop)", bool(np.allclose(p, ref_p, rtol=1e-4, atol=1e-5)))
    return ok


def reductions(rng: np.random.Generator) -> dict[str, tuple[str, str, list[object]]]:
    """Block reductions ending in warp shuffles (f64 sums, i32 maxima over rows of 1000) and
    grid-wide ones (an f32 sum and an f64 max of 2^16 + 3 elements)."""
    from test_gpu_reduce import inputs, rows_text, total_text

    cases: dict[str, tuple[str, str, list[object]]] = {}
    for kind, t in (("add", "f64"), ("max", "i32")):
        a = inputs(kind, t, (3, 1000), seed=1)
        cases[f"block {kind} {t}"] = (
            rows_text(kind, t),
            "rows",
            [a, np.zeros(3, a.dtype), a.dtype.type(1)],
        )
    for kind, t in (("add", "f32"), ("max", "f64")):
        x = inputs(kind, t, ((1 << 16) + 3,), seed=2)
        cases[f"grid {kind} {t}"] = (
            total_text(kind, t),
            "total",
            [x, np.zeros(1, x.dtype), x.dtype.type(3)],
        )
    return cases


def run_mapped(rng: np.random.Generator) -> bool:
    """The foundation's kernels mapped by gpu-map-loops, against the CPU."""
    import kernels

    cases = {
        "matmul": kernels.matmul(37, 45, 29, rng),
        "conv2d": kernels.conv2d(40, 33, 3, 5, rng),
        "syrk": kernels.syrk(30, 17, rng),
        "jacobi_1d": kernels.jacobi_1d(5, 100, rng),
        "wavefront": kernels.wavefront(20, 30, rng),
    }
    pipelines = {name: "gpu-map-loops" for name in cases}
    for name, (text, func, arrays) in reductions(rng).items():
        cases[name] = (text, func, arrays)
        pipelines[name] = "gpu-map-loops{reductions=block region-threads=96}"
        if "grid" in name:
            pipelines[name] = "gpu-map-loops{reductions=grid-atomic}"
            cases[name + " partials"] = (text, func, arrays)
            pipelines[name + " partials"] = "gpu-map-loops"
    cases["matmul tiled+shared"] = kernels.matmul(100, 90, 70, rng)
    pipelines["matmul tiled+shared"] = (
        "loop-tile{tile-sizes=32,32,8},promote{loop=k_t arrays=A,B memory-space=shared},"
        "gpu-map-loops"
    )
    ok = True
    for name, (text, func, arrays) in cases.items():
        expected = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
        loopopt.compile(text, func=func, target="cpu")(*expected)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
        loopopt.compile(text, func=func, pipeline=pipelines[name], target="gpu")(*got)
        same = all(
            np.allclose(g, e, rtol=1e-4, atol=1e-5)
            for g, e in zip(got, expected, strict=True)
            if isinstance(e, np.ndarray)
        )
        ok &= check(f"{name} ({pipelines[name]})", same)
    return ok


def bench(rng: np.random.Generator) -> None:
    n = 4096
    a, b = _rand(rng, n, n), _rand(rng, n, n)
    c = np.zeros((n, n), np.float32)
    ms = loopopt.compile(g.MATMUL, "matmul", target="gpu").time(a, b, c, warmup=1, repeat=3)
    error = np.linalg.norm(c[:64] - a[:64].astype(np.float64) @ b) / np.linalg.norm(c[:64])
    print(
        f"naive matmul {n}^2: {ms:.2f} ms, {2 * n**3 / ms / 1e9:.3f} TFLOP/s, rel.err {error:.1e}"
    )
    m = 8192
    x = _rand(rng, m, m)
    y = np.zeros_like(x)
    ms = loopopt.compile(g.TRANSPOSE, "transpose", target="gpu").time(x, y, repeat=10)
    print(f"shared transpose {m}^2: {ms:.3f} ms, {2 * x.nbytes / ms / 1e6:.0f} GB/s")
    v = _rand(rng, 1 << 26)
    ms = loopopt.compile(g.VADD, "vadd", target="gpu").time(v, v, v.copy(), repeat=10)
    print(f"vadd 2^26: {ms:.3f} ms, {3 * v.nbytes / ms / 1e6:.0f} GB/s")
    p = _rand(rng, m, m)
    ms = loopopt.compile(g.JACOBI_2D, "jacobi", target="gpu").time(p, p.copy(), 1, repeat=10)
    print(f"jacobi-2d {m}^2, one time step (2 sweeps): {ms:.3f} ms")


def main() -> int:
    device = cuda.context()
    print(f"device: {device.name} (sm_{''.join(map(str, device.compute_capability))})")
    rng = np.random.default_rng(7)
    if "--bench" in sys.argv:
        bench(rng)
        return 0
    ok = run_all(rng, 1000)
    if "gpu-map-loops" in all_passes():
        ok &= run_mapped(rng)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
