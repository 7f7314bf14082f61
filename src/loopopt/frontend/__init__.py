"""The Python front-end: `@loopopt.kernel` functions → affine IR (read with ast, never run).

kernel.py       the decorator: specs per call, caching, mlir(), running, write-back
translate.py    a function + argument specs → a verified module (statements.py,
                expressions.py, branches.py, operators.py, calls.py do the work)
array.py        `loopopt.array`: data kept on the GPU between kernel calls
"""

from loopopt.frontend.array import array
from loopopt.frontend.kernel import Kernel, kernel

__all__ = ["Kernel", "array", "kernel"]
