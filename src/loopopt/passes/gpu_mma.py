"""Map the warp tiles of a matmul nest onto tensor cores (`gpu-mma`), before gpu-map-loops.

    loop-tile{tile-sizes=64,64,32},promote{arrays=A loop=k_t memory-space=shared pad=8},
    promote{arrays=B loop=k_t memory-space=shared pad=8},loop-tile{loops=i,j tile-sizes=32,32},
    gpu-mma,gpu-map-loops{block=64,2},scalar-replace{loop=k_t}

Before (a 32 x 32 warp tile of a block tile, its operands in shared memory):
    affine.for %i_t2 = %i_t to %i_t + 64 step 32 {
      affine.for %j_t2 = %j_t to %j_t + 64 step 32 {
        affine.for %i = %i_t2 to %i_t2 + 32 { affine.for %j = %j_t2 to %j_t2 + 32 {
          affine.for %k = %k_t to %k_t + 32 {
            C[i, j] += extf(A_s[i - i_t, k - k_t]) * extf(B_s[k - k_t, j - j_t]) } } } } }
After (j_t2 runs one iteration per lane: gpu-map-loops gives each warp tile 32 threads):
    affine.for %i_t2 = %i_t to %i_t + 64 step 32 {
      affine.for %j_t2 = %j_t to %j_t + 64 step 1 {
        %lane = ((j_t2 - j_t) floordiv 1) mod 32
        %c00 = C[...] ... (each 16 x 8 tile's f32 fragment: 4 elements per lane) → vector.insert
        %a = nvgpu.ldmatrix %A_s[...] {numTiles = 4, transpose = false} : … -> vector<4x2xbf16>
        %b = nvgpu.ldmatrix %B_s[...] {numTiles = 2, transpose = true} : … -> vector<2x2xbf16>
        %d = nvgpu.mma.sync(%a, %b, %c00) {mmaShape = [16, 8, 16]} : ...   (for each k step)
        vector.extract … → C[...] } }

The point loops (default: the innermost perfect triple of loops whose body is
`C[m, n] = C[m, n] + extf(A_s[.., ..]) * extf(B_s[.., ..])`; `loops=m,n,k` names them) must
be full tiles (constant trip counts; partial tiles through pad-tiles), under the two warp tile
loops their lower bounds name. A and B are read from shared memory (promote) with their
contiguous index following one loop each (k-major or not: ldmatrix .trans loads the other);
C is f32. Refused with the reason: operands that are not bf16/f16 (f32 with `precision=tf32`:
m16n8k8, operands rounded to tf32), operands not in shared memory, warp tiles that are not
multiples of 16 x 32 x 16 (16 x 32 x 8 for tf32: a warp tile's columns are spread over its 32
lanes), shared rows that are no multiple of 16 bytes (pad=8 for halves), and an `arch=` before
sm_80. A function without a matmul nest is left as it is, with a warning. The C fragments are
plain loads and stores (scalar-replace keeps them in registers
across the k tile loop). An XOR swizzle of the shared tiles, instead of padding, would change
only the indices the ldmatrix ops compute (loops/mma.py `_indices`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, builtin, func
from xdsl.dialects.builtin import Float32Type, FloatAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from loopopt.diagnostics import LoopoptError, warning
from loopopt.dialects.loopopt import PADDED
from loopopt.dialects.nvgpu_mma import WARP, element_name
from loopopt.dialects.nvvm import memory_space
from loopopt.loops.affine_maps import lower_bound
from loopopt.loops.mma import MmaNest, Operand, rewrite_nest, shared_row_bytes
from loopopt.loops.nest import find_loops, functions, innermost_loops, iv, loop_name
from loopopt.loops.nest import trip_count as point_trip
from loopopt.passes import LoopoptPass
from loopopt.target import SHARED_SPACE

PRECISIONS = ("default", "tf32")
OLDEST_ARCH = 80
"""Tensor cores with mma.sync m16n8k16 and ldmatrix: sm_80 on."""


@dataclass(frozen=True)
class GpuMmaPass(LoopoptPass):
    """Map warp tiles of f16/bf16 (or tf32) matmul nests onto mma.sync tensor cores."""

    name = "gpu-mma"

    loops: tuple[str, ...] = ()
    """The point loops m, n, k (by loopopt.name); default: every matmul point nest found."""

    precision: str = "default"
    """`tf32`: f32 operands run on tensor cores rounded to tf32 (opt-in: less precise)."""

    arch: str = "sm_90"
    """The target; tensor cores need sm_80+."""

    func: str | None = None
    """Only this function."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.precision not in PRECISIONS:
            raise LoopoptError(f"{self.name}: precision is default or tf32, not '{self.precision}'")
        number = self.arch.removeprefix("sm_")
        if not number.isdigit() or int(number) < OLDEST_ARCH:
            raise LoopoptError(f"{self.name}: tensor cores need sm_80 or later, not '{self.arch}'")
        for fn in functions(op, self.func):
            found = 0
            for k in self._innermost(fn):
                nest = match(k, self.name, self.precision == "tf32", bool(self.loops))
                if nest is not None:
                    rewrite_nest(nest)
                    found += 1
            if not found:
                name = fn.sym_name.data if isinstance(fn, func.FuncOp) else "?"
                warning(f"{self.name}: no matmul warp tile in @{name}", op=fn)

    def _innermost(self, fn: Operation) -> list[affine.ForOp]:
        if not self.loops:
            return innermost_loops(fn)
        if len(self.loops) != 3:
            raise LoopoptError(f"{self.name}: loops= names the point loops m,n,k")
        return list(find_loops(fn, self.loops[2]))


