"""The series HSMM engine (:class:`induce.infer.series_hsmm.HSMMFit`) over many sentences of word ids, for
semi-Markov tagging (:class:`induce.taggers.hsmm_tagger.HSMMTagger`, ``induce tag --model hsmm``).

The engine is used as it is (messages ``induce.kernels.hsmm``, the categorical family's rows of
:mod:`induce.emissions.categorical`, the duration families of :mod:`induce.durations`); only the start changes.
``HSMMFit`` keeps every item's own statistics for cvi2 (a ``K x W`` table per item): over thousands of
sentences and a vocabulary of thousands of words that is gigabytes, so this fit keeps the global statistics only
and runs the algorithms that need nothing else, the batch ``em`` and ``vi`` passes.
"""

from __future__ import annotations

import numpy as np

from ..infer.series_hsmm import HSMMFit, add_segment_counts

#: the HSMM algorithms that run over sentences (global statistics only)
SENTENCE_ALGORITHMS = ("em", "vi")


class SentenceHSMMFit(HSMMFit):
    """:class:`HSMMFit` (``em`` or ``vi``) whose initial state holds the global statistics only."""

    def _initial_state(self, items) -> dict:
        """As :meth:`HSMMFit._initial_state` without the per-item shares: emission statistics of the initial
        responsibilities, start, boundary and duration counts from the runs of their ``argmax`` within each
        sentence (runs longer than ``D`` count as ``D``), plus one pseudo-segment per state spread over
        ``1..D``."""
        stacked = np.vstack(items)
        K, Dm = self.n_states, self.durations.max_duration
        ends = np.cumsum([X.shape[0] for X in items])
        spans = list(zip((ends - [X.shape[0] for X in items]).tolist(), ends.tolist()))
        gamma0 = self._initial_gamma(stacked, spans)
        labels = gamma0.argmax(axis=1)
        C, N = np.zeros((K + 1, K)), np.full((K, Dm), 1.0 / Dm)
        add_segment_counts(labels, np.array([lo for lo, _ in spans], dtype=np.int64), C, N)
        return {"C": C, "S": self.family.stats(stacked, gamma0), "Sd": self.durations.stats(N), "m": 0,
                "stacked": stacked, "bounds": spans}
