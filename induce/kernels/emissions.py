"""Per-step, per-state log-potential rows of the continuous and count emission families.

Every kernel fills ``out[t, k]`` (``T x K``) for data ``X`` (``T x d``) in one pass over the
steps; the per-state constants (log normalisers, Cholesky factors, degrees of freedom) are
computed once per state, by :mod:`induce.emissions` in numpy or, for the collapsed predictive rows
that cvi2 forms once per item, by the compiled :func:`predictive_rows` from the statistics.  The
rows feed :func:`induce.kernels.hmm.forward_backward` after exponentiation.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from .vmath import log1p


@njit(cache=True, fastmath=True)
def _full_rows_range(X, mu, C, const, coef, nu, out, lo, hi):
    """Steps ``lo`` to ``hi - 1`` of :func:`full_rows` (one thread's share, or all of a short item)."""
    d = X.shape[1]
    K = mu.shape[0]
    inv_diag = np.empty((K, d))
    for k in range(K):
        for i in range(d):
            inv_diag[k, i] = 1.0 / C[k, i, i]
    y = np.empty(d)
    for t in range(lo, hi):
        for k in range(K):
            q = 0.0
            for i in range(d):
                acc = X[t, i] - mu[k, i]
                for j in range(i):
                    acc -= C[k, i, j] * y[j]
                y[i] = acc * inv_diag[k, i]
                q += y[i] * y[i]
            if nu[k] > 0.0:
                out[t, k] = const[k] - coef[k] * log1p(q / nu[k])
            else:
                out[t, k] = const[k] - coef[k] * q


#: steps below which rows and E-steps run on one thread (starting the threads costs more than the work)
PARALLEL_STEPS = 4096


@njit(cache=True, parallel=True)
def _full_rows_parallel(X, mu, C, const, coef, nu, out, n_chunks):
    T = X.shape[0]
    for c in prange(n_chunks):
        _full_rows_range(X, mu, C, const, coef, nu, out, c * T // n_chunks, (c + 1) * T // n_chunks)


def full_rows(X, mu, C, const, coef, nu, out):
    """Quadratic-form rows of a full-covariance Gaussian or multivariate Student-t.

    ``C[k]`` is a lower-triangular factor of the state's (scale) matrix ``Sigma_k = C_k C_k'``;
    with ``q = ||C_k^{-1} (x_t - mu_k)||^2 = delta' Sigma_k^{-1} delta`` (forward substitution):
    ``out[t, k] = const[k] - coef[k] * q`` when ``nu[k] <= 0`` (Gaussian, ``coef = 1/2``), else
    ``const[k] - coef[k] * log(1 + q / nu[k])`` (Student-t with ``nu`` degrees of freedom,
    ``coef = (nu + d) / 2``; thesis eq. 3.96 for the Normal-Wishart pair).  From
    :data:`PARALLEL_STEPS` steps on, chunks of steps (8 per thread) are computed in parallel.
    """
    T = X.shape[0]
    if T < PARALLEL_STEPS:
        _full_rows_range(X, mu, C, const, coef, nu, out, 0, T)
    else:
        _full_rows_parallel(X, mu, C, const, coef, nu, out, 8 * numba.get_num_threads())


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
def _count_range(X):
    """Largest count in ``X`` (0 for an empty array) as an int."""
    m = 0.0
    for t in range(X.shape[0]):
        for i in range(X.shape[1]):
            m = max(m, X[t, i])
    return int(m)


@njit(cache=True)
def log_factorials(X):
    """``sum_i lgamma(x_ti + 1)`` per step (``log prod_i x_ti!``); through a table of ``lgamma(j + 1)`` when
    the largest count is below the number of steps (counts repeat)."""
    T, d = X.shape
    M = _count_range(X)
    out = np.zeros(T)
    if M + 1 <= T:
        table = np.empty(M + 1)
        for j in range(M + 1):
            table[j] = math.lgamma(j + 1.0)
        for t in range(T):
            for i in range(d):
                out[t] += table[int(X[t, i])]
    else:
        for t in range(T):
            for i in range(d):
                out[t] += math.lgamma(X[t, i] + 1.0)
    return out


@njit(cache=True)
def poisson_rows(X, coef, offset, out):
    """Rows linear in the counts: ``out[t, k] = sum_i x_ti coef[k, i] - offset[k] - sum_i log x_ti!`` (the
    Poisson log-likelihood with ``coef = log rate``, ``offset = sum_i rate``; the expected one with
    ``coef = psi(a_n) - log b_n``, ``offset = sum_i a_n / b_n``)."""
    T, d = X.shape
    K = coef.shape[0]
    lgx = log_factorials(X)
    for t in range(T):
        for k in range(K):
            acc = -lgx[t] - offset[k]
            for i in range(d):
                acc += X[t, i] * coef[k, i]
            out[t, k] = acc


@njit(cache=True)
def nbinom_rows(X, r, logp, log1mp, out):
    """Negative-binomial rows (Gamma-Poisson predictive, thesis eq. 3.96), independent per column.

    ``out[t, k] = sum_i lgamma(x + r_ki) - lgamma(r_ki) - lgamma(x + 1) + r_ki log p_ki + x log(1 - p_ki)``;
    when the largest count is below the number of steps, each column's term is tabulated once per count value
    (``K d (max + 1)`` log-gamma calls instead of ``T K d``).
    """
    T, d = X.shape
    K = r.shape[0]
    lgr = np.empty((K, d))
    for k in range(K):
        for i in range(d):
            lgr[k, i] = math.lgamma(r[k, i])
    lgx = log_factorials(X)
    M = _count_range(X)
    if M + 1 <= T:
        table = np.empty((K, d, M + 1))
        for k in range(K):
            for i in range(d):
                for j in range(M + 1):
                    x = float(j)
                    table[k, i, j] = math.lgamma(x + r[k, i]) - lgr[k, i] + r[k, i] * logp[k, i] + x * log1mp[k, i]
        for t in range(T):
            for k in range(K):
                acc = -lgx[t]
                for i in range(d):
                    acc += table[k, i, int(X[t, i])]
                out[t, k] = acc
    else:
        for t in range(T):
            for k in range(K):
                acc = -lgx[t]
                for i in range(d):
                    x = X[t, i]
                    acc += math.lgamma(x + r[k, i]) - lgr[k, i] + r[k, i] * logp[k, i] + x * log1mp[k, i]
                out[t, k] = acc


#: family codes of :func:`predictive_rows` (each family's ``predictive_kernel``)
GAUSSIAN, DIAG_GAUSSIAN, POISSON = 0, 1, 2


@njit(cache=True)
def gaussian_predictive(X, S, hyper, out):
    """Normal-Wishart predictive rows (thesis eq. 3.96): multivariate Student-t with ``nu_n - d + 1`` degrees of
    freedom, location ``m_n``, scale ``Psi_n (kappa_n + 1) / (kappa_n (nu_n - d + 1))``; ``hyper`` =
    ``[kappa0, nu0, m0 (d), Psi0 (d*d)]`` (:meth:`induce.emissions.gaussian.Gaussian.predictive_kernel`)."""
    d = X.shape[1]
    K = S.shape[0]
    kn, nun, mn, _, chol, logdet = nw_posterior(S, hyper[2:2 + d], hyper[0], hyper[1],
                                                hyper[2 + d:2 + d + d * d].copy().reshape(d, d))
    const, coef, dof = np.empty(K), np.empty(K), np.empty(K)
    for k in range(K):
        dof[k] = nun[k] - d + 1.0
        c = (kn[k] + 1.0) / (kn[k] * dof[k])  # scale matrix = c Psi_n, factor sqrt(c) chol(Psi_n)
        const[k] = (math.lgamma((dof[k] + d) / 2.0) - math.lgamma(dof[k] / 2.0) - 0.5 * d * math.log(dof[k] * math.pi)
                    - 0.5 * (logdet[k] + d * math.log(c)))
        coef[k] = (dof[k] + d) / 2.0
        chol[k] *= math.sqrt(c)
    _full_rows_range(X, mn, chol, const, coef, dof, out, 0, X.shape[0])


@njit(cache=True)
def diag_gaussian_predictive(X, S, hyper, out):
    """Normal-Gamma predictive rows (thesis eq. 3.96): per dimension a Student-t with ``2 a_n`` degrees of
    freedom, location ``m_n``, squared scale ``b_n (kappa_n + 1) / (a_n kappa_n)``; ``hyper`` =
    ``[kappa0, a0, m0 (d), b0 (d)]`` (posterior as :meth:`induce.emissions.diag_gaussian.DiagGaussian.posterior`)."""
    d = X.shape[1]
    K = S.shape[0]
    kappa0, a0 = hyper[0], hyper[1]
    mn, prec, const, nu = np.empty((K, d)), np.empty((K, d)), np.empty(K), np.empty(K)
    for k in range(K):
        N = max(S[k, 0], 0.0)
        kn = kappa0 + N
        an = a0 + N / 2.0
        nu[k] = 2.0 * an
        const[k] = d * (math.lgamma((nu[k] + 1.0) / 2.0) - math.lgamma(nu[k] / 2.0) - 0.5 * math.log(nu[k] * math.pi))
        for i in range(d):
            m0 = hyper[2 + i]
            mn[k, i] = (kappa0 * m0 + S[k, 1 + i]) / kn
            bn = hyper[2 + d + i] + 0.5 * max(S[k, 1 + d + i] + kappa0 * m0 * m0 - kn * mn[k, i] * mn[k, i], 0.0)
            scale2 = bn * (kn + 1.0) / (an * kn)
            prec[k, i] = 1.0 / scale2
            const[k] -= 0.5 * math.log(scale2)
    diag_rows(X, mn, prec, const, nu, out)


@njit(cache=True)
def poisson_predictive(X, S, hyper, out):
    """Gamma-Poisson predictive rows (thesis eq. 3.96): negative binomial with ``r = a_n = a0 + sum x`` and
    ``p = b_n / (b_n + 1)``, ``b_n = b0 + N``; ``hyper`` = ``[b0, a0 (d)]``."""
    d = X.shape[1]
    K = S.shape[0]
    r, logp, log1mp = np.empty((K, d)), np.empty((K, d)), np.empty((K, d))
    for k in range(K):
        bn = hyper[0] + max(S[k, 0], 0.0)
        p = bn / (bn + 1.0)
        for i in range(d):
            r[k, i] = hyper[1 + i] + max(S[k, 1 + i], 0.0)
            logp[k, i] = math.log(p)
            log1mp[k, i] = math.log1p(-p)
    nbinom_rows(X, r, logp, log1mp, out)


@njit(cache=True)
def predictive_rows(code, hyper, X, S, out):
    """Collapsed predictive log-rows ``out (T, K)`` of family ``code`` (:data:`GAUSSIAN`, :data:`DIAG_GAUSSIAN`,
    :data:`POISSON`) with hyperparameters ``hyper`` given statistics ``S`` (thesis eq. 3.96)."""
    if code == GAUSSIAN:
        gaussian_predictive(X, S, hyper, out)
    elif code == DIAG_GAUSSIAN:
        diag_gaussian_predictive(X, S, hyper, out)
    else:
        poisson_predictive(X, S, hyper, out)
