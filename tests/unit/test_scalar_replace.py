"""scalar-replace: which arrays qualify (and why not), the mechanics, and execution equivalence."""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import assert_equivalent, run, transform
from hypothesis import given, settings
from hypothesis import strategies as st
from kernels import conv2d, matmul, syrk
from nestgen import nests, pipelines
from xdsl.dialects import affine
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from loopopt.analysis.footprint import array_name
from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.loops.nest import find_loop, loop_name, loops_in
from loopopt.loops.padded_access import padded_load, padded_store
from loopopt.loops.scalar_replace import (
    Replaceable,
    describe_access,
    forward_in_block,
    nonempty_guard,
    replaceable,
    scalar_replace,
)

BODY = """
func.func private @use(memref<8xf32>)
func.func @f(%X: memref<8x8xf32>, %V: memref<8xvector<4xf32>>, %m: index, %t: index) {{
  %S = memref.alloca() : memref<8xf32, 3 : i64>
  %P = memref.alloca() : memref<8xf32, #gpu.address_space<private>>
  %L = memref.alloca() : memref<8xf32>
  %W = "memref.cast"(%L) : (memref<8xf32>) -> memref<?xf32>
  %one = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 8 {{
    affine.for %k = 0 to 7 {{
      {body}
    }} {{loopopt.name = "k"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""


def _decide(body: str, array: str) -> Replaceable | str:
    module = parse_module(BODY.format(body=body))
    return replaceable(find_loop(module, "k", "test"), _named(module, array))


def _named(root: Operation, name: str) -> SSAValue:
    for op in root.walk():
        for block in (block for region in op.regions for block in region.blocks):
            for arg in block.args:
                if array_name(arg) == name:
                    return arg
        for result in op.results:
            if result.name_hint == name:
                return result
    raise KeyError(name)


@pytest.mark.parametrize(
    ("body", "array", "why"),
    [
        (
            "%v = affine.load %X[%i, %k + 1] : memref<8x8xf32>",
            "X",
            "X[%i, %k + 1] varies with the loop",
        ),
        (
            "%v = affine.load %X[%i, %k] : memref<8x8xf32>\n"
            "affine.store %v, %X[%i, 2] : memref<8x8xf32>",
            "X",
            "X[%i, %k] may touch an element kept in registers",
        ),
        (
            "%v = affine.load %X[%i, %i * 2 - 1] : memref<8x8xf32>\n"
            "affine.store %v, %X[%m, 0] : memref<8x8xf32>",
            "X",
            "X[%i, %i * 2 - 1] and X[%m, 0] may or may not be the same element",
        ),
        (
            "%v = affine.load %S[%t] : memref<8xf32, 3 : i64>",
            "S",
            "S is in GPU shared memory",
        ),
        (
            "%v = affine.load %P[%t] : memref<8xf32, #gpu.address_space<private>>",
            "P",
            "P is in GPU private memory",
        ),
        (
            "%v = affine.load %V[%t] : memref<8xvector<4xf32>>",
            "V",
            "its elements are not scalars (vector<4xf32>)",
        ),
        ("func.call @use(%L) : (memref<8xf32>) -> ()", "L", "L is used by 'func.call'"),
        (
            "%v = memref.load %L[%t] : memref<8xf32>",
            "L",
            "L is used by 'memref.load'",
        ),
        (
            "affine.for %j = 0 to 2 {\n %v = affine.load %L[%t] : memref<8xf32>\n}",
            "L",
            "L[%t] is inside loop 'affine.for', not directly in the loop",
        ),
        (
            "%v = affine.load %L[%t] : memref<8xf32>\n"
            "affine.store %v, %L[%t] : memref<8xf32>\n"
            "%w = affine.load %W[%k] : memref<?xf32>",
            "L",
            "L may alias W (a view of the same memref)",
        ),
    ],
)
def test_refusals_say_why(body: str, array: str, why: str) -> None:
    assert _decide(body, array) == why


def test_elements_are_grouped_by_index() -> None:
    body = """
      %i1 = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)
      %c2 = arith.constant 2 : index
      %a = affine.load %X[%i, %t] : memref<8x8xf32>
      %b = affine.load %X[%i1, %t] : memref<8x8xf32>
      affine.store %b, %X[%i, %t] : memref<8x8xf32>
      %i2 = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%i)[%c2]
      %c = affine.load %X[%i2, %t] : memref<8x8xf32>
      affine.store %a, %X[%i1, %t] : memref<8x8xf32>
    """
    decided = _decide(body, "X")
    assert isinstance(decided, Replaceable)
    counts = [len(e.accesses) for e in decided.elements]
    stored = [e.stored for e in decided.elements]
    assert (counts, stored) == ([2, 2, 1], [True, True, False])


def test_reads_through_two_views_are_fine() -> None:
    body = """
      %v = affine.load %L[%t] : memref<8xf32>
      %w = affine.load %W[%k] : memref<?xf32>
    """
    assert isinstance(_decide(body, "L"), Replaceable)


def test_describe_access() -> None:
    module = parse_module(
        BODY.format(body="%v = affine.load %X[%i - 3, %k mod 4] : memref<8x8xf32>")
    )
    [load] = [op for op in module.walk() if isinstance(op, affine.LoadOp)]
    assert describe_access(load) == "X[%i - 3, %k mod 4]"


GUARDS = """
func.func @g(%n: index) {
  affine.for %t = 0 to 10 step 4 {
    affine.for %a = 0 to 4 { } {loopopt.name = "const"}
    affine.for %b = 0 to 0 { } {loopopt.name = "never"}
    affine.for %c = affine_map<(d0) -> (d0)>(%t) to min affine_map<(d0) -> (d0 + 4, 10)>(%t) {
    } {loopopt.name = "tile"}
    affine.for %d = 0 to affine_map<(d0) -> (8 - d0)>(%t) { } {loopopt.name = "maybe"}
    affine.for %e = 0 to %n { } {loopopt.name = "symbolic"}
  }
  return
}
"""


@pytest.mark.parametrize(
    ("name", "guarded"),
    [("const", False), ("never", True), ("tile", False), ("maybe", True), ("symbolic", True)],
)
def test_nonempty_guard(name: str, guarded: bool) -> None:
    loop = find_loop(parse_module(GUARDS), name, "test")
    assert (nonempty_guard(loop) is not None) == guarded


def test_scalar_replace_keeps_attributes_and_iter_args() -> None:
    text = """
