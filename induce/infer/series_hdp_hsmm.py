"""The HDP-HSMM (paper 002 section 4) with vi, svi, cvi2 and scvi over numeric sequences.

Direct-assignment truncation at ``K = n_states``: ``q(x)`` lives on states ``1..K``, the top-level
weights are a point estimate ``b*`` over the ``K`` states and the rest (``K + 1`` entries, J&W's
``q(beta) = delta_{beta*}``), and the transition rows are ``pi_i ~ DP(sigma beta)`` restricted to
``j != i``: by the aggregation property of the Dirichlet, the renormalised off-diagonal row
``pi_i / (1 - pi_ii)`` over the other states and the rest is ``Dir(sigma b*_{\\i})``.  The start row is
``Dir(sigma b*)`` over all ``K`` states and the rest.  (J&W write ``alpha`` for ``sigma``; induce's
HDP code calls the transition concentration ``sigma`` and the top-level one ``gamma``.)

Mean field (``vi``, ``svi``): ``q(pi_i) = Dir(lam_i)``, ``lam_i = sigma b*_{\\i} + C_i`` (the rest entry
has no counts), the messages see ``exp E log pi_ij = exp(psi(lam_ij) - psi(sum_{j' in row} lam_ij'))``
(paper 002 eq. 3; svi's local step from a uniform stick the posterior mean ``lam_ij / lam_i.`` instead,
:meth:`HDPHSMMFit._local_potentials`) and the emission and duration factors of :mod:`induce.infer.series_hsmm`.  ``b*``
maximises ``ln GEM(b*; gamma) + sum_i E_q ln p(pi_i | b*)`` (J&W section 4): in batch ``vi`` by a
gradient ascent that only accepts increases after every pass (so the ELBO
``sum log Z - KL(q(pi) || p(pi | b*)) + ln GEM(b*) - KL(emissions) - KL(durations)`` never decreases);
in ``svi`` by one truncated gradient step per minibatch (:func:`induce.infer.hdp_svi.truncated_step`,
as the HDP-HMM's SVI baseline).  The gradient of the off-diagonal rows, derived in docs/hsmm_cvi.md
section 4 (J&W's printed version has the top-level ``gamma`` where ``sigma`` belongs and drops the
``k = i`` term, which is not zero once ``b*_rest = 1 - sum_k b*_k``).

Collapsed (``cvi2``, ``scvi``, docs/hsmm_cvi.md section 4): the surrogate transitions are the
posterior means ``(C^{\\i}_ij + sigma b*_j) / (C^{\\i}_i. + sigma sum_{j' in row} b*_j')``; ``b*`` takes the
same ascent with ``q(pi_i) = Dir(sigma b* + C_i)`` at the expected counts after every sweep (scvi: one
truncated step per minibatch): an EM step on ``ln GEM(b*) + sum_i ln DirMult(C_i | sigma b*_{\\i})``, whose
maxima are its fixed points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma, gammaln

from .estimators import dirichlet_kl
from .hdp_svi import stick_gradient, truncated_step
from .hyper import fit_dirichlet_precision_vb
from .series_hsmm import HSMMFit, duration_rows

HDP_HSMM_ALGORITHMS = ("vi", "svi", "cvi2", "scvi")


def support(K: int) -> np.ndarray:
    """``(K+1, K+1)`` mask of each transition row's support: the start row everything, row ``i + 1`` all
    but state ``i`` (the last column is the rest of the stick)."""
    mask = np.ones((K + 1, K + 1), dtype=bool)
    mask[1:, :K][np.eye(K, dtype=bool)] = False
    return mask


def rows_of(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The start row ``(K+1,)`` and the off-diagonal rows ``(K, K)`` of a ``(K+1, K+1)`` array."""
    K = X.shape[0] - 1
    return X[0], X[1:][support(K)[1:]].reshape(K, K)


def log_gem(b: np.ndarray, gamma: float) -> float:
    """``ln GEM(b; gamma)`` of the first ``K`` weights: Beta(1, gamma) sticks ``v_i = b_i / c_i`` with the
    Jacobian, ``sum_{i<K} ln gamma + (gamma - 1) ln c_{i+1} - gamma ln c_i`` (``c_i = 1 - sum_{l<i} b_l``;
    its gradient is the prior term of :func:`induce.infer.hdp_svi.stick_gradient`)."""
    c = 1.0 - np.concatenate([[0.0], np.cumsum(b[:-1])])
    return float(np.sum(np.log(gamma) + (gamma - 1.0) * np.log(c[1:]) - gamma * np.log(c[:-1])))


