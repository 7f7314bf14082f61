"""loopopt.dialects.gpu_ext: upstream MLIR 22's custom syntax for gpu ops (print ↔ parse),
the generic forms that still parse, constructors as xDSL's, and the verifiers."""

from __future__ import annotations

import pytest
from xdsl.dialects import gpu as xdsl_gpu
from xdsl.dialects import memref
from xdsl.dialects import test as xdsl_test
from xdsl.dialects.builtin import (
    IndexType,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    f32,
    i32,
)
from xdsl.utils.exceptions import VerifyException

from loopopt.context import make_context, parse_module, verify_ir
from loopopt.diagnostics import LoopoptError
from loopopt.dialects import gpu_ext as gpu
from loopopt.lowering.gpu_to_nvvm import lower_gpu_to_nvvm

HOST = """builtin.module attributes {gpu.container_module} {
  func.func @host(%A: memref<64xf32>, %n: index, %s: i32, %m: i32) {
    %c1 = arith.constant 1 : index
    %one = arith.constant 1 : i32
    gpu.launch_func @kernels::@k blocks in (%n, %c1, %c1) threads in (%n, %c1, %c1) \
dynamic_shared_memory_size %s args(%A : memref<64xf32>, %n : index)
    gpu.launch_func @kernels::@e clusters in (%c1, %c1, %c1) blocks in (%n, %c1, %c1) \
threads in (%c1, %c1, %c1)
    gpu.launch_func @kernels::@e blocks in (%m, %one, %one) threads in (%m, %one, %one) : i32
    %t = gpu.wait async
    %u = gpu.launch_func async [%t] @kernels::@e blocks in (%n, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.wait [%u]
    func.return
  }
  gpu.module @kernels attributes {loopopt.note = "x"} {
    gpu.func @k(%A: memref<64xf32>, %n: index) kernel attributes \
{known_block_size = array<i32: 64, 1, 1>, loopopt.tag = 1 : i64} {
      %tx = gpu.thread_id x
      %by = gpu.block_id y upper_bound 16
      %bz = gpu.block_dim z
      %gx = gpu.grid_dim x
      %ix = gpu.global_id y
      %l = gpu.lane_id upper_bound 32
      %w = gpu.subgroup_size : index
      %sg = gpu.subgroup_id : index
      %ns = gpu.num_subgroups upper_bound 4 : index
      gpu.barrier
      gpu.return
    }
    gpu.func @e() kernel {
      gpu.return
    }
    gpu.func @f(%x: f32 {loopopt.arg}) -> (f32 {loopopt.res}) \
workgroup(%wg : memref<32xf32, #gpu.address_space<workgroup>>) \
private(%pr : memref<1xf32, #gpu.address_space<private>>) {
      gpu.return %x : f32
    }
  }
}"""


def _parse(text: str) -> ModuleOp:
    return parse_module(text, "<test>", make_context())


def _ops(module: ModuleOp, cls: type) -> list:
    return [op for op in module.walk() if isinstance(op, cls)]


def test_custom_syntax_prints_as_it_was_written() -> None:
    printed = str(_parse(HOST))
    assert printed == HOST
    assert str(_parse(printed)) == printed


def test_parsed_fields() -> None:
    module = _parse(HOST)
    k, e, f = _ops(module, gpu.FuncOp)
    assert k.is_kernel and k.kernel == UnitAttr() and "gpu.kernel" in k.attributes
    assert k.known_block_size is not None and k.known_block_size.get_values() == (64, 1, 1)
    assert "known_block_size" in k.properties and k.attributes["loopopt.tag"]
    assert not f.is_kernel and f.num_workgroup_attributions == 1
    assert [a.type for a in f.workgroup_args] == [
        MemRefType(f32, [32], memory_space=gpu.AddressSpaceAttr(gpu.AddressSpaceEnum.WORKGROUP))
    ]
    assert len(f.private_args) == 1 and f.arg_attrs is not None and f.res_attrs is not None
    block_id = _ops(module, gpu.BlockIdOp)[0]
    assert block_id.dimension.data == gpu.DimensionEnum.Y
    assert block_id.upper_bound is not None and block_id.upper_bound.value.data == 16
    launch, clustered, small, asynchronous = _ops(module, gpu.LaunchFuncOp)
    assert launch.dynamicSharedMemorySize is not None and len(launch.kernelOperands) == 2
    assert clustered.clusterSizeX is not None and len(clustered.sizes) == 9
    assert small.gridSizeX.type == i32
    assert asynchronous.asyncToken is not None and len(asynchronous.asyncDependencies) == 1
    first_wait, last_wait = _ops(module, gpu.WaitOp)
    assert first_wait.asyncToken is not None and last_wait.asyncToken is None


