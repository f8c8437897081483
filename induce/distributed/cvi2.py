"""Block-parallel cvi2 (CVI algorithm 2, thesis eq. 3.44-3.50) on the workers (docs/experiments/distributed.md).

Each worker holds a shard of sentences with their local statistics
``q(z^i)`` (``sent_trans``, ``gamma``), which never leave it.  A pass is cut
into rounds: in a round every worker runs the existing block-parallel kernel
:func:`induce.infer.hmm_batched.cvi2_block_pass` over its next ``sync``
sentences of the pass order (all of its sentences by default) against the
global counts ``C`` frozen at the round start, and returns its counts after
the round; the client sets ``C <- C + sum_j (C_j - C)`` (``C_j`` itself with
one shard).  Sentences of one shard see each other as the single-process
block pass does; sentences of different shards see each other's changes at
the next round (the approximate distributed scheme of AD-LDA, Newman et al.
2009).  At the start of each pass ``C`` is recomputed exactly from the stored
statistics, as the single-process sweep does.  With one worker and one round
per pass the run is the single-process block-parallel run, bit for bit.
"""

from __future__ import annotations

import operator
import time

import numpy as np

from ..infer import hmm_passes as passes
from ..infer.hmm_batched import cvi2_block_pass
from .cluster import Meter, rerun, submit, timed
from .shards import WorkerCorpus


def _totals(tokens, offsets, sent_trans, gamma, W):
    K = gamma.shape[1]
    trans, emit = np.zeros((K + 1, K)), np.zeros((W, K))
    passes.totals_from_local(tokens, offsets, sent_trans, gamma, W, trans, emit)
    return trans, emit


def _initial_totals(state, W):
    return _totals(*state, W)


def _round(state, C_trans, C_emit, order, alpha, beta, allowed, block, last):
    """On a worker: one round over the shard sentences ``order`` (local indices): ``(new state, (counts after the
    round, log-lik, the shard's totals when ``last`` of the pass else None))``."""
    tokens, offsets, sent_trans, gamma = state
    sent_trans, gamma, C_trans, C_emit = sent_trans.copy(), gamma.copy(), C_trans.copy(), C_emit.copy()
    ll = cvi2_block_pass(C_trans, C_emit, sent_trans, gamma, tokens, offsets, order, alpha, beta, allowed, block,
                         passes.n_threads())
    totals = _totals(tokens, offsets, sent_trans, gamma, C_emit.shape[0]) if last else None
    return (tokens, offsets, sent_trans, gamma), (C_trans, C_emit, ll, totals)


def _labels(state):
    return state[3].argmax(axis=1)


def _state(shard, sent_trans, gamma):
    return shard[0], shard[1], sent_trans, gamma


class ClusterCVI2:
    """Block-parallel cvi2 sweeps with the sentences and their local statistics on the workers (see the module
    docstring), over the shards of a :class:`~.shards.WorkerCorpus` (one block per shard).  The client sends
    each worker the starting ``q(z^i)`` of its shard once (drawn on the client in corpus order, so that one
    shard gives the single-process run)."""

    def __init__(self, corpus: WorkerCorpus, sent_trans, gamma, W: int, allowed: np.ndarray, block: int,
                 sync: int = 0):
        self.client = client = corpus.client
        self.allowed, self.block, self.sync = allowed, max(1, int(block)), int(sync)
        self.bounds = corpus.sentence_bounds
        self.tokens = np.diff(corpus.token_bounds)
        t = corpus.token_bounds
        self.states = [submit(client, _state, shard, sent_trans[lo:hi], gamma[t[j]:t[j + 1]])
                       for j, (shard, lo, hi) in enumerate(zip(corpus.shards, self.bounds[:-1], self.bounds[1:]))]
        totals = client.gather([submit(client, _initial_totals, s, W) for s in self.states])
        self.C = self._sum([t for t, _ in totals]), self._sum([e for _, e in totals])
        self.meter = Meter()

    @staticmethod
    def _sum(arrays):
        out = arrays[0].copy()
        for a in arrays[1:]:
            out += a
        return out

    def __call__(self, order: np.ndarray, alpha: float, beta: float, trans_out, emit_out) -> float:
        """One pass in the sentence ``order``: ``trans_out`` / ``emit_out`` get the counts after the pass (as
        :func:`cvi2_block_pass` leaves them); returns ``sum_i log p(x^i | theta-^{\\i})``."""
        pieces = [order[(order >= lo) & (order < hi)] - lo for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]
        step = self.sync or max(len(p) for p in pieces)
        n_rounds = -(-max(len(p) for p in pieces) // step)
        C_trans, C_emit = self.C
        ll = 0.0
        totals = [None] * len(self.states)
        for r in range(n_rounds):
            t0 = time.perf_counter()
            live = [j for j, p in enumerate(pieces) if len(p) > r * step]
            rounds = {j: submit(self.client, _round, self.states[j], C_trans, C_emit,
                                pieces[j][r * step:(r + 1) * step], alpha, beta, self.allowed, self.block,
                                len(pieces[j]) <= (r + 1) * step)
                      for j in live}
            futures = [submit(self.client, timed, operator.getitem, rounds[j], 1) for j in live]
            results = rerun(lambda: self.client.gather(futures))
            for j in live:
                self.states[j] = submit(self.client, operator.getitem, rounds[j], 0)
            results = self.meter.add(time.perf_counter() - t0, results, [self.tokens[j] for j in live])
            if len(results) == 1 and len(self.states) == 1:
                C_trans, C_emit = results[0][0], results[0][1]
            else:
                C_trans = C_trans + self._sum([t - C_trans for t, _, _, _ in results])
                C_emit = C_emit + self._sum([e - C_emit for _, e, _, _ in results])
            for j, (_, _, l, tot) in zip(live, results):
                ll += l
                if tot is not None:
                    totals[j] = tot
        self.C = self._sum([t for t, _ in totals]), self._sum([e for _, e in totals])
        trans_out[:] = C_trans
        emit_out[:] = C_emit
        return float(ll)

    def labels(self) -> np.ndarray:
        """Each token's most probable state under its ``q(z_t)``, in corpus order."""
        return np.concatenate(self.client.gather([submit(self.client, _labels, s) for s in self.states]))
