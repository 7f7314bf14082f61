"""Every pass on every reference nest: transformed vs original on random inputs (CPU JIT).

The nests (tests/unit/kernels.py): matmul and conv2d with sizes the tiles/factors do not divide,
syrk (triangular), a time-stepped stencil (imperfect nest) and a wavefront whose (<, >)
dependence makes tiling, interchange and unroll-and-jam illegal. `illegal` rows must be refused
with IllegalTransformError; every other row must give the original results.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from equivalence import assert_equivalent, transform
from kernels import Case, conv2d, jacobi_1d, matmul, syrk, wavefront

from loopopt.diagnostics import IllegalTransformError

KERNELS: dict[str, Callable[[np.random.Generator], Case]] = {
    "matmul": lambda rng: matmul(37, 29, 23, rng),
    "conv2d": lambda rng: conv2d(13, 11, 3, 3, rng),
    "syrk": lambda rng: syrk(19, 7, rng),
    "jacobi": lambda rng: jacobi_1d(3, 21, rng),
    "wavefront": lambda rng: wavefront(9, 13, rng),
}

MATRIX: list[tuple[str, str, str]] = [
    # matmul i, j, k
    ("matmul", "loop-tile{tile-sizes=8,16,4}", "ok"),
    ("matmul", "loop-tile{tile-sizes=5,0,3}", "ok"),
    ("matmul", "loop-strip-mine{factor=5 loop=j}", "ok"),
    ("matmul", "loop-unroll{unroll-factor=3 loop=k}", "ok"),
    ("matmul", "loop-unroll{unroll-full loop=k}", "ok"),
    ("matmul", "loop-unroll-jam{unroll-jam-factor=3 loop=i}", "ok"),
    ("matmul", "loop-interchange{permutation=2,0,1}", "ok"),
    ("matmul", "loop-peel{loop=i count=2}", "ok"),
    ("matmul", "loop-peel{loop=k count=-3}", "ok"),
    ("matmul", "loop-tile{tile-sizes=8,16,4},loop-peel{full-tiles}", "ok"),
    ("matmul", "loop-tile{tile-sizes=8,8,4},promote{loop=k_t arrays=A,B}", "ok"),
    ("matmul", "loop-tile{tile-sizes=8,8,4},promote{loop=j_t arrays=C}", "ok"),
    ("matmul", "loop-tile{tile-sizes=8,8,4},promote{loop=k_t memory-space=shared}", "ok"),
    ("matmul", "loop-mark-parallel,loop-name", "ok"),
    ("matmul", "loop-skew{loops=i,j factor=3}", "ok"),
    (
        "matmul",
        "loop-tile{tile-sizes=8,8,4},loop-unroll-jam{unroll-jam-factor=2 loop=i},"
        "loop-unroll{unroll-factor=2 loop=k}",
        "ok",
    ),
    # conv2d i, j, p, q (a reduction over p, q)
    ("conv2d", "loop-tile{tile-sizes=4,4}", "ok"),
    ("conv2d", "loop-tile{tile-sizes=4,4,2,2}", "illegal"),
    ("conv2d", "loop-strip-mine{factor=2 loop=q}", "ok"),
    ("conv2d", "loop-unroll{unroll-full loop=q}", "ok"),
    ("conv2d", "loop-unroll-jam{unroll-jam-factor=2 loop=j}", "ok"),
    ("conv2d", "loop-interchange{permutation=1,0 loops=i,j}", "ok"),
    ("conv2d", "loop-peel{loop=j count=1}", "ok"),
    ("conv2d", "loop-tile{tile-sizes=4,4},promote{loop=j_t arrays=I,F}", "ok"),
    # syrk: j runs to i (triangular)
    ("syrk", "loop-tile{tile-sizes=4,4,3}", "ok"),
    ("syrk", "loop-strip-mine{factor=3 loop=j}", "ok"),
    ("syrk", "loop-unroll{unroll-factor=2 loop=j}", "ok"),
    ("syrk", "loop-unroll{unroll-factor=4 loop=k}", "ok"),
    ("syrk", "loop-interchange{permutation=0,2,1}", "ok"),
    ("syrk", "loop-peel{loop=j count=1}", "ok"),
    ("syrk", "loop-skew{loops=i,j factor=auto wavefront}", "ok"),
    ("syrk", "loop-tile{tile-sizes=4,4,3},promote{loop=k_t arrays=A}", "ok"),
    # jacobi: t holds two loops (imperfect nest)
    ("jacobi", "loop-tile{tile-sizes=4 loops=i}", "ok"),
    ("jacobi", "loop-strip-mine{factor=4 loop=j}", "ok"),
    ("jacobi", "loop-unroll{unroll-factor=3 loop=i}", "ok"),
    ("jacobi", "loop-unroll{unroll-full loop=t}", "ok"),
    ("jacobi", "loop-unroll-jam{unroll-jam-factor=2 loop=t}", "illegal"),
    ("jacobi", "loop-peel{loop=t count=1}", "ok"),
    ("jacobi", "promote{loop=t}", "ok"),
    # wavefront: A[i, j] depends on A[i - 1, j + 1]
    ("wavefront", "loop-tile{tile-sizes=4,4}", "illegal"),
    ("wavefront", "loop-interchange{permutation=1,0}", "illegal"),
    ("wavefront", "loop-unroll-jam{unroll-jam-factor=2 loop=i}", "illegal"),
    ("wavefront", "loop-strip-mine{factor=4 loop=j}", "ok"),
    ("wavefront", "loop-unroll{unroll-factor=3 loop=i}", "ok"),
    ("wavefront", "loop-peel{loop=j count=2}", "ok"),
    ("wavefront", "loop-tile{tile-sizes=4 loops=j}", "ok"),
    ("wavefront", "loop-skew{loops=i,j factor=auto wavefront}", "ok"),
    ("wavefront", "loop-skew{loops=i,j factor=2},loop-tile{tile-sizes=4,4}", "ok"),
]


@pytest.mark.parametrize(("kernel", "pipeline", "expect"), MATRIX)
def test_pass_on_kernel(kernel: str, pipeline: str, expect: str, rng: np.random.Generator) -> None:
    text, func, arrays = KERNELS[kernel](rng)
    if expect == "illegal":
        with pytest.raises(IllegalTransformError, match="illegal"):
            transform(text, pipeline)
    else:
        assert_equivalent(text, func, arrays, pipeline)
