"""Categorical emissions with a symmetric Dirichlet prior, on one integer-coded column.

Statistics row: the expected counts ``C_kw = sum_t q(z_t = k) [x_t = w]`` (thesis eq. 3.7); the
number of steps is the row sum.  Point estimates, ``E[log phi]`` and the collapsed predictive are the
estimators of :mod:`induce.infer.estimators` (thesis eq. 3.13, 3.22, 3.64).  This family serves
numeric series with a few discrete levels; the text tagger keeps its own gather fast path.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma

from ..errors import ConfigError
from ..infer.estimators import em_params, map_params
from ..infer.estimators import dirichlet_kl
from .base import EmissionFamily, as_rows, bad_step, register


@register("categorical")
class Categorical(EmissionFamily):
    """Dirichlet(beta)-categorical over ``n_symbols`` codes ``0..n_symbols-1`` (default: max code + 1)."""

    def __init__(self, beta: float = 0.5, n_symbols: int | None = None):
        super().__init__()
        self.beta = float(beta)
        self.n_symbols = None if n_symbols is None else int(n_symbols)
        self.dim = 1

    def check_data(self, X):
        X = super().check_data(X)
        if X.shape[1] != 1:
            raise ConfigError(f"categorical emissions take one column of integer codes, got {X.shape[1]}")
        bad = np.flatnonzero((X[:, 0] < 0) | (X[:, 0] != np.round(X[:, 0])))
        if bad.size:
            raise bad_step(bad[0], str(X[bad[0], 0]), "a non-negative integer code")
        if self.n_symbols is not None and X.shape[0] and X[:, 0].max() >= self.n_symbols:
            step = int(np.argmax(X[:, 0]))
            raise bad_step(step, str(int(X[step, 0])), f"a code below {self.n_symbols}")
        return X

    def codes(self, X) -> np.ndarray:
        """The column of checked data as int64 codes."""
        return X[:, 0].astype(np.int64)

    def default_prior(self, X):
        if self.n_symbols is None:
            x = self.codes(self.check_data(X))
            self.n_symbols = int(x.max()) + 1 if x.size else 1
        return self

    def prior_arrays(self):
        return {"beta": np.array(self.beta), "n_symbols": np.array(float(self.n_symbols))}

    def set_prior_arrays(self, arrays):
        self.beta = float(as_rows(arrays["beta"], "beta", ()))
        self.n_symbols = int(as_rows(arrays["n_symbols"], "n_symbols", ()))

    @property
    def n_stats(self):
        return self.n_symbols

    def counts(self, S):
        return S.sum(axis=1)

    def features(self, X):
        """One-hot codes ``(T, n_symbols)``."""
        F = np.zeros((X.shape[0], self.n_symbols))
        F[np.arange(X.shape[0]), self.codes(X)] = 1.0
        return F

    def stats(self, X, gamma):
        x = self.codes(X)
        S = np.zeros((gamma.shape[1], self.n_symbols))
        np.add.at(S.T, x, gamma)
        return S

    def point_estimate(self, S, map=True):
        return {"probs": map_params(S, self.beta) if map else em_params(S)}

    def _gather(self, X, table):
        return np.log(np.maximum(table.T[self.codes(X)], 1e-300))

    def log_likelihood(self, X, params):
        return self._gather(X, params["probs"])

    def expected_log_likelihood(self, X, S):
        """``psi(C_kw + beta) - psi(C_k. + W beta)`` (thesis eq. 3.22)."""
        C = np.maximum(S, 0.0)  # the columns of X's symbols only: O(T K) rows (a text vocabulary is large)
        return digamma(C.T[self.codes(X)] + self.beta) - digamma(C.sum(axis=1) + self.n_symbols * self.beta)

    def log_predictive(self, X, S):
        """``log (C_kw + beta) / (C_k. + W beta)`` (thesis eq. 3.64 = 3.96 for this pair)."""
        C = np.maximum(S, 0.0)  # cvi_params on the columns of X's symbols only
        rows = (C.T[self.codes(X)] + self.beta) / (C.sum(axis=1) + self.n_symbols * self.beta)
        return np.log(np.maximum(rows, 1e-300))

    def kl(self, S):
        return dirichlet_kl(np.maximum(S, 0.0) + self.beta, self.beta)

    def sample(self, params, state, rng):
        return np.array([float(rng.choice(self.n_symbols, p=params["probs"][state]))])

    def init_gamma(self, X, K, rng):
        """Random soft assignments (k-means on codes would impose an order on the symbols)."""
        return rng.dirichlet(np.ones(K), size=self.codes(X).shape[0])