def lambdas(C: np.ndarray, b: np.ndarray, sigma: float) -> np.ndarray:
    """``(K+1, K+1)`` Dirichlet parameters ``sigma b* + [C, 0]`` (entries outside :func:`support` unused)."""
    return sigma * b[None, :] + np.hstack([np.maximum(C, 0.0), np.zeros((C.shape[0], 1))])


def row_log_means(lam: np.ndarray, rule: str) -> np.ndarray:
    """``(K+1, K+1)`` log transition parameters of every row over its support (``-inf`` outside it):
    ``psi(lam_ij) - psi(lam_i.)`` (vi, svi; paper 002 eq. 3) or ``log(lam_ij / lam_i.)`` (the posterior
    mean: cvi2, scvi and decoding)."""
    mask = support(lam.shape[0] - 1)
    total = np.where(mask, lam, 0.0).sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        out = digamma(lam) - digamma(total) if rule in ("vi", "svi") else np.log(lam) - np.log(total)
    return np.where(mask, out, -np.inf)


def hdp_hsmm_transitions(rule: str, C: np.ndarray, b: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """``(log pi (K,), log A (K, K))`` the messages see (the rest of the stick is never entered)."""
    K = C.shape[1]
    logp = row_log_means(lambdas(C, b, sigma), rule)
    return logp[0, :K], logp[1:, :K]


def row_expectations(C: np.ndarray, b: np.ndarray, sigma: float) -> np.ndarray:
    """``E_{Dir(lam_i)} ln pi_ij`` under ``lam = sigma b* + C`` (0 outside the support)."""
    logp = row_log_means(lambdas(C, b, sigma), "vi")
    return np.where(np.isfinite(logp), logp, 0.0)


def stick_objective(b: np.ndarray, elog: np.ndarray, sigma: float, gamma: float) -> float:
    """``ln GEM(b) + sum_i E ln Dir(pi_i; sigma b_{\\i})`` with the expectations ``elog`` held fixed."""
    mask = support(len(b) - 1)
    a = np.where(mask, sigma * b[None, :], 1.0)  # 1 outside the support: gammaln(1) = 0, (a - 1) e = 0
    per_row = (gammaln(np.where(mask, a, 0.0).sum(axis=1)) - gammaln(a).sum(axis=1)
               + ((a - 1.0) * elog).sum(axis=1))
    return log_gem(b, gamma) + float(per_row.sum())


def stick_objective_gradient(b: np.ndarray, elog: np.ndarray, sigma: float, gamma: float) -> np.ndarray:
    """Gradient of :func:`stick_objective` w.r.t. ``b_1..b_K`` with ``b_rest = 1 - sum_k b_k`` (docs/hsmm_cvi.md
    eq. 9): the prior term of :func:`~induce.infer.hdp_svi.stick_gradient`, plus per row ``r`` with support
    ``S_r``: ``sigma (E ln pi_rk - psi(sigma b_k))`` for ``k in S_r``, ``sigma (psi(sigma b_rest) - E ln
    pi_r,rest)`` for every ``k``, and ``-sigma psi(sigma (1 - b_i))`` for ``k = i`` in the row of state ``i``
    (its total ``sigma (1 - b_i)``; the start row's total ``sigma`` is constant)."""
    K = len(b) - 1
    within = support(K)[:, :K]
    g = stick_gradient(b, np.ones((0, K + 1)), sigma, gamma)  # no rows: the GEM prior's gradient alone
    g += sigma * (np.where(within, elog[:, :K], 0.0).sum(axis=0) - within.sum(axis=0) * digamma(sigma * b[:K]))
    g += sigma * ((K + 1) * digamma(sigma * b[K]) - elog[:, K].sum())
    g -= sigma * digamma(sigma * (1.0 - b[:K]))
    return g


def stick_ascent(b: np.ndarray, elog: np.ndarray, sigma: float, gamma: float, n_steps: int = 50,
                 tol: float = 1e-10) -> np.ndarray:
    """Gradient ascent on :func:`stick_objective` keeping every entry positive and accepting only increases
    (the step doubles after a success and halves after a failure)."""
    value, step = stick_objective(b, elog, sigma, gamma), 1e-3
    for _ in range(n_steps):
        grad = stick_objective_gradient(b, elog, sigma, gamma)
        while step > 1e-14:
            new = truncated_step(b, grad, step)
            new_value = stick_objective(new, elog, sigma, gamma) if new is not b else -np.inf
            if new_value > value:
                break
            step *= 0.5
        else:
            return b
        gain = new_value - value
        b, value, step = new, new_value, step * 2.0
        if gain < tol * max(1.0, abs(value)):
            break
    return b


def gamma_update(b: np.ndarray) -> float:
    """The ``gamma`` maximising :func:`log_gem` of the point-estimated stick: ``d/dgamma = K / gamma + ln b_rest``
    (the sticks' ``ln(1 - v_i)`` telescope to ``ln c_{K+1} = ln b_rest``), so ``gamma = K / (-ln b_rest)``: the
    thesis's eq. 5.17, ``K / sum_k E[-ln(1 - v_k)]``, at ``q(v) = delta_{v*}``."""
    return float(np.clip((len(b) - 1) / -np.log(b[-1]), 1e-4, 1e4))


def sigma_update(b: np.ndarray, elog: np.ndarray, sigma: float) -> float:
    """The ``sigma`` maximising :func:`stick_objective` with ``b`` and ``elog`` held fixed: every row's
    ``Dir(sigma b*)`` over its support (:func:`induce.infer.hyper.fit_dirichlet_precision_vb`)."""
    return fit_dirichlet_precision_vb(np.where(support(len(b) - 1), b[None, :], 0.0), elog, sigma)


@dataclass
class HDPHSMMFit(HSMMFit):
    """An :class:`HSMMFit` under the HDP transition prior, truncated at ``n_states``; ``b`` the stick."""

    gamma: float = 1.0
    sigma: float = 1.0
    #: learn ``gamma`` and ``sigma`` (:meth:`_learn_concentrations`) once the objective has first gained
    learn_hyper: bool = True
    #: the starting stick ``b*`` (K+1,), e.g. the merged vi fit's that svi/cvi2/scvi start from; ``None``: uniform
    init_stick: np.ndarray | None = None

    algorithms = HDP_HSMM_ALGORITHMS

    def run(self, sequences):
        K = self.n_states
        self.b = np.full(K + 1, 1.0 / (K + 1)) if self.init_stick is None else np.array(self.init_stick, dtype=float)
        self.objectives, self.learn_from = [], None
        return super().run(sequences)

    def _noted(self, objective: float) -> float:
        """Held until the objective first gains (as the HDP-HMM's adaptive burn-in): learning starts after the
        first pass whose objective beats the first pass's; ``learn_from`` records that pass (1-based).  Also for
        svi/scvi, whose epoch objective need not gain within a few epochs (Fig. 1(b)'s 2): learning from the first
        minibatch instead (the HDP-HMM's svi/scvi burn-in, 0) left Fig. 1(b)'s svi at 5 of 6 states all the same
        and, from J&W's random start, drove ``sigma`` to 0.09 and lost a true state (docs/experiments/hsmm.md)."""
        self.objectives.append(objective)
        if self.learn_from is None and objective > self.objectives[0]:
            self.learn_from = len(self.objectives)
        return objective

    def _learn_concentrations(self, elog: np.ndarray, rho: float = 1.0) -> None:
        """Empirical Bayes on the bound: ``sigma`` (:func:`sigma_update`) then ``gamma`` (:func:`gamma_update`)
        at ``b*`` and ``elog`` held fixed -- a coordinate ascent step of vi's ELBO, an EM step of the collapsed
        evidence ``ln GEM(b*) + sum_i ln DirMult(C_i | sigma b*)`` (cvi2) -- blended ``(1 - rho) old + rho new``
        after an svi/scvi minibatch (eq. 5.40's scaled steps land on the closed forms at ``rho = 1``)."""
        if not self.learn_hyper or self.learn_from is None:
            return
        self.sigma += rho * (sigma_update(self.b, elog, self.sigma) - self.sigma)
        self.gamma += rho * (gamma_update(self.b) - self.gamma)

    def _name(self) -> str:
        return "hdp-hsmm"

    def _initial_gamma(self, stacked, spans):
        """``init_gamma`` when given (the HMM's posterior, :func:`induce.series.hsmm.hmm_start`: the
        segmenter's start, far better on the real series, docs/experiments/hsmm_defaults.md); else a random
        segmentation (J&W section 6 start from random draws): segments of durations uniform on
        ``1..D``, each labelled uniformly over the ``K`` states; 0.9 of every step's responsibility on its
        label, as :meth:`EmissionFamily.init_gamma`.  (The k-means start splits each true state into
        fragments that then alternate or share its segments: 9 effective states for 3 on the test data;
        labels from a GEM(gamma) draw merge states more often; docs/experiments/hsmm.md.)"""
        if self.init_gamma is not None:
            return self.init_gamma
        K, Dm = self.n_states, self.durations.max_duration
        gamma0 = np.full((stacked.shape[0], K), 0.1 / K)
        for lo, hi in spans:
            t = lo
            while t < hi:
                d = int(self.rng.integers(1, Dm + 1))
                gamma0[t:min(t + d, hi), self.rng.integers(K)] += 0.9
                t += d
        return gamma0

    def transitions(self, rule, C):
        return hdp_hsmm_transitions(rule, C, self.b, self.sigma)

    def transition_bound(self, C):
        """``KL(q(pi) || p(pi | b*)) - ln GEM(b*)``: every row over its support."""
        lam = lambdas(C, self.b, self.sigma)
        prior = np.broadcast_to(self.sigma * self.b, lam.shape)
        (l0, loff), (p0, poff) = rows_of(lam), rows_of(prior)
        return dirichlet_kl(l0[None], p0[None]) + dirichlet_kl(loff, poff) - log_gem(self.b, self.gamma)

    def _local_potentials(self, rule, C, Sd):
        """svi from a uniform stick (no ``init_stick``: J&W's random start, Fig. 1(b)): the local step sees the
        transitions' posterior mean ``lam_ij / lam_i.`` (as cvi2/scvi and decoding), the emissions and durations
        ``exp E_q log`` (paper 002 eq. 3).  Under ``exp E log pi`` a state that the first minibatches empty is
        barred for good: its entries ``sigma b*_j`` (1/13 at ``sigma`` = 1, truncation 12) give ``psi(1/13) =
        -13.5`` to enter it and ``psi(1/13) - psi(12/13) = -12.7`` to leave it, ~26 nats a segment that no
        emission gain over a few steps repays, so svi kept the two true states it merged in its first 12
        minibatches (Fig. 1(b): 5 of 6 on every seed, with any schedule, minibatch size or start tried; with the
        posterior mean a spare state takes one of them back after ~30 minibatches, 6 of 6 on 6 seeds at 5 epochs,
        held-out as vi's; docs/experiments/hsmm.md, "svi's transitions").  From a fitted stick (the vi stage's
        moves, the estimator's default path) the states are settled and ``exp E log`` stays: there the posterior
        mean kept every state count and scored 0.001-0.008 nats a step worse held-out (K = 4, 6)."""
        if rule != "vi" or self.init_stick is not None:
            return super()._local_potentials(rule, C, Sd)
        logpi, logA = self.transitions("cvi2", C)
        return logpi, logA, duration_rows("vi", self.durations, Sd)

    def _after_pass(self, state):
        """Batch: ``b*`` to a maximum of its objective with ``q(pi) = Dir(sigma b* + C)`` held fixed, then the
        concentrations (:meth:`_learn_concentrations`)."""
        elog = row_expectations(state["C"], self.b, self.sigma)
        self.b = stick_ascent(self.b, elog, self.sigma, self.gamma)
        self._learn_concentrations(elog)

    def _after_minibatch(self, state, rho):
        """svi/scvi: one truncated gradient step of size ``rho / items`` (as the HDP-HMM's SVI baseline), then the
        concentrations, except for scvi started from a fitted stick (the vi stage's, the estimator's default
        path), which keeps the vi stage's: scvi's per-minibatch target (:func:`sigma_update` of the collapsed
        counts under posterior-mean transitions) jumps between 0.1 and 2.5 from one minibatch to the next and the
        blended ``sigma`` drifts down (recovery K = 4 seed 6: 2.4 -> 1.2), where svi's target holds within 1%.
        Kept at the vi stage's values, scvi scored better held-out on the recovery series (K = 5: +0.0050 nats a
        step over 10 seeds; docs/experiments/hsmm.md, "scvi's concentrations"), while svi's own updates beat its
        vi-stage values there (so svi keeps them)."""
        elog = row_expectations(state["C"], self.b, self.sigma)
        grad = stick_objective_gradient(self.b, elog, self.sigma, self.gamma)
        self.b = truncated_step(self.b, grad, rho / max(1.0, len(state["bounds"])))
        if self.infer != "scvi" or self.init_stick is None:
            self._learn_concentrations(elog, rho)
