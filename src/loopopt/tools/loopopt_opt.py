"""`loopopt-opt`: loopopt's pass-pipeline driver, with mlir-opt/xdsl-opt conventions.

    loopopt-opt [FILE|-] [-p PIPELINE] [-o OUT] [--split-input-file] [--verify-diagnostics]
                [--print-ir-after-all] [--emit mlir|llvm|ptx] [--gpu-arch sm_80|sm_89|sm_90]
                [--mlir-print-op-generic] [--mlir-print-debuginfo] [--version]
                [--pass-pipeline PIPELINE] [--allow-unregistered-dialect]

`--pass-pipeline` is `-p` as mlir-opt writes it (`builtin.module(func.func(...))`, see
pass_nesting.py); either takes xDSL's passes too. `--allow-unregistered-dialect` reads ops of
any dialect (printed generic; the analyses take them to touch any memory).

Errors are one line (`file:line:col: error: ...`) on stderr, exit code 1, and no `-o` file is
written unless the whole run succeeded; an internal error (a bug) is one line too, naming the
pass and the location it was working on (`--debug` adds the traceback). With no FILE, piped
stdin is read (empty input is an empty module, as in mlir-opt); with nothing piped in (a
terminal, /dev/null), the bundled matmul example is compiled.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import traceback
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from importlib import resources
from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException

from loopopt.context import make_context, parse_chunk, verify_ir
from loopopt.diagnostics import LoopoptError, collecting, in_stage, internal_error
from loopopt.iteration_buffers import hoist_iteration_buffers
from loopopt.pass_pipeline import apply_passes, parse_pipeline
from loopopt.tools.diagnostics_check import (
    Emitted,
    check_expected_diagnostics,
    expected_diagnostics,
)
from loopopt.tools.inputs import STDIN, read_file, read_stdin, stdin_is_piped
from loopopt.universe import all_passes

DEFAULT_EXAMPLE = "matmul.mlir"
SPLIT_MARKER = "// -----"


def _pass_help(passes: dict[str, Callable[[], type[ModulePass]]]) -> str:
    lines = ["passes:"]
    for name in sorted(passes):
        cls = passes[name]()
        doc = (cls.__doc__ or "").strip().splitlines()
        lines.append(f"  {name:<22} {doc[0] if doc else ''}")
        for field in dataclasses.fields(cls):
            flag = field.name.replace("_", "-")
            default = field.default if field.default is not dataclasses.MISSING else None
            shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
            type_name = getattr(field.type, "__name__", None) or str(field.type)
            lines.append(f"      {flag}={type_name}  (default: {shown})")
    return "\n".join(lines)


def build_arg_parser(passes: dict[str, Callable[[], type[ModulePass]]]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loopopt-opt",
        description="loopopt's loop-nest optimizer: reads MLIR, runs a pass pipeline, writes MLIR "
        "or LLVM IR. With no FILE, reads piped stdin; with nothing piped in, compiles the bundled "
        "matmul example.",
        epilog=_pass_help(passes),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "input",
        nargs="?",
        default=None,
        help="input file, '-' for stdin (default: piped stdin, else the bundled example)",
    )
    pipeline = parser.add_mutually_exclusive_group()
    pipeline.add_argument(
        "-p",
        "--passes",
        default="",
        help="pass pipeline, e.g. 'loop-tile{tile-sizes=32,32},loop-unroll'; loopopt's passes "
        "and xDSL's (canonicalize, cse, ...)",
    )
    pipeline.add_argument(
        "--pass-pipeline",
        dest="passes",
        help="the same, as mlir-opt writes it: "
        "'builtin.module(func.func(loop-tile{tile-sizes=32}),canonicalize)'",
    )
    parser.add_argument(
        "--allow-unregistered-dialect",
        action="store_true",
        help="accept ops of dialects loopopt does not know (printed in the generic form)",
    )
    parser.add_argument("-o", "--output", default=None, help="output file (default: stdout)")
    parser.add_argument(
        "--split-input-file",
        action="store_true",
        help=f"process chunks separated by '{SPLIT_MARKER}' independently",
    )
    parser.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check emitted diagnostics against '// expected-error' (-warning, -remark, "
        "-note) annotations",
    )
    parser.add_argument(
        "--print-ir-after-all", action="store_true", help="print the IR after every pass to stderr"
    )
    parser.add_argument(
        "--emit",
        choices=("mlir", "llvm", "ptx"),
        default="mlir",
        help="output: MLIR (default), LLVM IR for the host, or PTX of the gpu.module kernels",
    )
    parser.add_argument(
        "--gpu-arch",
        choices=("sm_80", "sm_89", "sm_90"),
        default="sm_90",
        help="GPU architecture of --emit ptx (default: sm_90)",
    )
    parser.add_argument(
        "--mlir-print-op-generic",
        action="store_true",
        help="print ops in the generic form (as mlir-opt's flag of that name)",
    )
    parser.add_argument(
        "--mlir-print-debuginfo",
        action="store_true",
        help="print each op's location, loc(...) (as mlir-opt's flag of that name)",
    )
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument(
        "--debug", action="store_true", help="show Python tracebacks of internal errors"
    )
    return parser


def _version() -> str:
    """`loopopt-opt VERSION (xDSL VERSION)`."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("loopopt")
    except PackageNotFoundError:
        own = "unknown"
    return f"loopopt-opt {own} (xDSL {version('xdsl')})"


