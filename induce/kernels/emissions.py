"""Per-step, per-state log-potential rows of the continuous and count emission families.

Every kernel fills ``out[t, k]`` (``T x K``) for data ``X`` (``T x d``) in one pass over the
steps; the per-state constants (log normalisers, Cholesky factors, degrees of freedom) are
computed once per state by :mod:`induce.emissions` in numpy.  The rows feed
:func:`induce.kernels.hmm.forward_backward` after exponentiation.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, fastmath=True)
def full_rows(X, mu, L, const, coef, nu, out):
    """Quadratic-form rows of a full-covariance Gaussian or multivariate Student-t.

    With ``q = ||L_k' (x_t - mu_k)||^2`` (so ``q = delta' Lambda_k delta`` for ``Lambda_k = L_k L_k'``):
    ``out[t, k] = const[k] - coef[k] * q`` when ``nu[k] <= 0`` (Gaussian, ``coef = 1/2``), else
    ``const[k] - coef[k] * log(1 + q / nu[k])`` (Student-t with ``nu`` degrees of freedom,
    ``coef = (nu + d) / 2``; thesis eq. 3.96 for the Normal-Wishart pair).
    """
    T, d = X.shape
    K = mu.shape[0]
    delta = np.empty(d)
    for t in range(T):
        for k in range(K):
            for i in range(d):
                delta[i] = X[t, i] - mu[k, i]
            q = 0.0
            for j in range(d):
                acc = 0.0
                for i in range(j, d):  # L lower triangular: L[i, j] = 0 for i < j
                    acc += L[k, i, j] * delta[i]
                q += acc * acc
            if nu[k] > 0.0:
                out[t, k] = const[k] - coef[k] * math.log1p(q / nu[k])
            else:
                out[t, k] = const[k] - coef[k] * q


@njit(cache=True, fastmath=True)
def diag_rows(X, mu, prec, const, nu, out):
    """Rows of a product of independent univariate Gaussians or Student-t's.

    Gaussian (``nu[k] <= 0``): ``const[k] - 1/2 sum_i prec[k, i] (x_ti - mu_ki)^2``;
    Student-t (Normal-Gamma predictive): ``const[k] - (nu[k] + 1)/2 sum_i log(1 + prec[k, i] (x_ti - mu_ki)^2 / nu[k])``.
    """
    T, d = X.shape
    K = mu.shape[0]
    for t in range(T):
        for k in range(K):
            acc = 0.0
            if nu[k] > 0.0:
                for i in range(d):
                    r = X[t, i] - mu[k, i]
                    acc += math.log1p(prec[k, i] * r * r / nu[k])
                out[t, k] = const[k] - 0.5 * (nu[k] + 1.0) * acc
            else:
                for i in range(d):
                    r = X[t, i] - mu[k, i]
                    acc += prec[k, i] * r * r
                out[t, k] = const[k] - 0.5 * acc


@njit(cache=True)
def nbinom_rows(X, r, logp, log1mp, out):
    """Negative-binomial rows (Gamma-Poisson predictive, thesis eq. 3.96), independent per column.

    ``out[t, k] = sum_i lgamma(x + r_ki) - lgamma(r_ki) - lgamma(x + 1) + r_ki log p_ki + x log(1 - p_ki)``.
    """
    T, d = X.shape
    K = r.shape[0]
    lgr = np.empty((K, d))
    for k in range(K):
        for i in range(d):
            lgr[k, i] = math.lgamma(r[k, i])
    for t in range(T):
        lgx = 0.0
        for i in range(d):
            lgx += math.lgamma(X[t, i] + 1.0)
        for k in range(K):
            acc = -lgx
            for i in range(d):
                x = X[t, i]
                acc += math.lgamma(x + r[k, i]) - lgr[k, i] + r[k, i] * logp[k, i] + x * log1mp[k, i]
            out[t, k] = acc
