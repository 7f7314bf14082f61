"""The float conversions LLVM's x86 backend calls but the C runtime may lack, in LLVM IR.

Before:  %b = fptrunc float %x to bfloat      (x86 without AVX512-BF16: `call __truncsfbf2`)
After:   the JIT module also defines `__truncsfbf2` (and `__truncdfbf2`, `__truncdfhf2`), so
         MCJIT resolves the calls inside the module instead of from libgcc

Without native instructions, LLVM's x86 backend turns rounding to bfloat (from float or double,
and so every bf16 add or multiply, which it computes in float) and rounding double to half
into calls of compiler-rt/libgcc functions. libgcc has the bfloat ones only since GCC 13, and
MCJIT aborts the process on a symbol it cannot resolve, so the host JIT defines them itself.
Rounding is to nearest, ties to even, with one rounding from double: double → float rounds to
odd (the sticky bit survives), then float → bfloat/half rounds to even. NaN stays a quiet NaN.
float → half and half → float are F16C instructions (every x86-64 CPU since 2012) or libgcc's.
"""

from __future__ import annotations

_ROUND_TO_ODD = """
define internal i32 @loopopt.round_to_odd(double %x) {
  %f = fptrunc double %x to float
  %back = fpext float %f to double
  %inexact = fcmp one double %back, %x
  %bits = bitcast float %f to i32
  %low = and i32 %bits, 1
  %even = icmp eq i32 %low, 0
  %fix = and i1 %inexact, %even
  %mag_back = call double @llvm.fabs.f64(double %back)
  %mag_x = call double @llvm.fabs.f64(double %x)
  %above = fcmp ogt double %mag_back, %mag_x
  %step = select i1 %above, i32 -1, i32 1
  %moved = add i32 %bits, %step
  %odd = select i1 %fix, i32 %moved, i32 %bits
  ret i32 %odd
}

declare double @llvm.fabs.f64(double)
"""

_BFLOAT = """
define internal bfloat @loopopt.bits_to_bfloat(i32 %bits) {
  %upper = lshr i32 %bits, 16
  %lsb = and i32 %upper, 1
  %bias = add i32 %lsb, 32767
  %sum = add i32 %bits, %bias
  %rounded = lshr i32 %sum, 16
  %exponent = and i32 %bits, 2139095040
  %all_ones = icmp eq i32 %exponent, 2139095040
  %mantissa = and i32 %bits, 8388607
  %nonzero = icmp ne i32 %mantissa, 0
  %nan = and i1 %all_ones, %nonzero
  %quiet = or i32 %upper, 64
  %result = select i1 %nan, i32 %quiet, i32 %rounded
  %short = trunc i32 %result to i16
  %b = bitcast i16 %short to bfloat
  ret bfloat %b
}

define bfloat @__truncsfbf2(float %x) {
  %bits = bitcast float %x to i32
  %b = call bfloat @loopopt.bits_to_bfloat(i32 %bits)
  ret bfloat %b
}

define bfloat @__truncdfbf2(double %x) {
  %bits = call i32 @loopopt.round_to_odd(double %x)
  %b = call bfloat @loopopt.bits_to_bfloat(i32 %bits)
  ret bfloat %b
}
"""

_HALF = """
define half @__truncdfhf2(double %x) {
  %bits = call i32 @loopopt.round_to_odd(double %x)
  %f = bitcast i32 %bits to float
  %h = fptrunc float %f to half
  ret half %h
}
"""


def host_conversions(llvm_ir: str) -> str:
    """The LLVM IR to append to the host module `llvm_ir` (empty if it has no f16/bf16)."""
    uses_bfloat = "bfloat" in llvm_ir
    uses_half = "half" in llvm_ir
    if not (uses_bfloat or uses_half):
        return ""
    return _ROUND_TO_ODD + (_BFLOAT if uses_bfloat else "") + (_HALF if uses_half else "")
