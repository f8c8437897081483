"""Full-covariance Gaussian emissions with a Normal-Wishart prior.

Prior (Bishop 2006 sec. 10.2; Murphy 2007 "Conjugate Bayesian analysis of the Gaussian"):
``Lambda_k ~ Wishart(Psi0^{-1}, nu0)``, ``mu_k | Lambda_k ~ N(m0, (kappa0 Lambda_k)^{-1})``.
Statistics row: ``[N, sum_t x_t (d), sum_t x_t x_t' (d*d)]`` weighted by ``q(z_t = k)``.
Posterior (eq. 3.85-3.86 in this parametrisation):

    kappa_n = kappa0 + N,   nu_n = nu0 + N,   m_n = (kappa0 m0 + sum x) / kappa_n,
    Psi_n   = Psi0 + sum x x' + kappa0 m0 m0' - kappa_n m_n m_n'.

Collapsed predictive (thesis eq. 3.96): multivariate Student-t with ``nu_n - d + 1`` degrees of
freedom, location ``m_n`` and scale ``Psi_n (kappa_n + 1) / (kappa_n (nu_n - d + 1))``.

Data-scaled defaults (``None``): ``m0`` = data mean, ``kappa0 = 0.01``, ``nu0 = d + 2`` and
``Psi0`` = data covariance (so the prior mean of the covariance, ``Psi0 / (nu0 - d - 1)``, is the
data covariance, worth ``d + 2`` pseudo-observations).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import digamma, multigammaln

from ..kernels.emissions import GAUSSIAN, full_rows, nw_posterior
from ..errors import ConfigError
from .base import EmissionFamily, as_rows, bad_step, register

_LOG_2PI = math.log(2.0 * math.pi)
#: largest magnitude of a modelled value: the statistics sum x x' over the steps, so x^2 times the number of steps
#: must stay finite in float64 (1e100^2 = 1e200, well below 1.8e308)
MAX_MAGNITUDE = 1e100


@register("gaussian")
class Gaussian(EmissionFamily):
    """Gaussian with full covariance; Normal-Wishart prior ``(m0, kappa0, nu0, Psi0)``."""

    def __init__(self, m0=None, kappa0: float = 0.01, nu0: float | None = None, Psi0=None, min_covar: float = 1e-6):
        super().__init__()
        self.m0 = None if m0 is None else np.atleast_1d(np.asarray(m0, dtype=np.float64))
        self.kappa0 = float(kappa0)
        self.nu0 = None if nu0 is None else float(nu0)
        self.Psi0 = None if Psi0 is None else np.atleast_2d(np.asarray(Psi0, dtype=np.float64))
        self.min_covar = float(min_covar)
        if self.m0 is not None:
            self.dim = self.m0.shape[0]

    def check_data(self, X):
        """Finite values (the base check) of magnitude at most :data:`MAX_MAGNITUDE`."""
        X = super().check_data(X)
        big = np.flatnonzero(np.any(np.abs(X) > MAX_MAGNITUDE, axis=1))
        if big.size:
            raise bad_step(big[0], str(X[big[0]].tolist()), f"values of magnitude at most {MAX_MAGNITUDE:g} "
                           "(rescale the column)")
        return X

    def default_prior(self, X):
        X = self.check_data(X)
        if X.shape[0] > 1 and np.all(X == X[0]):
            raise ConfigError("gaussian emissions: every modelled value is the same; there is nothing to segment "
                              "(drop the constant columns)")
        d = X.shape[1]
        self.dim = d
        if self.m0 is None:
            self.m0 = X.mean(axis=0)
        if self.nu0 is None:
            self.nu0 = d + 2.0
        if self.Psi0 is None:
            cov = np.atleast_2d(np.cov(X, rowvar=False)) if X.shape[0] > 1 else np.eye(d)
            self.Psi0 = cov + 1e-6 * max(np.trace(cov) / d, 1e-12) * np.eye(d)
        return self

    def prior_arrays(self):
        return {"m0": self.m0, "kappa0": np.array(self.kappa0), "nu0": np.array(self.nu0), "Psi0": self.Psi0}

    def set_prior_arrays(self, arrays):
        d = int(np.asarray(arrays["m0"]).shape[0])
        self.dim = d
        self.m0 = as_rows(arrays["m0"], "m0", (d,))
        self.kappa0 = float(as_rows(arrays["kappa0"], "kappa0", ()))
        self.nu0 = float(as_rows(arrays["nu0"], "nu0", ()))
        self.Psi0 = as_rows(arrays["Psi0"], "Psi0", (d, d))

    @property
    def n_stats(self):
        return 1 + self.dim + self.dim * self.dim

    def features(self, X):
        """``<1, x, x x'>`` per step, ``(T, n_stats)``."""
        T, d = X.shape
        return np.hstack([np.ones((T, 1)), X, (X[:, :, None] * X[:, None, :]).reshape(T, d * d)])


    def _split(self, S):
        d = self.dim
        N = np.maximum(S[:, 0], 0.0)
        return N, S[:, 1:1 + d], S[:, 1 + d:].reshape(-1, d, d)

    def _posterior(self, S):
        """``(kappa_n, nu_n, m_n, Psi_n, chol(Psi_n), log|Psi_n|)`` per state (one compiled call)."""
        return nw_posterior(np.ascontiguousarray(S, dtype=np.float64), self.m0, self.kappa0, self.nu0, self.Psi0)

    def posterior(self, S):
        """``(kappa_n, nu_n, m_n, Psi_n)`` per state from prior + ``S``."""
        return self._posterior(S)[:4]

    def point_estimate(self, S, map=True):
        d = self.dim
        if map:
            kn, nun, mn, Psin = self.posterior(S)
            # joint mode of the Normal-inverse-Wishart posterior
            return {"means": mn, "covars": Psin / (nun + d + 2.0)[:, None, None]}
        N, sx, sxx = self._split(S)
        safe = np.maximum(N, 1e-300)[:, None]
        mu = np.where(N[:, None] > 0, sx / safe, self.m0)
        cov = sxx / safe[:, :, None] - mu[:, :, None] * mu[:, None, :]
        cov = np.where(N[:, None, None] > 0, cov, self.Psi0)
        return {"means": mu, "covars": cov + self.min_covar * np.eye(d)}

    def _rows(self, X, mu, C, const, coef, nu):
        out = np.empty((X.shape[0], mu.shape[0]))
        full_rows(X, np.ascontiguousarray(mu), np.ascontiguousarray(C), const, coef, nu, out)
        return out

    def log_likelihood(self, X, params):
        C = np.linalg.cholesky(params["covars"])
        K = C.shape[0]
        const = -np.log(np.diagonal(C, axis1=1, axis2=2)).sum(axis=1) - 0.5 * self.dim * _LOG_2PI
        return self._rows(X, params["means"], C, const, np.full(K, 0.5), np.zeros(K))

    def _expected_logdet(self, nun, logdet_psi):
        """``E[log |Lambda|] = sum_i psi((nu_n + 1 - i)/2) + d log 2 - log |Psi_n|`` (Bishop eq. 10.65)."""
        d = self.dim
        i = np.arange(1, d + 1)
        return digamma((nun[:, None] + 1.0 - i) / 2.0).sum(axis=1) + d * math.log(2.0) - logdet_psi

    def expected_log_likelihood(self, X, S):
        """``1/2 E log|Lambda| - d/2 log 2 pi - d/(2 kappa_n) - nu_n/2 (x - m_n)' Psi_n^{-1} (x - m_n)``
        (Bishop eq. 10.64)."""
        kn, nun, mn, _, chol, logdet = self._posterior(S)
        d = self.dim
        # E[Lambda]^{-1} = Psi_n / nu_n, whose Cholesky factor is chol(Psi_n) / sqrt(nu_n)
        const = 0.5 * self._expected_logdet(nun, logdet) - 0.5 * d * _LOG_2PI - 0.5 * d / kn
        K = S.shape[0]
        return self._rows(X, mn, chol / np.sqrt(nun)[:, None, None], const, np.full(K, 0.5), np.zeros(K))

    def predictive_kernel(self):
        return GAUSSIAN, np.concatenate([[self.kappa0, self.nu0], self.m0, self.Psi0.ravel()])

    def log_predictive(self, X, S):
        return self.compiled_predictive(X, S)

    def kl(self, S):
        """``KL(NW(m_n, kappa_n, Psi_n, nu_n) || NW(m0, kappa0, Psi0, nu0))`` summed over states.

        Wishart part (scale ``W = Psi^{-1}``) plus the expected Gaussian part
        ``1/2 [d kappa0/kappa_n - d + d log(kappa_n/kappa0) + kappa0 nu_n D' Psi_n^{-1} D]``, ``D = m_n - m0``.
        """
        kn, nun, mn, Psin, _, logdet_n = self._posterior(S)
        d, k0, nu0 = self.dim, self.kappa0, self.nu0
        logdet_0 = np.linalg.slogdet(self.Psi0)[1]
        Pinv = np.linalg.inv(Psin)
        tr = np.einsum("ij,kji->k", self.Psi0, Pinv)
        e_logdet = self._expected_logdet(nun, logdet_n)
        kl_w = (nun / 2.0 * logdet_n - nu0 / 2.0 * logdet_0 - (nun - nu0) * d / 2.0 * math.log(2.0)
                - multigammaln(nun / 2.0, d) + multigammaln(nu0 / 2.0, d)
                + (nun - nu0) / 2.0 * e_logdet - nun * d / 2.0 + nun / 2.0 * tr)
        D = mn - self.m0
        quad = np.einsum("ki,kij,kj->k", D, Pinv, D)
        kl_n = 0.5 * (d * k0 / kn - d + d * np.log(kn / k0) + k0 * nun * quad)
        return float(np.sum(kl_w + kl_n))

    def sample(self, params, state, rng):
        return rng.multivariate_normal(params["means"][state], params["covars"][state])

    def header(self):
        return {"name": self.name, "dim": self.dim, "min_covar": self.min_covar}
