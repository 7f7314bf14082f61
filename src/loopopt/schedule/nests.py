"""The nests of a whole function that a schedule may cover, one at a time.

    func.func @gemm(…) {                          after split_nests:
      affine.for %i {                               affine.for %i { C[i, j] *= beta }   nest 1
        affine.for %j { C[i, j] *= beta }           affine.for %i { affine.for %k {     nest 2
        affine.for %k { affine.for %j {               affine.for %j { C += … } } }
          C[i, j] += alpha * A[i, k] * B[k, j]
      } } } }
    func.func @jacobi(…) {
      affine.for %t = 0 to 100 {                  a host loop: its two nests, each with the
        affine.for %i … { B = f(A) }                IV %t as a value the host computes
        affine.for %i … { A = f(B) } } }

A candidate is a loop nest without results at the top of the function, or in the body of a
sequential loop there (a host loop: it has no iter_args, it is not parallel and its bounds are
computed on the host), whose every value from outside is a value the host computes: a function
argument, a host loop's IV, or a pure op of such values. A parallel loop around several nests is
first split into one loop per nest (`gpu_host.split_nests`, the GPU mapping's own rule).
`expand` decides per nest whether to look inside it (when the nest as a whole gets no schedule).
`expose_nests` splits a nest's band so that statements beside an inner loop get loops of their
own; where the band's body is one group because an inner loop ties several statements to those
beside it (symm's k loop: a scatter and the reduction its epilogue reads), that inner loop is
distributed first.
"""

from __future__ import annotations

from xdsl.dialects import affine, func
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.traits import is_side_effect_free

from loopopt.analysis.distribution import distribution_groups
from loopopt.analysis.legality import require_distribution_legal
from loopopt.analysis.parallel import is_parallel
from loopopt.diagnostics import LoopoptError
from loopopt.loops.distribute import distribute
from loopopt.loops.nest import body_ops, host_buffer_op, perfect_band
from loopopt.loops.outline import captured_values


def host_computable(value: SSAValue) -> bool:
    """`value` is a function argument, the IV of a host loop, or a pure op of such values."""
    if isinstance(value, BlockArgument):
        parent = value.owner.parent_op()
        if isinstance(parent, func.FuncOp):
            return True
        return isinstance(parent, affine.ForOp) and is_host_loop(parent)
    op = value.owner
    assert isinstance(op, Operation)
    if host_buffer_op(op):
        return True
    return not op.regions and is_side_effect_free(op) and all(map(host_computable, op.operands))


def is_host_loop(loop: affine.ForOp) -> bool:
    """`loop` can stay on the host around kernels: no results, sequential, host bounds, and
    itself at the top of a function or in another host loop."""
    parent = loop.parent_op()
    if not isinstance(parent, func.FuncOp) and not (
        isinstance(parent, affine.ForOp) and is_host_loop(parent)
    ):
        return False
    return not loop.results and all(map(host_computable, loop.operands)) and not is_parallel(loop)


def candidate(op: Operation) -> bool:
    """`op` is a loop nest without results whose values from outside the host computes."""
    return (
        isinstance(op, affine.ForOp)
        and not op.results
        and all(map(host_computable, captured_values(op)))
    )


def expose_nests(nest: affine.ForOp, pass_name: str) -> tuple[list[affine.ForOp] | None, bool]:
    """Distribute the loops of `nest`'s perfect band, innermost first, so that the statements
    beside an inner loop get loops of their own (2mm's `tmp[i, j] = 0` ahead of its k loop: a
    perfect matmul nest and a fill nest), and so on in each part whose band is imperfect in
    turn. Returns the loops that replace `nest`, or None when its
    band's body holds no loop beside other statements or a split is not legal; and whether
    anything changed (a None after a first split leaves `nest` split in part)."""
    band = perfect_band(nest)
    inner = [op for op in body_ops(band[-1]) if not isinstance(op, affine.YieldOp)]
    if len(inner) < 2 or not any(isinstance(op, affine.ForOp) for op in inner):
        return None, False
    parts: list[affine.ForOp] = []
    changed = False
    if len(distribution_groups(band[-1])) < 2:  # symm: its k loop ties two statements to S3
        changed = _split_inner(band[-1], pass_name)
    for loop in reversed(band):  # inner loops first: the outer copies hold them split
        groups = distribution_groups(loop)
        if len(groups) < 2:
            return None, changed
        try:
            require_distribution_legal(loop, groups, pass_name)
        except LoopoptError:
            return None, changed
        parts = distribute(loop, groups, pass_name)
        changed = True
    return [nest for part in parts for nest in _expose_further(part, pass_name)], changed


def _expose_further(part: affine.ForOp, pass_name: str) -> list[affine.ForOp]:
    """`part` split further where its own band's body holds a loop beside other statements
    (correlation's `for i: for j > i: {corr[i, j] = 0; for k: …; corr[j, i] = corr[i, j]}`
    after the split of i: j's body), else `part` as it is (restored where a split went part
    of the way)."""
    backup = part.clone()
    deeper, changed = expose_nests(part, pass_name)
    if deeper is not None:
        backup.erase()  # a detached copy keeps uses of the function's values
        return deeper
    if changed:
        Rewriter.replace_op(part, backup)
        return [backup]
    backup.erase()
    return [part]


def _split_inner(loop: affine.ForOp, pass_name: str) -> bool:
    """Distribute each loop in `loop`'s body whose statements form several groups, where that
    is legal (symm's k loop: the scatter C[k, j] += … and the temp2 reduction, so that the
    reduction and the statement using it are one group and the scatter another); whether any
    was split."""
    changed = False
    for inner in [op for op in body_ops(loop) if isinstance(op, affine.ForOp)]:
        groups = distribution_groups(inner)
        if len(groups) < 2:
            continue
        try:
            require_distribution_legal(inner, groups, pass_name)
        except LoopoptError:
            continue
        distribute(inner, groups, pass_name)
        changed = True
    return changed
