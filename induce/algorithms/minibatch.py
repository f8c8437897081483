"""svi and scvi written once, for every model (HMM, HSMM, their HDP forms) and emission family (thesis 3.7.2,
eq. 3.98-3.104; Johnson & Willsky 2014 eq. 10-12; paper 002 section 3.2).  Per minibatch ``B_m`` of a seeded
shuffle of the items (:func:`induce.infer.schedules.minibatches`):

1. ``rho_m = (tau + m + 1)^-kappa`` (eq. 3.104; ``m`` the minibatches done);
2. the local step over ``B_m`` under the parameters of :data:`LOCAL_RULE` -- svi ``exp E_q[log theta]``
   (``vi``, eq. 3.21-3.22), scvi the surrogate ``(N + a) / (N. + K a)`` (``cvi``, eq. 3.98-3.100) -- and the
   family's matching rows (``E_q log p(x | eta)`` resp. the collapsed predictive, eq. 3.96);
3. ``N <- (1 - rho_m) N + rho_m * scale * E[C^{B_m}]`` (eq. 3.103), ``scale`` the data over the minibatch, then
   the model's other global steps (the HDP sticks and concentrations, eq. 5.40).

:func:`step` does 1 and calls an :class:`Updater` for 2-3.  A family with statistics arrays
(:mod:`induce.emissions`) runs :class:`StatisticsUpdater` in :func:`epoch` (the series fits: objective the
epoch's summed ``log Z``); the text tagger's categorical fast path is that family's updater
(:class:`induce.infer.stochastic_hmm.CountsUpdater`: gathered rows, lockstep forward-backward, the factored
count table), run by :func:`induce.infer.stochastic_hmm.run` with checkpoints and the held-out stopping rule.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..infer.schedules import blend, minibatches, step_size

#: the parameters of each minibatch algorithm's local step: ``vi`` (expected natural parameters, eq. 3.21-3.22)
#: or ``cvi`` (surrogate parameters, eq. 3.98-3.100); the single-sequence variants of paper 001 included
LOCAL_RULE = {"svi": "vi", "scvi": "cvi", "scvi3": "cvi", "scvi3-vanilla": "cvi", "svi-buffered": "vi",
              "svi-vanilla": "vi"}


def step(updater, counts, batch, m: int, tau: float, kappa: float) -> tuple[float, float, int]:
    """Minibatch number ``m`` (from 0): ``rho_m`` (eq. 3.104) and ``updater(counts, rho_m, batch)``, the local
    and global steps (eq. 3.103).  Returns ``(rho_m, the minibatch's log-likelihood, its size in tokens)``."""
    rho = step_size(m, tau, kappa)
    ll, size = updater(counts, rho, batch)
    return rho, ll, size


class Updater(ABC):
    """The updater protocol, ``updater(counts, rho, batch) -> (log-likelihood, tokens)``: :meth:`local`, the
    local step of a family, then :meth:`blend`, eq. 3.103 with the minibatch's ``scale`` (the data over the
    minibatch), then :meth:`after`."""

    def __call__(self, counts, rho: float, batch) -> tuple[float, int]:
        ll, stats, scale, tokens = self.local(counts, batch)
        self.blend(counts, rho, stats, scale)
        self.after(rho)
        return ll, tokens

    @abstractmethod
    def local(self, counts, batch):
        """``(log-likelihood, statistics, scale, tokens)`` of ``batch`` under the parameters of ``counts``."""

    def blend(self, counts, rho: float, stats, scale: float) -> None:
        """Eq. 3.103 on every global statistic: ``N <- (1 - rho) N + rho * scale * stats``."""
        for target, batch_stats in zip(counts, stats):
            blend(target, batch_stats, rho, scale)

    def after(self, rho: float) -> None:
        """Global updates beyond the statistics after a minibatch (none by default)."""


class StatisticsUpdater(Updater):
    """The updater of a series fit (:class:`induce.infer.series.SeriesFit`, :class:`induce.infer.series_hsmm.HSMMFit`
    and their HDP forms) over any emission family: ``counts`` is the tuple of its global statistics arrays
    (transitions, emissions[, durations]), the local step ``fit._minibatch_statistics(rule, state, batch)``, the
    scale all steps over the minibatch's steps, then ``fit._after_minibatch`` and ``fit.batch_callback``."""

    def __init__(self, fit, state: dict, sizes: np.ndarray):
        self.fit, self.state, self.sizes = fit, state, sizes
        self.rule = LOCAL_RULE[fit.infer]
        self.total = int(sizes.sum())

    def local(self, counts, batch):
        ll, stats = self.fit._minibatch_statistics(self.rule, self.state, batch)
        size = int(self.sizes[batch].sum())
        return ll, stats, self.total / size, size

    def after(self, rho: float) -> None:
        self.state["m"] += 1
        self.fit._after_minibatch(self.state, rho)
        if self.fit.batch_callback is not None:
            self.fit.batch_callback(self.state["m"], self.state)


def epoch(fit, state: dict, counts: tuple, sizes: np.ndarray) -> float:
    """One epoch of svi / scvi minibatches of ``fit.batch_size`` items (sizes ``sizes`` in steps) drawn with
    ``fit.rng``, steps ``fit.tau``, ``fit.kappa``: :func:`step` with a :class:`StatisticsUpdater` on each.
    Returns the epoch's objective, the sum of the minibatches' ``log Z``."""
    updater = StatisticsUpdater(fit, state, np.asarray(sizes, dtype=np.int64))
    total = 0.0
    for batch in minibatches(len(sizes), fit.batch_size, fit.rng):
        total += step(updater, counts, batch, state["m"], fit.tau, fit.kappa)[1]
    return total
