"""A Python function and its argument specs → a module with one `func.func` of affine loops.

    def scale(A, alpha):                  func.func @scale(%A: memref<?x?xf32>, %alpha: f64) {
        for i in range(A.shape[0]):         %c0 = arith.constant 0 : index
            for j in range(A.shape[1]):      %n = memref.dim %A, %c0 : memref<?x?xf32>  ...
                A[i, j] *= alpha             affine.for %i = 0 to %n { affine.for %j ... {
                                               ... arith.truncf %alpha ... arith.mulf ...
                                             } {loopopt.name = "j"} } {loopopt.name = "i"}

Arrays become memrefs (static sizes, or `?` where the spec leaves them open: `memref.dim`),
integer parameters `index` (symbols of the affine maps), float parameters f64 (a Python float)
or f32/f64 (a NumPy scalar). The function body is translated statement by statement
(statements.py); the module is verified before it is returned.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, MemRefType, ModuleOp
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.ir.affine import AffineExpr

from loopopt.context import verify_ir
from loopopt.frontend.emitter import name as hint
from loopopt.frontend.liveness import Liveness
from loopopt.frontend.source import Source
from loopopt.frontend.statements import Statements
from loopopt.frontend.types import PY_INT, ArraySpec, ScalarSpec, Spec
from loopopt.frontend.values import Array, Index, Scalar


def parameters(tree: ast.FunctionDef, source: Source) -> list[str]:
    """The parameter names of a kernel (positional parameters only)."""
    args = tree.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        raise source.error(tree, "kernels take positional parameters only (no *args, **kwargs)")
    return [a.arg for a in (*args.posonlyargs, *args.args)]


class Translator(Statements):
    def __init__(self, source: Source):
        super().__init__(source)
        self.env = {}
        self.liveness = Liveness(source.tree.body)

    def function(self, specs: Sequence[Spec], name: str | None = None) -> ModuleOp:
        tree = self.source.tree
        names = parameters(tree, self.source)
        if len(names) != len(specs):
            raise self.error(
                tree, f"{tree.name}() takes {len(names)} arguments, {len(specs)} given"
            )
        inputs: list[Attribute] = []
        for param, spec in zip(names, specs, strict=True):
            inputs.append(self._parameter(param, spec, tree))
        body = list(tree.body)
        last = body[-1] if body else None
        if isinstance(last, ast.Return) and (
            last.value is None
            or (isinstance(last.value, ast.Constant) and last.value.value is None)
        ):
            body.pop()
        self.body(body)
        self.emit(func.ReturnOp(), last if last is not None else tree)
        self.drop_unused_hoisted()
        fn = func.FuncOp(name or tree.name, (inputs, []), Region(self.top))
        fn.location = self.source.loc(tree)
        module = ModuleOp([fn])
        verify_ir(module, "the front-end produced invalid IR")
        return module

    def _parameter(self, name: str, spec: Spec, tree: ast.FunctionDef) -> Attribute:
        if isinstance(spec, ArraySpec):
            shape = [DYNAMIC_INDEX if s is None else s for s in spec.shape]
            ir_type: Attribute = MemRefType(spec.ty.ir(), shape)
        else:
            ir_type = spec.ty.ir()
        arg = self.top.insert_arg(ir_type, len(self.top.args))
        hint(arg, name)
        if isinstance(spec, ArraySpec):
            sizes = tuple(self._size(arg, d, s, tree) for d, s in enumerate(spec.shape))
            self.env[name] = Array(arg, spec.ty, name, sizes)
        elif isinstance(spec, ScalarSpec) and spec.ty == PY_INT:
            assert isinstance(ir_type, IndexType)
            self.env[name] = Index(self.atoms.atom(arg, is_dim=False))
        else:
            self.env[name] = Scalar(arg, spec.ty)
        return ir_type

    def _size(self, array: SSAValue, dim: int, size: int | None, tree: ast.AST) -> AffineExpr:
        if size is not None:
            return AffineExpr.constant(size)

        def build() -> SSAValue:
            position = self.constant(dim, PY_INT, tree)
            return self.value(memref.DimOp(array, position), tree)

        value = self.hoist(("dim", array, dim), build)
        if array.name_hint:
            hint(value, f"{array.name_hint}_{dim}")
        return self.atoms.atom(value, is_dim=False)


def translate(source: Source, specs: Sequence[Spec], name: str | None = None) -> ModuleOp:
    """The verified module of `source`'s function for arguments of `specs`."""
    return Translator(source).function(specs, name)
