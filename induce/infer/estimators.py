"""Estimators: expected counts -> the parameters fed to a model's dynamic program.

Every model in induce keeps its sufficient statistics as plain count arrays whose
last axis is the outcome of a categorical distribution (a row of a transition,
emission, rule or translation table).  The inference algorithms differ in how
they turn counts ``C`` with a symmetric Dirichlet prior ``a`` into the
parameters the dynamic program sees (thesis ch. 3):

* ``em``   -- maximum likelihood ``C / C.`` (thesis eq. 3.13-3.14), or MAP with
  the prior ``(C + a - 1) / (C. + K(a - 1))`` clipped at 0;
* ``vi``   -- inverted expected natural parameters
  ``exp(psi(C + a)) / exp(psi(C. + K a))`` (thesis eq. 3.21-3.22), which are
  *sub*-normalised;
* ``cvi``  -- surrogate parameters from the other items' counts
  ``(C^{\\i} + a) / (C.^{\\i} + K a)`` (thesis eq. 3.49-3.50).  The exclusion of
  item ``i`` happens in the model's compiled pass (subtract, run the dynamic
  program, add back); :func:`cvi_params` is the same formula for whole tables.

These work on whole tables; the compiled passes evaluate the ``cvi`` formula
per entry with :func:`induce.kernels.ratio.cvi_ratio_nb`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln

ESTIMATORS = ("em", "map", "vi", "cvi")

_TINY = 1e-300


def em_params(counts: np.ndarray) -> np.ndarray:
    """Maximum-likelihood rows ``C / C.``; an all-zero row becomes uniform."""
    counts = np.asarray(counts, dtype=np.float64)
    totals = counts.sum(axis=-1, keepdims=True)
    k = counts.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), 1.0 / k)
    return out


def map_params(counts: np.ndarray, prior: float) -> np.ndarray:
    """MAP rows under Dir(prior): ``max(C + a - 1, 0)`` normalised.

    For ``prior < 1`` the mode is at the boundary; clipping at zero and
    renormalising is the usual convention (all-zero rows become uniform).
    """
    return em_params(np.maximum(np.asarray(counts, dtype=np.float64) + prior - 1.0, 0.0))


def vi_params(counts: np.ndarray, prior: float) -> np.ndarray:
    """``exp(psi(C + a) - psi(C. + K a))`` row-wise (thesis eq. 3.21-3.22)."""
    counts = np.asarray(counts, dtype=np.float64)
    k = counts.shape[-1]
    return np.exp(digamma(counts + prior) - digamma(counts.sum(axis=-1, keepdims=True) + k * prior))


def cvi_params(counts: np.ndarray, prior: float) -> np.ndarray:
    """Posterior-mean rows ``(C + a) / (C. + K a)`` (thesis eq. 3.49-3.50 with C = C^{\\i})."""
    counts = np.asarray(counts, dtype=np.float64)
    k = counts.shape[-1]
    return (counts + prior) / (counts.sum(axis=-1, keepdims=True) + k * prior)


def params_from_counts(estimator: str, counts: np.ndarray, prior: float) -> np.ndarray:
    """Dispatch on the estimator name (``em``, ``map``, ``vi``, ``cvi``)."""
    if estimator == "em":
        return em_params(counts)
    if estimator == "map":
        return map_params(counts, prior)
    if estimator == "vi":
        return vi_params(counts, prior)
    if estimator == "cvi":
        return cvi_params(counts, prior)
    raise ValueError(f"unknown estimator {estimator!r}; expected one of {ESTIMATORS}")


def selected_params(estimator: str, counts: np.ndarray, totals: np.ndarray, prior: float, n_outcomes: int) -> np.ndarray:
    """Parameters of a few outcomes of distributions whose totals are known.

    ``counts[r, k]`` is the count of selected outcome ``r`` in distribution
    ``k`` (e.g. the emission counts of the words of a minibatch, by state) and
    ``totals[k]`` the total count of distribution ``k`` over all ``n_outcomes``.
    ``cvi``: ``(C + a) / (C. + n a)`` (thesis eq. 3.50, 3.109); ``vi``:
    ``exp(psi(C + a) - psi(C. + n a))`` (eq. 3.22).  Stochastic inference uses
    this so that a minibatch touches only the rows of the words it contains.
    """
    counts = np.maximum(np.asarray(counts, dtype=np.float64), 0.0)
    totals = np.maximum(np.asarray(totals, dtype=np.float64), 0.0)
    if estimator == "cvi":
        return (counts + prior) / (totals + n_outcomes * prior)
    if estimator == "vi":
        return np.exp(digamma(counts + prior) - digamma(totals + n_outcomes * prior))
    raise ValueError(f"selected_params supports 'cvi' and 'vi', not {estimator!r}")


def dirichlet_kl(posterior: np.ndarray, prior) -> float:
    """``sum_rows KL(Dir(posterior_row) || Dir(prior_row))``; ``prior`` a scalar (symmetric) or an array
    broadcasting to ``posterior``."""
    prior = np.broadcast_to(np.asarray(prior, dtype=np.float64), posterior.shape)
    tot = posterior.sum(axis=-1)
    return float(
        np.sum(gammaln(tot) - gammaln(posterior).sum(axis=-1) - gammaln(prior.sum(axis=-1))
               + gammaln(prior).sum(axis=-1))
        + np.sum((posterior - prior) * (digamma(posterior) - digamma(tot)[..., None]))
    )