func.func @f(%A: memref<8xf32>, %C: memref<4xf32>, %i: index) -> f32 {
  %z = arith.constant 0.000000e+00 : f32
  %r = affine.for %k = 0 to 8 iter_args(%acc = %z) -> (f32) {
    %a = affine.load %A[%k] : memref<8xf32>
    %c = affine.load %C[%i] : memref<4xf32>
    %s = arith.addf %c, %a : f32
    affine.store %s, %C[%i] : memref<4xf32>
    %t = arith.addf %acc, %s : f32
    affine.yield %t : f32
  } {loopopt.name = "k", loopopt.parallel}
  return %r : f32
}
"""
    module = parse_module(text)
    loop = find_loop(module, "k", "test")
    decided = replaceable(loop, _named(module, "C"))
    assert isinstance(decided, Replaceable)
    new = scalar_replace(loop, [decided])
    assert loop_name(new) == "k" and "loopopt.parallel" in new.attributes
    assert len(new.results) == 2 and len(new.inits) == 2
    assert not [
        op
        for op in new.walk()
        if isinstance(op, affine.LoadOp | affine.StoreOp) and op.memref is decided.memref
    ]
    module.verify()


def _k_t_accesses_of_c(module: ModuleOp) -> tuple[int, int]:
    [k_t] = [loop for loop in loops_in(module) if loop_name(loop) == "k_t"]
    c_uses = [
        op
        for op in k_t.walk()
        if isinstance(op, affine.LoadOp | affine.StoreOp) and array_name(op.memref) == "C"
    ]
    return len(k_t.inits), len(c_uses)


SGEMM = (
    "loop-tile{tile-sizes=128,128,8},promote{arrays=A,B loop=k_t memory-space=shared},"
    "loop-tile{loops=i,j tile-sizes=8,8},gpu-map-loops{block=16,16},"
    "loop-unroll{unroll-full loop=k},loop-unroll{unroll-full loop=j},"
    "loop-unroll{unroll-full loop=i},scalar-replace{loop=k_t}"
)


def test_sgemm_register_tile(rng: np.random.Generator) -> None:
    """The SGEMM schedule: each thread's 8x8 tile of C lives in 64 iter_args of k_t."""
    text, _, _ = matmul(256, 256, 256, rng)
    module = parse_module(transform(text, SGEMM))
    assert _k_t_accesses_of_c(module) == (64, 0)
    [kernel] = [op for op in module.walk() if op.name == "gpu.func"]
    c_accesses = [
        op
        for op in kernel.walk()
        if isinstance(op, affine.LoadOp | affine.StoreOp) and array_name(op.memref) == "C"
    ]
    assert len(c_accesses) == 128


