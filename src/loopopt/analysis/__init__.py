"""Read-only analyses of affine loop nests: accesses, dependences (islpy), parallel loops,
footprints."""