def test_generic_forms_still_parse() -> None:
    """xDSL's generic form (`kernel` a property) and MLIR's (`gpu.kernel` an attribute)."""
    xdsl_form = """builtin.module {
  "gpu.module"() <{sym_name = "m"}> ({
    "gpu.func"() <{function_type = (index) -> (), kernel}> ({
    ^bb0(%n: index):
      %t = "gpu.thread_id"() <{dimension = #gpu<dim y>}> : () -> index
      "gpu.barrier"() : () -> ()
      "gpu.return"() : () -> ()
    }) {sym_name = "k", gpu.known_block_size = array<i32: 8, 1, 1>} : () -> ()
  }) : () -> ()
}"""
    mlir_form = """"builtin.module"() ({
  "gpu.module"() <{sym_name = "m"}> ({
    "gpu.func"() <{function_type = () -> (), known_block_size = array<i32: 8, 1, 1>}> ({
    ^bb0(%w: memref<4xf32, #gpu.address_space<workgroup>>):
      "gpu.return"() : () -> ()
    }) {gpu.kernel, sym_name = "k", workgroup_attributions = 1 : i64} : () -> ()
  }) : () -> ()
}) : () -> ()"""
    old = _parse(xdsl_form)
    (kernel,) = _ops(old, gpu.FuncOp)
    assert kernel.is_kernel and "kernel" not in kernel.properties
    assert "gpu.func @k(%n: index) kernel attributes {gpu.known_block_size" in str(old)
    assert "%t = gpu.thread_id y" in str(old)
    (kernel,) = _ops(_parse(mlir_form), gpu.FuncOp)
    assert kernel.is_kernel and len(kernel.workgroup_args) == 1
    assert kernel.known_block_size is not None


def test_the_dialect_is_xdsls_with_the_custom_ops_swapped_in() -> None:
    assert {op.name for op in gpu.GPU.operations} == {op.name for op in xdsl_gpu.GPU.operations}
    ours = {op.name: op for op in gpu.GPU.operations}
    assert ours["gpu.func"] is gpu.FuncOp and ours["gpu.launch_func"] is gpu.LaunchFuncOp
    assert ours["gpu.alloc"] is xdsl_gpu.AllocOp
    assert gpu.AddressSpaceAttr in gpu.GPU.attributes
    assert make_context().get_op("gpu.thread_id") is gpu.ThreadIdOp


def test_constructors_build_what_the_parser_does() -> None:
    kernel = gpu.FuncOp("k", ([IndexType()], []), kernel=True, known_block_size=[32, 4, 1])
    ids = [gpu.ThreadIdOp("x"), gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.Y), 8)]
    kernel.body.block.add_ops([*ids, gpu.BarrierOp(), gpu.ReturnOp()])
    gmod = gpu.ModuleOp("kernels")
    gmod.body.block.add_op(kernel)
    host = xdsl_test.TestOp(result_types=[IndexType()])
    n = host.results[0]
    launch = gpu.LaunchFuncOp(SymbolRefAttr("kernels", ["k"]), [n] * 3, [n] * 3, kernelOperands=[n])
    module = ModuleOp([host, launch, gmod])
    module.attributes["gpu.container_module"] = UnitAttr()
    verify_ir(module, "built")
    assert (
        str(module)
        == """builtin.module attributes {gpu.container_module} {
  %0 = "test.op"() : () -> index
  gpu.launch_func @kernels::@k blocks in (%0, %0, %0) threads in (%0, %0, %0) args(%0 : index)
  gpu.module @kernels {
    gpu.func @k(%1: index) kernel attributes {known_block_size = array<i32: 32, 4, 1>} {
      %2 = gpu.thread_id x
      %3 = gpu.block_id y upper_bound 8
      gpu.barrier
      gpu.return
    }
  }
}"""
    )
    ctx = make_context()
    ctx.load_dialect(xdsl_test.Test)
    assert str(parse_module(str(module), "<test>", ctx)) == str(module)
    assert gpu.ModuleOp(StringAttr("m")).sym_name == gpu.ModuleOp(SymbolRefAttr("m")).sym_name


