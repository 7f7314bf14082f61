"""Which reads of a nest can read a copy of their array taken before the nest (a snapshot).

    affine.for %i = 0 to 6 {                            trmm: B[k, j] (k > i) reads rows that
      affine.for %j = 0 to 8 {                          no iteration has written yet; no flow
        affine.for %k = %i + 1 to 6 {                   dependence arrives into it, so it reads
          B[i, j] += A[k, i] * B[k, j] }                the values B had before the nest:
        B[i, j] = alpha * B[i, j] } }                   unflowed(nest)[B] == [B[k, j]]

A read R of array X under the top-level loop nest N is *unflowed* when no flow (RAW) dependence
from an access inside N arrives into it (analysis/dependence.py, exact: an access that may alias
X, a call, a non-affine index all give conservative dependences, so they keep R out). Then every
instance of R reads what X held when N started, and R may read a snapshot of X taken just before
N instead. That removes the anti (WAR) dependences from R to the writes of X, and with them the
loops they made sequential (trmm's i). `freeing` picks the reads whose snapshot makes some loop
of N parallel: a loop each of whose carried dependences is such a WAR dependence.
Only affine.load ops of statically shaped memrefs qualify (the snapshot copies the whole array).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue

from loopopt.analysis.access import Access, collect_accesses, memref_name
from loopopt.analysis.dependence import Dependence, dependences


def _static(array: SSAValue) -> bool:
    t = array.type
    return isinstance(t, MemRefType) and all(size >= 0 for size in t.get_shape())


def _arriving(deps: Sequence[Dependence]) -> dict[object, Dependence]:
    """Per read op, one flow dependence arriving into it from inside the nest."""
    found: dict[object, Dependence] = {}
    for dep in deps:
        if dep.kind == "RAW":
            found.setdefault(dep.sink.op, dep)
    return found


def unflowed(
    nest: affine.ForOp, deps: Sequence[Dependence] | None = None
) -> dict[SSAValue, list[Access]]:
    """Per statically shaped array written under `nest`: its affine loads into which no flow
    dependence from inside `nest` arrives (`deps`: `dependences(nest)`, if already known)."""
    deps = dependences(nest) if deps is None else deps
    arriving = _arriving(deps)
    accesses = collect_accesses(nest)
    written = {a.memref for a in accesses if a.is_write and a.memref is not None}
    found: dict[SSAValue, list[Access]] = {}
    for access in accesses:
        if (
            access.is_write
            or access.memref not in written
            or not isinstance(access.op, affine.LoadOp)
            or access.op in arriving
        ):
            continue
        assert access.memref is not None
        if _static(access.memref):
            found.setdefault(access.memref, []).append(access)
    return found


def refusal(nest: affine.ForOp, array: SSAValue) -> str | None:
    """Why no read of `array` under `nest` can read a snapshot (None: some can)."""
    name = memref_name(array)
    if not _static(array):
        return f"'{name}' has no static shape"
    deps = dependences(nest)
    if unflowed(nest, deps).get(array):
        return None
    accesses = collect_accesses(nest)
    if not any(a.is_write and a.memref is array for a in accesses):
        return f"'{name}' is not written there"
    arriving = _arriving(deps)
    for access in accesses:
        if access.memref is array and not access.is_write and access.op in arriving:
            dep = arriving[access.op]
            return (
                f"every read of '{name}' may see a value written in the nest: "
                f"{dep.source.render()} → {dep.sink.render()} (RAW)"
            )
    return f"'{name}' has no affine read there"


def freeing(nest: affine.ForOp) -> dict[SSAValue, list[Access]]:
    """The unflowed reads whose snapshots make some loop of `nest` parallel: those that are the
    sources of the dependences of a loop that carries only WAR dependences from unflowed
    reads. Per array, in program order; empty when no loop is freed."""
    deps = dependences(nest)
    reads = {a.op: a for accesses in unflowed(nest, deps).values() for a in accesses}
    carried: dict[affine.ForOp, list[Dependence]] = {}
    for dep in deps:
        if dep.carrier is not None:
            carried.setdefault(dep.carrier, []).append(dep)
    chosen: set[object] = set()
    for loop_deps in carried.values():
        if all(d.kind == "WAR" and d.source.op in reads for d in loop_deps):
            chosen.update(d.source.op for d in loop_deps)
    found: dict[SSAValue, list[Access]] = {}
    for op, access in reads.items():
        if op in chosen:
            assert access.memref is not None
            found.setdefault(access.memref, []).append(access)
    return found
