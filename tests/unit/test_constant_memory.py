"""gpu-constant-memory (loops/constant_memory.py, lowering/gpu_constant.py): the conv2d filter
in constant memory. Emulated runs of the benchmark schedules against numpy, the PTX (ld.const,
no global load of the filter), and the runtime's copy into the global before each launch
(a fake driver records the calls)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from equivalence import transform
from gpu_emulator import emulate
from xdsl.dialects import gpu, memref

import loopopt
from loopopt.backend.ptx import assemble, find_ptxas, module_to_ptx
from loopopt.context import parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.loops.constant_memory import constant_args
from loopopt.runtime import cuda
from loopopt.runtime.cpu import run_function

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import schedules  # noqa: E402
import workloads  # noqa: E402

PASS = "gpu-constant-memory{arrays=F}"


def _operands(sizes: tuple[int, ...], rng: np.random.Generator) -> list[np.ndarray]:
    image, filt, out = workloads.conv_shapes(sizes)
    return [
        rng.standard_normal(image).astype(np.float32),
        rng.standard_normal(filt).astype(np.float32),
        np.full(out, np.nan, np.float32),  # the nest sets each output to 0 first
    ]


def _mapped(schedule: str, sizes: tuple[int, ...]) -> str:
    return transform(workloads.conv_mlir(sizes), f"{schedule},{PASS}")


def _expected(arrays: list[np.ndarray]) -> np.ndarray:
    image, filt = (a.astype(np.float64) for a in arrays[:2])
    return workloads.conv_reference([image, filt])


@pytest.mark.parametrize(
    ("schedule", "sizes"),
    [
        (schedules.CONV2D_3X3, (32, 64, 3, 3)),
        pytest.param(  # 16 x 2 outputs per thread; 39 s, the other two cover constant memory
            schedules.CONV2D_8X8, (16, 128, 8, 8), marks=pytest.mark.slow
        ),
        (schedules.conv2d(8, 128, 4, cols=4), (16, 128, 5, 5)),
    ],
)
def test_emulated_conv2d_schedules(
    schedule: str, sizes: tuple[int, ...], rng: np.random.Generator
) -> None:
    """The kernel reads the filter from the global; emulated, it still computes the conv."""
    text = _mapped(schedule, sizes)
    module = parse_module(text)
    (kernel,) = [op for op in module.walk() if isinstance(op, gpu.FuncOp)]
    assert constant_args(kernel) == {1: "__const_conv2d_k0_F"}
    (arg_f,) = [a for a in kernel.body.block.args if a.name_hint == "F"]
    assert not arg_f.uses
    reads = [op for op in kernel.walk() if isinstance(op, memref.GetGlobalOp)]
    assert len(reads) == 1
    taps = {str(use.operation).split("[")[1].split("]")[0] for use in reads[0].memref.uses}
    assert len(taps) == sizes[2] * sizes[3]  # every tap, at constant indices
    arrays = _operands(sizes, rng)
    expected = _expected(arrays)
    emulate(module)
    run_function(module, workloads.CONV2D.func, arrays)
    np.testing.assert_allclose(arrays[2], expected, rtol=1e-4, atol=1e-4)


def test_cpu_target_stops_before_the_gpu_passes(rng: np.random.Generator) -> None:
    sizes = (8, 16, 3, 3)
    pipeline = f"{schedules.CONV2D_3X3},{PASS}"
    kern = loopopt.compile(workloads.conv_mlir(sizes), "conv2d", pipeline=pipeline, target="cpu")
    arrays = _operands(sizes, rng)
    expected = _expected(arrays)
    kern(*arrays)
    np.testing.assert_allclose(arrays[2], expected, rtol=1e-4, atol=1e-4)


def test_ptx_loads_the_filter_from_constant_memory() -> None:
    """ld.const at each of the nine offsets; nine global loads fewer than without the pass."""
    sizes = (32, 64, 3, 3)
    text = workloads.conv_mlir(sizes)
    with_pass = module_to_ptx(parse_module(_mapped(schedules.CONV2D_3X3, sizes)))
    without = module_to_ptx(parse_module(transform(text, schedules.CONV2D_3X3)))
    assert re.search(r"^\.weak \.const \.align 4 \.b8 __const_conv2d_k0_F\[36\];", with_pass, re.M)
    offsets = re.findall(r"ld\.const\.b32\s+%r\d+, \[__const_conv2d_k0_F(?:\+(\d+))?\]", with_pass)
    assert sorted(int(o or 0) for o in offsets) == list(range(0, 36, 4))
    assert with_pass.count("ld.global") == without.count("ld.global") - 9
    if find_ptxas() is not None:
        assert "Used" in assemble(with_pass)


class _FakeDriver:
    """Records driver calls; launches do nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def call(self, name: str, *args: Any) -> Any:
        self.calls.append((name, *args))
        if name == "cuModuleGetGlobal":
            return 0xC0057000, 36
        return None

    def launch(self, kernel: str, grid: Any, block: Any, params: Any, shared: int = 0) -> None:
        self.calls.append(("launch", kernel, [value for value, _ in params]))


