"""The emission-family interface of HMMs with conjugate exponential-family emissions.

Thesis section 3.7: a state ``k`` emits ``x`` from ``p(x | eta_k) = h(x) exp(eta_k' s(x) - a_l(eta_k))``
(eq. 3.83) with a conjugate prior ``p(eta_k | lambda)`` (eq. 3.84).  Everything an inference
algorithm needs from a family is a function of the *expected sufficient statistics* per state

    S_k = < sum_t q(z_t = k) s(x_t),  sum_t q(z_t = k) >      (eq. 3.85-3.86, 3.102)

stored as one float array ``S`` of shape ``(K, n_stats)`` whose layout each family defines.
Because statistics are plain arrays, the algorithms need only arithmetic on them: cvi2 subtracts
a sequence's own statistics, SVI/SCVI blend ``S <- (1 - rho) S + rho * scale * S_batch``
(eq. 3.103-3.104, :func:`induce.infer.schedules.blend`).

A family turns ``S`` (plus its prior) into per-step, per-state log-likelihood rows ``(T, K)``
for the chain kernel :func:`induce.kernels.hmm.forward_backward`:

* :meth:`EmissionFamily.log_likelihood` -- ``log p(x_t | eta_k)`` at point parameters (EM/MAP);
* :meth:`EmissionFamily.expected_log_likelihood` -- ``E_q[log p(x_t | eta_k)]`` with ``q`` the
  posterior from prior + ``S`` (VI/SVI, thesis eq. 3.21 in general form);
* :meth:`EmissionFamily.log_predictive` -- the collapsed posterior predictive
  ``log h(x) + a_g(lambda_k + <s(x), 1>) - a_g(lambda_k)`` (thesis eq. 3.96, 3.100) given ``S``.

A new family is one module with a subclass decorated by :func:`register`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..errors import ConfigError, CorpusFormatError
from ..plugins import Registry

FAMILIES = Registry("emission family")
register = FAMILIES.register


def family_names() -> list[str]:
    """Names of every family: each module of this package is imported once, so that a new family
    needs only its module with a :func:`register`-decorated class."""
    import importlib
    import pkgutil

    package = __name__.rsplit(".", 1)[0]
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        importlib.import_module(f"{package}.{module.name}")
    return sorted(FAMILIES)


def get_family(family, **kw) -> "EmissionFamily":
    """A family object from a registered name (constructed with ``kw``) or an instance (returned as is)."""
    if isinstance(family, EmissionFamily):
        return family
    if family not in FAMILIES:
        family_names()  # import every family module, then look again
    return FAMILIES.create(family, **kw)


class EmissionFamily(ABC):
    """A conjugate emission family: prior hyperparameters plus arithmetic on statistics arrays.

    Data ``X`` are ``(T, dim)`` float arrays (categorical: integer codes in one column).
    Hyperparameters left as ``None`` are set from data by :meth:`default_prior`.  Only
    :meth:`check_data` and :meth:`default_prior` validate; every other method takes data that has
    been through :meth:`check_data` once (validation stays out of the per-iteration path).
    """

    name = "?"

    def __init__(self):
        self.dim: int | None = None

    # ----------------------------------------------------------- data and prior
    def check_data(self, X: np.ndarray) -> np.ndarray:
        """``X`` as a 2-D float array of finite values with this family's dimension."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2:
            raise ConfigError(f"{self.name} emissions take (T, dim) arrays, got shape {X.shape}")
        finite = np.isfinite(X).all(axis=1)
        if not finite.all():
            step = int(np.argmin(finite))
            raise bad_step(step, str(X[step].tolist()), "finite numeric values")
        if self.dim is not None and X.shape[1] != self.dim:
            raise ConfigError(f"{self.name} emissions were set up for {self.dim} columns, got {X.shape[1]}")
        return X

    @abstractmethod
    def default_prior(self, X: np.ndarray) -> "EmissionFamily":
        """Fill unset hyperparameters from the data ``X`` (all sequences stacked); returns ``self``."""

    @abstractmethod
    def prior_arrays(self) -> dict[str, np.ndarray]:
        """The resolved hyperparameters as named arrays (for saving a model)."""

    @abstractmethod
    def set_prior_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`prior_arrays` (validates shapes)."""

    # ------------------------------------------------------------- statistics
    @property
    @abstractmethod
    def n_stats(self) -> int:
        """Length of one state's statistics row."""

    def zero_stats(self, K: int) -> np.ndarray:
        """All-zero statistics ``(K, n_stats)``."""
        return np.zeros((K, self.n_stats))

    @abstractmethod
    def features(self, X: np.ndarray) -> np.ndarray:
        """Per-step statistics ``<s(x_t), 1>`` as ``(T, n_stats)`` rows in the layout of ``S``."""

    def stats(self, X: np.ndarray, gamma: np.ndarray) -> np.ndarray:
        """Expected sufficient statistics ``S_k = sum_t gamma[t, k] <s(x_t), 1>`` (thesis eq. 3.102):
        ``gamma' features(X)``."""
        return gamma.T @ self.features(X)

    def counts(self, S: np.ndarray) -> np.ndarray:
        """Expected number of steps per state ``sum_t q(z_t = k)`` (the ``<., 1>`` part of ``S``)."""
        return S[:, 0]

    # ----------------------------------------------------------- log-potentials
    @abstractmethod
    def point_estimate(self, S: np.ndarray, map: bool = True) -> dict[str, np.ndarray]:
        """Point parameters from statistics: the posterior mode (``map=True``) or the ML estimate."""

    @abstractmethod
    def log_likelihood(self, X: np.ndarray, params: dict[str, np.ndarray]) -> np.ndarray:
        """``(T, K)`` rows ``log p(x_t | eta_k)`` at point parameters."""

    @abstractmethod
    def expected_log_likelihood(self, X: np.ndarray, S: np.ndarray) -> np.ndarray:
        """``(T, K)`` rows ``E_q[log p(x_t | eta_k)]``, ``q(eta_k)`` the posterior given prior + ``S``."""

    @abstractmethod
    def log_predictive(self, X: np.ndarray, S: np.ndarray) -> np.ndarray:
        """``(T, K)`` rows of the collapsed posterior predictive ``log p(x_t | S_k)`` (thesis eq. 3.96)."""

    def predictive_kernel(self) -> tuple[int, np.ndarray] | None:
        """``(code, hyper)`` of this family's compiled predictive rows
        (:func:`induce.kernels.emissions.predictive_rows`), which let cvi2 sweep many items in one compiled
        loop; ``None`` (the default) for a family without one, whose :meth:`log_predictive` cvi2 then
        calls item by item."""
        return None

    def compiled_predictive(self, X: np.ndarray, S: np.ndarray) -> np.ndarray:
        """:meth:`log_predictive` by the family's :meth:`predictive_kernel`."""
        from ..kernels.emissions import predictive_rows

        code, hyper = self.predictive_kernel()
        out = np.empty((X.shape[0], S.shape[0]))
        predictive_rows(code, hyper, np.ascontiguousarray(X, dtype=np.float64),
                        np.ascontiguousarray(S, dtype=np.float64), out)
        return out

    @abstractmethod
    def kl(self, S: np.ndarray) -> float:
        """``sum_k KL(q(eta_k) || p(eta_k))`` with ``q`` the posterior given prior + ``S`` (ELBO term)."""

    @abstractmethod
    def sample(self, params: dict[str, np.ndarray], state: int, rng: np.random.Generator) -> np.ndarray:
        """One observation ``x ~ p(. | eta_state)`` at point parameters."""

    def init_gamma(self, X: np.ndarray, K: int, rng: np.random.Generator) -> np.ndarray:
        """Initial responsibilities ``(T, K)``: a k-means clustering of the stacked data, 0.9 on the cluster."""
        from sklearn.cluster import KMeans

        X = self.check_data(X)
        n = max(1, min(K, len(np.unique(X, axis=0))))
        labels = KMeans(n_clusters=n, n_init=3, random_state=int(rng.integers(2**31))).fit_predict(X)
        gamma = np.full((X.shape[0], K), 0.1 / K)
        gamma[np.arange(X.shape[0]), labels] += 0.9
        return gamma

    def header(self) -> dict:
        """JSON-serialisable description (name, dimension, scalar hyperparameters) for saved models."""
        return {"name": self.name, "dim": self.dim}


def bad_step(step: int, text: str, expected: str) -> CorpusFormatError:
    """A data error at 0-based ``step`` of a sequence; readers map ``error.step`` to ``file:line``."""
    error = CorpusFormatError(None, None, text, f"{expected} (step {step})")
    error.step = int(step)
    error.bare = expected
    return error


def as_rows(values: np.ndarray, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Validate a loaded hyperparameter array: finite, of the given shape."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != shape or not np.all(np.isfinite(values)):
        from ..errors import ModelFormatError

        raise ModelFormatError(f"hyperparameter {name!r}: expected finite values of shape {shape}, got {values.shape}")
    return values
