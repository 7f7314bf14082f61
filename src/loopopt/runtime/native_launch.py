"""Kernel launches from the JIT-compiled host code without a trip through Python.

A launch site of the host code (runtime/host.py) calls `<site>(grid x3, block x3, shared,
params…)`. Through a ctypes callback into Python, each launch costs about 14 us on the H200's
host (jacobi-1d's 1,000 launches: 13.9 ms for 2 us kernels). Where the site allows it, `<site>` is
instead this LLVM function, linked into the host module:

    @"<site>.function" = global ptr null             ; the CUfunction, once Python has checked
    define void @"<site>"(i64 %g0 … i64 %b2, i32 %shared, <params>) {
      if the CUfunction or cuLaunchKernel is still null: call @"<site>.slow"(…) (Python) and return
      if a grid size is <= 0: return                    ; an empty iteration space
      store each parameter into a stack slot, the slots' addresses into an array
      %r = call cuLaunchKernel(f, g0, g1, g2, b0, b1, b2, shared + dynamic, stream 0, params, null)
      if %r != 0: call @"<program>.error"(%r, site number)
    }

The first launch of a site in each call goes through Python (`GpuProgram.callback`): it loads
the module, checks the arguments (distinct arrays, alignment, shared-memory opt-in) and then
stores the CUfunction into the site's global; the program clears those globals at the start of
every call. So the later launches of the call skip the checks, which is sound where every array
the site passes is the same for the whole call: a function argument, or a buffer of the host's
allocator (runtime/host.py's `_bind_buffers`: fresh, aligned, distinct). Sites that pass other
arrays (views), take a dynamic shared-memory size or copy arguments into constant memory always
go through Python.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType
from xdsl.ir import Attribute

from loopopt.diagnostics import LoopoptError

LAUNCH_POINTER = "cuLaunchKernel"
"""Suffix of the program's global holding the address of the driver's cuLaunchKernel."""

FLOAT_NAMES = (
    (Float16Type, "half"),
    (BFloat16Type, "bfloat"),
    (Float32Type, "float"),
    (Float64Type, "double"),
)

GRID_ARGS = 6
"""Grid and block sizes (i64 each) ahead of the shared-memory size and the kernel parameters."""


def llvm_type_text(t: Attribute) -> str:
    """LLVM IR spelling of an llvm-dialect argument type (what func_to_llvm lowers to)."""
    if isinstance(t, llvm.LLVMPointerType):
        return "ptr"
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    names = {
        Float16Type: "half",
        BFloat16Type: "bfloat",
        Float32Type: "float",
        Float64Type: "double",
    }
    for kind, name in names.items():
        if isinstance(t, kind):
            return name
    raise LoopoptError(f"cannot pass a value of type {t} to a kernel from native code")


def function_global(site: str) -> str:
    """The global holding the site's CUfunction (null: launch through Python)."""
    return f"{site}.function"


def launch_global(program: str) -> str:
    return f"{program}.{LAUNCH_POINTER}"


def slow_symbol(site: str) -> str:
    """The Python callback that launches with every check."""
    return f"{site}.slow"


def error_symbol(program: str) -> str:
    """The Python callback that records a failed launch: (CUresult, site number)."""
    return f"{program}.error"


def program_ir(program: str, launchers: Sequence[str]) -> str:
    """An LLVM module of the program's launchers (`launcher_ir` texts), with the globals and
    declarations they share."""
    head = [
        f'@"{launch_global(program)}" = global ptr null',
        f'declare void @"{error_symbol(program)}"(i32, i32)',
    ]
    return "\n".join(head) + "\n" + "".join(launchers)


def launcher_ir(
    program: str, site: str, number: int, params: Sequence[Attribute], dynamic_shared: int
) -> str:
    """The launcher `site` (see the module docstring), for `program_ir`. `params`: the
    llvm-dialect types of the kernel parameters; the shared-memory size argument is i32."""
    kinds = [llvm_type_text(t) for t in params]
    sizes = [f"i64 %g{d}" for d in range(GRID_ARGS)]
    formal = ", ".join([*sizes, "i32 %shared", *(f"{k} %a{n}" for n, k in enumerate(kinds))])
    fn, launch = function_global(site), launch_global(program)
    count = max(1, len(kinds))
    lines = [
        f'@"{fn}" = global ptr null',
        f'declare void @"{slow_symbol(site)}"({", ".join(["i64"] * GRID_ARGS + ["i32", *kinds])})',
        f'define void @"{site}"({formal}) {{',
        "entry:",
        *(f"  %slot{n} = alloca {k}" for n, k in enumerate(kinds)),
        f"  %params = alloca [{count} x ptr]",
        f'  %f = load ptr, ptr @"{fn}"',
        f'  %launch = load ptr, ptr @"{launch}"',
        "  %no_f = icmp eq ptr %f, null",
        "  %no_launch = icmp eq ptr %launch, null",
        "  %slow = or i1 %no_f, %no_launch",
        "  br i1 %slow, label %python, label %sizes",
        "python:",
        f'  call void @"{slow_symbol(site)}"({formal})',  # the same arguments
        "  ret void",
        "sizes:",
        *(f"  %empty{d} = icmp sle i64 %g{d}, 0" for d in range(3)),
        "  %empty01 = or i1 %empty0, %empty1",
        "  %empty = or i1 %empty01, %empty2",
        "  br i1 %empty, label %done, label %fast",
        "fast:",
    ]
    for n, k in enumerate(kinds):
        lines += [
            f"  store {k} %a{n}, ptr %slot{n}",
            f"  %entry{n} = getelementptr [{count} x ptr], ptr %params, i64 0, i64 {n}",
            f"  store ptr %slot{n}, ptr %entry{n}",
        ]
    lines += [f"  %s{d} = trunc i64 %g{d} to i32" for d in range(GRID_ARGS)]
    lines += [
        f"  %bytes = add i32 %shared, {dynamic_shared}",
        "  %r = call i32 %launch(ptr %f, "
        + ", ".join(f"i32 %s{d}" for d in range(GRID_ARGS))
        + ", i32 %bytes, ptr null, ptr %params, ptr null)",
        "  %failed = icmp ne i32 %r, 0",
        "  br i1 %failed, label %error, label %done",
        "error:",
        f'  call void @"{error_symbol(program)}"(i32 %r, i32 {number})',
        "  br label %done",
        "done:",
        "  ret void",
        "}",
    ]
    return "\n".join(lines) + "\n"