@pytest.fixture
def fake_driver(monkeypatch: pytest.MonkeyPatch) -> _FakeDriver:
    driver = _FakeDriver()
    buffers: list[np.ndarray] = []

    def to_device(array: np.ndarray) -> Any:
        buffers.append(np.ascontiguousarray(array).copy())
        host = buffers[-1]
        return types.SimpleNamespace(
            ptr=host.ctypes.data, copy_to=lambda out: None, free=lambda: None
        )

    device = types.SimpleNamespace(arch="sm_90", name="fake")
    monkeypatch.setattr(cuda, "context", lambda: device)
    monkeypatch.setattr(cuda, "synchronize", lambda: None)
    monkeypatch.setattr(cuda, "to_device", to_device)
    monkeypatch.setattr(cuda, "get_kernel", lambda ptx, name: name)
    monkeypatch.setattr(cuda, "load_ptx", lambda ptx: "module")
    monkeypatch.setattr(cuda, "_driver", lambda: types.SimpleNamespace(CUstream=lambda s: s))
    monkeypatch.setattr(cuda, "call", driver.call)
    monkeypatch.setattr(cuda, "launch", driver.launch)
    monkeypatch.setattr(cuda, "_GLOBALS", {})
    return driver


def test_each_launch_copies_the_filter_first(
    fake_driver: _FakeDriver, rng: np.random.Generator
) -> None:
    sizes = (32, 64, 3, 3)
    pipeline = f"{schedules.CONV2D_3X3},{PASS}"
    kern = loopopt.compile(workloads.conv_mlir(sizes), "conv2d", pipeline=pipeline, target="gpu")
    kern(*_operands(sizes, rng))
    kern(*_operands(sizes, rng))
    names = [call[0] for call in fake_driver.calls]
    assert names == ["cuModuleGetGlobal", "cuMemcpyDtoDAsync", "launch"] + [
        "cuMemcpyDtoDAsync",
        "launch",
    ]
    assert fake_driver.calls[0][1:] == ("module", b"__const_conv2d_k0_F")
    for copy, launch in ((fake_driver.calls[1], fake_driver.calls[2]), fake_driver.calls[3:5]):
        params = launch[2]
        assert copy[1:] == (0xC0057000, params[1], 36, 0)  # dst, F's pointer, bytes, stream 0


def test_a_global_of_another_size_is_refused(
    fake_driver: _FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fake_driver, "call", lambda name, *args: (1, 16))
    monkeypatch.setattr(cuda, "call", fake_driver.call)
    with pytest.raises(LoopoptError, match=r"cannot copy 36 bytes into __const_k_F \(16 bytes\)"):
        cuda.copy_to_global("ptx", "__const_k_F", 1024, 36)
