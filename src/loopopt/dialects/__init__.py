"""loopopt.dialects."""
