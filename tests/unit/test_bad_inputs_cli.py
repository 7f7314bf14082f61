"""Bad inputs through the CLIs, continued from test_bad_inputs.py (same `Case` and checks):
IR that does not parse or that MLIR would refuse, pass options out of range or misspelled,
`loopopt-opt` files and flags, `loopopt run` and `loopopt tune` arguments. Each: exit 1 (2
for argparse usage), one diagnostic line with its location where there is one, no traceback,
no `-o` file."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from test_bad_inputs import GOOD, Case, _check

from loopopt.tools import loopopt_cli, loopopt_opt

NEST = """func.func @f(%A: memref<8x8xf32>) {
  affine.for %i = 1 to 8 {
    affine.for %j = 0 to 7 {
      %v = affine.load %A[%i - 1, %j + 1] : memref<8x8xf32>
      affine.store %v, %A[%i, %j] : memref<8x8xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""
DECLARED = "func.func private @ext(index)\n"
"""A declaration after the nest: passes work on the functions with a body."""
BRANCHING = """func.func @f(%A: memref<8xf32>) {
  cf.br ^bb1
^bb1:
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %A[%i] : memref<8xf32>
  }
  return
}
"""


def _ir(body: str, args: str = "%A: memref<4xf32>") -> str:
    return f"func.func @f({args}) {{\n{body}  return\n}}\n"


IR_CASES = {  # input text, location, what the line says
    "unknown-op": (_ir("  foo.bar\n"), "in.mlir:2:3: ", "Operation foo.bar is not registered"),
    "unterminated": ("func.func @f() {\n  return\n", "in.mlir:3:1: ", "a '}' is missing"),
    "stray-brace": ("}\n", "in.mlir:1:1: ", "Could not parse entire input"),
    "undefined-value": (
        _ir("  affine.store %x, %A[0] : memref<4xf32>\n"),
        "in.mlir:5:1: ",
        "values used but not defined: [%x]",
    ),
    "ssa-redefined": (
        _ir("  %a = arith.constant 1.0 : f32\n  %a = arith.constant 2.0 : f32\n"),
        "in.mlir:3:3: ",
        "SSA value %a is already defined",
    ),
    "type-mismatch": (
        _ir("  %v = arith.constant 1.0 : f64\n  affine.store %v, %A[0] : memref<4xf32>\n"),
        "in.mlir:3:16: ",
        "used with type f32, but has been previously used or defined with type f64",
    ),
    "unknown-element-type": (_ir("", "%A: memref<4xf17>"), "in.mlir:1:27: ", "shape type"),
    "indices-for-rank": (
        _ir("  %v = affine.load %A[0] : memref<4x4xf32>\n", "%A: memref<4x4xf32>"),
        "in.mlir:2:3: ",
        "affine.load: the map has 1 result(s) but the memref has rank 2",
    ),
    "store-indices-for-rank": (
        _ir(
            "  %c = arith.constant 1.0 : f32\n  affine.store %c, %A[0, 1, 2] : memref<4x4xf32>\n",
            "%A: memref<4x4xf32>",
        ),
        "in.mlir:3:3: ",
        "affine.store: the map has 3 result(s) but the memref has rank 2",
    ),
    "indirect-index": (
        _ir(
            "  affine.for %j = 0 to 4 {\n    %i = affine.load %I[%j] : memref<4xindex>\n"
            "    %v = affine.load %A[%i] : memref<4xf32>\n    affine.store %v, %A[%j] : "
            "memref<4xf32>\n  }\n",
            "%A: memref<4xf32>, %I: memref<4xindex>",
        ),
        "in.mlir:4:5: ",
        "affine.load: %i cannot be an index of an affine map: it is computed inside a loop",
    ),
    "step-zero": (
        _ir("  affine.for %i = 0 to 4 step 0 {\n  }\n"),
        "in.mlir:2:3: ",
        "affine.for: the step must be positive, got 0",
    ),
    "step-negative": (
        _ir("  affine.for %i = 0 to 4 step -1 {\n  }\n"),
        "in.mlir:2:31: ",
        "positive signed integer",
    ),
    "yield-missing": (
        _ir(
            "  %c = arith.constant 0.0 : f32\n"
            "  %r = affine.for %i = 0 to 4 iter_args(%a = %c) -> (f32) {\n    affine.yield\n  }\n"
        ),
        "in.mlir:4:5: ",
        "its iter_args need affine.yield of (f32), got (nothing)",
    ),
    "not-utf8-deep": (b"// \xc3\x28\nfunc.func @f() {\n  return\n}\n", "in.mlir:1:4: ", "UTF-8"),
    "control-bytes": (b"\x01\x02garbage\n", "in.mlir:1:1: ", "Unexpected character"),
    "nul-byte": (b"func.func @f() {\x00\n  return\n}\n", "in.mlir:1:17: ", "Unexpected character"),
    "integer-too-big": (
        _ir("  %a = arith.constant 99999999999999999999999 : i32\n"),
        "in.mlir:2:3: ",
        "out of range for type i32",
    ),
    "float-bound": (
        _ir("  affine.for %i = 0 to 4.5 {\n  }\n"),
        "in.mlir:2:24: ",
        "expected an affine map or an integer for loop bound",
    ),
    "memref-as-bound": (
        _ir("  affine.for %i = 0 to affine_map<(d0) -> (d0 + 1)>(%A) {\n  }\n"),
        "in.mlir:2:53: ",
        "used with type index",
    ),
    "empty-symbol-name": ("func.func @() {\n  return\n}\n", "in.mlir:1:11: ", "identifier"),
    "unknown-attribute": (
        "func.func @f() attributes {x = #foo.bar} {\n  return\n}\n",
        "in.mlir:1:40: ",
        "'foo.bar' is not registered",
    ),
    "string-never-closed": (  # xDSL's string pattern backtracked for minutes on this line
        _ir('  %f = affi"ne.load %A[0] : memref<4xf32> // and some more text to backtrack\n'),
        "in.mlir:2:12: ",
        "End of file reached before closing string literal",
    ),
    "blocks-in-a-loop": (
        _ir("  affine.for %i = 0 to 4 {\n    cf.br ^bb1\n  ^bb1:\n  }\n"),
        "in.mlir:2:3: ",
        "invalid IR: 'affine.for' takes a region of one block (no ^bb labels in it)",
    ),
    "memref-store-indices": (  # xDSL's verifier raises a bare Exception
        _ir(
            "  %c = arith.constant 0 : index\n  %v = memref.load %A[%c] : memref<4xf32>\n"
            "  memref.store %v, %A[%c, %c] : memref<4xf32>\n"
        ),
        "in.mlir:4:3: ",
        "invalid IR: Expected an index for each dimension",
    ),
    "function-twice": (
        "func.func @f() {\n  return\n}\nfunc.func @f() {\n  return\n}\n",
        "in.mlir: ",
        'Redefinition of symbol "f"',
    ),
}

OPTION_CASES = {  # pipeline, location, what the line says
    "unknown-option": ("loop-tile{foo=1}", "<pipeline>:1:1: ", "unknown option 'foo'"),
    "misspelled-option": (
        "loop-tile{tile-size=4}",
        "<pipeline>:1:1: ",
        "did you mean 'tile-sizes'?",
    ),
    "option-of-another-pass": (
        "loop-name,loop-mark-parallel{loop=i}",
        "<pipeline>:1:11: ",
        "loop-mark-parallel: unknown option 'loop' (options: func)",
    ),
    "beyond-int64": (
        "loop-tile{tile-sizes=99999999999999999999}",
        "<pipeline>:1:1: ",
        "tile-sizes=99999999999999999999 is out of range",
    ),
    "space-separated": ("loop-tile{tile-sizes=4} loop-unroll", "<pipeline>:1:24: ", "a comma"),
    "empty-func": ("loop-mark-parallel{func=}", "<pipeline>:1:25: ", "unknown argument value"),
    "tile-required": ("loop-tile{loops=i,j}", "in.mlir: ", "loop-tile: tile-sizes is required"),
    "not-a-permutation": (
        "loop-interchange{permutation=0,0}",
        "in.mlir: ",
        "permutation=0,0 is not a permutation of 0..1",
    ),
    "illegal-interchange": (
        "loop-interchange{permutation=1,0}",
        "in.mlir:2:3: ",
        "illegal: permuting loops (i, j) reverses A[i, j] → A[i - 1, j + 1] (RAW)",
    ),
    "no-such-loop": ("loop-tile{tile-sizes=4 loops=x}", "in.mlir: ", "no loop named 'x'"),
    "no-such-function": ("loop-tile{tile-sizes=4 func=g}", "in.mlir: ", "no function named 'g'"),
    "too-many-tile-sizes": (
        "loop-tile{tile-sizes=4,4,4 loops=i,j}",
        "in.mlir: ",
        "3 tile sizes for 2 loops (i, j)",
    ),
    "strip-mine-zero": (
        "loop-strip-mine{factor=0 loop=i}",
        "in.mlir:2:3: ",
        "factor must be a positive integer, got 0",
    ),
    "unroll-zero": ("loop-unroll{unroll-factor=0}", "in.mlir: ", "at least 1, got 0"),
    "unroll-jam-zero": (
        "loop-unroll-jam{unroll-jam-factor=0}",
        "in.mlir: ",
        "unroll-jam-factor must be at least 1, got 0",
    ),
    "peel-zero": ("loop-peel{loop=i count=0}", "in.mlir: ", "needs count=N"),
    "peel-too-many": ("loop-peel{loop=i count=100}", "in.mlir:2:3: ", "it runs only 7"),
    "promote-unknown-array": (
        "promote{loop=i arrays=Z}",
        "in.mlir:2:3: ",
        "no array named 'Z' is used under loop 'i'",
    ),
    "block-zero": ("gpu-map-loops{block=0}", "in.mlir:3:5: ", "block size 0 along x (j)"),
    "block-too-big": ("gpu-map-loops{block=4096}", "in.mlir:3:5: ", "outside 1..1024"),
    "unknown-device": ("auto-schedule{device=sm_70}", "in.mlir: ", "unknown device 'sm_70'"),
    "skew-one-loop": ("loop-skew{loops=i}", "in.mlir: ", "loops= needs two loop names"),
    "skew-negative": (
        "loop-skew{loops=i,j factor=-1}",
        "in.mlir: ",
        "factor must be a positive integer or auto, got -1",
    ),
    "fuse-one-loop": ("loop-fuse{loops=i}", "in.mlir: ", "loops= takes two loop names"),
    "distribute-no-loop": ("loop-distribute{loop=q}", "in.mlir: ", "no loop named 'q'"),
    "pipeline-copies-no-loop": ("pipeline-copies{stages=2}", "in.mlir: ", "missing option loop="),
    "func-names-a-declaration": (
        "loop-tile{tile-sizes=4 func=ext}",
        "in.mlir:10:1: ",
        "function 'ext' is a declaration (no body)",
    ),
}

OPT_CASES = {
    **{
        f"ir-{name}": Case(("in.mlir", "-p", "loop-name"), where, says, text)
        for name, (text, where, says) in IR_CASES.items()
    },
    **{
        f"option-{name}": Case(("in.mlir", "-p", pipeline), where, says, NEST + DECLARED)
        for name, (pipeline, where, says) in OPTION_CASES.items()
    },
    **{
        f"branching-function-{name}": Case(
            ("in.mlir", "-p", name),
            "in.mlir:1:1: ",
            f"{name}: @f has 2 blocks (cf branches); it takes structured functions only",
            BRANCHING,
        )
        for name in ("gpu-map-loops", "auto-schedule")
    },
    "missing-file": Case(("missing.mlir",), "missing.mlir: ", "cannot read input"),
    "directory": Case((".",), ".: ", "cannot read input: Is a directory"),
    "emit-ptx-without-kernels": Case(("in.mlir", "--emit", "ptx"), "in.mlir: ", "no gpu.module"),
    "unknown-arch": Case(("in.mlir", "--gpu-arch", "sm_70"), "loopopt-opt: ", "--gpu-arch", code=2),
    "unknown-flag": Case(("in.mlir", "--frobnicate"), "loopopt-opt: ", "unrecognized", code=2),
    "pass-pipeline-and-p": Case(
        ("in.mlir", "-p", "loop-name", "--pass-pipeline", "builtin.module(cse)"),
        "loopopt-opt: ",
        "argument --pass-pipeline: not allowed with argument -p/--passes",
        code=2,
    ),
    "pass-pipeline-anchor": Case(
        ("in.mlir", "--pass-pipeline", "builtin.module(any(cse))"),
        "<pipeline>:1:16: ",
        "anchor 'any(...)' inside builtin.module(...) is not supported",
    ),
    "unregistered-without-flag": Case(
        ("in.mlir",),
        "in.mlir:2:4: ",
        "Operation foo.bar is not registered (--allow-unregistered-dialect accepts it)",
        _ir('  "foo.bar"() : () -> ()\n'),
    ),
    "unregistered-lowered": Case(
        ("in.mlir", "--allow-unregistered-dialect", "--emit", "llvm"),
        "in.mlir:2:3: ",
        "cannot lower 'foo.bar' to LLVM",
        _ir('  "foo.bar"() : () -> ()\n'),
    ),
    "verify-unexpected-warning": Case(
        ("in.mlir", "--verify-diagnostics", "-p", "loop-tile{tile-sizes=2}"),
        "in.mlir:1:1: ",
        "unexpected warning: loop-tile: no affine.for in @f",
        _ir(
            "  %c0 = arith.constant 0 : index\n  %c4 = arith.constant 4 : index\n"
            "  scf.for %i = %c0 to %c4 step %c4 {\n  }\n"
        ),
    ),
    "verify-note-not-produced": Case(
        ("in.mlir", "--verify-diagnostics"),
        "in.mlir:2: ",
        'expected note "a note" was not produced',
        "func.func @f() {\n  return // expected-note {{a note}}\n}\n",
    ),
}


@pytest.mark.parametrize("case", OPT_CASES.values(), ids=OPT_CASES.keys())
def test_loopopt_opt(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    text = case.text if isinstance(case.text, bytes) else case.text.encode()
    (tmp_path / "in.mlir").write_bytes(text)
    try:
        code = loopopt_opt.run([*case.argv, "-o", "out.mlir"])
    except SystemExit as e:  # argparse
        code = int(e.code or 0)
    _check(case, code, capsys.readouterr().err, tmp_path / "out.mlir")


def test_output_into_a_missing_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.mlir").write_text(GOOD)
    code = loopopt_opt.run(["in.mlir", "-o", "no/such/out.mlir"])
    case = Case((), "no/such/out.mlir: ", "cannot write output: No such file or directory")
    _check(case, code, capsys.readouterr().err, tmp_path / "no/such/out.mlir")


DYNAMIC = "func.func @f(%A: memref<?xf32>) {\n  return\n}\n"
RETURNS = (
    "func.func @f(%A: memref<4xf32>) -> f32 {\n  %c = arith.constant 1.0 : f32\n"
    "  return %c : f32\n}\n"
)
I1 = "func.func @f(%A: memref<4xi1>) {\n  return\n}\n"
DECLARATION = "func.func private @f(%A: memref<4xf32>)\n"
HUGE = "func.func @f(%A: memref<9223372036854775807xf32>) {\n  return\n}\n"

CLI_CASES = {
    "run-no-such-function": Case(
        ("run", "in.mlir", "--func", "g", "--target", "cpu"), "in.mlir: ", "no function named 'g'"
    ),
    "run-missing-file": Case(("run", "missing.mlir"), "missing.mlir: ", "cannot read input"),
    "run-dynamic-shape": Case(
        ("run", "in.mlir", "--target", "cpu"),
        "in.mlir:1:1: ",
        "@f: `loopopt run` makes inputs for static memrefs only, got memref<?xf32>",
        DYNAMIC,
    ),
    "run-returns-a-value": Case(
        ("run", "in.mlir", "--target", "cpu"),
        "in.mlir:1:1: ",
        "@f: `loopopt run` compares the arrays a function writes",
        RETURNS,
    ),
    "run-i1-elements": Case(
        ("run", "in.mlir", "--target", "cpu"),
        "in.mlir:1:1: ",
        "@f: element type i1 is not supported",
        I1,
    ),
    "run-inputs-too-big": Case(
        ("run", "in.mlir", "--target", "cpu"),
        "in.mlir:1:1: ",
        "@f: `loopopt run` would need 3.44e+10 GiB for its inputs, more than a quarter of",
        HUGE,
    ),
    "run-declaration-only": Case(
        ("run", "in.mlir", "--target", "cpu"), "in.mlir: ", "no function with a body", DECLARATION
    ),
    "run-illegal-pipeline": Case(
        ("run", "in.mlir", "--target", "cpu", "-p", "loop-interchange{permutation=1,0}"),
        "in.mlir:2:3: ",
        "loop-interchange: illegal",
        NEST,
    ),
    "run-unknown-target": Case(
        ("run", "in.mlir", "--target", "tpu"), "loopopt run: ", "invalid choice", code=2
    ),
    "run-negative-repeat": Case(
        ("run", "--repeat", "-3"), "loopopt run: ", "must be at least 1, got -3", code=2
    ),
    "run-repeat-not-a-number": Case(
        ("run", "--repeat", "x"), "loopopt run: ", "expected an integer, got 'x'", code=2
    ),
    "no-command": Case((), "loopopt: ", "required: command", code=2),
    "unknown-command": Case(("frob",), "loopopt: ", "invalid choice: 'frob'", code=2),
    "tune-no-budget": Case(("tune", "in.mlir"), "loopopt tune: ", "--budget", code=2),
    "tune-budget-zero": Case(
        ("tune", "in.mlir", "--budget", "0"), "loopopt tune: ", "at least 1, got 0", code=2
    ),
    "tune-negative-jobs": Case(
        ("tune", "in.mlir", "--budget", "2", "--jobs", "-1"),
        "loopopt tune: ",
        "--jobs: must be at least 0, got -1",
        code=2,
    ),
    "tune-zero-timeout": Case(
        ("tune", "in.mlir", "--budget", "2", "--timeout", "0"),
        "loopopt tune: ",
        "--timeout: must be more than 0 seconds",
        code=2,
    ),
    "tune-top-zero": Case(
        ("tune", "in.mlir", "--budget", "2", "--top", "0"), "loopopt tune: ", "--top", code=2
    ),
    "tune-unknown-device": Case(
        ("tune", "in.mlir", "--budget", "2", "--device", "sm_70", "--target", "cpu"),
        "",
        "unknown device 'sm_70'",
        NEST,
    ),
    "tune-missing-file": Case(
        ("tune", "missing.mlir", "--budget", "2"), "missing.mlir: ", "cannot read input"
    ),
    "tune-no-such-function": Case(
        ("tune", "in.mlir", "--budget", "2", "--func", "g", "--target", "cpu"),
        "in.mlir: ",
        "no function named 'g'",
        NEST,
    ),
    "tune-no-loop-nest": Case(
        ("tune", "in.mlir", "--budget", "2", "--target", "cpu"),
        "in.mlir:1:1: ",
        "@f has no loop nest",
        DYNAMIC,
    ),
}


@pytest.mark.parametrize("case", CLI_CASES.values(), ids=CLI_CASES.keys())
def test_loopopt_cli(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    text = case.text if isinstance(case.text, bytes) else case.text.encode()
    (tmp_path / "in.mlir").write_bytes(text)
    with pytest.raises(SystemExit) as exit:
        loopopt_cli.main(list(case.argv))
    _check(case, int(exit.value.code or 0), capsys.readouterr().err)


TOP_LEVEL_INDEX = _ir(
    "  %n = affine.load %I[0] : memref<4xindex>\n"
    "  affine.for %j = 0 to 3 {\n"
    "    %m = affine.apply affine_map<(d0)[s0] -> ((d0 + s0) mod 4)>(%j)[%n]\n"
    "    %v = affine.load %A[%m] : memref<4xf32>\n"
    "    %w = affine.load %A[%n] : memref<4xf32>\n"
    "    %s = arith.addf %v, %w : f32\n"
    "    affine.store %s, %A[%j] : memref<4xf32>\n"
    "  }\n",
    "%A: memref<4xf32>, %I: memref<4xindex>",
)


def test_indices_mlir_accepts_are_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A value loaded at the top of the function is a symbol, and affine.apply of symbols and
    loop variables a dimension, as in MLIR (mlir-opt accepts this input too)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.mlir").write_text(TOP_LEVEL_INDEX)
    assert loopopt_opt.run(["in.mlir", "-o", "out.mlir"]) == 0, capsys.readouterr().err
    assert (tmp_path / "out.mlir").exists()


TRIANGULAR = """#lb = affine_map<(d0) -> (d0 + 1)>
#ub = affine_map<(d0)[s0] -> (d0 + 4, s0)>
func.func @f(%A: memref<9x9xf32>, %n: index) {
  affine.for %i = 0 to %n {
    affine.for %j = #lb(%i) to min #ub(%i)[%n] {
      %v = affine.load %A[%i, %j - 1] : memref<9x9xf32>
      %w = affine.load %A[%j, %i] : memref<9x9xf32>
      %s = arith.addf %v, %w : f32
      affine.store %s, %A[%i, %j] : memref<9x9xf32>
    }
  }
  return
}
"""


def test_lower_affine_of_bounds_with_operands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-p lower-affine` lowers bounds that take loop variables and symbols, and min bounds
    (xDSL's lower-affine raised IndexError on them); the scf nest computes what the affine one
    does, and upstream MLIR reads it."""
    from upstream import assert_upstream_valid

    from loopopt.runtime.cpu import run_function

    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.mlir").write_text(TRIANGULAR)
    assert loopopt_opt.run(["in.mlir", "-p", "lower-affine", "-o", "out.mlir"]) == 0
    lowered = (tmp_path / "out.mlir").read_text()
    assert "affine." not in lowered and "scf.for" in lowered
    A = np.random.default_rng(0).standard_normal((9, 9)).astype(np.float32)
    expected, got = A.copy(), A.copy()
    run_function(TRIANGULAR, "f", [expected, 7])
    run_function(lowered, "f", [got, 7])
    np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(expected, A)
    assert_upstream_valid(lowered)


def test_generic_output_indexes_with_dimensions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`%A[%i]` is read as MLIR reads it, a map of dimensions: the generic form says
    `(d0) -> (d0)` (xDSL's symbols, `()[s0] -> (s0)`, made mlir-opt refuse loop indices)."""
    from upstream import assert_upstream_valid

    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.mlir").write_text(NEST)
    argv = ["in.mlir", "-p", "loop-skew{loops=i,j}", "--mlir-print-op-generic", "-o", "out.mlir"]
    assert loopopt_opt.run(argv) == 0
    generic = (tmp_path / "out.mlir").read_text()
    maps = re.findall(r'"affine\.(?:load|store)".*?map = affine_map<([^-]*) ->', generic)
    assert maps == ["(d0, d1)", "(d0, d1)"], maps
    assert_upstream_valid(generic)


@pytest.mark.parametrize("pipeline", ["gpu-map-loops", "auto-schedule", "gpu-mma"])
def test_declarations_are_left_alone(
    pipeline: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A function declaration beside the nest: nothing to map in it (its empty body was an
    internal error of gpu-map-loops and auto-schedule)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.mlir").write_text(DECLARED + NEST)
    assert loopopt_opt.run(["in.mlir", "-p", pipeline, "-o", "out.mlir"]) == 0
    assert "@ext" not in capsys.readouterr().err
    assert "func.func private @ext(index)" in (tmp_path / "out.mlir").read_text()


CALLS_UNDEFINED = """func.func private @g(f32)
func.func @f(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<8xf32>
    func.call @g(%a) : (f32) -> ()
  }
  return
}
"""


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        (CALLS_UNDEFINED, "in.mlir:5:5: ", "@f calls @g, which is declared but defined nowhere"),
        (
            GOOD + "gpu.module @kernels {\n}\n",
            "in.mlir:8:1: ",
            "the module holds GPU kernels; it cannot run on the CPU",
        ),
    ],
    ids=["undefined-callee", "gpu-module"],
)
def test_loopopt_run_refusals_name_the_line(
    text: str,
    where: str,
    says: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An undefined callee used to crash the JIT (a segfault: MCJIT called address 0)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.mlir").write_text(text)
    with pytest.raises(SystemExit) as exit:
        loopopt_cli.main(["run", "in.mlir", "--target", "cpu", "--repeat", "1", "--no-cache"])
    _check(Case((), where, says, text), int(exit.value.code or 0), capsys.readouterr().err)
