"""The Python front-end: `@loopopt.kernel` functions → affine IR (read with ast, never run).

kernel.py       the decorator: specs per call, caching, mlir(), running, write-back
translate.py    a function + argument specs → a verified module (statements.py,
                expressions.py, branches.py, operators.py, calls.py do the work; types.py
                holds NumPy's promotion rules, liveness.py what loops carry)
bounds.py       calls whose subscripts could leave an array are refused (guards.py: ifs)
array.py        `loopopt.array`: data kept on the GPU between kernel calls

The subset: for loops over range() with affine bounds, int/float scalars (also carried
by loops), array reads and writes with affine subscripts, if/else, conditional expressions,
and/or/not, arithmetic with NumPy's types, min/max/abs, math.* and NumPy scalar functions.
Anything else is a LoopoptError at its file and line.
"""

from loopopt.frontend.array import array
from loopopt.frontend.kernel import Kernel, kernel

__all__ = ["Kernel", "array", "kernel"]
