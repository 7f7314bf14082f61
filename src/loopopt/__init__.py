"""loopopt: a loop-nest optimizing compiler for NVIDIA GPUs, built on xDSL."""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`loopopt.compile`, `loopopt.kernel` and `loopopt.array` are imported on first use (they
    pull in the compiler and runtimes)."""
    if name == "compile":
        from loopopt.api import compile

        return compile
    if name in ("kernel", "array"):
        from loopopt import frontend

        return getattr(frontend, name)
    raise AttributeError(f"module 'loopopt' has no attribute '{name}'")
