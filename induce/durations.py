"""Duration families of the explicit-duration HSMM (paper 002 section 2.4), each with a conjugate prior.

A state entered at some step stays for ``d`` steps, ``d ~ p(d | theta_k)`` on ``1, 2, ...``; the
messages (:mod:`induce.kernels.hsmm`) use the pmf at ``d = 1..D`` only (``D = max_duration``: the
truncation of paper 002 section 5, "limit the terms in the sums of (6) and (7)").  The pmf is *not*
renormalised over ``1..D``, so the complete-data likelihood of every segment keeps its conjugate form
and the M-step / mean-field update is the closed form below.

Every family here has the two sufficient statistics of a segment of duration ``d``: ``(d - 1, 1)``.
The statistics of a state are therefore ``S_k = (sum_d N_kd (d - 1), sum_d N_kd)`` from the expected
duration counts ``N`` ``(K, D)`` of paper 002 eq. 13, and the duration factor update of section 3.2 is
``eta_k <- eta_0 + S_k``.

* ``geometric``  -- ``p(d) = (1 - p) p^(d-1)``, ``p ~ Beta(a, b)``: the HMM's self-transition duration;
* ``negbin``     -- ``d - 1 ~ NB(r, p)``: ``p(d) = C(d + r - 2, d - 1) p^(d-1) (1 - p)^r`` (paper 002
  eq. 14 with fixed ``r``), ``p ~ Beta(a, b)``; ``r = 1`` is the geometric family;
* ``poisson``    -- ``d - 1 ~ Poisson(lam)``, ``lam ~ Gamma(a, b)`` (shape, rate);
* :class:`NegBinLearnedR` -- the negative binomial with ``r`` learned too (paper 002 section 5.2):
  ``r ~ Uniform{1..R}``, ``p | r ~ Beta(a, b)``; statistics ``(sum (d - 1), n, h_1 .. h_R)`` with the
  base-measure sums ``h_r = sum_d N_d log C(d + r - 2, d - 1)``.  Built by ``get_duration("negbin", D,
  r=None, max_r=R)``.

With fixed ``r`` the negative binomial HSMM is run through its HMM embedding
(:mod:`induce.infer.hsmm_embed`), which needs no ``max_duration``.

``get_duration(name, max_duration, **prior)`` builds one; :func:`register` adds a family.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln, digamma, gammaln, logsumexp

from .errors import ConfigError
from .plugins import Registry

DURATIONS = Registry("duration family")
register = DURATIONS.register


def get_duration(name, max_duration: int, **kw) -> "DurationFamily":
    """A duration family from a registered name (or an instance, returned as is)."""
    if isinstance(name, DurationFamily):
        return name
    if name == "negbin" and "r" in kw and kw["r"] is None:
        return NegBinLearnedR(max_duration, **{k: v for k, v in kw.items() if k != "r"})
    kw.pop("max_r", None)
    return DURATIONS.create(name, max_duration, **kw)


class DurationFamily:
    """Conjugate duration family with statistics ``S`` ``(K, 2)``: ``(sum (d - 1), number of segments)``."""

    name = "?"
    n_stats = 2

    def __init__(self, max_duration: int, a: float = 1.0, b: float = 1.0):
        if int(max_duration) < 1:
            raise ConfigError(f"max_duration must be at least 1, got {max_duration}")
        if not (a > 0 and b > 0):
            raise ConfigError(f"duration prior parameters must be positive, got a={a}, b={b}")
        self.max_duration = int(max_duration)
        self.a, self.b = float(a), float(b)

    @property
    def d_minus_1(self) -> np.ndarray:
        """``d - 1`` for ``d = 1..D``."""
        return np.arange(self.max_duration, dtype=np.float64)

    def stats(self, N: np.ndarray) -> np.ndarray:
        """``(K, 2)`` statistics ``(sum_d N_kd (d - 1), sum_d N_kd)`` of expected duration counts ``N``
        (K, D') over ``d = 1..D'`` (any width: sampled durations may exceed ``D``)."""
        N = np.asarray(N, dtype=np.float64)
        return np.stack([N @ np.arange(N.shape[1], dtype=np.float64), N.sum(axis=1)], axis=1)

    def header(self) -> dict:
        """JSON description for saved models."""
        return {"name": self.name, "max_duration": self.max_duration, "a": self.a, "b": self.b}

    # subclasses: posterior(S), point_estimate(S), log_pmf(params), expected_log_pmf(S), kl(S), mean(params),
    # log_predictive(S)


class _BetaDuration(DurationFamily):
    """``d - 1 ~ NB(r, p)`` with fixed ``r`` and ``p ~ Beta(a, b)`` (paper 002 eq. 14); the posterior is
    ``Beta(a + sum (d - 1), b + r * n)``."""

    r = 1.0

    def _log_base(self) -> np.ndarray:
        """``log C(d + r - 2, d - 1)`` for ``d = 1..D``."""
        return log_nb_base(self.d_minus_1, self.r)

    def posterior(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.a + S[:, 0], self.b + self.r * S[:, 1]

    def point_estimate(self, S: np.ndarray) -> dict[str, np.ndarray]:
        """MAP ``p = (A - 1) / (A + B - 2)`` of ``Beta(A, B)``, clipped inside (0, 1)."""
        A, B = self.posterior(S)
        p = np.where(A + B > 2.0, (A - 1.0) / np.maximum(A + B - 2.0, 1e-300), A / (A + B))
        return {"p": np.clip(p, 1e-12, 1.0 - 1e-12)}

    def log_pmf(self, params: dict) -> np.ndarray:
        """``(K, D)`` rows ``log C(d + r - 2, d - 1) + (d - 1) log p + r log(1 - p)``."""
        p = params["p"][:, None]
        return self._log_base() + self.d_minus_1 * np.log(p) + self.r * np.log1p(-p)

    def expected_log_pmf(self, S: np.ndarray) -> np.ndarray:
        """``E_q log p(d)`` with ``E log p = psi(A) - psi(A + B)``, ``E log(1 - p) = psi(B) - psi(A + B)``."""
        A, B = self.posterior(S)
        elp, el1p = digamma(A) - digamma(A + B), digamma(B) - digamma(A + B)
        return self._log_base() + self.d_minus_1 * elp[:, None] + self.r * el1p[:, None]

    def kl(self, S: np.ndarray) -> float:
        """``sum_k KL(Beta(A_k, B_k) || Beta(a, b))``."""
        A, B = self.posterior(S)
        psi = digamma(A + B)
        return float(np.sum(betaln(self.a, self.b) - betaln(A, B) + (A - self.a) * (digamma(A) - psi)
                            + (B - self.b) * (digamma(B) - psi)))

    def mean(self, params: dict) -> np.ndarray:
        """Untruncated mean duration ``1 + r p / (1 - p)``."""
        p = params["p"]
        return 1.0 + self.r * p / (1.0 - p)

    def log_predictive(self, S: np.ndarray) -> np.ndarray:
        """Collapsed predictive ``log int p(d | p) Beta(p; A, B) dp`` (K, D): the beta negative binomial
        ``C(d + r - 2, d - 1) B(A + d - 1, B + r) / B(A, B)`` (docs/hsmm_cvi.md eq. 5)."""
        A, B = self.posterior(S)
        return self._log_base() + betaln(A[:, None] + self.d_minus_1, B[:, None] + self.r) - betaln(A, B)[:, None]


@register("geometric")
class Geometric(_BetaDuration):
    """``p(d) = (1 - p) p^(d-1)``: with ``D >= T`` the HSMM with these durations is the HMM whose
    self-transition is ``p`` (the other transitions scaled by ``1 - p``)."""


@register("negbin")
class NegBin(_BetaDuration):
    """``d - 1 ~ NB(r, p)`` with fixed ``r`` (paper 002 eq. 14, ``p ~ Beta(a, b)``)."""

    def __init__(self, max_duration: int, r: float = 2.0, a: float = 1.0, b: float = 1.0):
        super().__init__(max_duration, a, b)
        if not r > 0:
            raise ConfigError(f"negbin r must be positive, got {r}")
        self.r = float(r)

    def header(self) -> dict:
        return {**super().header(), "r": self.r}


def log_nb_base(k, r):
    """``log C(k + r - 1, k)``: the negative binomial base measure of paper 002 eq. 14 at ``k = d - 1``
    (broadcasting ``k`` against ``r``)."""
    return gammaln(k + r) - gammaln(r) - gammaln(k + 1.0)


class NegBinLearnedR(DurationFamily):
    """``d - 1 ~ NB(r, p)`` with ``q(r) q(p | r)`` learned (paper 002 section 5.2): prior
    ``r ~ Uniform{1..R}``, ``p | r ~ Beta(a, b)``.

    Statistics ``S`` ``(K, 2 + R)``: ``(t_a, n, h_1 .. h_R)`` with ``t_a = sum_d N_d (d - 1)``, ``n =
    sum_d N_d`` and ``h_r = sum_d N_d log C(d + r - 2, d - 1)`` (the base-measure term ``h(r, D)`` of
    eq. 17).  Given them the optimal factors are (eq. 17 maximised over ``q(r, p)``; the batch, ``rho =
    1`` form of the section 5.2 update, derivation in docs/experiments/hsmm.md)::

        q(p | r) = Beta(a + t_a, b + r n)                                    (eq. 15-16 for each r)
        log q(r) = log p(r) + h_r + log B(a + t_a, b + r n) - log B(a, b) + const

    A stochastic step blends these statistics (``S <- (1 - rho) S + rho s S_batch``), which is the
    natural-gradient step of section 5.2 on ``q(p | r)`` and ``q(r)``'s statistics.
    """

    name = "negbin"
    r = None

    def __init__(self, max_duration: int, max_r: int = 10, a: float = 1.0, b: float = 1.0):
        super().__init__(max_duration, a, b)
        if int(max_r) < 1 or int(max_r) != max_r:
            raise ConfigError(f"negbin max_r must be a positive integer, got {max_r}")
        self.max_r = int(max_r)
        self.rs = np.arange(1, self.max_r + 1, dtype=np.float64)
        self.n_stats = 2 + self.max_r

    def header(self) -> dict:
        return {**super().header(), "r": None, "max_r": self.max_r}

    def stats(self, N: np.ndarray) -> np.ndarray:
        N = np.asarray(N, dtype=np.float64)
        base = log_nb_base(np.arange(N.shape[1], dtype=np.float64)[:, None], self.rs)  # (D', R)
        return np.concatenate([super().stats(N), N @ base], axis=1)

    def posterior(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``q(p | r) = Beta(A, B_r)``: ``A`` (K, 1), ``B`` (K, R)."""
        return self.a + S[:, :1], self.b + self.rs * S[:, 1:2]

    def log_qr(self, S: np.ndarray) -> np.ndarray:
        """``log q(r)`` (K, R), normalised (uniform prior ``p(r) = 1 / R``)."""
        A, B = self.posterior(S)
        v = S[:, 2:] + betaln(A, B)
        return v - logsumexp(v, axis=1, keepdims=True)

    def point_estimate(self, S: np.ndarray) -> dict[str, np.ndarray]:
        """Joint MAP of ``(r, p)``: ``p_r = (A - 1) / (A + B_r - 2)`` for every ``r``, then the ``r``
        maximising ``h_r + (A - 1) log p_r + (B_r - 1) log(1 - p_r)`` (the log posterior up to constants)."""
        A, B = self.posterior(S)
        p = np.clip(np.where(A + B > 2.0, (A - 1.0) / np.maximum(A + B - 2.0, 1e-300), A / (A + B)),
                    1e-12, 1.0 - 1e-12)
        obj = S[:, 2:] + (A - 1.0) * np.log(p) + (B - 1.0) * np.log1p(-p)
        best = obj.argmax(axis=1)
        rows = np.arange(S.shape[0])
        return {"r": self.rs[best], "p": p[rows, best]}

    def log_pmf(self, params: dict) -> np.ndarray:
        """``(K, D)`` NB log pmf at each state's own ``r`` and ``p``."""
        r, p = params["r"][:, None], params["p"][:, None]
        return log_nb_base(self.d_minus_1, r) + self.d_minus_1 * np.log(p) + r * np.log1p(-p)

    def expected_log_pmf(self, S: np.ndarray) -> np.ndarray:
        """``E_{q(r, p)} log p(d)`` (K, D) (paper 002 ``D~`` of the exact update, section 5.2)."""
        A, B = self.posterior(S)
        qr = np.exp(self.log_qr(S))
        elp, el1p = digamma(A) - digamma(A + B), digamma(B) - digamma(A + B)  # (K, R)
        base = log_nb_base(self.d_minus_1[:, None], self.rs)  # (D, R)
        return (qr @ base.T + (qr * elp).sum(axis=1, keepdims=True) * self.d_minus_1
                + (qr * self.rs * el1p).sum(axis=1, keepdims=True))

    def kl(self, S: np.ndarray) -> float:
        """``sum_k KL(q(r, p) || p(r, p)) = sum_k sum_r q(r) [log (R q(r)) + KL(Beta(A, B_r) || Beta(a, b))]``."""
        A, B = self.posterior(S)
        lq = self.log_qr(S)
        psi = digamma(A + B)
        kl_p = (betaln(self.a, self.b) - betaln(A, B) + (A - self.a) * (digamma(A) - psi)
                + (B - self.b) * (digamma(B) - psi))
        return float(np.sum(np.exp(lq) * (lq + np.log(self.max_r) + kl_p)))

    def log_predictive(self, S: np.ndarray, max_duration: int | None = None) -> np.ndarray:
        """``log E_{q(r, p)} p(d)`` (K, D) for ``d = 1..max_duration`` (default ``D``): the posterior
        predictive, a mixture over ``q(r)`` of beta negative binomials ``C(d + r - 2, d - 1)
        B(A + d - 1, B_r + r) / B(A, B_r)`` (the collapsed duration predictive of cvi2/scvi)."""
        A, B = self.posterior(S)
        k = np.arange(max_duration or self.max_duration, dtype=np.float64)[None, :, None]  # (1, D, 1) against (K, 1, R)
        terms = (log_nb_base(k, self.rs) + betaln(A[:, :, None] + k, (B + self.rs)[:, None, :])
                 - betaln(A, B)[:, None, :] + self.log_qr(S)[:, None, :])
        return logsumexp(terms, axis=2)

    def sample(self, S: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """One ``(r, p)`` per state from ``q(r) q(p | r)`` (the sampled update of section 5.2)."""
        A, B = self.posterior(S)
        qr = np.exp(self.log_qr(S))
        idx = np.array([rng.choice(self.max_r, p=row / row.sum()) for row in qr])
        rows = np.arange(S.shape[0])
        return {"r": self.rs[idx], "p": rng.beta(A[:, 0], B[rows, idx])}

    def mean(self, params: dict) -> np.ndarray:
        """Untruncated mean duration ``1 + r p / (1 - p)``."""
        return 1.0 + params["r"] * params["p"] / (1.0 - params["p"])


@register("poisson")
class Poisson(DurationFamily):
    """``d - 1 ~ Poisson(lam)``, ``lam ~ Gamma(a, b)`` (shape, rate): posterior ``Gamma(a + sum (d-1), b + n)``."""

    def __init__(self, max_duration: int, a: float = 1.0, b: float = 0.1):
        super().__init__(max_duration, a, b)

    def posterior(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.a + S[:, 0], self.b + S[:, 1]

    def point_estimate(self, S: np.ndarray) -> dict[str, np.ndarray]:
        """MAP ``lam = (A - 1) / B`` (the mean ``A / B`` when ``A < 1``)."""
        A, B = self.posterior(S)
        return {"lam": np.maximum(np.where(A >= 1.0, (A - 1.0) / B, A / B), 1e-12)}

    def log_pmf(self, params: dict) -> np.ndarray:
        """``(K, D)`` rows ``(d - 1) log lam - lam - log (d - 1)!``."""
        lam = params["lam"][:, None]
        k = self.d_minus_1
        return k * np.log(lam) - lam - gammaln(k + 1.0)

    def expected_log_pmf(self, S: np.ndarray) -> np.ndarray:
        """``E_q`` of the log pmf: ``E log lam = psi(A) - log B``, ``E lam = A / B``."""
        A, B = self.posterior(S)
        k = self.d_minus_1
        return k * (digamma(A) - np.log(B))[:, None] - (A / B)[:, None] - gammaln(k + 1.0)

    def kl(self, S: np.ndarray) -> float:
        """``sum_k KL(Gamma(A_k, B_k) || Gamma(a, b))``."""
        A, B = self.posterior(S)
        a, b = self.a, self.b
        return float(np.sum((A - a) * digamma(A) - gammaln(A) + gammaln(a) + a * (np.log(B) - np.log(b))
                            + A * (b - B) / B))

    def mean(self, params: dict) -> np.ndarray:
        """Untruncated mean duration ``1 + lam``."""
        return 1.0 + params["lam"]

    def log_predictive(self, S: np.ndarray) -> np.ndarray:
        """Collapsed predictive ``log int Poisson(d - 1; lam) Gamma(lam; A, B) dlam`` (K, D): the negative
        binomial ``NB(d - 1; A, B / (B + 1))`` (docs/hsmm_cvi.md eq. 4)."""
        A, B = self.posterior(S)
        k = self.d_minus_1
        return (gammaln(A[:, None] + k) - gammaln(A)[:, None] - gammaln(k + 1.0)
                + (A * np.log(B / (B + 1.0)))[:, None] - k * np.log1p(B)[:, None])