REGISTER_TILE = (
    "loop-tile{tile-sizes=4,4},loop-interchange{permutation=0,1,3,4,2},loop-peel{full-tiles},"
    "loop-unroll{unroll-full},loop-unroll{unroll-full}"
)


@pytest.mark.parametrize(
    "pipeline",
    [
        "scalar-replace",
        "scalar-replace{arrays=A}",
        "loop-tile{tile-sizes=0,0,3},scalar-replace",
        f"{REGISTER_TILE},scalar-replace{{loop=k}}",
        f"{REGISTER_TILE},scalar-replace",
        f"{REGISTER_TILE},scalar-replace{{loop=k func=matmul}},scalar-replace",
    ],
)
def test_matmul_equivalent(pipeline: str, rng: np.random.Generator) -> None:
    after = assert_equivalent(*matmul(10, 9, 7, rng), pipeline)
    assert "iter_args" in after or "arrays=A" in pipeline


def test_register_tile_keeps_c_in_registers(rng: np.random.Generator) -> None:
    after = transform(matmul(8, 8, 7, rng)[0], f"{REGISTER_TILE},scalar-replace{{loop=k}}")
    module = parse_module(after)
    [k] = [loop for loop in loops_in(module) if loop_name(loop) == "k"]  # 8x8: full tiles only
    assert len(k.inits) == 16


def test_other_kernels_equivalent(rng: np.random.Generator) -> None:
    assert "iter_args" in assert_equivalent(*syrk(9, 5, rng), "scalar-replace")
    conv = assert_equivalent(*conv2d(7, 6, 3, 2, rng), "scalar-replace")
    assert conv.count("iter_args") == 2  # O[i, j] across q, then across p


def test_maybe_empty_loop_equivalent(rng: np.random.Generator) -> None:
    text = """
func.func @tail(%A: memref<8xf32>, %x: memref<8xf32>, %y: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    affine.for %k = 0 to affine_map<(d0) -> (8 - d0)>(%i) {
      %a = affine.load %A[%k] : memref<8xf32>
      %v = affine.load %x[%i] : memref<8xf32>
      %s = arith.addf %v, %a : f32
      affine.store %s, %x[%i] : memref<8xf32>
      %w = affine.load %y[%i] : memref<10xf32>
      %t = arith.mulf %w, %a : f32
      affine.store %t, %y[%i] : memref<10xf32>
    } {loopopt.name = "k"}
  } {loopopt.name = "i"}
  return
}
"""
    arrays = [rng.standard_normal(n).astype(np.float32) for n in (8, 8, 10)]
    after = assert_equivalent(text, "tail", arrays, "scalar-replace")
    assert "affine.if" in after and "iter_args" in after


