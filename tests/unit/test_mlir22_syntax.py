"""MLIR 22 syntax that xDSL 0.74 lacks: getelementptr no-wrap flags, llvm.mlir.poison,
location aliases defined after their uses, fused locations with metadata."""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import FusedLoc, NameLoc, StringAttr

from loopopt.context import parse_module
from loopopt.dialects.llvm_ext import PoisonOp, flag_keywords

GEP = """llvm.func @f(%p: !llvm.ptr) {
  %u = llvm.mlir.poison : i32
  %q = llvm.getelementptr inbounds|nuw %p[2] : (!llvm.ptr) -> !llvm.ptr, f32
  llvm.return
}"""


def test_no_wrap_flags_are_mlir_bits() -> None:
    assert flag_keywords(0) == []
    assert flag_keywords(3) == ["inbounds"]
    assert flag_keywords(2) == ["nusw"]
    assert flag_keywords(7) == ["inbounds", "nuw"]
    assert flag_keywords(6) == ["nusw", "nuw"]


def test_gep_flags_are_xdsl_properties() -> None:
    module = parse_module(GEP)
    poison, gep = list(module.walk())[2:4]
    assert isinstance(poison, PoisonOp)
    assert isinstance(gep, llvm.GEPOp)  # xDSL's class (a subclass adding the syntax)
    assert gep.noWrapFlags.value.data == 7 and gep.inbounds is not None
    assert "llvm.getelementptr inbounds|nuw %p[2]" in str(module)


def test_location_aliases_after_their_uses() -> None:
    text = (
        "func.func @g() {\n  func.return loc(#loc2)\n} loc(#loc1)\n"
        '#loc = loc("x.mlir":3:4)\n#loc1 = loc("named"(#loc))\n'
        '#loc2 = loc(fused<"m">[#loc, #loc1])\n'
    )
    module = parse_module(text)
    fn, ret = list(module.walk())[1:3]
    assert isinstance(fn.location, NameLoc)
    assert isinstance(ret.location, FusedLoc) and ret.location.metadata == StringAttr("m")
