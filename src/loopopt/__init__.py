"""loopopt: a loop-nest optimizing compiler for NVIDIA GPUs, built on xDSL."""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`loopopt.compile` is imported on first use (it pulls in the compiler and runtimes)."""
    if name == "compile":
        from loopopt.api import compile

        return compile
    raise AttributeError(f"module 'loopopt' has no attribute '{name}'")
