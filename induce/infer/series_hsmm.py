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
  never decreases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..durations import DurationFamily
from ..emissions.base import EmissionFamily
from ..errors import ConfigError
from ..kernels.hsmm import hsmm_expectations, hsmm_viterbi
from .estimators import dirichlet_kl
from .series import FitResult, emission_rows, iterate, transition_params

HSMM_ALGORITHMS = ("em", "vi")


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
    """Duration log-potentials ``(K, D)``: the MAP pmf (em) or ``E_q log p(d)`` (vi, paper 002 ``D~``)."""
    if infer == "em":
        return durations.log_pmf(durations.point_estimate(Sd))
    return durations.expected_log_pmf(Sd)


def transition_kl(C: np.ndarray, alpha: float) -> float:
    """``KL(q || p)`` of the start row and the off-diagonal transition rows (Dirichlet posteriors)."""
    return dirichlet_kl(C[:1] + alpha, alpha) + dirichlet_kl(off_diagonal(C[1:]) + alpha, alpha)


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


@dataclass
class HSMMFit:
    """One em/vi fit of the HSMM over whole sequences."""

    family: EmissionFamily
    durations: DurationFamily
    n_states: int
    infer: str = "em"
    alpha: float = 1.0
    n_iter: int = 100
    tol: float = 1e-4
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    callback: object = None
    #: vi's objective is the ELBO, checked for monotonicity (not for sampled updates)
    elbo = True

    def run(self, sequences: list[np.ndarray]) -> HSMMResult:
        """Fit from the family's initial responsibilities until converged or ``n_iter`` passes."""
        if self.infer not in HSMM_ALGORITHMS:
            raise ConfigError(f"HSMM inference must be one of {HSMM_ALGORITHMS}, got {self.infer!r}")
        if self.n_states < 2:
            raise ConfigError("an HSMM without self-transitions needs at least 2 states")
        state = self._initial_state(sequences)
        result = HSMMResult(state["C"], state["S"], dur_stats=state["Sd"])
        # vi's ELBO never decreases; em's log-likelihood at MAP estimates may fall by a little (it is the
        # log posterior that MAP-EM increases), so only vi is checked for monotonicity
        iterate(lambda: self._pass(state), result, self.n_iter, self.tol, self.infer == "vi" and self.elbo,
                f"hsmm {self.infer}",
                None if self.callback is None else lambda it, f: self.callback(it, f, state))
        result.trans, result.stats, result.dur_stats = state["C"], state["S"], state["Sd"]
        return result

    def _initial_state(self, sequences) -> dict:
        """Statistics of :meth:`EmissionFamily.init_gamma`: emissions from its responsibilities,
        transitions and durations from the runs of its ``argmax`` labels (runs longer than ``D`` count
        as ``D``), plus one pseudo-segment per state spread uniformly over ``1..D`` so that no state
        starts with a degenerate duration distribution."""
        stacked = np.vstack(sequences)
        K, Dm = self.n_states, self.durations.max_duration
        gamma0 = self.family.init_gamma(stacked, K, self.rng)
        bounds = np.concatenate([[0], np.cumsum([X.shape[0] for X in sequences])])
        C, N = np.zeros((K + 1, K)), np.full((K, Dm), 1.0 / Dm)
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            segs = runs(gamma0[lo:hi].argmax(axis=1))
            C[0, segs[0][2]] += 1
            for (s, e, k), nxt in zip(segs, segs[1:] + [None]):
                N[k, min(e - s, Dm) - 1] += 1
                if nxt is not None:
                    C[k + 1, nxt[2]] += 1
        return {"C": C, "S": self.family.stats(stacked, gamma0), "Sd": self.durations.stats(N),
                "stacked": stacked, "bounds": list(zip(bounds[:-1], bounds[1:]))}

    def _pass(self, state) -> float:
        """One em/vi iteration: expectations under the current statistics, then replace them."""
        C, S, Sd, stacked = state["C"], state["S"], state["Sd"], state["stacked"]
        logpi, logA = hsmm_transitions(self.infer, C, self.alpha)
        logD = duration_rows(self.infer, self.durations, Sd)
        rows = emission_rows(self.infer, self.family, stacked, S)
        gamma = np.empty_like(rows)
        newC, N = np.zeros_like(C), np.zeros((self.n_states, self.durations.max_duration))
        total = 0.0
        for lo, hi in state["bounds"]:
            logz, init, trans, dur, last, gamma[lo:hi] = hsmm_expectations(logpi, logA, rows[lo:hi], logD, logD)
            total += logz
            newC[0] += init
            newC[1:] += trans
            N += dur + last
        if self.infer == "vi":
            total -= transition_kl(C, self.alpha) + self.family.kl(S) + self.durations.kl(Sd)
        state["C"], state["S"], state["Sd"] = newC, self.family.stats(stacked, gamma), self.durations.stats(N)
        return total


def hsmm_posterior(logpi, logA, rows, logD):
    """``(log Z, gamma (T, K))`` of one series under the potentials."""
    logz, _, _, _, _, gamma = hsmm_expectations(logpi, logA, rows, logD, logD)
    return logz, gamma


def hsmm_path(logpi, logA, rows, logD) -> np.ndarray:
    """Viterbi state path of one series under the potentials."""
    path = np.empty(rows.shape[0], dtype=np.int64)
    hsmm_viterbi(logpi, logA, rows, logD, logD, path)
    return path
