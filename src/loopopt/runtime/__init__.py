"""loopopt.runtime."""
