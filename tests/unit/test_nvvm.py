"""The nvvm dialect (syntax, intrinsics) and the gpu → nvvm → llvm lowering of kernels."""

from __future__ import annotations

import pytest
from gpu_kernels import MATMUL, TRANSPOSE, WARP_SUM
from xdsl.dialects import func, gpu, llvm
from xdsl.dialects.builtin import ModuleOp, f32, i32

from loopopt.context import make_context, parse_module
from loopopt.diagnostics import LoopoptError
from loopopt.dialects.nvvm import SREG_OPS, Barrier0Op, ShflSyncOp, read_sreg
from loopopt.lowering.gpu_to_nvvm import KERNEL_ATTR, lower_gpu_to_nvvm
from loopopt.lowering.nvvm_to_llvm import lower_nvvm_to_llvm

NVVM_TEXT = """func.func @f(%x: f32, %y: i32) -> f32 {
  %t = nvvm.read.ptx.sreg.ctaid.z : i32
  nvvm.barrier0
  %m = arith.constant -1 : i32
  %c = arith.constant 31 : i32
  %v = nvvm.shfl.sync down %m, %x, %t, %c : f32 -> f32
  %w = nvvm.shfl.sync idx %m, %y, %t, %c : i32 -> i32
  return %v : f32
}
"""


def _parse(text: str) -> ModuleOp:
    return parse_module(text, "<test>", make_context())


def test_sreg_ops_name_their_intrinsics() -> None:
    assert len(SREG_OPS) == 14
    assert read_sreg("tid.x").name == "nvvm.read.ptx.sreg.tid.x"
    assert read_sreg("nctaid.y").intrinsic() == "llvm.nvvm.read.ptx.sreg.nctaid.y"
    assert read_sreg("warpsize").res.type == i32
    assert Barrier0Op().intrinsic() == "llvm.nvvm.barrier0"


def test_nvvm_text_round_trips() -> None:
    module = _parse(NVVM_TEXT)
    printed = str(module)
    assert "nvvm.read.ptx.sreg.ctaid.z : i32" in printed
    assert "nvvm.shfl.sync down %m, %x, %t, %c : f32 -> f32" in printed
    assert str(_parse(printed)) == printed


def test_shfl_intrinsic_depends_on_kind_and_type() -> None:
    shuffles = [op for op in _parse(NVVM_TEXT).walk() if isinstance(op, ShflSyncOp)]
    assert [op.intrinsic() for op in shuffles] == [
        "llvm.nvvm.shfl.sync.down.f32",
        "llvm.nvvm.shfl.sync.idx.i32",
    ]


def test_shfl_rejects_unknown_kind() -> None:
    with pytest.raises(LoopoptError, match="expected bfly, down, up or idx, got 'sideways'"):
        _parse(NVVM_TEXT.replace("shfl.sync down", "shfl.sync sideways"))


def test_shfl_rejects_a_mismatched_result_type() -> None:
    with pytest.raises(LoopoptError, match="result type must be the value's type"):
        _parse(NVVM_TEXT.replace("%x, %t, %c : f32 -> f32", "%x, %t, %c : f32 -> i32", 1))


def test_nvvm_lowers_to_intrinsic_calls() -> None:
    module = _parse(NVVM_TEXT)
    lower_nvvm_to_llvm(module)
    calls = [op for op in module.walk() if isinstance(op, llvm.CallIntrinsicOp)]
    assert [op.intrin.data for op in calls] == [
        "llvm.nvvm.read.ptx.sreg.ctaid.z",
        "llvm.nvvm.barrier0",
        "llvm.nvvm.shfl.sync.down.f32",
        "llvm.nvvm.shfl.sync.idx.i32",
    ]
    assert calls[2].results[0].type == f32
    assert not any(op.name.startswith("nvvm.") for op in module.walk())


def _kernel(module: ModuleOp) -> llvm.FuncOp:
    gmod = next(op for op in module.ops if isinstance(op, gpu.ModuleOp))
    return next(op for op in gmod.body.block.ops if isinstance(op, llvm.FuncOp))


def test_kernels_become_llvm_funcs_with_bare_pointers() -> None:
    module = _parse(MATMUL)
    lower_gpu_to_nvvm(module)
    kernel = _kernel(module)
    assert KERNEL_ATTR in kernel.attributes
    # three memref<?x?xf32>: a pointer and two sizes each
    assert [str(t) for t in kernel.function_type.inputs.data] == ["!llvm.ptr", "i64", "i64"] * 3
    registers = [op.name for op in kernel.walk() if op.name.startswith("nvvm.")]
    assert registers == [
        f"nvvm.read.ptx.sreg.{r}" for r in ("ctaid.x", "ctaid.y", "tid.x", "tid.y")
    ]
    host = next(op for op in module.ops if isinstance(op, func.FuncOp))
    assert any(isinstance(op, gpu.LaunchFuncOp) for op in host.walk())


def test_shared_buffer_and_barrier() -> None:
    module = _parse(TRANSPOSE)
    lower_gpu_to_nvvm(module)
    kernel = _kernel(module)
    names = [op.name for op in kernel.walk()]
    assert names.count("nvvm.barrier0") == 1
    assert "llvm.alloca" not in names
    assert kernel.attributes["loopopt.shared_bytes"].value.data == 32 * 33 * 4


def test_lane_id_and_shuffles_stay_nvvm() -> None:
    module = _parse(WARP_SUM)
    lower_gpu_to_nvvm(module)
    names = [op.name for op in _kernel(module).walk()]
    assert names.count("nvvm.shfl.sync") == 5
    assert "nvvm.read.ptx.sreg.laneid" in names


KERNEL = """builtin.module {
  "gpu.module"() <{sym_name = "m"}> ({
    "gpu.func"() <{function_type = (memref<?xindex>) -> (), kernel}> ({
    ^bb0(%out: memref<?xindex>):
      %c0 = arith.constant 0 : index
      %v = OP
      memref.store %v, %out[%c0] : memref<?xindex>
      "gpu.return"() : () -> ()
    }) {sym_name = "k"} : () -> ()
  }) : () -> ()
}
"""


def test_global_id_is_block_times_size_plus_thread() -> None:
    op = '"gpu.global_id"() <{dimension = #gpu<dim y>}> : () -> index'
    module = _parse(KERNEL.replace("OP", op))
    lower_gpu_to_nvvm(module)
    names = [op.name for op in _kernel(module).walk() if op.name.startswith(("nvvm.", "llvm.mul"))]
    assert names == [
        "nvvm.read.ptx.sreg.ctaid.y",
        "nvvm.read.ptx.sreg.ntid.y",
        "nvvm.read.ptx.sreg.tid.y",
        "llvm.mul",
    ]


def test_unsupported_gpu_op_in_a_kernel_is_an_error() -> None:
    with pytest.raises(LoopoptError, match="cannot lower 'gpu.num_subgroups' in a kernel"):
        lower_gpu_to_nvvm(_parse(KERNEL.replace("OP", '"gpu.num_subgroups"() : () -> index')))


def test_dynamic_shared_buffer_is_an_error() -> None:
    text = TRANSPOSE.replace(
        "%tile = memref.alloca() : memref<32x33xf32, 3>",
        "%tile = memref.alloca(%n) : memref<?x33xf32, 3>",
    ).replace("memref<32x33xf32, 3>", "memref<?x33xf32, 3>")
    with pytest.raises(LoopoptError, match="a shared-memory buffer needs a static shape"):
        lower_gpu_to_nvvm(_parse(text))
