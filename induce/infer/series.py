"""Inference for HMMs with any conjugate emission family over a list of numeric sequences.

Global state is two statistics arrays without the prior: expected transition counts ``C``
(``(K+1, K)``, row 0 the start state) and emission statistics ``S`` (``(K, n_stats)``, see
:mod:`induce.emissions.base`).  Per step, every algorithm turns them into transition parameters
(:mod:`induce.infer.estimators`) and emission log-rows (the family), runs the one chain kernel
:func:`induce.kernels.hmm.forward_backward`, and collects new statistics:

* ``em``   -- MAP point estimates (eq. 3.13-3.14 with the prior), rows ``log p(x | eta*)``;
* ``vi``   -- mean field, ``exp E[log theta]`` (eq. 3.21-3.22) and rows ``E_q[log p(x | eta)]``;
  objective the ELBO ``sum_i log Z_i - KL(q(theta)||p) - KL(q(eta)||p)``, which never decreases;
* ``cvi2`` -- thesis 3.7.1: per item subtract its own transition and emission statistics,
  surrogate transitions ``(C^{\\i} + a)/(C.^{\\i} + K a)`` (eq. 3.49) and predictive rows
  (eq. 3.96), forward-backward, add the new statistics back
  (:func:`induce.algorithms.cvi2.family_sweep`: the family's compiled loop or the Python sweep);
* ``svi`` / ``scvi`` -- thesis 3.7.2 (eq. 3.98-3.104), written once for every model and family in
  :mod:`induce.algorithms.minibatch`; the scale of the blend is all steps / minibatch steps.

Items are whole sequences for ``em`` and ``vi``.  For ``cvi2``, ``svi`` and ``scvi`` a few long
sequences are cut into subsequences of ``subsequence_length`` steps that act as items (thesis 3.6's
one-long-series setting; each piece starts from the start row, the boundary dependence is dropped
while fitting; decoding and scoring always run on whole sequences).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..algorithms import minibatch
from ..algorithms.cvi2 import family_sweep
from ..algorithms.loop import SeriesLoop
from ..emissions.base import EmissionFamily
from ..errors import ConfigError
from ..kernels.hdp_qc import HEURISTIC, accumulate_qc
from ..kernels.hmm import forward_backward, store_sentence, viterbi
from ..kernels.series import batch_estep
from .estimators import dirichlet_kl
from .estimators import cvi_params, map_params, vi_params
from .schedules import check_schedule

from ..names import SERIES_ALGORITHMS as ALGORITHMS


def potentials(logE: np.ndarray) -> tuple[np.ndarray, float]:
    """``E = exp(logE - max_k logE[t, k])`` and the sum of the row maxima (added back to ``log Z``)."""
    m = logE.max(axis=1, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    return np.exp(logE - m), float(m.sum())


def chain_posterior(A: np.ndarray, logE: np.ndarray, qc: tuple | None = None):
    """Forward-backward under transitions ``A`` and log-rows ``logE``.

    Returns ``(log Z, gamma (T, K), trans (K+1, K))``: the log normaliser of the chain under the
    potentials, state marginals and expected transitions (start row first).  With
    ``qc = (logq0, logq0_row)`` the sequence's ``log q(C^i = 0)`` (thesis eq. 5.67, the heuristic of
    :mod:`induce.kernels.hdp_qc`) is added into them, for the HDP-HMM's table counts.
    """
    T, K = logE.shape
    E, offset = potentials(logE)
    fwd, bwd, scale, xi = np.empty((T, K)), np.empty((T, K)), np.empty(T), np.empty((K, K))
    logz = forward_backward(A, E, T, fwd, bwd, scale, xi)
    if qc is not None:
        accumulate_qc(HEURISTIC, A, E, T, fwd, bwd, scale, logz, 0, qc[0], qc[1])
    trans, gamma = np.empty((K + 1, K)), np.empty((T, K))
    store_sentence(A, fwd, bwd, xi, T, trans, gamma)
    return logz + offset, gamma, trans


def viterbi_path(A: np.ndarray, logE: np.ndarray) -> np.ndarray:
    """Most probable state path under ``A`` and log-rows ``logE``."""
    T = logE.shape[0]
    E, _ = potentials(logE)
    path = np.empty(T, dtype=np.int64)
    viterbi(A, E, T, path)
    return path


def transitions_from_gamma(gamma: np.ndarray) -> np.ndarray:
    """Transition statistics of independent per-step responsibilities (used for initialisation)."""
    K = gamma.shape[1]
    trans = np.empty((K + 1, K))
    trans[0] = gamma[0]
    trans[1:] = gamma[:-1].T @ gamma[1:]
    return trans


def transition_params(infer: str, C: np.ndarray, alpha: float) -> np.ndarray:
    """Transition parameters the chain sees: MAP (em), ``exp E log`` (vi, svi) or posterior mean (cvi)."""
    if infer == "em":
        return map_params(C, alpha)
    if infer in ("vi", "svi"):
        return vi_params(C, alpha)
    return cvi_params(np.maximum(C, 0.0), alpha)


def surrogate_transitions(C: np.ndarray, prior: np.ndarray, prior_total: float) -> np.ndarray:
    """``(C_jk + prior_k) / (C_j. + prior_total)`` with counts clipped at 0: eq. 3.49 for
    ``prior = alpha``, ``prior_total = K alpha``; the HDP-HMM's eq. 5.38 for ``prior = sigma G[pi_k]``,
    ``prior_total = sigma``."""
    C = np.maximum(C, 0.0)
    return (C + prior) / (C.sum(axis=1, keepdims=True) + prior_total)


def emission_rows(infer: str, family: EmissionFamily, X: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Emission log-rows ``(T, K)`` of the algorithm: point (em), expected (vi, svi), predictive (cvi)."""
    if infer == "em":
        return family.log_likelihood(X, family.point_estimate(S, map=True))
    if infer in ("vi", "svi"):
        return family.expected_log_likelihood(X, S)
    return family.log_predictive(X, S)


