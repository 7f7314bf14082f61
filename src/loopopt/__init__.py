"""loopopt: a loop-nest optimizing compiler for NVIDIA GPUs, built on xDSL."""

__version__ = "0.1.0"
