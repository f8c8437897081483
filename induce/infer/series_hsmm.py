"""EM (MAP) and batch mean-field VI for the explicit-duration HSMM with any emission and duration family.

The model (paper 002 section 2.4): ``K`` states, segments with durations ``d ~ p(d | theta_k)`` in
``1..D`` (:mod:`induce.durations`), transitions between segments without self-transitions (``A_ii = 0``,
the Dirichlet prior ``Dir(alpha)`` on the ``K - 1`` off-diagonal entries of each row, and on the start
row), emissions from a conjugate family (:mod:`induce.emissions`).  Every series ends with a segment
(paper 002 eq. 6-7 with ``B_T = 1``).

Global statistics: transition counts ``C`` ``(K+1, K)`` (row 0 the first segment's state, rows ``i+1``
the expected boundaries ``i -> j``, zero diagonal), emission statistics ``S`` ``(K, n_stats)`` and
duration statistics ``Sd`` ``(K, 2)`` from the expected duration counts of eq. 13.  Per pass:

* ``em`` -- MAP point estimates (transitions eq. 3.13-3.14 of the thesis over the off-diagonal
  entries, emission and duration modes), messages under them, statistics replaced; objective the
  log-likelihood (MAP-EM increases the log posterior; the likelihood alone can fall by ~1e-3 nats
  near convergence);
* ``vi`` -- mean field ``q(pi) q(theta) q(vartheta) q(x)`` (paper 002 section 2.4, Hudson 2008):
  the messages see ``exp E_q log`` of every factor (``A~``, ``L~``, ``D~``, paper 002 eq. 3 and the
  definition of ``D~``), and the statistics give the new factors (the batch form of the section 3.2
  updates, ``rho = 1``); objective the ELBO ``sum log Z - KL(q || p)`` of all global factors, which
  never decreases;
* ``svi``  -- paper 002 section 3.2: the ``vi`` local step and the natural-gradient step on the transition,
  emission and duration factors (eq. 10-12), :mod:`induce.algorithms.minibatch`; objective the epoch's
  sum of ``log Z``;
* ``cvi2`` -- the collapsed sweep of docs/hsmm_cvi.md (thesis 3.7.1 for the HSMM): per item subtract
  its own statistics, run the messages under the posterior-mean transitions (eq. 3.49 over the
  off-diagonal entries), the emission predictive (eq. 3.96) and the collapsed duration predictive
  (negative binomial for Poisson-Gamma, beta negative binomial for Beta durations), add the new
  statistics back (:func:`induce.algorithms.cvi2.collapsed_sweep`); objective the sum of ``log Z``;
* ``scvi`` -- ``svi`` with the ``cvi2`` potentials (thesis 3.7.2, eq. 3.103-3.104).

Items are whole sequences for ``em`` and ``vi``; for the other algorithms a few long sequences are cut
into pieces as the HMM's (:func:`induce.infer.series.split_items`; each piece starts afresh and ends
with a segment).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..algorithms import minibatch
from ..algorithms.cvi2 import collapsed_sweep
from ..algorithms.loop import SeriesLoop
from ..durations import DurationFamily
from ..emissions.base import EmissionFamily
from ..errors import ConfigError
from ..kernels.hsmm import hsmm_expectations, hsmm_viterbi
from .estimators import dirichlet_kl
from .schedules import check_schedule
from .series import FitResult, auto_subsequence_length, emission_rows, split_items, transition_params

HSMM_ALGORITHMS = ("em", "vi", "svi", "cvi2", "scvi")


def off_diagonal(C: np.ndarray) -> np.ndarray:
    """The ``(K, K-1)`` off-diagonal entries of the square ``C`` row by row."""
    K = C.shape[0]
    return C[~np.eye(K, dtype=bool)].reshape(K, K - 1)


def hsmm_transitions(infer: str, C: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``(log pi (K,), log A (K, K))`` from counts ``C`` (K+1, K): MAP (em) or ``exp E log`` (vi) of
    ``Dir(alpha)`` over the start row and over each row's off-diagonal entries; ``log A_ii = -inf``."""
    K = C.shape[1]
    pi = transition_params(infer, C[:1], alpha)[0]
    A = np.zeros((K, K))
    A[~np.eye(K, dtype=bool)] = transition_params(infer, off_diagonal(C[1:]), alpha).ravel()
    with np.errstate(divide="ignore"):
        return np.log(pi), np.log(A)