def test_elements_apart_from_the_varying_accesses_are_kept(rng: np.random.Generator) -> None:
    # trisolv: x[i] stays in a register across j while x[j] (j < i) is read from memory;
    # the dependence analysis proves they never meet within one execution of the j loop.
    text = """
func.func @trisolv(%L: memref<9x9xf32>, %x: memref<9xf32>) {
  affine.for %i = 0 to 9 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      %v = affine.load %x[%i] : memref<9xf32>
      %l = affine.load %L[%i, %j] : memref<9x9xf32>
      %w = affine.load %x[%j] : memref<9xf32>
      %p = arith.mulf %l, %w : f32
      %s = arith.subf %v, %p : f32
      affine.store %s, %x[%i] : memref<9xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""
    arrays = [rng.standard_normal((9, 9)).astype(np.float32), rng.standard_normal(9)]
    arrays[1] = arrays[1].astype(np.float32)
    after = assert_equivalent(text, "trisolv", arrays, "scalar-replace{loop=j}")
    assert "%x_acc" in after and "affine.load %x[%j]" in after


def test_explicit_refusal_is_a_diagnostic(rng: np.random.Generator) -> None:
    text = matmul(4, 4, 4, rng)[0]
    with pytest.raises(LoopoptError, match="cannot keep A in registers across loop 'k'"):
        transform(text, "scalar-replace{loop=k arrays=A}")
    with pytest.raises(LoopoptError, match="no function named 'nope'"):
        transform(text, "scalar-replace{func=nope}")
    assert "iter_args" not in transform(text, "scalar-replace{loop=j}")


FORWARD = """
func.func @fw(%X: memref<9xf32>, %Y: memref<9xf32>) {
  %m = arith.constant 3 : index
  affine.for %i = 0 to 8 {
    %a = affine.load %X[%i] : memref<9xf32>
    %b = affine.load %X[%i] : memref<9xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %X[%i + 1] : memref<9xf32>
    %c = affine.load %X[%i] : memref<9xf32>
    %d = affine.load %X[%i + 1] : memref<9xf32>
    %cd = arith.addf %c, %d : f32
    affine.store %cd, %Y[%i] : memref<9xf32>
    %e = affine.load %X[%i] : memref<9xf32>
    %one = arith.constant 1.000000e+00 : f32
    %e1 = arith.addf %e, %one : f32
    affine.store %e1, %X[%m] : memref<9xf32>
    %f = affine.load %X[%i] : memref<9xf32>
    %g = affine.load %Y[%i] : memref<9xf32>
    %fg = arith.addf %f, %g : f32
    affine.store %fg, %Y[%i + 1] : memref<9xf32>
  } {loopopt.name = "i"}
  return
}
"""


def test_forward_in_block_counts_and_keeps_values(rng: np.random.Generator) -> None:
    module = parse_module(FORWARD)
    loop = find_loop(module, "i", "test")
    assert forward_in_block(loop.body.block, [_named(module, "Y")]) == 1  # %g: Y[%i] stored
    assert forward_in_block(loop.body.block) == 4  # %b, %c, %d, %e; not %f (after X[3])
    arrays = [rng.standard_normal(9).astype(np.float32) for _ in range(2)]
    after = assert_equivalent(FORWARD, "fw", arrays, "scalar-replace")
    assert after.count("affine.load") == 2


@settings(max_examples=20)
@given(st.data())
def test_random_nests_equivalent(data: st.DataObject) -> None:
    """Random nests (nestgen), maybe transformed and unrolled, then scalar-replace."""
    nest = data.draw(nests(), label="nest")
    before = data.draw(st.one_of(st.just(""), pipelines(nest)), label="before")
    unroll = data.draw(st.sampled_from(["", "loop-unroll{unroll-full},"]), label="unroll")
    pipeline = f"{before},{unroll}scalar-replace" if before else f"{unroll}scalar-replace"
    text = nest.mlir()
    try:
        assert_equivalent(text, "nest", nest.arrays(seed=len(text)), pipeline)
    except LoopoptError as e:  # refused by a pass before scalar-replace, never by it
        assert not e.message.startswith("scalar-replace"), e.message


def _pload(name: str, access: str, memref_type: str, guard: str) -> str:
    """A padded load (`loopopt.loops.padded_access`) of `access` under `guard`."""
    return f"""
    %{name} = affine.if {guard} -> (f32) {{
      %{name}_v = affine.load {access} : {memref_type}
      affine.yield %{name}_v : f32
    }} else {{
      %{name}_z = arith.constant 0.000000e+00 : f32
      affine.yield %{name}_z : f32
    }} {{loopopt.padded}}"""


def _pstore(value: str, access: str, memref_type: str, guard: str) -> str:
    return f"""
    affine.if {guard} {{
      affine.store %{value}, {access} : {memref_type}
    }} {{loopopt.padded}}"""


PADDED = """
func.func private @sink(f32)
func.func @f(%X: memref<10xf32>, %D: memref<10xf32>) {{
  %one = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 12 {{
    %r = affine.for %k = 0 to 4 iter_args(%acc = %one) -> (f32) {{
      {body}
      affine.yield %{yielded} : f32
    }} {{loopopt.name = "k"}}
  }}
  return
}}
"""
IN = "affine_set<(d0) : (-d0 + 9 >= 0)>(%i)"
X_LOAD = _pload("x", "%X[%i]", "memref<10xf32>", IN)
X_STORE = _pstore("s", "%X[%i]", "memref<10xf32>", IN)
ADD = "%s = arith.addf %x, %one : f32"


def _decide_padded(body: str, yielded: str = "acc") -> Replaceable | str:
    module = parse_module(PADDED.format(body=body, yielded=yielded))
    return replaceable(find_loop(module, "k", "test"), _named(module, "X"))


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (
            f"{X_LOAD}\n{ADD}\n{X_STORE}\naffine.store %s, %D[%i] : memref<10xf32>",
            "a value read from padded X[%i] reaches D[%i]",
        ),
        (
            f"{X_LOAD}\n{ADD}\n{X_STORE}\nfunc.call @sink(%s) : (f32) -> ()",
            "a value read from padded X[%i] reaches 'func.call'",
        ),
        (
            f"{X_LOAD}\n{ADD}\n{_pstore('s', '%D[%i]', 'memref<10xf32>', IN)}\n{X_STORE}",
            "a value read from padded X[%i] reaches D[%i]",
        ),
        (
            f"{X_LOAD}\n%r2 = affine.for %q = 0 to 2 iter_args(%v = %x) -> (f32) {{\n"
            "  affine.store %v, %D[%i] : memref<10xf32>\n  affine.yield %v : f32\n}\n"
            + _pstore("r2", "%X[%i]", "memref<10xf32>", IN),
            "a value read from padded X[%i] reaches D[%i]",
        ),
        (
            f"{X_LOAD}\n{ADD}\naffine.store %s, %X[%i] : memref<10xf32>",
            "X[%i] and X[%i] are one element, accessed both padded and plain",
        ),
        (
            f"{X_LOAD}\n{ADD}\n"
            + _pstore("s", "%X[%i]", "memref<10xf32>", "affine_set<(d0) : (-d0 + 8 >= 0)>(%i)"),
            "X[%i] and X[%i] are one element, padded under different conditions",
        ),
        (
            _pstore("one", "%X[%i]", "memref<10xf32>", "affine_set<(d0) : (-d0 + 2 >= 0)>(%k)"),
            "the guard of padded X[%i] varies with the loop",
        ),
    ],
)
def test_padded_refusals_say_why(body: str, why: str) -> None:
    assert _decide_padded(body) == why


def test_padded_value_carried_out_escapes() -> None:
    """A value read from a padded element that the loop yields leaves the loop."""
    body = f"{X_LOAD}\n{ADD}\n{X_STORE}\n%t = arith.addf %acc, %s : f32"
    why = "a value read from padded X[%i] reaches 'affine.yield'"
    assert _decide_padded(body, yielded="t") == why


def test_padded_read_only_may_escape() -> None:
    """Where the guard is false both versions read 0.0: the values read may go anywhere."""
    decided = _decide_padded(f"{X_LOAD}\n{ADD}\naffine.store %s, %D[%i] : memref<10xf32>")
    assert isinstance(decided, Replaceable)
    [element] = decided.elements
    assert element.guard is not None and not element.stored


def test_padded_values_through_pure_ops_are_fine() -> None:
    store = _pstore("t", "%X[%i]", "memref<10xf32>", IN)
    body = f"{X_LOAD}\n{ADD}\n%t = arith.mulf %s, %x : f32\n{store}"
    module = parse_module(PADDED.format(body=body, yielded="acc"))
    loop = find_loop(module, "k", "test")
    decided = replaceable(loop, _named(module, "X"))
    assert isinstance(decided, Replaceable)
    new = scalar_replace(loop, [decided])
    module.verify()
    before = new.prev_op
    after = new.next_op
    assert before is not None and padded_load(before) is not None
    assert after is not None and padded_store(after) is not None
    assert len(new.inits) == 2  # %acc and X[%i]


def _padded_gemm(m: int, n: int, upper: str) -> str:
    """C[m, n] += A[m, 8] @ B[8, n] over 2x2 tiles padded past m and n (a 2x2 register tile
    and two k steps unrolled inside k_t; every access of A, B and C guarded)."""
    c_type, a_type, b_type = f"memref<{m}x{n}xf32>", f"memref<{m}x8xf32>", f"memref<8x{n}xf32>"
    rows = f"affine_set<(d0) : (-d0 + {m - 1} >= 0)>"
    cols = f"affine_set<(d0) : (-d0 + {n - 1} >= 0)>"
    both = f"affine_set<(d0, d1) : (-d0 + {m - 1} >= 0, -d1 + {n - 1} >= 0)>"
    body = [
        "%i1 = affine.apply affine_map<(d0) -> (d0 + 1)>(%i0)",
        "%j1 = affine.apply affine_map<(d0) -> (d0 + 1)>(%j0)",
        "%k0 = affine.apply affine_map<(d0) -> (d0)>(%kt)",
        "%k1 = affine.apply affine_map<(d0) -> (d0 + 1)>(%kt)",
    ]
    for k in range(2):
        for i in range(2):
            body.append(_pload(f"a{i}{k}", f"%A[%i{i}, %k{k}]", a_type, f"{rows}(%i{i})"))
        for j in range(2):
            body.append(_pload(f"b{j}{k}", f"%B[%k{k}, %j{j}]", b_type, f"{cols}(%j{j})"))
        for i in range(2):
            for j in range(2):
                guard, at, e = f"{both}(%i{i}, %j{j})", f"%C[%i{i}, %j{j}]", f"{i}{j}{k}"
                body.append(_pload(f"c{e}", at, c_type, guard))
                body.append(f"%p{e} = arith.mulf %a{i}{k}, %b{j}{k} : f32")
                body.append(f"%s{e} = arith.addf %c{e}, %p{e} : f32")
                body.append(_pstore(f"s{e}", at, c_type, guard))
    tiles_m, tiles_n = m + m % 2, n + n % 2
    return f"""
