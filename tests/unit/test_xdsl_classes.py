"""One set of op classes: loopopt's gpu/affine/llvm ops are xDSL's (subclasses at most), xDSL's
dialect objects hold them, and loopopt lowers a gpu module built with xDSL's own classes."""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import affine, arith, gpu, llvm, memref
from xdsl.dialects.builtin import (
    FloatAttr,
    FunctionType,
    IndexType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    f32,
)
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint
from xdsl.universe import Universe

from loopopt.backend.ptx import module_to_ptx
from loopopt.context import make_context
from loopopt.dialects import affine_ext, gpu_ext, llvm_ext


def test_every_dialect_of_the_multiverse_loads_in_one_context() -> None:
    """What xdsl-opt does with the plugin installed: no name registered twice, and the gpu,
    affine and llvm names resolve to loopopt's subclasses of xDSL's classes."""
    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    for name in list(ctx.registered_dialect_names):
        ctx.load_registered_dialect(name)
    assert ctx.get_op("gpu.launch_func") is gpu_ext.LaunchFuncOp
    assert ctx.get_op("gpu.thread_id") is gpu_ext.ThreadIdOp
    assert ctx.get_op("affine.if") is affine_ext.IfOp
    assert ctx.get_op("llvm.getelementptr") is llvm_ext.GEPOp
    assert ctx.get_attr("gpu.address_space") is gpu_ext.AddressSpaceAttr


def test_loopopt_op_classes_subclass_xdsl_ones() -> None:
    ctx = make_context()
    for dialect in (gpu.GPU, affine.Affine, llvm.LLVM):
        for op in dialect.operations:
            assert ctx.get_op(op.name) is op
    assert issubclass(gpu_ext.FuncOp, gpu.FuncOp) and issubclass(affine_ext.IfOp, affine.IfOp)
    for name in ("gpu.module", "gpu.func", "gpu.launch_func", "gpu.barrier", "affine.if"):
        registered = ctx.get_op(name)
        assert any(base.__module__.startswith("xdsl.") for base in registered.__mro__[1:])


def _xdsl_kernel_module() -> ModuleOp:
    """y[i] = 2 * x[i] + y[i] over one block of 64 threads, every op of xDSL's classes."""
    memref_t = memref.MemRefType(f32, [64])
    body = Block(arg_types=[memref_t, memref_t])
    x, y = body.args
    b = Builder(InsertPoint.at_end(body))
    tid = b.insert(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))).result
    xv = b.insert(memref.LoadOp.get(x, [tid])).res
    yv = b.insert(memref.LoadOp.get(y, [tid])).res
    two = b.insert(arith.ConstantOp(FloatAttr(2.0, f32))).result
    scaled = b.insert(arith.MulfOp(xv, two)).result
    total = b.insert(arith.AddfOp(scaled, yv)).result
    b.insert(memref.StoreOp.get(total, y, [tid]))
    b.insert(gpu.ReturnOp([]))
    signature = FunctionType.from_lists([memref_t, memref_t], [])
    kernel = gpu.FuncOp("saxpy", signature, Region(body), kernel=True, known_block_size=[64, 1, 1])
    name = StringAttr("kernels")  # xDSL's signature says SymbolRefAttr; its verifier wants this
    gmod = gpu.ModuleOp(name, Region(Block([kernel])))  # pyright: ignore[reportArgumentType]
    module = ModuleOp([gmod])
    module.attributes["gpu.container_module"] = UnitAttr()
    return module


def test_gpu_module_built_with_xdsl_classes_compiles_to_ptx() -> None:
    module = _xdsl_kernel_module()
    assert type(module.ops.first) is gpu.ModuleOp  # xDSL's class, not a subclass
    module.verify()
    ptx = module_to_ptx(module)
    assert ".visible .entry saxpy(" in ptx
    assert "mov.u32" in ptx and "%tid.x" in ptx
    assert "fma.rn.f32" in ptx or "mul.f32" in ptx
    assert not any(op.name.startswith("gpu.") for op in module.walk() if op.name != "gpu.module")


def test_xdsl_built_ops_print_as_loopopt_reads_them() -> None:
    """xDSL's classes print the generic form; loopopt reads it into its own subclasses."""
    from loopopt.context import parse_module

    text = str(_xdsl_kernel_module())
    module = parse_module(text)
    kernel = next(op for op in module.walk() if isinstance(op, gpu.FuncOp))
    assert type(kernel) is gpu_ext.FuncOp and kernel.kernel is not None
    assert kernel.sym_name == StringAttr("saxpy")
    tid = next(op for op in module.walk() if isinstance(op, gpu.ThreadIdOp))
    assert isinstance(tid.result.type, IndexType)
    assert "gpu.thread_id x" in str(module)
