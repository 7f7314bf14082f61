"""loopopt.schedule."""
