"""loopopt's passes, one per file, each file named after its CLI name."""
