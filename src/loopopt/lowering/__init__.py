"""loopopt.lowering."""