def split_items(sequences: list[np.ndarray], length: int | None) -> list[np.ndarray]:
    """Cut sequences into consecutive pieces of at most ``length`` steps (``None``: unchanged)."""
    if length is None:
        return list(sequences)
    return [X[lo:lo + length] for X in sequences for lo in range(0, X.shape[0], length)]


def auto_subsequence_length(sequences: list[np.ndarray], min_items: int = 20) -> int | None:
    """``None`` when there are at least ``min_items`` sequences, else a length giving about that many pieces."""
    if len(sequences) >= min_items:
        return None
    total = sum(X.shape[0] for X in sequences)
    return max(10, math.ceil(total / min_items))


def local_statistics(local: str, family: EmissionFamily, A: np.ndarray, S: np.ndarray, items, qcs):
    """Sum over ``items`` (in order) of :func:`chain_posterior` under ``A`` and the ``local`` rule's emission rows
    of ``S`` (``qcs`` each item's, or ``None``s): ``(sum log Z, transition statistics (K+1, K), emission statistics
    (K, n_stats))``, the minibatch statistics of svi/scvi (thesis eq. 3.103)."""
    K = A.shape[1]
    total, trans_sum, stats_sum = 0.0, np.zeros((K + 1, K)), np.zeros_like(S)
    for X, qc in zip(items, qcs):
        logz, gamma, trans = chain_posterior(A, emission_rows(local, family, X, S), qc)
        total += logz
        trans_sum += trans
        stats_sum += family.stats(X, gamma)
    return total, trans_sum, stats_sum


@dataclass
class FitResult:
    """Fitted statistics and the run's record."""

    trans: np.ndarray
    stats: np.ndarray
    #: transition prior counts by state and their total for decoding with posterior-mean transitions
    trans_prior: np.ndarray | None = None
    trans_prior_total: float = 0.0
    trace: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    #: the stopping rule's end-of-run warnings (cap hit, objective decreased or not finite)
    warnings: list = field(default_factory=list)


