"""Accesses of loop nests: index functions, renderings, iteration domains (counted in isl)."""

from __future__ import annotations

import islpy as isl
import numpy as np
from kernels import matmul, syrk

from loopopt.analysis.access import Access, Symbols, collect_accesses
from loopopt.context import parse_module


def accesses(text: str) -> tuple[list[Access], Symbols]:
    syms = Symbols()
    return collect_accesses(parse_module(text), syms), syms


def domain_size(access: Access, syms: Symbols, **params: int) -> int:
    """Number of iterations of `access`'s domain with the symbols (by SSA name) fixed."""
    dims = [f"d{k}" for k in range(len(access.loops))]
    cons = [c.isl(dims) for c in access.domain]
    cons += [f"{sym.isl} = {params[sym.pretty]}" for sym in syms.table.values()]
    names = ", ".join(sym.isl for sym in syms.table.values())
    body = " and ".join(cons) if cons else "true"
    domain = isl.Set(f"[{names}] -> {{ [{', '.join(dims)}] : {body} }}")
    return int(domain.count_val().to_python())


def test_matmul_accesses(rng: np.random.Generator) -> None:
    found, syms = accesses(matmul(4, 5, 6, rng)[0])
    assert [(a.render(), a.is_write) for a in found] == [
        ("A[i, k]", False),
        ("B[k, j]", False),
        ("C[i, j]", False),
        ("C[i, j]", True),
    ]
    assert all(a.affine and a.loop_names() == ["i", "j", "k"] for a in found)
    assert [a.order for a in found] == sorted(a.order for a in found)
    assert domain_size(found[0], syms) == 4 * 5 * 6


def test_triangular_domain(rng: np.random.Generator) -> None:
    found, syms = accesses(syrk(5, 3, rng)[0])
    assert found[1].render() == "A[j, k]"
    assert domain_size(found[0], syms) == (1 + 2 + 3 + 4 + 5) * 3


STRIDES = """
#lb = affine_map<(d0) -> (0, d0 - 2)>
#ub = affine_map<(d0)[s0] -> (d0 + 2, s0)>
func.func @f(%A: memref<64xf32>, %N: index) {
  %f = arith.constant 1.0 : f32
  affine.for %i = 0 to 10 step 3 {
    affine.for %j = max #lb(%i) to min #ub(%i)[%N] {
      %t = affine.apply affine_map<(d0, d1) -> (d0 * 2 + d1)>(%i, %j)
      %u = affine.apply affine_map<(d0)[s0] -> (d0 - 1 + s0)>(%t)[%N]
      affine.store %f, %A[%u floordiv 2] : memref<64xf32>
    }
  }
  return
}
"""


def test_apply_composition_strides_and_multi_result_bounds() -> None:
    (store,), syms = accesses(STRIDES)
    assert store.render() == "A[(2*i0 + i1 + N - 1 floordiv 2)]"
    # i in {0, 3, 6, 9}; j in [max(0, i - 2), min(i + 2, N)).
    expected = sum(max(0, min(i + 2, 7) - max(0, i - 2)) for i in range(0, 10, 3))
    assert domain_size(store, syms, N=7) == expected == 2 + 4 + 3 + 0


def test_affine_if_restricts_the_domain() -> None:
    found, syms = accesses("""
func.func @f(%A: memref<16xf32>) {
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<16xf32>
    affine.if affine_set<(d0) : (d0 - 6 >= 0)>(%i) {
      affine.store %v, %A[%i] : memref<16xf32>
    } else {
      affine.store %v, %A[%i + 1] : memref<16xf32>
    }
  } {loopopt.name = "i"}
  return
}
""")
    load, then_store, else_store = found
    assert domain_size(load, syms) == 10
    assert domain_size(then_store, syms) == 4
    assert domain_size(else_store, syms) == 6  # one inequality: the else-region's is exact


def test_an_else_region_of_a_conjunction_is_not_restricted() -> None:
    found, syms = accesses("""
func.func @f(%A: memref<16xf32>) {
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<16xf32>
    affine.if affine_set<(d0) : (d0 - 6 >= 0, 8 - d0 >= 0)>(%i) {
      affine.store %v, %A[%i] : memref<16xf32>
    } else {
      affine.store %v, %A[%i + 1] : memref<16xf32>
    }
  } {loopopt.name = "i"}
  return
}
""")
    _, then_store, else_store = found
    assert domain_size(then_store, syms) == 3
    assert domain_size(else_store, syms) == 10  # a disjunction: over-approximated by all


def test_non_affine_indices_and_opaque_calls() -> None:
    found, _ = accesses("""
func.func @f(%A: memref<16xf32>, %Idx: memref<16xindex>) {
  affine.for %i = 0 to 16 {
    %x = affine.load %Idx[%i] : memref<16xindex>
    %v = memref.load %A[%x] : memref<16xf32>
    memref.store %v, %A[%i] : memref<16xf32>
    func.call @g() : () -> ()
  } {loopopt.name = "i"}
  return
}
func.func private @g()
""")
    rendered = [(a.render(), a.is_write, a.affine) for a in found]
    assert rendered == [
        ("Idx[i]", False, True),
        ("A[?]", False, False),
        ("A[i]", True, True),
        ("call @g", False, False),
        ("call @g", True, False),
    ]
    assert found[3].memref is None


def test_vector_ops_and_other_memref_users() -> None:
    found, _ = accesses("""
func.func @f(%A: memref<4x64xf32>) -> memref<4x64xf32> {
  %V = memref.subview %A[0, 0] [2, 32] [1, 1]
      : memref<4x64xf32> to memref<2x32xf32, strided<[64, 1]>>
  affine.for %i = 0 to 8 {
    %v = affine.vector_load %A[1, %i * 4] : memref<4x64xf32>, vector<4xf32>
    affine.vector_store %v, %A[2, %i * 4 + 32] : memref<4x64xf32>, vector<4xf32>
  } {loopopt.name = "i"}
  return %A : memref<4x64xf32>
}
""")
    # The views and the return touch no memory; a vector covers a range of its last index.
    assert [(a.render(), a.is_write) for a in found] == [("A[1, ?]", False), ("A[2, ?]", True)]
