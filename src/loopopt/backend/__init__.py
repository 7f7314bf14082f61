"""loopopt.backend."""