def duration_rows(infer: str, durations: DurationFamily, Sd: np.ndarray) -> np.ndarray:
    """Duration log-potentials ``(K, D)``: the MAP pmf (em), ``E_q log p(d)`` (vi, svi: paper 002 ``D~``)
    or the collapsed predictive of the statistics clipped at 0 (cvi2, scvi: docs/hsmm_cvi.md eq. 4-5)."""
    if infer == "em":
        return durations.log_pmf(durations.point_estimate(Sd))
    if infer in ("vi", "svi"):
        return durations.expected_log_pmf(Sd)
    return durations.log_predictive(np.maximum(Sd, 0.0))


def transition_kl(C: np.ndarray, alpha: float) -> float:
    """``KL(q || p)`` of the start row and the off-diagonal transition rows (Dirichlet posteriors)."""
    return dirichlet_kl(C[:1] + alpha, alpha) + dirichlet_kl(off_diagonal(C[1:]) + alpha, alpha)


def add_segment_counts(labels: np.ndarray, starts: np.ndarray, C: np.ndarray, N: np.ndarray) -> None:
    """Add the counts of the maximal runs of ``labels`` to ``C`` and ``N``, the sequences beginning at ``starts``
    (ascending, ``starts[0] = 0``, each non-empty, the last running to the end): ``C[0, k]`` the runs of state
    ``k`` that begin a sequence, ``C[1 + k, l]`` a run of ``k`` followed by one of ``l`` in the same sequence,
    ``N[k, d - 1]`` the runs of ``k`` lasting ``d`` steps (longer runs count as ``D = N.shape[1]``)."""
    first = np.zeros(len(labels), dtype=bool)
    first[starts] = True
    begins = first.copy()
    begins[1:] |= labels[1:] != labels[:-1]
    at = np.flatnonzero(begins)
    k, opens = labels[at], first[at]
    np.add.at(C, (np.zeros(int(opens.sum()), dtype=np.int64), k[opens]), 1)
    inner = ~opens[1:]
    np.add.at(C, (k[:-1][inner] + 1, k[1:][inner]), 1)
    lengths = np.diff(np.append(at, len(labels)))
    np.add.at(N, (k, np.minimum(lengths, N.shape[1]) - 1), 1)


def runs(labels: np.ndarray) -> list[tuple[int, int, int]]:
    """``(start, end, state)`` of every maximal run of equal labels (end exclusive)."""
    cut = np.flatnonzero(np.diff(labels)) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [len(labels)]])
    return [(int(s), int(e), int(labels[s])) for s, e in zip(starts, ends)]


@dataclass
class HSMMResult(FitResult):
    """An HMM fit's record plus the duration statistics ``(K, 2)``."""

    dur_stats: np.ndarray | None = None


def sequence_stats(logpi, logA, rows, logD):
    """``(log Z, C (K+1, K), N (K, D), gamma (T, K))`` of one item under the potentials: the expected
    start and boundary counts (start row first), duration counts of eq. 13 (the final segment's
    included) and state marginals (section 3.2)."""
    logz, init, trans, dur, last, gamma = hsmm_expectations(logpi, logA, rows, logD, logD)
    return logz, np.vstack([init[None, :], trans]), dur + last, gamma


