"""The series HSMM engine (:class:`induce.infer.series_hsmm.HSMMFit`) over many sentences of word ids, for
semi-Markov tagging (:class:`induce.taggers.hsmm_tagger.HSMMTagger`, ``induce tag --model hsmm``).

The engine is used as it is (messages ``induce.kernels.hsmm``, the categorical family's rows of
:mod:`induce.emissions.categorical`, the duration families of :mod:`induce.durations`, the svi / scvi steps of
:mod:`induce.algorithms.minibatch`, the cvi2 sweep :func:`induce.algorithms.cvi2.collapsed_sweep`); only the
start and the form of a sentence's statistics change.  The series fit keeps every item's own emission
statistics as a ``K x W`` table; over thousands of sentences and a vocabulary of thousands of words that is
gigabytes, so here a sentence's statistics are the columns of its words only (:class:`WordColumns`, ``K x`` its
distinct words), which cvi2 subtracts from and adds back to the global table (thesis eq. 3.95-3.96) and an svi /
scvi minibatch adds to its table (eq. 3.103).  em, vi, svi and scvi keep the global statistics only.
"""

from __future__ import annotations

import numpy as np

from ..infer.series_hsmm import HSMMFit, add_segment_counts

#: the HSMM algorithms that run over sentences
SENTENCE_ALGORITHMS = ("em", "vi", "svi", "cvi2", "scvi")


class WordColumns:
    """One sentence's emission statistics under the categorical family, ``S_i[k, w] = sum_{t: x_t = w}
    gamma_tk``, stored as the columns ``words`` (its distinct word ids) of that ``K x W`` table: ``block`` ``(K,
    len(words))``.  ``S -= own`` and ``S += own`` on the dense global table ``S`` change those columns only
    (numpy's ``__array_ufunc__`` protocol, NEP 13), as :func:`induce.algorithms.cvi2.collapsed_sweep` does with
    dense statistics; any other arithmetic with it is a ``TypeError``."""

    def __init__(self, codes: np.ndarray, gamma: np.ndarray):
        self.words, where = np.unique(codes, return_inverse=True)
        self.block = np.zeros((gamma.shape[1], len(self.words)))
        np.add.at(self.block.T, where, gamma)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        table = inputs[0]
        if (method != "__call__" or ufunc not in (np.add, np.subtract) or kwargs or len(inputs) != 2
                or inputs[1] is not self or out is None or out[0] is not table):
            return NotImplemented
        table[:, self.words] = ufunc(table[:, self.words], self.block)
        return table


class SentenceHSMMFit(HSMMFit):
    """:class:`HSMMFit` over sentences of word ids whose state holds the global statistics, and for cvi2 each
    sentence's own statistics in the sparse form :class:`WordColumns`."""

    def _initial_state(self, items) -> dict:
        """As :meth:`HSMMFit._initial_state`: emission statistics of the initial responsibilities, start, boundary
        and duration counts from the runs of their ``argmax`` within each item (runs longer than ``D`` count as
        ``D``), plus one pseudo-segment per state spread over ``1..D`` (for cvi2 shared out over the items, whose
        own statistics ``own_C`` / ``own_S`` / ``own_Sd`` sum to the global ones)."""
        stacked = np.vstack(items)
        K, Dm = self.n_states, self.durations.max_duration
        ends = np.cumsum([X.shape[0] for X in items])
        spans = list(zip((ends - [X.shape[0] for X in items]).tolist(), ends.tolist()))
        gamma0 = self._initial_gamma(stacked, spans)
        labels = gamma0.argmax(axis=1)
        C, N = np.zeros((K + 1, K)), np.full((K, Dm), 1.0 / Dm)
        add_segment_counts(labels, np.array([lo for lo, _ in spans], dtype=np.int64), C, N)
        state = {"C": C, "S": self.family.stats(stacked, gamma0), "Sd": self.durations.stats(N), "m": 0,
                 "stacked": stacked, "bounds": spans}
        if self.infer == "cvi2":
            state.update(self._own_statistics(items, spans, gamma0))
        return state

    def _item_stats(self, X: np.ndarray, gamma: np.ndarray) -> WordColumns:
        """A sentence's own emission statistics: the columns of its words."""
        return WordColumns(self.family.codes(X), gamma)
