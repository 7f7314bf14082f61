"""loopopt.tools."""
