"""The torch forms of benchmarks/polybench_torch.py compute what the plain-Python PolyBench
kernels compute: every array, after the form ran on torch tensors, equals the array after
polybench_py's loops ran on numpy arrays (the inputs of polybench_py.CASES, plus other sizes
for the forms that reorder the loops: seidel-2d's wavefronts, nussinov's diagonals, adi's and
deriche's triangular solves, gramschmidt with more columns than rows). On the CPU in float64
(and float32 for the `_f32` cases), and on CUDA too where a GPU is usable: lu's factorization
is torch.linalg's only there. Skipped without torch."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polybench_py as pb
import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from polybench_torch import FORMS, seidel_fronts  # noqa: E402

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def _r(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape)


def _wide_gramschmidt(rng: np.random.Generator) -> list[Any]:
    return [_r(rng, 5, 8) / 3 + 3 * np.eye(5, 8), np.zeros((8, 8)), np.zeros((5, 8))]


OTHER_SIZES: dict[str, tuple[str, Callable[[np.random.Generator], list[Any]]]] = {
    "seidel_2d 1x5": ("seidel_2d", lambda g: [1, _r(g, 5, 5)]),
    "seidel_2d 3x10": ("seidel_2d", lambda g: [3, _r(g, 10, 10)]),
    "seidel_2d 6x7": ("seidel_2d", lambda g: [6, _r(g, 7, 7)]),
    "seidel_2d 2x3": ("seidel_2d", lambda g: [2, _r(g, 3, 3)]),
    "nussinov 2": ("nussinov", lambda g: [g.integers(0, 4, 2), np.zeros((2, 2), np.int64)]),
    "nussinov 21": (
        "nussinov",
        lambda g: [g.integers(0, 4, 21), g.integers(-2, 3, (21, 21))],
    ),
    "adi 3x9": ("adi", lambda g: [3, _r(g, 9, 9), _r(g, 9, 9), _r(g, 9, 9), _r(g, 9, 9)]),
    "adi 1x4": ("adi", lambda g: [1, _r(g, 4, 4), _r(g, 4, 4), np.zeros((4, 4)), _r(g, 4, 4)]),
    "deriche 11x4": ("deriche", lambda g: [0.25, g.random((11, 4)), *np.zeros((3, 11, 4))]),
    "deriche 2x13": ("deriche", lambda g: [0.5, g.random((2, 13)), *np.zeros((3, 2, 13))]),
    "floyd_warshall 13": ("floyd_warshall", lambda g: [g.integers(0, 999, (13, 13))]),
    "durbin 2": ("durbin", lambda g: [g.uniform(0.05, 0.2, 2), np.zeros(2), np.zeros(2)]),
    "gramschmidt 5x8": ("gramschmidt", _wide_gramschmidt),
}
"""name → (form, inputs)."""


def _cases() -> dict[str, tuple[str, Callable[[np.random.Generator], list[Any]]]]:
    cases = {name: (name.removesuffix("_f32"), inputs) for name, (_, inputs) in pb.CASES.items()}
    return cases | OTHER_SIZES


CASES = _cases()
PYTHON = {name.removesuffix("_f32"): function for name, (function, _) in pb.CASES.items()}


def _determined(form: str, args: list[Any]) -> list[Any]:
    """The arrays the loops determine: with more columns than rows, gramschmidt's columns from
    the row count on are rounding noise."""
    if form != "gramschmidt":
        return args
    A, R, Q = args
    m = min(A.shape)
    return [A[:, :m], R[:m], Q[:, :m]]


def test_every_kernel_has_a_form() -> None:
    assert set(FORMS) == set(PYTHON) and len(FORMS) == 30


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(CASES))
def test_form_matches_the_loops(name: str, device: str) -> None:
    form, inputs = CASES[name]
    args = inputs(np.random.default_rng(7))
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        PYTHON[form](*expected)
    got = [torch.from_numpy(a.copy()).to(device) if isinstance(a, np.ndarray) else a for a in args]
    FORMS[form](*got)
    pairs = zip(_determined(form, got), _determined(form, expected), strict=True)
    for index, (g, e) in enumerate(pairs):
        if not isinstance(e, np.ndarray):
            continue
        g = g.cpu().numpy()
        assert g.dtype == e.dtype, f"argument {index}"
        if e.dtype.kind == "i":
            np.testing.assert_array_equal(g, e, err_msg=f"argument {index}")
        else:
            tol = 2e-5 if e.dtype == np.float32 else 1e-10
            scale = max(1.0, float(np.abs(e).max(initial=0.0)))
            message = f"argument {index}"
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol * scale, err_msg=message)


@pytest.mark.parametrize(("tsteps", "n"), [(1, 5), (3, 10), (6, 7), (4, 30)])
def test_seidel_fronts_cover_each_point_once(tsteps: int, n: int) -> None:
    """The wavefronts' points with i in 1 .. n-2 are the loops' (t, i, j), each once."""
    points = [
        (i0 + 2 * s + m, j0 - 2 * m, s, front)
        for front, (steps, columns, i0, j0) in enumerate(seidel_fronts(tsteps, n))
        for s in range(steps)
        for m in range(columns)
    ]
    inside = [(i, j) for i, j, _, _ in points if 1 <= i <= n - 2]
    assert all(1 <= j <= n - 2 for _, j, _, _ in points)
    assert len(inside) == tsteps * (n - 2) ** 2
    assert set(inside) == {(i, j) for i in range(1, n - 1) for j in range(1, n - 1)}


def test_the_table_has_every_kernel_at_three_sizes() -> None:
    import polybench_large as table

    assert [k.case for k in table.KERNELS] == list(FORMS)
    assert len({k.name for k in table.KERNELS}) == 30
    for kernel in table.KERNELS:
        small, medium, large = kernel.sizes
        assert small.keys() == medium.keys() == large.keys(), kernel.name
        assert all(small[key] < medium[key] < large[key] for key in small), kernel.name


@pytest.mark.parametrize("name", list(FORMS))
def test_the_tables_check_passes_at_small_size(name: str) -> None:
    """The script's inputs (on the CPU) through the torch form in float32 and float64: every
    poisoned output is written, and the two agree within the kernel's tolerance."""
    import polybench_large as table

    (kernel,) = [k for k in table.KERNELS if k.case == name]
    base = kernel.inputs(kernel.sizes[0], "cpu")
    single, double = table.copies(base), table.copies(base, torch.float64)
    FORMS[name](*single)
    FORMS[name](*double)
    assert all(
        a.dtype == torch.float64 for a in double if torch.is_tensor(a) and a.is_floating_point()
    )
    got = table.checked(kernel, single)
    assert not any(torch.isnan(a).any() for a in got if a.is_floating_point())
    assert table.difference(got, table.checked(kernel, double)) <= kernel.tolerance


def test_difference() -> None:
    import polybench_large as table

    a = torch.tensor([3.0, 4.0])
    assert table.difference([a + torch.tensor([0.0, 0.5])], [a]) == pytest.approx(0.1)
    assert table.difference([torch.tensor([1.0, float("nan")])], [a]) == float("inf")
    assert table.difference([torch.tensor([1, 2])], [torch.tensor([1, 2])]) == 0.0
    assert table.difference([torch.tensor([1, 3])], [torch.tensor([1, 2])]) == float("inf")