def _read_input(path: str | None) -> tuple[str, str]:
    """The input text and its name: FILE, '-' (stdin), or with no FILE, piped stdin (even when
    empty: an empty module), else the bundled example."""
    if path is None and not stdin_is_piped():
        text = resources.files("loopopt.examples").joinpath(DEFAULT_EXAMPLE).read_text()
        return text, DEFAULT_EXAMPLE
    if path is None or path == "-":
        return read_stdin(), STDIN
    return read_file(path), path


def _chunks(text: str, split: bool) -> list[tuple[str, int]]:
    if not split:
        return [(text, 0)]
    chunks: list[tuple[str, int]] = []
    offset = 0
    for chunk in text.split(SPLIT_MARKER):
        chunks.append((chunk, offset))
        offset += chunk.count("\n")
    return chunks


class Driver:
    """Runs one invocation: parse each chunk, apply the pipeline, print."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.ctx = make_context(allow_unregistered=args.allow_unregistered_dialect)
        self.passes = parse_pipeline(args.passes)

    def _after_pass(self, previous: ModulePass, module: ModuleOp) -> None:
        verify_ir(module, f"{previous.name} produced invalid IR")
        if self.args.print_ir_after_all:
            sys.stderr.write(f"// -----// IR Dump After {previous.name} //----- //\n")
            shown = module.clone()
            hoist_iteration_buffers(shown)
            Printer(stream=sys.stderr).print_op(shown)
            sys.stderr.write("\n\n")

    def process(self, text: str, name: str, line_offset: int) -> str:
        with in_stage("parsing"):
            try:
                module = parse_chunk(self.ctx, text, name, line_offset)
            except LoopoptError as e:
                if e.message.endswith("is not registered"):
                    e.message += " (--allow-unregistered-dialect accepts it)"
                    e.args = (e.one_line(),)
                raise
        apply_passes(self.ctx, module, self.passes, self._after_pass)
        with in_stage(f"--emit {self.args.emit}"):
            return self.emit(module)

    def emit(self, module: ModuleOp) -> str:
        if self.args.emit == "ptx":
            from loopopt.backend.ptx import module_to_ptx

            return module_to_ptx(module, self.args.gpu_arch)
        if self.args.emit == "llvm":
            from loopopt.backend.llvm_ir import module_to_llvm_ir
            from loopopt.lowering.to_llvm import lower_to_llvm

            lower_to_llvm(module)
            return module_to_llvm_ir(module)
        hoist_iteration_buffers(module)  # what upstream MLIR runs without growing the stack
        out = StringIO()
        Printer(
            stream=out,
            print_generic_format=self.args.mlir_print_op_generic,
            print_debuginfo=self.args.mlir_print_debuginfo,
        ).print_op(module)
        out.write("\n")
        return out.getvalue()


def _internal_error(e: Exception, name: str | None, debug: bool) -> str:
    """One line for a bug: the pass, the location it was working on (else the input's name)."""
    if debug:
        traceback.print_exception(e)
    return internal_error(e, location=name).one_line()


def run(argv: Sequence[str] | None = None) -> int:
    passes = all_passes()
    args = build_arg_parser(passes).parse_args(argv)
    try:
        driver = Driver(args)
        text, name = _read_input(args.input)
    except LoopoptError as e:
        print(e.one_line(), file=sys.stderr)
        return 1
    except Exception as e:  # an internal error is still reported as a diagnostic
        print(_internal_error(e, args.input, args.debug), file=sys.stderr)
        return 1

    outputs: list[str] = []
    failed = False
    for chunk, offset in _chunks(text, args.split_input_file):
        expected = expected_diagnostics(chunk, offset) if args.verify_diagnostics else []
        emitted: list[Emitted] = []
        try:
            with collecting() if args.verify_diagnostics else nullcontext([]) as said:
                try:
                    outputs.append(driver.process(chunk, name, offset))
                finally:
                    emitted += said
        except LoopoptError as e:
            e.locate(name)  # the input, where nothing in it is to blame (--emit ptx of no kernel)
            emitted.append(("error", e.location, e.message))
            if not args.verify_diagnostics:
                print(e.one_line(), file=sys.stderr)
                return 1
        except DiagnosticException as e:
            emitted.append(("error", None, str(e).strip().splitlines()[-1]))
            if not args.verify_diagnostics:
                print(f"{name}: error: {emitted[-1][2]}", file=sys.stderr)
                return 1
        except Exception as e:  # an internal error is still reported as a diagnostic
            print(_internal_error(e, name, args.debug), file=sys.stderr)
            return 1
        if args.verify_diagnostics:
            problems = check_expected_diagnostics(expected, emitted, name)
            for problem in problems:
                print(problem, file=sys.stderr)
            failed = failed or bool(problems)
    if failed:
        return 1

    result = f"{SPLIT_MARKER}\n".join(outputs)
    if args.output is None:
        sys.stdout.write(result)
    else:
        try:
            with open(args.output, "w") as f:
                f.write(result)
        except OSError as e:
            print(f"{args.output}: error: cannot write output: {e.strerror}", file=sys.stderr)
            return 1
    return 0


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