@dataclass
class SeriesFit:
    """One fit: the algorithm, its hyperparameters and the data (items) it runs over."""

    family: EmissionFamily
    n_states: int
    infer: str = "cvi2"
    alpha: float = 1.0
    n_iter: int = 100
    tol: float = 1e-4
    batch_size: int = 10
    tau: float = 1.0
    kappa: float = 0.6
    subsequence_length: int | None = None
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    #: ``callback(iteration, objective, state)`` after every pass (iteration -1: the initial state);
    #: ``batch_callback(update_number, state)`` after every svi/scvi minibatch update.
    callback: object = None
    batch_callback: object = None

    def run(self, sequences: list[np.ndarray]) -> FitResult:
        """Fit from the initial responsibilities of :meth:`EmissionFamily.init_gamma` until converged or ``n_iter``."""
        if self.infer not in ALGORITHMS:
            raise ConfigError(f"unknown inference {self.infer!r}; expected one of {ALGORITHMS}")
        if self.infer in ("svi", "scvi"):
            check_schedule(self.tau, self.kappa, self.batch_size)
        items = self._items(sequences)
        state = self._initial_state(items)
        step = {"em": self._batch_pass, "vi": self._batch_pass, "cvi2": self._cvi2_pass,
                "svi": self._stochastic_pass, "scvi": self._stochastic_pass}[self.infer]
        result = FitResult(trans=state["C"], stats=state["S"])
        if self.callback is not None:
            self.callback(-1, None, state)  # the initial statistics
        loop = SeriesLoop.of(self, f"segment {self.infer}", self.infer in ("em", "vi"), result, state)
        loop.run(self.infer, lambda it: step(items, state))
        loop.finish(result)
        result.trans, result.stats = state["C"], state["S"]
        result.trans_prior, result.trans_prior_total = self.transition_prior()
        return result

    def _items(self, sequences):
        """Whole sequences for em and vi; subsequences (:func:`split_items`) for the other algorithms."""
        if self.infer in ("em", "vi"):
            return list(sequences)
        return split_items(sequences, self.subsequence_length or auto_subsequence_length(sequences))

    def _initial_state(self, items) -> dict:
        """Global and per-item statistics of the family's initial responsibilities.

        ``S``/``C`` the global emission/transition statistics, ``own_S``/``own_C`` every item's share
        (what cvi2 subtracts; ``(items, K, n_stats)`` and ``(items, K+1, K)``), ``items`` the items,
        ``stacked``/``bounds`` all items in one array and their ``(start, end)`` rows, ``features`` the family's
        per-step statistics of ``stacked`` (:meth:`EmissionFamily.features`, fixed for the run), ``m`` the update
        counter.
        """
        stacked = np.vstack(items)
        gamma0 = self.family.init_gamma(stacked, self.n_states, self.rng)
        ends = np.cumsum([X.shape[0] for X in items])
        bounds = np.stack([ends - [X.shape[0] for X in items], ends], axis=1).astype(np.int64)
        features = np.ascontiguousarray(self.family.features(stacked), dtype=np.float64)
        own_S = np.stack([gamma0[lo:hi].T @ features[lo:hi] for lo, hi in bounds])
        own_C = np.stack([transitions_from_gamma(gamma0[lo:hi]) for lo, hi in bounds])
        return {"S": own_S.sum(axis=0), "C": own_C.sum(axis=0), "own_S": own_S, "own_C": own_C, "m": 0,
                "stacked": stacked, "bounds": bounds, "features": features, "items": items}

    def _global_transitions(self, local: str, C: np.ndarray) -> np.ndarray:
        """Transitions of a minibatch's local step from the global counts (svi: ``exp E log``, scvi: eq. 3.99)."""
        return transition_params(local, C, self.alpha)

    def _item_qc(self, state, i):
        """Accumulators of item ``i``'s ``log q(C^i = 0)`` for :func:`chain_posterior` (none for the finite HMM)."""
        return None

    def _after_minibatch(self, state, rho: float) -> None:
        """Global updates beyond the counts after a minibatch (none for the finite HMM)."""

    def transition_prior(self) -> tuple[np.ndarray, float]:
        """Prior counts of every transition row by target state, and their total (``alpha``, ``K alpha``)."""
        return np.full(self.n_states, self.alpha), self.n_states * self.alpha

    def _batch_pass(self, items, state) -> float:
        """One em/vi iteration: E-step under the current statistics, then replace them (M-step).

        Objective: em the log-likelihood at the point estimates; vi the ELBO (thesis eq. 3.17 with
        the local step exact: ``sum log Z - KL`` of transitions and emissions).
        """
        C, S, stacked, bounds = state["C"], state["S"], state["stacked"], state["bounds"]
        A = transition_params(self.infer, C, self.alpha)
        rows = emission_rows(self.infer, self.family, stacked, S)  # one family call for all sequences
        n, K = len(bounds), self.n_states
        trans, stats, logz = np.empty((n, K + 1, K)), np.empty((n, K, S.shape[1])), np.empty(n)
        batch_estep(A, rows, state["features"], bounds, trans, stats, logz)
        total = float(logz.sum())
        if self.infer == "vi":
            total -= dirichlet_kl(C + self.alpha, self.alpha) + self.family.kl(S)
        state["C"], state["S"] = trans.sum(axis=0), stats.sum(axis=0)
        return total

    def _cvi2_pass(self, items, state, qc=None) -> float:
        """One cvi2 sweep in a seeded random order (thesis 3.7.1, eq. 3.95-3.96;
        :func:`induce.algorithms.cvi2.family_sweep`); objective: sum of ``log Z``.  Surrogate transitions from
        :meth:`transition_prior`; ``qc`` as in :func:`chain_posterior`."""
        C, S = state["C"], state["S"]
        prior, prior_total = self.transition_prior()

        def local(i):
            A = surrogate_transitions(C, prior, prior_total)
            logz, gamma, trans = chain_posterior(A, self.family.log_predictive(items[i], S), qc)
            return logz, (trans, self.family.stats(items[i], gamma))

        return family_sweep(self.family, self.rng.permutation(len(items)), state, prior, prior_total, qc, local)

    def _stochastic_pass(self, items, state) -> float:
        """One epoch of svi/scvi minibatches (thesis 3.7.2, eq. 3.103-3.104; :func:`induce.algorithms.minibatch.epoch`);
        objective: sum of ``log Z``."""
        return minibatch.epoch(self, state, (state["C"], state["S"]), [X.shape[0] for X in items])

    def _minibatch_statistics(self, rule: str, state, batch):
        """The local step of a minibatch (:func:`local_statistics` of ``items[batch]`` under the ``rule``, ``vi`` or
        ``cvi``, parameters of the global statistics): ``(sum log Z, (transition statistics, emission
        statistics))``.  :class:`induce.distributed.series.ClusterSeriesFit` runs it on the workers."""
        items = state["items"]
        logz, bC, bS = local_statistics(rule, self.family, self._global_transitions(rule, state["C"]), state["S"],
                                        [items[i] for i in batch], [self._item_qc(state, i) for i in batch])
        return logz, (bC, bS)