@dataclass
class HSMMFit:
    """One em/vi/svi/cvi2/scvi fit of the HSMM over items (whole sequences or pieces of them)."""

    family: EmissionFamily
    durations: DurationFamily
    n_states: int
    infer: str = "em"
    alpha: float = 1.0
    n_iter: int = 100
    tol: float = 1e-4
    batch_size: int = 10
    tau: float = 1.0
    kappa: float = 0.6
    subsequence_length: int | None = None
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    #: ``callback(iteration, objective, state)`` after every pass; ``batch_callback(update_number, state)``
    #: after every svi/scvi minibatch update
    callback: object = None
    batch_callback: object = None
    #: initial responsibilities ``(sum T, K)`` of the stacked sequences (the HMM's posterior,
    #: :func:`induce.series.hsmm.hmm_start`); ``None``: the family's k-means start
    init_gamma: np.ndarray | None = None
    #: vi's objective is the ELBO, checked for monotonicity (not for sampled updates)
    elbo = True

    algorithms = HSMM_ALGORITHMS

    def run(self, sequences: list[np.ndarray]) -> HSMMResult:
        """Fit from the family's initial responsibilities until converged or ``n_iter`` passes."""
        if self.infer not in self.algorithms:
            raise ConfigError(f"{self._name()} inference must be one of {self.algorithms}, got {self.infer!r}")
        if self.n_states < 2:
            raise ConfigError("an HSMM without self-transitions needs at least 2 states")
        if self.infer in ("svi", "scvi"):
            check_schedule(self.tau, self.kappa, self.batch_size)
        items = list(sequences) if self.infer in ("em", "vi") else self._pieces(
            sequences, self.subsequence_length or auto_subsequence_length(sequences))
        state = self._initial_state(items)
        step = {"em": self._pass, "vi": self._pass, "cvi2": self._cvi2_pass, "svi": self._stochastic_pass,
                "scvi": self._stochastic_pass}[self.infer]
        result = HSMMResult(state["C"], state["S"], dur_stats=state["Sd"])
        # vi's ELBO never decreases; em's log-likelihood at MAP estimates may fall by a little (it is the
        # log posterior that MAP-EM increases), so only vi is checked for monotonicity
        loop = SeriesLoop.of(self, f"{self._name()} {self.infer}", self.infer == "vi" and self.elbo, result, state)
        loop.run(self.infer, lambda it: self._noted(step(state)))
        loop.finish(result)
        result.trans, result.stats, result.dur_stats = state["C"], state["S"], state["Sd"]
        return result

    def _name(self) -> str:
        return "hsmm"

    def _pieces(self, sequences: list[np.ndarray], length: int | None) -> list[np.ndarray]:
        """The items of svi/cvi2/scvi: pieces of about ``length`` steps (:func:`split_items`); with ``init_gamma``
        every cut moves to the nearest change of its ``argmax`` labels within half a piece, so that a piece starts
        and ends with a whole segment of the start.  (Each piece starts afresh and ends with a segment: a cut
        inside a segment leaves two fragments that a spare state with broad durations explains better, and the
        HDP-HSMM's cvi2 kept 6 such states of 15-20 steps on 160-step pieces, docs/experiments/hsmm.md.)"""
        if length is None or self.init_gamma is None:
            return split_items(sequences, length)
        labels, items, offset = self.init_gamma.argmax(axis=1), [], 0
        for X in sequences:
            T = X.shape[0]
            changes = np.flatnonzero(np.diff(labels[offset:offset + T])) + 1
            cuts = [0]
            for target in range(length, T, length):
                near = changes[np.abs(changes - target) <= length // 2]
                cut = int(near[np.argmin(np.abs(near - target))]) if len(near) else target
                if cut > cuts[-1]:
                    cuts.append(cut)
            items += [X[lo:hi] for lo, hi in zip(cuts, cuts[1:] + [T])]
            offset += T
        return items

    # the transition prior: Dir(alpha) over the start row and each row's off-diagonal entries (overridden
    # by the HDP-HSMM, induce.infer.series_hdp_hsmm)
    def transitions(self, rule: str, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(log pi, log A)`` the messages see under ``rule`` (em, vi/svi or cvi2/scvi)."""
        return hsmm_transitions(rule, C, self.alpha)

    def transition_bound(self, C: np.ndarray) -> float:
        """The transition factors' share of ``-ELBO`` beyond ``E log p(x | pi)``: ``KL(q(pi) || p(pi))``."""
        return transition_kl(C, self.alpha)

    def _noted(self, objective: float) -> float:
        """Every pass's objective on its way to the stopping rule (the HDP-HSMM holds its concentrations until it
        first gains)."""
        return objective

    def _after_pass(self, state) -> None:
        """Global updates beyond the statistics after a batch pass (none for the finite HSMM)."""

    def _after_minibatch(self, state, rho: float) -> None:
        """Global updates beyond the statistics after an svi/scvi minibatch (none for the finite HSMM)."""

    def _potentials(self, rule: str, C: np.ndarray, Sd: np.ndarray):
        logpi, logA = self.transitions(rule, C)
        return logpi, logA, duration_rows(rule, self.durations, Sd)

    def _local_potentials(self, rule: str, C: np.ndarray, Sd: np.ndarray):
        """The potentials of an svi/scvi minibatch's local step: :meth:`_potentials` (the HDP-HSMM's svi overrides
        its transitions)."""
        return self._potentials(rule, C, Sd)

    def _initial_state(self, items) -> dict:
        """Statistics of :meth:`EmissionFamily.init_gamma`: emissions from its responsibilities,
        transitions and durations from the runs of its ``argmax`` labels (runs longer than ``D`` count
        as ``D``), plus one pseudo-segment per state spread uniformly over ``1..D`` (shared out over the
        items) so that no state starts with a degenerate duration distribution.

        ``C``/``S``/``Sd`` the global statistics, ``own_C``/``own_S``/``own_Sd`` every item's share (what
        cvi2 subtracts), ``stacked``/``bounds`` all items in one array, ``m`` the update counter."""
        stacked = np.vstack(items)
        bounds = np.concatenate([[0], np.cumsum([X.shape[0] for X in items])])
        spans = list(zip(bounds[:-1], bounds[1:]))
        own = self._own_statistics(items, spans, self._initial_gamma(stacked, spans))
        return {"C": np.sum(own["own_C"], axis=0), "S": np.sum(own["own_S"], axis=0),
                "Sd": np.sum(own["own_Sd"], axis=0), **own, "m": 0, "stacked": stacked, "bounds": spans}

    def _own_statistics(self, items, spans, gamma0: np.ndarray) -> dict:
        """Every item's share of the statistics of the responsibilities ``gamma0`` (what cvi2 subtracts):
        ``own_C`` / ``own_Sd`` from the runs of the ``argmax`` labels within the item and ``1 / n_items`` of the
        pseudo-segments, ``own_S`` the :meth:`_item_stats` of its emissions."""
        K, Dm = self.n_states, self.durations.max_duration
        own = {"own_C": [], "own_S": [], "own_Sd": []}
        for X, (lo, hi) in zip(items, spans):
            C, N = np.zeros((K + 1, K)), np.full((K, Dm), 1.0 / (Dm * len(items)))
            add_segment_counts(gamma0[lo:hi].argmax(axis=1), np.zeros(1, dtype=np.int64), C, N)
            own["own_C"].append(C)
            own["own_S"].append(self._item_stats(X, gamma0[lo:hi]))
            own["own_Sd"].append(self.durations.stats(N))
        return own

    def _initial_gamma(self, stacked: np.ndarray, spans) -> np.ndarray:
        """Initial responsibilities ``(T, K)``: ``init_gamma`` when given, else the family's k-means start."""
        if self.init_gamma is not None:
            return self.init_gamma
        return self.family.init_gamma(stacked, self.n_states, self.rng)

    def _pass(self, state) -> float:
        """One em/vi iteration: expectations under the current statistics, then replace them."""
        C, S, Sd, stacked = state["C"], state["S"], state["Sd"], state["stacked"]
        logpi, logA, logD = self._potentials(self.infer, C, Sd)
        rows = emission_rows(self.infer, self.family, stacked, S)
        gamma = np.empty_like(rows)
        newC, N = np.zeros_like(C), np.zeros((self.n_states, self.durations.max_duration))
        total = 0.0
        for lo, hi in state["bounds"]:
            logz, c, n, gamma[lo:hi] = sequence_stats(logpi, logA, rows[lo:hi], logD)
            total += logz
            newC += c
            N += n
        if self.infer == "vi":
            total -= self.transition_bound(C) + self.family.kl(S) + self.durations.kl(Sd)
        state["C"], state["S"], state["Sd"] = newC, self.family.stats(stacked, gamma), self.durations.stats(N)
        self._after_pass(state)
        return total

    def _cvi2_pass(self, state) -> float:
        """One collapsed sweep in a seeded random order (docs/hsmm_cvi.md, algorithm); objective: sum of ``log Z``."""
        C, S, Sd = state["C"], state["S"], state["Sd"]

        def local(i):
            lo, hi = state["bounds"][i]
            X = state["stacked"][lo:hi]
            logpi, logA, logD = self._potentials("cvi2", C, Sd)
            logz, c, N, gamma = sequence_stats(logpi, logA, self.family.log_predictive(X, S), logD)
            return logz, (c, self._item_stats(X, gamma), self.durations.stats(N))

        total = collapsed_sweep(self.rng.permutation(len(state["own_C"])), (C, S, Sd),
                                (state["own_C"], state["own_S"], state["own_Sd"]), local)
        self._after_pass(state)
        return total

    def _item_stats(self, X: np.ndarray, gamma: np.ndarray):
        """An item's emission statistics as cvi2 keeps them and a minibatch adds them up: the family's ``stats``
        (the text HSMM: the columns of the item's words only, :class:`induce.algorithms.hsmm_sentences.WordColumns`,
        which ``+=`` / ``-=`` a dense table)."""
        return self.family.stats(X, gamma)

    def _minibatch_statistics(self, rule: str, state, batch):
        """The local step of svi/scvi (paper 002 section 3.2): ``(sum log Z, (C, S, Sd))`` of the items ``batch``
        (indices into ``state["bounds"]``) under the ``rule`` (``vi``/``cvi``) potentials of the global statistics."""
        logpi, logA, logD = self._local_potentials(rule, state["C"], state["Sd"])
        bC, bS = np.zeros_like(state["C"]), np.zeros_like(state["S"])
        bN = np.zeros((self.n_states, self.durations.max_duration))
        total = 0.0
        for i in batch:
            lo, hi = state["bounds"][i]
            X = state["stacked"][lo:hi]
            logz, c, N, gamma = sequence_stats(logpi, logA, emission_rows(rule, self.family, X, state["S"]), logD)
            total += logz
            bC += c
            bS += self._item_stats(X, gamma)
            bN += N
        return total, (bC, bS, self.durations.stats(bN))

    def _stochastic_pass(self, state) -> float:
        """One epoch of svi/scvi minibatches (paper 002 section 3.2; thesis eq. 3.103-3.104,
        :func:`induce.algorithms.minibatch.epoch`); objective: the sum of the items' ``log Z``."""
        return minibatch.epoch(self, state, (state["C"], state["S"], state["Sd"]),
                               [hi - lo for lo, hi in state["bounds"]])


def log_survival(logD: np.ndarray) -> np.ndarray:
    """``log P(d' >= d)`` (K, D) of normalised duration log-pmf rows ``logD`` over ``d = 1..D``: the
    potentials of a right-censored last segment (:mod:`induce.kernels.hsmm`'s ``logLast``).  ``1 - sum_{d' <
    d} p(d')`` counts the mass beyond ``D`` too; where it cancels to nothing the tail within ``1..D`` (a lower
    bound, exact when the pmf has decayed by ``D``) takes over."""
    with np.errstate(divide="ignore"):
        head = np.log(np.maximum(1.0 - np.cumsum(np.exp(logD), axis=1) + np.exp(logD), 0.0))
    tail = np.logaddexp.accumulate(logD[:, ::-1], axis=1)[:, ::-1]
    return np.minimum(np.maximum(head, tail), 0.0)


def hsmm_posterior(logpi, logA, rows, logD, logLast=None):
    """``(log Z, gamma (T, K))`` of one series under the potentials (``logLast``: those of the last
    segment, default ``logD``: the series ends with a segment)."""
    logLast = logD if logLast is None else logLast
    logz, _, _, _, _, gamma = hsmm_expectations(logpi, logA, rows, logD, logLast)
    return logz, gamma


def hsmm_path(logpi, logA, rows, logD, logLast=None) -> np.ndarray:
    """Viterbi state path of one series under the potentials (``logLast`` as :func:`hsmm_posterior`)."""
    path = np.empty(rows.shape[0], dtype=np.int64)
    hsmm_viterbi(logpi, logA, rows, logD, logD if logLast is None else logLast, path)
    return path
