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
def full_rows(X, mu, C, const, coef, nu, out):
    """Quadratic-form rows of a full-covariance Gaussian or multivariate Student-t.

    ``C[k]`` is a lower-triangular factor of the state's (scale) matrix ``Sigma_k = C_k C_k'``;
    with ``q = ||C_k^{-1} (x_t - mu_k)||^2 = delta' Sigma_k^{-1} delta`` (forward substitution):
    ``out[t, k] = const[k] - coef[k] * q`` when ``nu[k] <= 0`` (Gaussian, ``coef = 1/2``), else
    ``const[k] - coef[k] * log(1 + q / nu[k])`` (Student-t with ``nu`` degrees of freedom,
    ``coef = (nu + d) / 2``; thesis eq. 3.96 for the Normal-Wishart pair).
    """
    T, d = X.shape
    K = mu.shape[0]
    y = np.empty(d)
    for t in range(T):
        for k in range(K):
            q = 0.0
            for i in range(d):
                acc = X[t, i] - mu[k, i]
                for j in range(i):
                    acc -= C[k, i, j] * y[j]
                y[i] = acc / C[k, i, i]
                q += y[i] * y[i]
            if nu[k] > 0.0:
                out[t, k] = const[k] - coef[k] * math.log1p(q / nu[k])
            else:
                out[t, k] = const[k] - coef[k] * q


@njit(cache=True)
def nw_posterior(S, m0, kappa0, nu0, Psi0):
    """Normal-Wishart posterior per state from statistics rows ``[N, sum x, sum x x']``.

    Returns ``kappa_n, nu_n, m_n, Psi_n``, the lower Cholesky factor of ``Psi_n`` and ``log |Psi_n|``
    (``kappa_n = kappa0 + N``, ``nu_n = nu0 + N``, ``m_n = (kappa0 m0 + sum x) / kappa_n``,
    ``Psi_n = Psi0 + sum x x' + kappa0 m0 m0' - kappa_n m_n m_n'``); ``N`` is clipped at 0.
    """
    K = S.shape[0]
    d = m0.shape[0]
    kn = np.empty(K)
    nun = np.empty(K)
    mn = np.empty((K, d))
    Psin = np.empty((K, d, d))
    chol = np.zeros((K, d, d))
    logdet = np.empty(K)
    for k in range(K):
        N = max(S[k, 0], 0.0)
        kn[k] = kappa0 + N
        nun[k] = nu0 + N
        for i in range(d):
            mn[k, i] = (kappa0 * m0[i] + S[k, 1 + i]) / kn[k]
        for i in range(d):
            for j in range(i + 1):
                v = (Psi0[i, j] + 0.5 * (S[k, 1 + d + i * d + j] + S[k, 1 + d + j * d + i])
                     + kappa0 * m0[i] * m0[j] - kn[k] * mn[k, i] * mn[k, j])
                Psin[k, i, j] = v
                Psin[k, j, i] = v
        ld = 0.0
        for i in range(d):
            for j in range(i + 1):
                acc = Psin[k, i, j]
                for m in range(j):
                    acc -= chol[k, i, m] * chol[k, j, m]
                if i == j:
                    acc = math.sqrt(max(acc, 1e-300))
                    chol[k, i, i] = acc
                    ld += 2.0 * math.log(acc)
                else:
                    chol[k, i, j] = acc / chol[k, j, j]
        logdet[k] = ld
    return kn, nun, mn, Psin, chol, logdet


@njit(cache=True, fastmath=True)
def diag_rows(X, mu, prec, const, nu, out):
    """Rows of a product of independent univariate Gaussians or Student-t's.

    Gaussian (``nu[k] <= 0``): ``const[k] - 1/2 sum_i prec[k, i] (x_ti - mu_ki)^2``;
    Student-t (Normal-Gamma predictive):
    ``const[k] - (nu[k] + 1)/2 sum_i log(1 + prec[k, i] (x_ti - mu_ki)^2 / nu[k])``.
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
