"""The collapsed surrogate parameter, the one estimator formula the compiled kernels evaluate themselves."""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def cvi_ratio_nb(count: float, total: float, prior: float, n_outcomes: int) -> float:
    """One surrogate parameter ``(C^{\\i} + a) / (C.^{\\i} + K a)`` (thesis eq. 3.49)."""
    return (max(count, 0.0) + prior) / (max(total, 0.0) + n_outcomes * prior)
