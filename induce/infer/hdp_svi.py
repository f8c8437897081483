"""The top-level stick of the HDP-HMM's SVI baseline (Johnson & Willsky 2014, section 4; paper 002), a point
estimate ``b*`` (``b*_{K+1}`` the remaining mass) moved by truncated gradient steps with backtracking so that
every ``b*_k > 0``.  The algorithm is :mod:`induce.algorithms.hdp_svi`; the series models' SVI
(:mod:`induce.infer.series_hdp`, :mod:`induce.infer.series_hdp_hsmm`) take the same step.

The gradient is that of ``ln p(b*) + sum_j E[ln p(pi_j | b*)]``; with ``c_i = 1 - sum_{l<i} b*_l``,
``ln GEM(b*; gamma) = sum_i (gamma - 1) ln c_{i+1} - gamma ln c_i`` (the Beta(1, gamma) sticks and the Jacobian
of ``b* -> sticks``), so ``d/db*_k = gamma sum_{i>k} 1/c_i - (gamma - 1) sum_{i>=k} 1/c_{i+1}``, and
``d/db*_k E[ln Dir(pi_j; sigma b*)] = sigma (E[ln pi_jk] - E[ln pi_j,rest] - psi(sigma b*_k) +
psi(sigma b*_rest))``.  (J&W print the second term with ``gamma`` in place of the DP concentration; this is
the derivative.)
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma


def stick_gradient(b: np.ndarray, lam: np.ndarray, sigma: float, gamma: float) -> np.ndarray:
    """Gradient of ``ln p(b*) + sum_j E[ln p(pi_j | b*)]`` w.r.t. the first ``K`` entries of ``b*``."""
    K = len(b) - 1
    c = 1.0 - np.concatenate([[0.0], np.cumsum(b[:K])])  # c[i] = 1 - sum_{l<i} b_l, i = 0..K
    inv_c = 1.0 / c
    # sum_{i>k} 1/c_i for i = k+1..K-1 (sticks within the truncation) and sum_{i>=k} 1/c_{i+1}
    tail_c = np.concatenate([np.cumsum(inv_c[1:K][::-1])[::-1], [0.0]])
    tail_c1 = np.cumsum(inv_c[1:K + 1][::-1])[::-1]
    g_prior = gamma * tail_c - (gamma - 1.0) * tail_c1
    elog = digamma(lam) - digamma(lam.sum(axis=1, keepdims=True))
    g_rows = sigma * ((elog[:, :K] - elog[:, K:]).sum(axis=0)
                      - lam.shape[0] * (digamma(sigma * b[:K]) - digamma(sigma * b[K])))
    return g_prior + g_rows


def truncated_step(b: np.ndarray, grad: np.ndarray, step: float, max_halvings: int = 40) -> np.ndarray:
    """``b + step * grad`` on the first ``K`` entries, halving ``step`` until all of ``b`` stay positive."""
    for _ in range(max_halvings):
        new = b.copy()
        new[:-1] = b[:-1] + step * grad
        new[-1] = 1.0 - new[:-1].sum()
        if np.all(new > 1e-12):
            return new
        step *= 0.5
    return b
