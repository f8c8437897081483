"""Block-parallel cvi2 (CVI algorithm 2, thesis eq. 3.44-3.50) on the workers (docs/experiments/distributed.md).

Each worker holds a shard of sentences with their local statistics
``q(z^i)`` (``sent_trans``, ``gamma``), which never leave it.  A pass is cut
into rounds: in a round every worker runs the existing kernel -- the
block-parallel :func:`induce.infer.hmm_batched.cvi2_block_pass`, or the exact
sequential :func:`induce.infer.hmm_passes.cvi2_pass` with ``block`` 0 (the
default; a block pass of one sentence per block computes the same sweep many
times slower) -- over its next ``sync`` sentences of the pass order (all of its sentences by default) against the
global counts ``C`` frozen at the round start, and returns its counts after
the round; the client sets ``C <- C + sum_j (C_j - C)`` (``C_j`` itself with
one shard).  Each shard has its own vocabulary ``V_s``
(:func:`~.shards.local_vocabulary`): it is sent only the rows ``C[V_s]`` of
the emission counts (plus one row standing for the rest of each column, see
:meth:`ClusterCVI2.rows`) and returns only those rows, the only ones its
sentences change.  Sentences of one shard see each other as the single-process
block pass does; sentences of different shards see each other's changes at
the next round (the approximate distributed scheme of AD-LDA, Newman et al.
2009).  At the start of each pass ``C`` is recomputed exactly from the stored
statistics, as the single-process sweep does.  With one worker and one round
per pass the run is the single-process run (sequential or block-parallel), bit for bit.
The starting ``q(z^i)`` is drawn on the workers (:func:`shard_seeds`,
:func:`induce.infer.hmm_passes.random_start`): the client never holds it.
"""

from __future__ import annotations

import operator
import time

import numpy as np

from ..infer import hmm_passes as passes
from ..infer.hmm_batched import cvi2_block_pass
from .cluster import Meter, nbytes, rerun, submit, timed
from .shards import WorkerCorpus


def shard_seeds(seed: int, n_shards: int) -> list[int]:
    """The seeds of the shards' random starts: ``seed`` for shard 0, so that shard 0 draws what the single
    process draws for its sentences (all of them with one shard: :func:`passes.init_chain_posteriors` draws
    sentence after sentence from one generator), and for shard ``j > 0`` a seed of the ``j``-th child of
    ``SeedSequence(seed)`` (independent of the number of shards)."""
    children = np.random.SeedSequence(int(seed)).spawn(max(1, int(n_shards)))
    return [int(seed)] + [int(c.generate_state(1)[0] >> 1) for c in children[1:]]


def _totals(tokens, offsets, sent_trans, gamma, W):
    K = gamma.shape[1]
    trans, emit = np.zeros((K + 1, K)), np.zeros((W, K))
    passes.totals_from_local(tokens, offsets, sent_trans, gamma, W, trans, emit)
    return trans, emit


def _initial_totals(state, W):
    return _totals(*state[:4], W)


def _state(local, K, seed, allowed):
    """On a worker, once: ``(local tokens, offsets, sent_trans, gamma, allowed)``, the shard's starting
    ``q(z^i)`` drawn here (:func:`passes.random_start`; ``allowed``: the shard's rows of the tag dictionary)."""
    tokens, offsets = local
    return (tokens, offsets, *passes.random_start(tokens, offsets, K, seed, allowed, np.float32), allowed)


def _round(state, C_trans, C_emit, order, alpha, beta, block, last):
    """On a worker: one round over the shard sentences ``order`` (local indices) against the shard's rows of the
    counts (:meth:`ClusterCVI2.rows`): ``(new state, (counts after the round, log-lik, the shard's totals when
    ``last`` of the pass else None))``."""
    tokens, offsets, sent_trans, gamma, allowed = state
    sent_trans, gamma, C_trans, C_emit = sent_trans.copy(), gamma.copy(), C_trans.copy(), C_emit.copy()
    if block:
        ll = cvi2_block_pass(C_trans, C_emit, sent_trans, gamma, tokens, offsets, order, alpha, beta, allowed, block,
                             passes.n_threads())
    else:
        ll = passes.cvi2_pass(C_trans, C_emit, sent_trans, gamma, tokens, offsets, order, alpha, beta, allowed)
    totals = _totals(tokens, offsets, sent_trans, gamma, C_emit.shape[0]) if last else None
    return (tokens, offsets, sent_trans, gamma, allowed), (C_trans, C_emit, ll, totals)


