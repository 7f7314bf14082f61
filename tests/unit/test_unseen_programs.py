"""Loop programs no recipe was written for (unseen_programs.py), through the default GPU
pipeline (`auto-schedule{device=sm_90}`), run by the GPU emulator on sizes no tile divides and
compared with plain Python; their kernels assembled to PTX for sm_90 (slow); the programs
the front-end refuses say why at their line; and, marked `gpu`, every program on the device
through `@loopopt.kernel`.

Programs whose schedule is the register-tiled matmul recipe run without its register stages
(pipeline-copies, scalar-replace), which the emulator cannot run (their own tests cover them).
A region on one thread is a performance cliff: only the recurrences (and the reductions no
strategy shares out, listed below) may have one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import unseen_programs as up
from gpu_emulator import emulate
from xdsl.dialects import gpu
from xdsl.passes import PassPipeline

import loopopt.passes.auto_schedule as auto_schedule
from loopopt.context import make_context, verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.loopopt import MAPPING
from loopopt.frontend.kernel import Kernel
from loopopt.runtime.cpu import run_function
from loopopt.runtime.host import build_kernels
from loopopt.universe import all_passes

PIPELINE = "auto-schedule{device=sm_90}"

REFUSED = {
    "histogram": "non-affine subscript 'A[i]' in 'H[A[i]]'",
    "int_scale_index": "non-affine subscript 'k * i' in 'A[k * i]'",
}
"""Programs the front-end refuses, and what the error says (a data-dependent scatter, a
subscript that multiplies a loop variable by a parameter)."""

ONE_THREAD = {"prefix_sum", "int64_cumsum", "wavefront", "global_argmax", "modulo_buckets"}
"""Programs with a region on one thread: recurrences (a prefix sum, a 2-D wavefront), an
argmax (two values carried together) and a scatter into 4 buckets (i % 4)."""

MATMUL = {"bmm", "mm_nt", "mm_tn", "contract_ijk_kl", "attention_scores"}
"""Programs that get the register-tiled matmul recipe at the tests' sizes (15-20 s each in
the emulator: slow)."""

SLOW = MATMUL | {
    "gram_schmidt_like",
    "lower_solve",
    "upper_solve",
    "matvec_time_loop",
    "trace",
    "accumulate_to_memory",
    "window_min_bounds",
    "int_row_sums",
    "frobenius_distance",
    "layernorm",
    "global_min_max",
    "rmsnorm",
    "row_max",
    "norm2",
    "dot",
    "box_blur",
    "separable_filter",
    "conv2d_nchw",
    "column_mean_var",
    "pipeline_of_nests",
    "imperfect",
    "in_place_row_normalize",
    "colsum_then_scale",
    "vecmat",
}
"""Programs emulated only in slow runs (half a second or more each); their neighbours
(softmax_rows, conv1d, the tests of each fix) cover the same mappings in the default run."""

RUN = sorted(set(up.CASES) - set(REFUSED))


def _param(name: str) -> Any:
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name


def _copies(args: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _python(function: Callable[..., None], args: list[Any]) -> list[Any]:
    expected = _copies(args)
    with np.errstate(all="ignore"):
        function(*expected)
    return expected


def _assert_close(got: list[Any], expected: list[Any]) -> None:
    """float32 tolerance where any array is float32 or float16: what is computed in it may be
    stored in float64 (mixed_precision; the GPU contracts `a * b + c` into one FMA, rounded once
    where NumPy rounds twice)."""
    low = any(isinstance(e, np.ndarray) and e.dtype in (np.float32, np.float16) for e in expected)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        if isinstance(e, np.ndarray):
            tol = 1e-4 if low else 1e-9
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=f"argument {k}")


def _scheduled(name: str, args: list[Any]) -> Any:
    module = Kernel(up.CASES[name][0]).module(*args)
    PassPipeline.parse_spec(all_passes(), PIPELINE).apply(make_context(), module)
    verify_ir(module, PIPELINE)
    return module


def _without_register_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    split = auto_schedule.split_pipeline

    def without(pipeline: Any) -> Any:
        host, kernel = split(pipeline)
        return host, [p for p in kernel if p.name not in ("pipeline-copies", "scalar-replace")]

    monkeypatch.setattr(auto_schedule, "split_pipeline", without)


@pytest.mark.parametrize("name", [_param(n) for n in RUN])
def test_the_default_schedule_computes_what_python_does(
    name: str, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name in MATMUL:
        _without_register_stages(monkeypatch)
    function, inputs = up.CASES[name]
    args = inputs(rng)
    expected = _python(function, args)
    module = _scheduled(name, args)
    mappings = [str(op.attributes[MAPPING]) for op in module.walk() if isinstance(op, gpu.FuncOp)]
    assert mappings, "nothing runs on the GPU"
    one_thread = any('"one thread"' in m for m in mappings)
    assert one_thread == (name in ONE_THREAD), mappings
    if name in MATMUL:
        assert any("_t2" in m for m in mappings), mappings
    emulate(module, reverse=True)
    got = _copies(args)
    run_function(module, function.__name__, got)
    _assert_close(got, expected)


@pytest.mark.slow
@pytest.mark.parametrize("name", RUN)
def test_the_default_schedule_assembles_to_ptx(name: str, rng: np.random.Generator) -> None:
    """The kernels, register stages and all, lowered to PTX for sm_90 (llvmlite's NVPTX)."""
    module = _scheduled(name, up.CASES[name][1](rng))
    kernels = build_kernels(module, "sm_90")
    assert kernels and all(".entry" in k.ptx for k in kernels.values())


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_front_end_refuses_it_says_at_its_line(
    name: str, rng: np.random.Generator
) -> None:
    function, inputs = up.CASES[name]
    with pytest.raises(LoopoptError) as error:
        Kernel(function).module(*inputs(rng))
    message = str(error.value)
    assert REFUSED[name] in message and "unseen_programs.py:" in message, message
    assert "\n" not in message


@pytest.mark.gpu
@pytest.mark.parametrize("name", RUN)
def test_on_the_device(name: str, rng: np.random.Generator) -> None:
    """The default GPU schedule on the device, register stages included."""
    import loopopt

    function, inputs = up.CASES[name]
    args = inputs(rng)
    expected = _python(function, args)
    got = _copies(args)
    loopopt.kernel(function)(*got, target="gpu")
    _assert_close(got, expected)