def _fail(pass_name: str, op: Operation, why: str) -> None:
    raise LoopoptError(f"{pass_name}: {why}", op=op)


def _statement(
    k: affine.ForOp,
) -> tuple[affine.StoreOp, Operation, Operation, list[SSAValue]] | None:
    """(the C store, the op in k's body that stores (it or its padded guard), the op that
    loads C (a load or its padded guard), the two factors) of `C[..] = C[..] + x * y`, the
    only statement of `k`'s body, or None."""
    ops = list(k.body.block.ops)
    if len(ops) < 2 or k.results:
        return None
    top = ops[-2]
    store = _padded_inner(top, affine.StoreOp)
    if not isinstance(store, affine.StoreOp):
        return None
    add = store.value.owner
    if not isinstance(add, arith.AddfOp):
        return None
    for c, product in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        c_op, mul = c.owner, product.owner
        load = _padded_inner(c_op, affine.LoadOp) if isinstance(c_op, Operation) else None
        if (
            isinstance(load, affine.LoadOp)
            and isinstance(mul, arith.MulfOp)
            and load.memref is store.memref
            and load.map == store.map
            and list(load.indices) == list(store.indices)
        ):
            assert isinstance(c_op, Operation)
            return store, top, c_op, [mul.lhs, mul.rhs]
    return None


def _padded_inner(op: Operation, kind: type[Operation]) -> Operation | None:
    """`op` when it is a `kind`, or the `kind` op an `affine.if {loopopt.padded}` guards."""
    if isinstance(op, kind):
        return op
    if isinstance(op, affine.IfOp) and PADDED in op.attributes:
        inner = [o for o in op.then_region.block.ops if isinstance(o, kind)]
        return inner[0] if len(inner) == 1 else None
    return None


def _factor_load(value: SSAValue) -> tuple[affine.LoadOp | None, bool]:
    """The load a factor reads (through an extf), and whether it was widened. pad-tiles'
    zeroing of a factor outside its array (`select(k < K, x, 0.0)`) is looked through: promote
    zero-fills the shared tiles there, which ldmatrix reads."""
    owner = value.owner
    if isinstance(owner, arith.SelectOp) and _is_zero(owner.rhs):
        owner = owner.lhs.owner
    widened = isinstance(owner, arith.ExtFOp)
    if widened:
        owner = owner.input.owner  # type: ignore[union-attr]
    return (owner if isinstance(owner, affine.LoadOp) else None), widened


def _is_zero(value: SSAValue) -> bool:
    owner = value.owner
    return (
        isinstance(owner, arith.ConstantOp)
        and isinstance(owner.value, FloatAttr)
        and owner.value.value.data == 0.0
    )


def _coefficients(load: affine.LoadOp, value: SSAValue) -> list[int]:
    """How much each index of `load` moves when `value` (one of its operands) grows by 1."""
    amap = load.map.data
    zero = [0] * (amap.num_dims + amap.num_symbols)
    one = [1 if v is value else 0 for v in load.indices]
    base = amap.eval(zero[: amap.num_dims], zero[amap.num_dims :])
    moved = amap.eval(one[: amap.num_dims], one[amap.num_dims :])
    return [b - a for a, b in zip(base, moved, strict=True)]


