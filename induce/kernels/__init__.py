"""numba dynamic programs: one per model structure."""
