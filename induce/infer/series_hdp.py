"""Batch CVI for the HDP-HMM with any conjugate emission family (thesis chapter 5 with section 3.7).

The finite-HMM cvi2 sweep of :class:`induce.infer.series.SeriesFit` with the HDP prior on the
transitions: per item the surrogate transitions are ``(C^{\\i}_jk + sigma G[pi_k]) / (C^{\\i}_j. + sigma)``
(thesis eq. 5.38) and the emission rows the collapsed predictive (eq. 3.96); each item's
``log q(C^i = 0)`` (eq. 5.67, heuristic) is accumulated, and after the sweep the top-level sticks,
``gamma`` and ``sigma`` take one batch round of eq. 5.35, 5.25-5.26, 5.17 and 5.20
(:class:`induce.infer.hdp.HDPGlobals`).  ``n_states`` is the truncation level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .hdp import HDPGlobals, effective_states
from .series import SeriesFit


@dataclass
class HDPSeriesFit(SeriesFit):
    """``infer="cvi2"`` sweeps under the HDP transition prior; ``gamma``, ``sigma`` learned unless fixed."""

    gamma: float = 1.0
    sigma: float = 1.0
    learn_hyper: bool = True

    def run(self, sequences):
        self.infer = "cvi2"
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
