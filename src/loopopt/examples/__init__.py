"""Bundled example inputs (MLIR) for `loopopt-opt` with no FILE."""