func.func @gemm(%A: {a_type}, %B: {b_type}, %C: {c_type}) {{
  affine.for %i0 = 0 to {tiles_m} step 2 {{
    affine.for %j0 = 0 to {tiles_n} step 2 {{
      affine.for %kt = 0 to {upper} step 2 {{
        {chr(10).join(body)}
      }} {{loopopt.name = "k_t"}}
    }} {{loopopt.name = "j"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""


@pytest.mark.parametrize(
    ("upper", "pipeline"),
    [
        ("8", "scalar-replace{loop=k_t}"),
        ("8", "scalar-replace"),
        ("affine_map<(d0) -> (8 - d0)>(%i0)", "scalar-replace{loop=k_t}"),
    ],
)
def test_padded_gemm_equivalent(upper: str, pipeline: str, rng: np.random.Generator) -> None:
    """The padded accumulate nest before and after, on sizes where the guards fail in the last
    row and column of tiles (and, with the second bound, where k_t runs no iteration): the
    same bits, C in four iter_args of k_t, padded loads before and padded stores after it."""
    m, n = 11, 9
    text = _padded_gemm(m, n, upper)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in ((m, 8), (8, n), (m, n))]
    after = transform(text, pipeline)
    expected, got = run(text, "gemm", arrays), run(after, "gemm", arrays)
    for e, g in zip(expected, got, strict=True):
        assert np.array_equal(e, g)
    module = parse_module(after)
    [k_t] = [loop for loop in loops_in(module) if loop_name(loop) == "k_t"]
    assert len(k_t.inits) == 4
    assert not [op for op in k_t.walk() if padded_store(op) is not None]
    c_loads = [
        op for op in module.walk() if (load := padded_load(op)) and array_name(load.memref) == "C"
    ]
    c_stores = [
        op
        for op in module.walk()
        if (store := padded_store(op)) and array_name(store.memref) == "C"
    ]
    assert len(c_loads) == len(c_stores) == 4
    assert all(not k_t.is_ancestor(op) for op in c_loads)


def test_padded_nested_loops_equivalent(rng: np.random.Generator) -> None:
    """C[%i] is kept across k, then across k_t around it: the padded load that the first
    replacement hoists is again a padded access of the element, directly in k_t."""
    guard = "affine_set<(d0) : (-d0 + 4 >= 0)>(%i)"
    body = "".join(
        [
            _pload("a", "%A[%i, %k]", "memref<5x7xf32>", guard),
            _pload("c", "%C[%i]", "memref<5xf32>", guard),
            "\n        %s = arith.addf %c, %a : f32",
            _pstore("s", "%C[%i]", "memref<5xf32>", guard),
        ]
    )
    text = f"""
func.func @nested(%A: memref<5x7xf32>, %C: memref<5xf32>) {{
  affine.for %i = 0 to 6 {{
    affine.for %kt = 0 to 7 step 4 {{
      affine.for %k = affine_map<(d0) -> (d0)>(%kt) to min affine_map<(d0) -> (d0 + 4, 7)>(%kt) {{
        {body}
      }} {{loopopt.name = "k"}}
    }} {{loopopt.name = "k_t"}}
  }} {{loopopt.name = "i"}}
  return
}}
"""
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in ((5, 7), (5,))]
    after = transform(text, "scalar-replace")
    for e, g in zip(run(text, "nested", arrays), run(after, "nested", arrays), strict=True):
        assert np.array_equal(e, g)
    module = parse_module(after)
    for name in ("k", "k_t"):
        [loop] = [loop for loop in loops_in(module) if loop_name(loop) == name]
        assert len(loop.inits) == 1
    [i] = [loop for loop in loops_in(module) if loop_name(loop) == "i"]
    body_ops = list(i.body.block.ops)
    assert padded_load(body_ops[0]) is not None and padded_store(body_ops[-2]) is not None


def test_padded_forward_in_block(rng: np.random.Generator) -> None:
    """A padded load takes the value of an earlier padded load on the same condition, not of
    a padded store (where the guard is false the load gives 0.0)."""
    x_type = "memref<10xf32>"
    body = "".join(
        [
            _pload("x", "%X[%i]", x_type, IN),
            _pload("y", "%X[%i]", x_type, IN),
            "\n    %s = arith.addf %x, %y : f32",
            _pstore("s", "%X[%i]", x_type, IN),
            _pload("w", "%X[%i]", x_type, IN),
            "\n    %t = arith.addf %w, %s : f32",
            _pstore("t", "%D[%i]", x_type, IN),
        ]
    )
    text = f"""
func.func @fw(%X: {x_type}, %D: {x_type}) {{
  affine.for %i = 0 to 12 {{{body}
  }} {{loopopt.name = "i"}}
  return
}}
"""
    module = parse_module(text)
    assert forward_in_block(find_loop(module, "i", "test").body.block) == 1  # %y, not %w
    arrays = [rng.standard_normal(10).astype(np.float32) for _ in range(2)]
    after = transform(text, "scalar-replace")
    assert after.count("affine.load") == 2
    for e, g in zip(run(text, "fw", arrays), run(after, "fw", arrays), strict=True):
        assert np.array_equal(e, g)


@pytest.mark.gpu
def test_sgemm_register_tile_on_the_gpu(rng: np.random.Generator) -> None:
    """The SGEMM schedule with C in registers computes C += A @ B on the device."""
    import loopopt

    text, func, (a, b, c) = matmul(256, 256, 256, rng)
    ref = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    loopopt.compile(text, func, pipeline=SGEMM, target="gpu")(a, b, c)
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-4


def test_the_element_index_agrees_with_comparing_each_pair() -> None:
    """`_Elements.find` (by signature and constants) gives what comparing the access with
    every element found so far gives: the same element, one it may or may not be, or none."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from xdsl.ir.affine import AffineExpr

    from loopopt.loops.scalar_replace import Element, _Elements, _same

    parts = [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}]
    forms = st.builds(
        lambda p, c: {**parts[p], None: c} if c else dict(parts[p]),
        st.integers(0, 3),
        st.integers(0, 2),
    )

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.lists(forms, min_size=2, max_size=2), min_size=1, max_size=12))
    def check(accesses: list[list[dict]]) -> None:
        elements: list[Element] = []
        index = _Elements()
        for access_forms in accesses:
            access = Element([AffineExpr.constant(0)] * 2, access_forms)  # type: ignore[arg-type]
            expected_match, expected_unsure = None, False
            for element in elements:
                same = _same(access, element, 0)
                if same is None:
                    expected_unsure = True
                elif same:
                    expected_match = element
            match, unsure = index.find(access, 0)
            assert (unsure is not None) == expected_unsure
            if expected_unsure:
                return  # replaceable gives up here
            assert match is expected_match
            if match is None:
                elements.append(access)
                index.add(access)

    check()