def test_launch_sizes_need_one_type() -> None:
    """The custom syntax has one type for all sizes; built launches are checked for it."""
    values = xdsl_test.TestOp(result_types=[IndexType(), i32]).results
    sizes = [values[0], values[1], values[0]]
    launch = gpu.LaunchFuncOp(SymbolRefAttr("m", ["k"]), sizes, [values[0]] * 3)
    with pytest.raises(VerifyException, match="grid, block and cluster sizes need one type"):
        launch.verify()


def _host_with(
    launch: str, kernel: str = "gpu.func @k(%n: index) kernel {\n gpu.return\n }"
) -> str:
    return f"""builtin.module attributes {{gpu.container_module}} {{
  func.func @h(%n: index, %m: i32) {{
    {launch}
    func.return
  }}
  gpu.module @kernels {{
    {kernel}
  }}
}}"""


GOOD = (
    "gpu.launch_func @kernels::@k blocks in (%n, %n, %n) threads in (%n, %n, %n) args(%n : index)"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD.replace("args(%n : index)", ""), r"passes \(\) to @k, which takes \(index\)"),
        (GOOD.replace("@k ", "@missing "), "kernel @kernels::@missing is undefined"),
        (
            _host_with(GOOD, "gpu.func @k(%n: index) {\n gpu.return\n }"),
            "is missing the 'gpu.kernel' attribute",
        ),
        (GOOD.replace("blocks in (%n, %n, %n)", "blocks in (%m, %m, %m)"), "previously used"),
        (GOOD.replace("blocks in", "grid in"), "expected 'blocks in"),
        (_host_with(GOOD).replace(" attributes {gpu.container_module}", ""), "container_module"),
        (
            _host_with(
                GOOD, "gpu.func @k(%n: index) kernel {\n %t = gpu.thread_id w\n gpu.return\n }"
            ),
            "expected a dimension: x, y or z",
        ),
        (
            _host_with(
                GOOD, "gpu.func @k(%n: index) -> index kernel {\n gpu.return %n : index\n }"
            ),
            "Expected void return type for kernel function",
        ),
        (
            _host_with(GOOD, "gpu.func @k(%n: index) -> f32 {\n gpu.return %n : index\n }"),
            r"gpu.return returns \(index\) from a function returning \(f32\)",
        ),
        (
            _host_with(
                GOOD,
                "gpu.func @k(%n: index) kernel attributes "
                "{known_block_size = array<i32: 8, 8>} {\n gpu.return\n }",
            ),
            "known_block_size needs 3 elements",
        ),
        (
            _host_with(
                GOOD,
                "gpu.func @k(%n: index) workgroup(%w : memref<4xf32, 5>) kernel {\n gpu.return\n }",
            ),
            r"a workgroup attribution must be a memref in #gpu.address_space<workgroup>",
        ),
    ],
)
def test_invalid_gpu_ir_is_a_diagnostic(text: str, message: str) -> None:
    full = text if text.startswith("builtin.module") else _host_with(text)
    with pytest.raises(LoopoptError, match=message):
        _parse(full)


def test_attributions_lower_to_allocas() -> None:
    """Attributions become allocas at the entry; the function keeps only its inputs."""
    module = _parse(HOST)
    (gmod,) = _ops(module, gpu.ModuleOp)
    for op in list(gmod.body.block.ops):
        if not (isinstance(op, gpu.FuncOp) and op.sym_name.data == "f"):
            op.detach()
    module.body.block.first_op.detach()  # pyright: ignore[reportOptionalMemberAccess]
    lower_gpu_to_nvvm(module)
    assert not _ops(module, gpu.FuncOp) and not _ops(module, memref.AllocaOp)
    text = str(gmod)
    assert "llvm.func @f(%x: f32) -> f32" in text
    assert text.count("llvm.alloca") == 1 and "@__shm_f_0" in text