def match(k: affine.ForOp, pass_name: str, tf32: bool, named: bool) -> MmaNest | None:
    """The nest around point loop `k` when it is a matmul warp tile, None when it is no
    matmul statement (an error when it is one that tensor cores cannot run, or `named`)."""
    found = _statement(k)
    if found is None:
        if named:
            _fail(pass_name, k, "the loops' body is not C[m, n] = C[m, n] + A[.] * B[.]")
        return None
    store, c_top, c_load, factors = found
    n_loop, m_loop = k.parent_op(), None
    if not isinstance(n_loop, affine.ForOp):
        return None
    m_loop = n_loop.parent_op()
    if not isinstance(m_loop, affine.ForOp):
        return None
    c_coeffs = {loop: _coefficients(store, iv(loop)) for loop in (m_loop, n_loop, k)}
    if any(c_coeffs[k]) or not any(c_coeffs[m_loop]) or not any(c_coeffs[n_loop]):
        if named:
            _fail(pass_name, k, "C must be indexed by the two outer point loops, not by k")
        return None
    # m indexes C's rows: the loop C's first dimension follows
    if c_coeffs[n_loop][0] and not c_coeffs[m_loop][0]:
        m_loop, n_loop = n_loop, m_loop
    if not isinstance(store.value.type, Float32Type):
        _fail(pass_name, store, "the accumulator C must be f32")
    loads = [_factor_load(f) for f in factors]
    if any(load is None for load, _ in loads):
        _fail(pass_name, k, "each factor must be a load of A or B")
    operands: dict[str, Operand] = {}
    elements: set[str] = set()
    for load, _ in loads:
        assert load is not None
        if memory_space(load.memref.type) != SHARED_SPACE:
            _fail(pass_name, load, f"operand '{_array(load)}' is not in shared memory (promote it)")
        element = element_name(load.memref.type.element_type)  # type: ignore[attr-defined]
        elements.add(element or str(load.memref.type.element_type))  # type: ignore[attr-defined]
        coeffs = {loop: _coefficients(load, iv(loop)) for loop in (m_loop, n_loop, k)}
        role = "a" if any(coeffs[m_loop]) else "b"
        other = m_loop if role == "a" else n_loop
        if not any(coeffs[k]) or any(coeffs[n_loop if role == "a" else m_loop]):
            _fail(pass_name, load, f"operand '{_array(load)}' must be indexed by k and one of m, n")
        k_last = coeffs[k][-1] == 1 and not coeffs[other][-1]
        other_last = coeffs[other][-1] == 1 and not coeffs[k][-1]
        if not (k_last or other_last):
            _fail(
                pass_name,
                load,
                f"operand '{_array(load)}' must be contiguous along k or {loop_name(other)}",
            )
        if shared_row_bytes(load) % 16:
            _fail(
                pass_name, load, f"rows of '{_array(load)}' must be multiples of 16 bytes (pad it)"
            )
        operands[role] = Operand(load, k_last)
    if set(operands) != {"a", "b"}:
        _fail(pass_name, k, "the factors must be one operand indexed by m and one by n")
    if tf32 and elements != {"f32"}:
        _fail(pass_name, k, f"precision=tf32 takes f32 operands, not {'/'.join(sorted(elements))}")
    if not tf32 and elements not in ({"bf16"}, {"f16"}):
        what = "/".join(sorted(elements))
        hint = " (precision=tf32 runs f32 on tensor cores)" if elements == {"f32"} else ""
        _fail(pass_name, k, f"operands must be both bf16 or both f16, not {what}{hint}")
    sizes = tuple(point_trip(loop) for loop in (m_loop, n_loop, k))
    kstep = 8 if tf32 else 16
    if any(s is None for s in sizes) or any(
        (s or 0) % q for s, q in zip(sizes, (16, WARP, kstep), strict=True)
    ):
        text = "x".join("?" if s is None else str(s) for s in sizes)
        _fail(
            pass_name,
            k,
            f"the warp tile {text} (m x n x k) must be constant multiples of 16 x 32 x {kstep}"
            " (pad partial tiles: pad-tiles)",
        )
    mw = _warp_loop(m_loop, pass_name)
    nw = _warp_loop(n_loop, pass_name)
    if any(step != 1 for step in (m_loop.step.value.data, n_loop.step.value.data)):
        _fail(pass_name, k, "the point loops must have step 1")
    if nw.step.value.data != sizes[1] or mw.step.value.data != sizes[0]:
        _fail(pass_name, nw, "the warp tile loops must step by the point loops' trip counts")
    inner = nw if mw.is_ancestor(nw) else mw
    outer_point = m_loop if m_loop.is_ancestor(n_loop) else n_loop
    if not _chain(mw if inner is nw else nw, inner) or not _chain(inner, outer_point):
        _fail(pass_name, nw, "the warp tile loops must hold nothing but the point loops")
    if not _chain(outer_point, k):
        _fail(pass_name, outer_point, "the point loops must be perfectly nested")
    return MmaNest(
        mw,
        nw,
        m_loop,
        n_loop,
        k,
        (sizes[0] or 0, sizes[1] or 0, sizes[2] or 0),
        operands["a"],
        operands["b"],
        c_load,
        c_top,
        store.value,
        tf32,
    )


def _chain(outer: affine.ForOp, inner: affine.ForOp) -> bool:
    """`inner` is `outer`'s only op (but its terminator), or that of such a child loop."""
    loop = outer
    while loop is not inner:
        ops = list(loop.body.block.ops)
        if len(ops) != 2 or not isinstance(ops[0], affine.ForOp):
            return False
        loop = ops[0]
    return True


def _array(load: affine.LoadOp) -> str:
    return load.memref.name_hint or "?"


def _warp_loop(point: affine.ForOp, pass_name: str) -> affine.ForOp:
    """The loop whose IV is the lower bound of `point` (its warp tile loop)."""
    bound = lower_bound(point)
    for value in bound.operands:
        if isinstance(value, BlockArgument):
            loop = value.block.parent_op()
            if isinstance(loop, affine.ForOp) and iv(loop) is value:
                return loop
    _fail(pass_name, point, "the point loop must start at a warp tile loop's IV (loop-tile it)")
    raise AssertionError
