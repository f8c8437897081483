"""Diagonal-covariance Gaussian emissions with an independent Normal-Gamma prior per dimension.

Prior per state and dimension ``i``: ``lambda_i ~ Gamma(a0, b0_i)`` (rate ``b0``),
``mu_i | lambda_i ~ N(m0_i, (kappa0 lambda_i)^{-1})`` (Murphy 2007 sec. 4 / Bishop eq. 2.154).
Statistics row: ``[N, sum_t x_t (d), sum_t x_t^2 (d)]``.  Posterior:

    kappa_n = kappa0 + N,  m_n = (kappa0 m0 + sum x) / kappa_n,
    a_n = a0 + N / 2,      b_n = b0 + (sum x^2 + kappa0 m0^2 - kappa_n m_n^2) / 2.

Collapsed predictive (thesis eq. 3.96): per dimension a Student-t with ``2 a_n`` degrees of freedom,
location ``m_n`` and squared scale ``b_n (kappa_n + 1) / (a_n kappa_n)``.
Data-scaled defaults: ``m0`` = data mean, ``kappa0 = 0.01``, ``a0 = 1``, ``b0`` = data variance
(prior mean precision ``a0 / b0`` = 1 / data variance).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import digamma

from ..kernels.emissions import DIAG_GAUSSIAN, diag_rows
from .base import EmissionFamily, as_rows, register
from .poisson import gamma_kl

_LOG_2PI = math.log(2.0 * math.pi)


@register("diag-gaussian")
class DiagGaussian(EmissionFamily):
    """Gaussian with diagonal covariance; Normal-Gamma prior ``(m0, kappa0, a0, b0)`` per dimension."""

    def __init__(self, m0=None, kappa0: float = 0.01, a0: float = 1.0, b0=None, min_covar: float = 1e-6):
        super().__init__()
        self.m0 = None if m0 is None else np.atleast_1d(np.asarray(m0, dtype=np.float64))
        self.kappa0 = float(kappa0)
        self.a0 = float(a0)
        self.b0 = None if b0 is None else np.atleast_1d(np.asarray(b0, dtype=np.float64))
        self.min_covar = float(min_covar)
        if self.m0 is not None:
            self.dim = self.m0.shape[0]

    def default_prior(self, X):
        X = self.check_data(X)
        self.dim = X.shape[1]
        if self.m0 is None:
            self.m0 = X.mean(axis=0)
        if self.b0 is None:
            var = X.var(axis=0) if X.shape[0] > 1 else np.ones(self.dim)
            self.b0 = self.a0 * np.maximum(var, 1e-12)
        return self

    def prior_arrays(self):
        return {"m0": self.m0, "kappa0": np.array(self.kappa0), "a0": np.array(self.a0), "b0": self.b0}

    def set_prior_arrays(self, arrays):
        d = int(np.asarray(arrays["m0"]).shape[0])
        self.dim = d
        self.m0 = as_rows(arrays["m0"], "m0", (d,))
        self.kappa0 = float(as_rows(arrays["kappa0"], "kappa0", ()))
        self.a0 = float(as_rows(arrays["a0"], "a0", ()))
        self.b0 = as_rows(arrays["b0"], "b0", (d,))

    @property
    def n_stats(self):
        return 1 + 2 * self.dim

    def features(self, X):
        """``<1, x, x^2>`` per step, ``(T, n_stats)``."""
        return np.hstack([np.ones((X.shape[0], 1)), X, X * X])

    def posterior(self, S):
        """``(kappa_n, m_n, a_n, b_n)``: shapes (K,), (K, d), (K,), (K, d)."""
        d = self.dim
        N = np.maximum(S[:, 0], 0.0)
        sx, sxx = S[:, 1:1 + d], S[:, 1 + d:]
        kn = self.kappa0 + N
        mn = (self.kappa0 * self.m0 + sx) / kn[:, None]
        an = self.a0 + N / 2.0
        bn = self.b0 + 0.5 * np.maximum(sxx + self.kappa0 * self.m0**2 - kn[:, None] * mn**2, 0.0)
        return kn, mn, an, bn

    def point_estimate(self, S, map=True):
        if map:
            kn, mn, an, bn = self.posterior(S)
            # joint mode of the Normal-Gamma posterior: precision (a_n - 1/2) / b_n
            return {"means": mn, "vars": bn / np.maximum(an - 0.5, 1e-12)[:, None]}
        d = self.dim
        N = np.maximum(S[:, 0], 0.0)
        safe = np.maximum(N, 1e-300)[:, None]
        mu = np.where(N[:, None] > 0, S[:, 1:1 + d] / safe, self.m0)
        var = np.where(N[:, None] > 0, S[:, 1 + d:] / safe - mu**2, self.b0 / self.a0)
        return {"means": mu, "vars": np.maximum(var, 0.0) + self.min_covar}

    def _rows(self, X, mu, prec, const, nu):
        out = np.empty((X.shape[0], mu.shape[0]))
        diag_rows(X, np.ascontiguousarray(mu), np.ascontiguousarray(prec), const, nu, out)
        return out

    def log_likelihood(self, X, params):
        prec = 1.0 / params["vars"]
        const = 0.5 * np.log(prec).sum(axis=1) - 0.5 * self.dim * _LOG_2PI
        return self._rows(X, params["means"], prec, const, np.zeros(prec.shape[0]))

    def expected_log_likelihood(self, X, S):
        """``sum_i 1/2 (psi(a_n) - log b_ni) - 1/2 log 2 pi - 1/(2 kappa_n) - a_n/(2 b_ni) (x_i - m_ni)^2``."""
        kn, mn, an, bn = self.posterior(S)
        d = self.dim
        const = 0.5 * (d * digamma(an) - np.log(bn).sum(axis=1)) - 0.5 * d * _LOG_2PI - 0.5 * d / kn
        return self._rows(X, mn, an[:, None] / bn, const, np.zeros(S.shape[0]))

    def predictive_kernel(self):
        return DIAG_GAUSSIAN, np.concatenate([[self.kappa0, self.a0], self.m0, self.b0])

    def log_predictive(self, X, S):
        return self.compiled_predictive(X, S)

    def kl(self, S):
        """Sum over states and dimensions of KL(Normal-Gamma posterior || prior):
        ``KL_Gamma(a_n, b_n || a0, b0)
        + 1/2 [kappa0/kappa_n - 1 + log(kappa_n/kappa0) + kappa0 a_n/b_n (m_n - m0)^2]``."""
        kn, mn, an, bn = self.posterior(S)
        an_b = np.broadcast_to(an[:, None], bn.shape)
        k0 = self.kappa0
        kl_n = 0.5 * (k0 / kn[:, None] - 1.0 + np.log(kn[:, None] / k0) + k0 * an_b / bn * (mn - self.m0) ** 2)
        return float(np.sum(kl_n) + np.sum(gamma_kl(an_b, bn, self.a0, self.b0)))

    def sample(self, params, state, rng):
        return rng.normal(params["means"][state], np.sqrt(params["vars"][state]))

    def header(self):
        return {"name": self.name, "dim": self.dim, "min_covar": self.min_covar}
