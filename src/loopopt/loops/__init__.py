"""IR-mutating loop primitives used by passes (MLIR LoopUtils style): each says what it checks
and what it does not; legality is the caller's job (see loopopt.analysis)."""
