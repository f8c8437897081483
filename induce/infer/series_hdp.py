"""CVI and SCVI for the HDP-HMM with any conjugate emission family (thesis chapter 5 with section 3.7).

The finite-HMM cvi2 sweep of :class:`induce.infer.series.SeriesFit` with the HDP prior on the
transitions: per item the surrogate transitions are ``(C^{\\i}_jk + sigma G[pi_k]) / (C^{\\i}_j. + sigma)``
(thesis eq. 5.38) and the emission rows the collapsed predictive (eq. 3.96); each item's
``log q(C^i = 0)`` (eq. 5.67, heuristic) is accumulated, and after the sweep the top-level sticks,
``gamma`` and ``sigma`` take one batch round of eq. 5.35, 5.25-5.26, 5.17 and 5.20
(:class:`induce.infer.hdp.HDPGlobals`).  ``n_states`` is the truncation level.

Stochastic CVI (``stochastic=True``, thesis 5.3 with 3.7.2): minibatches of items with the same local
step under the global counts, the blend of eq. 3.103-3.104, and after every minibatch the natural
gradient steps of eq. 5.40 for the sticks, ``gamma`` and ``sigma`` (:mod:`induce.infer.hdp`), with
``q(C > 0)`` from the latest ``log q(C^i = 0)`` of every item (eq. 5.46).

SVI (:class:`HDPSVIFit`, Johnson & Willsky 2014 sec. 4, the baseline of :mod:`induce.infer.hdp_svi`):
``q(pi_j) = Dir(sigma b* + C_j)`` over the ``K`` states and the rest of the stick, emissions
``E_q[log p(x | eta)]``, the blend of the counts and statistics, and a truncated gradient step on
the point-estimated top-level stick ``b*``; ``gamma`` and ``sigma`` stay fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scipy.special import digamma

from . import hdp
from .hdp import HDPGlobals, effective_states
from .hdp_svi import stick_gradient, truncated_step
from .series import SeriesFit, surrogate_transitions


@dataclass
class HDPSeriesFit(SeriesFit):
    """``infer="cvi2"`` sweeps under the HDP transition prior; ``gamma``, ``sigma`` learned unless fixed."""

    gamma: float = 1.0
    sigma: float = 1.0
    learn_hyper: bool = True
    stochastic: bool = False

    def run(self, sequences):
        self.infer = "scvi" if self.stochastic else "cvi2"
        self.hdp = HDPGlobals(self.n_states, self.gamma, self.sigma)
        return super().run(sequences)

    def transition_prior(self):
        return self.hdp.prior(), self.hdp.sigma

    def effective_states(self, S: np.ndarray, coverage: float = 0.99) -> int:
        """States covering ``coverage`` of the expected usage (thesis 5.5.1)."""
        return effective_states(self.family.counts(S), coverage)

    def _cvi2_pass(self, items, state, qc=None) -> float:
        K = self.n_states
        logq0, logq0_row = np.zeros((K + 1, K)), np.zeros(K + 1)
        total = super()._cvi2_pass(items, state, qc=(logq0, logq0_row))
        self.hdp.update(state["C"], self.family.counts(state["S"]), logq0, logq0_row, self.learn_hyper,
                        self.learn_hyper)
        return total

    def _global_transitions(self, local, C):
        return surrogate_transitions(C, *self.transition_prior())

    def _item_qc(self, state, i):
        K = self.n_states
        if "logq0" not in state:  # latest log q(C^i = 0) of every item (0: not visited yet)
            state["logq0"] = np.zeros((len(state["own_S"]), K + 1, K))
            state["logq0_row"] = np.zeros((len(state["own_S"]), K + 1))
        state["logq0"][i] = 0.0
        state["logq0_row"][i] = 0.0
        return state["logq0"][i], state["logq0_row"][i]

    def _after_minibatch(self, state, rho):
        """Eq. 5.40: natural-gradient steps of the sticks, ``gamma`` and ``sigma`` towards the values the
        blended counts imply (eq. 5.35 tables, 5.25-5.26, 5.17, 5.20)."""
        h, C = self.hdp, state["C"]
        qpos = hdp.q_positive(state["logq0"].sum(axis=0))
        qpos_row = hdp.q_positive(state["logq0_row"].sum(axis=0))
        tables = hdp.expected_tables(C, qpos, h.prior())
        order = hdp.usage_order(self.family.counts(state["S"]))
        u, v = np.empty(self.n_states), np.empty(self.n_states)
        u[h.order], v[h.order] = h.u, h.v  # by state
        if self.learn_hyper:
            h.gamma = hdp.scaled_gamma_step(h.u, h.v, h.gamma, rho)
            h.sigma = hdp.scaled_sigma_step(tables.sum(), C.sum(axis=1), qpos_row, h.sigma, rho)
        h.order = order
        h.u, h.v = hdp.natural_stick_step(u[order], v[order], tables.sum(axis=0)[order], h.gamma, rho)
        h.G_sorted = hdp.geometric_pi(h.u, h.v)


@dataclass
class HDPSVIFit(SeriesFit):
    """SVI for the HDP-HMM truncated at ``n_states`` with any emission family (fixed ``gamma``, ``sigma``)."""

    gamma: float = 1.0
    sigma: float = 1.0

    def run(self, sequences):
        self.infer = "svi"
        self.b = np.full(self.n_states + 1, 1.0 / (self.n_states + 1))  # b*: K states and the rest
        return super().run(sequences)

    def transition_prior(self):
        return self.sigma * self.b[:-1], self.sigma

    def _lam(self, C):
        """``lam_j = sigma b* + [C_j, 0]`` (K+1 components: the states and the rest of the stick)."""
        return self.sigma * self.b[None, :] + np.hstack([np.maximum(C, 0.0), np.zeros((C.shape[0], 1))])

    def _global_transitions(self, local, C):
        """``exp E[log pi_jk]`` under ``Dir(lam_j)`` for the K states (sub-normalised)."""
        lam = self._lam(C)
        return np.exp(digamma(lam[:, :-1]) - digamma(lam.sum(axis=1, keepdims=True)))

    def _after_minibatch(self, state, rho):
        """J&W sec. 4: gradient step on ``b*``, halved until every entry stays positive."""
        n_items = len(state["own_S"])
        self.b = truncated_step(self.b, stick_gradient(self.b, self._lam(state["C"]), self.sigma, self.gamma),
                                rho / max(1.0, n_items))