def _labels(state):
    return state[3].argmax(axis=1)


class ClusterCVI2:
    """Block-parallel cvi2 sweeps with the sentences and their local statistics on the workers (see the module
    docstring), over the shards of a :class:`~.shards.WorkerCorpus` (one block per shard).  Each shard draws
    its starting ``q(z^i)`` with :func:`passes.random_start` seeded by :func:`shard_seeds` of ``seed``: with one
    shard that is the single-process start."""

    def __init__(self, corpus: WorkerCorpus, K: int, seed: int, W: int, allowed: np.ndarray, block: int,
                 sync: int = 0):
        self.client = client = corpus.client
        self.block, self.sync, self.W = max(0, int(block)), int(sync), int(W)
        self.bounds = corpus.sentence_bounds
        self.tokens = np.diff(corpus.token_bounds)
        local, self.vocabs = corpus.local()
        self.states = [submit(client, _state, shard, int(K), s, allowed[v] if allowed.shape[0] else allowed)
                       for shard, v, s in zip(local, self.vocabs, shard_seeds(seed, len(local)))]
        self.C = self._totals(client.gather([submit(client, _initial_totals, s, len(v))
                                             for s, v in zip(self.states, self.vocabs)]))
        self.meter = Meter()

    def _totals(self, totals):
        """The global counts from the shards' totals ``(trans, emit rows for V_s)``, summed in shard order."""
        trans, emit = totals[0][0].copy(), np.zeros((self.W, totals[0][0].shape[1]))
        for t, _ in totals[1:]:
            trans += t
        for (_, e), v in zip(totals, self.vocabs):
            emit[v] += e[:len(v)]
        return trans, emit

    def rows(self, C_emit: np.ndarray, j: int, beta: float) -> np.ndarray:
        """Shard ``j``'s emission counts for a round: the rows ``C[V_j]`` and, when ``V_j`` is not the whole
        vocabulary, one more row ``sum_{w not in V_j} C_{w,k} + (W - |V_j| - 1) beta``, which no local token
        names.  The kernel's surrogate emissions (thesis eq. 3.50) divide by its table's column total plus
        (rows) * beta, and with that row this is ``sum_w C_{w,k} - own_k + W beta`` as on the whole table
        (except where the clamp at 0 of a column less the sentence's own counts binds: round-off only)."""
        v = self.vocabs[j]
        if len(v) == self.W:
            return C_emit[v]
        own = C_emit[v]
        rest = C_emit.sum(axis=0) - own.sum(axis=0) + (self.W - len(v) - 1) * beta
        return np.vstack([own, rest])

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
            sent = {j: (C_trans, self.rows(C_emit, j, beta), pieces[j][r * step:(r + 1) * step]) for j in live}
            rounds = {j: submit(self.client, _round, self.states[j], *sent[j], alpha, beta, self.block,
                                len(pieces[j]) <= (r + 1) * step)
                      for j in live}
            futures = [submit(self.client, timed, operator.getitem, rounds[j], 1) for j in live]
            results = rerun(lambda: self.client.gather(futures))
            for j in live:
                self.states[j] = submit(self.client, operator.getitem, rounds[j], 0)
            results = self.meter.add(time.perf_counter() - t0, results, [self.tokens[j] for j in live])
            self.meter.traffic(0, nbytes(list(sent.values())), nbytes(results))
            if len(results) == 1 and len(self.states) == 1:
                C_trans, C_emit, v = results[0][0], C_emit.copy(), self.vocabs[0]
                C_emit[v] = results[0][1][:len(v)]
            else:  # C <- C + sum_j (C_j - C), C_j - C nonzero only on the rows V_j
                change_t, change_e = np.zeros_like(C_trans), np.zeros_like(C_emit)
                for j, (t, e, _, _) in zip(live, results):
                    v = self.vocabs[j]
                    change_t += t - C_trans
                    change_e[v] += e[:len(v)] - C_emit[v]
                C_trans, C_emit = C_trans + change_t, C_emit + change_e
            for j, (_, _, l, tot) in zip(live, results):
                ll += l
                if tot is not None:
                    totals[j] = tot
        self.C = self._totals(totals)
        trans_out[:] = C_trans
        emit_out[:] = C_emit
        return float(ll)

    def labels(self) -> np.ndarray:
        """Each token's most probable state under its ``q(z_t)``, in corpus order."""
        return np.concatenate(self.client.gather([submit(self.client, _labels, s) for s in self.states]))
