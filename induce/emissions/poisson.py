"""Poisson emissions (independent per column) with a Gamma prior on each rate.

Prior ``lambda_ki ~ Gamma(a0_i, b0)`` (shape, rate).  Statistics row: ``[N, sum_t x_t (d)]``.
Posterior ``a_n = a0 + sum x``, ``b_n = b0 + N``.  Collapsed predictive (thesis eq. 3.96): negative
binomial with ``r = a_n`` and success probability ``p = b_n / (b_n + 1)`` (scipy's ``nbinom(r, p)``).
Expected log-likelihood ``x (psi(a_n) - log b_n) - a_n / b_n - log x!``.
Data-scaled defaults: ``b0 = 1`` (one pseudo-step) and ``a0`` = data mean per column (prior mean rate
= data mean).  Values must be non-negative integers.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln

from ..kernels.emissions import POISSON, poisson_rows
from .base import EmissionFamily, as_rows, bad_step, register


def gamma_kl(a1, b1, a0, b0):
    """Elementwise ``KL(Gamma(a1, b1) || Gamma(a0, b0))`` (shape, rate)."""
    return ((a1 - a0) * digamma(a1) - gammaln(a1) + gammaln(a0) + a0 * (np.log(b1) - np.log(b0))
            + a1 * (b0 - b1) / b1)


@register("poisson")
class Poisson(EmissionFamily):
    """Independent Poisson counts per column; Gamma(a0, b0) prior on each rate."""

    def __init__(self, a0=None, b0: float = 1.0):
        super().__init__()
        self.a0 = None if a0 is None else np.atleast_1d(np.asarray(a0, dtype=np.float64))
        self.b0 = float(b0)
        if self.a0 is not None:
            self.dim = self.a0.shape[0]

    def check_data(self, X):
        X = super().check_data(X)
        bad = np.flatnonzero(np.any((X < 0) | (X != np.round(X)), axis=1))
        if bad.size:
            raise bad_step(bad[0], str(X[bad[0]].tolist()), "non-negative integer counts")
        return X

    def default_prior(self, X):
        X = self.check_data(X)
        self.dim = X.shape[1]
        if self.a0 is None:
            self.a0 = np.maximum(X.mean(axis=0), 1e-2) * self.b0
        return self

    def prior_arrays(self):
        return {"a0": self.a0, "b0": np.array(self.b0)}

    def set_prior_arrays(self, arrays):
        d = int(np.asarray(arrays["a0"]).shape[0])
        self.dim = d
        self.a0 = as_rows(arrays["a0"], "a0", (d,))
        self.b0 = float(as_rows(arrays["b0"], "b0", ()))

    @property
    def n_stats(self):
        return 1 + self.dim

    def features(self, X):
        """``<1, x>`` per step, ``(T, n_stats)``."""
        return np.hstack([np.ones((X.shape[0], 1)), X])

    def posterior(self, S):
        """``(a_n, b_n)`` of shapes (K, d) and (K,)."""
        return self.a0 + np.maximum(S[:, 1:], 0.0), self.b0 + np.maximum(S[:, 0], 0.0)

    def point_estimate(self, S, map=True):
        if map:
            an, bn = self.posterior(S)
            return {"rates": np.maximum(an - 1.0, 1e-10) / bn[:, None]}
        N = np.maximum(S[:, 0], 0.0)[:, None]
        return {"rates": np.where(N > 0, np.maximum(S[:, 1:], 1e-10) / np.maximum(N, 1e-300), self.a0 / self.b0)}

    def _linear_rows(self, X, coef, offset):
        """``sum_i x_i coef_ki - offset_k - sum_i log x_i!`` (:func:`induce.kernels.emissions.poisson_rows`)."""
        out = np.empty((X.shape[0], coef.shape[0]))
        poisson_rows(np.ascontiguousarray(X, dtype=np.float64), np.ascontiguousarray(coef, dtype=np.float64),
                     np.ascontiguousarray(offset, dtype=np.float64), out)
        return out

    def log_likelihood(self, X, params):
        rates = params["rates"]
        return self._linear_rows(X, np.log(rates), rates.sum(axis=1))

    def expected_log_likelihood(self, X, S):
        an, bn = self.posterior(S)
        return self._linear_rows(X, digamma(an) - np.log(bn)[:, None], (an / bn[:, None]).sum(axis=1))

    def predictive_kernel(self):
        return POISSON, np.concatenate([[self.b0], self.a0])

    def log_predictive(self, X, S):
        return self.compiled_predictive(X, S)

    def kl(self, S):
        an, bn = self.posterior(S)
        return float(np.sum(gamma_kl(an, bn[:, None], self.a0, self.b0)))

    def sample(self, params, state, rng):
        return rng.poisson(params["rates"][state]).astype(np.float64)
