"""Block-parallel cvi2 (CVI algorithm 2, thesis eq. 3.44-3.50) on the workers (docs/experiments/distributed.md).

Each worker holds a shard of sentences with their local statistics
``q(z^i)`` (``sent_trans``, ``gamma``), which never leave it.  A pass is cut
into rounds: in a round every worker runs the existing kernel -- the
block-parallel :func:`induce.infer.hmm_batched.cvi2_block_pass`, or the exact
sequential :func:`induce.infer.hmm_passes.cvi2_pass` with ``block`` 0 (the
default; a block pass of one sentence per block computes the same sweep many
times slower) -- over its next ``sync`` sentences of the pass order (all of its sentences by default) against the
global counts ``C`` frozen at the round start, and returns the change of its
counts ``C_j - C`` (its counts ``C_j`` with one shard); the changes are summed
as a tree on the workers (:func:`~.cluster.tree_reduce`, in shard order) and
the client, which gathers the one sum, sets ``C <- C + sum_j (C_j - C)``.  Each shard has its own vocabulary ``V_s``
(:func:`~.shards.local_vocabulary`): it is sent only the rows ``C[V_s]`` of
the emission counts (plus one row standing for the rest of each column, see
:meth:`ClusterCVI2.rows`) and returns only those rows, the only ones its
sentences change.  Sentences of one shard see each other as the single-process
block pass does; sentences of different shards see each other's changes at
the next round (the approximate distributed scheme of AD-LDA, Newman et al.
2009).  At the start of each pass ``C`` is recomputed exactly from the stored
statistics (the shards' totals, summed as a tree), as the single-process sweep does.  With one worker and one round
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
from .batch import add_counts
from .cluster import Meter, nbytes, rerun, submit, timed_carried, tree_reduce
from .shards import WorkerCorpus


def shard_seeds(seed: int, n_shards: int) -> list[int]:
    """The seeds of the shards' random starts: ``seed`` for shard 0, so that shard 0 draws what the single
    process draws for its sentences (all of them with one shard: :func:`passes.init_chain_posteriors` draws
    sentence after sentence from one generator), and for shard ``j > 0`` a seed of the ``j``-th child of
    ``SeedSequence(seed)`` (independent of the number of shards)."""
    children = np.random.SeedSequence(int(seed)).spawn(max(1, int(n_shards)))
    return [int(seed)] + [int(c.generate_state(1)[0] >> 1) for c in children[1:]]


def _totals(tokens, offsets, sent_trans, gamma, n_rows: int):
    """A shard's counts from its stored statistics: ``(trans, emit rows of its vocabulary)``."""
    K = gamma.shape[1]
    trans, emit = np.zeros((K + 1, K)), np.zeros((n_rows, K))
    passes.totals_from_local(tokens, offsets, sent_trans, gamma, n_rows, trans, emit)
    return trans, emit


def _shard_totals(state, vocab):
    """On a worker: a shard's counts as a term of the tree sum (:func:`~.batch.add_counts`)."""
    trans, emit = _totals(*state[:4], len(vocab))
    return (vocab, trans, emit, 0.0, 0), []


def _state(local, K, seed, allowed):
    """On a worker, once: ``(local tokens, offsets, sent_trans, gamma, allowed)``, the shard's starting
    ``q(z^i)`` drawn here (:func:`passes.random_start`; ``allowed``: the shard's rows of the tag dictionary)."""
    tokens, offsets = local
    return (tokens, offsets, *passes.random_start(tokens, offsets, K, seed, allowed, np.float32), allowed)


def _round(state, C_trans, C_emit, order, alpha, beta, block, last, vocab, change: bool):
    """On a worker: one round over the shard sentences ``order`` (local indices) against the shard's rows of the
    counts (:meth:`ClusterCVI2.rows`): ``(new state, (V_j, transitions, emission rows of V_j, log-lik, 0), the
    shard's totals when ``last`` of the pass else None)``, the counts after the round or, with ``change``, their
    change ``C_j - C`` (a term of the tree sum, :func:`~.batch.add_counts`)."""
    tokens, offsets, sent_trans, gamma, allowed = state
    start_trans, start_rows = C_trans, C_emit[:len(vocab)]
    sent_trans, gamma, C_trans, C_emit = sent_trans.copy(), gamma.copy(), C_trans.copy(), C_emit.copy()
    if block:
        ll = cvi2_block_pass(C_trans, C_emit, sent_trans, gamma, tokens, offsets, order, alpha, beta, allowed, block,
                             passes.n_threads())
    else:
        ll = passes.cvi2_pass(C_trans, C_emit, sent_trans, gamma, tokens, offsets, order, alpha, beta, allowed)
    rows = C_emit[:len(vocab)]
    if change:
        C_trans, rows = C_trans - start_trans, rows - start_rows
    state = tokens, offsets, sent_trans, gamma, allowed
    return state, (vocab, C_trans, rows, ll, 0), (_shard_totals(state, vocab) if last else None)


def _timed_round(*args):
    """:func:`_round` timed: ``(new state, (its counts or change, [timing]), totals)``, the second a term of
    :func:`~.cluster.tree_reduce` that carries the task's timing."""
    (state, out, totals), timing = timed_carried(_round, *args)
    return state, (out, timing), totals


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
        self.meter = Meter()
        self.C = self._summed([submit(client, _shard_totals, s, v) for s, v in zip(self.states, self.vocabs)])
        held = client.who_has(self.states)
        #: the worker holding each shard's state, where its tasks run (a round's result holds the state, hundreds
        #: of MB for Brown's halves, which dask moved to the other worker for a small task now and then); updated
        #: from where each round ran (after a lost worker, elsewhere)
        self.homes = [(held.get(f.key) or [None])[0] for f in self.states]

    def _summed(self, totals: list):
        """The global counts ``(trans, emit (W, K))`` from futures of the shards' totals (:func:`_shard_totals`),
        summed as a tree on the workers in shard order; the client gathers the one sum."""
        (vocab, trans, rows, _, moved), _ = rerun(lambda: self.client.gather(tree_reduce(self.client, totals,
                                                                                         add_counts)[0][0]))
        self.meter.traffic(0, 0, nbytes((vocab, trans, rows)), moved)
        emit = np.zeros((self.W, trans.shape[1]))
        emit[vocab] = rows
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
        change = len(self.states) > 1  # one shard: its counts are the counts (the single process's, bit for bit)
        for r in range(n_rounds):
            t0 = time.perf_counter()
            live = [j for j, p in enumerate(pieces) if len(p) > r * step]
            sent = {j: (C_trans, self.rows(C_emit, j, beta), pieces[j][r * step:(r + 1) * step]) for j in live}
            rounds = {j: submit(self.client, _timed_round, self.states[j], *sent[j], alpha, beta, self.block,
                                len(pieces[j]) <= (r + 1) * step, self.vocabs[j], change, home=self.homes[j])
                      for j in live}
            outs = [submit(self.client, operator.getitem, rounds[j], 1, home=self.homes[j]) for j in live]
            (vocab, trans, rows, l, moved), timings = rerun(
                lambda: self.client.gather(tree_reduce(self.client, outs, add_counts)[0][0]))
            for j, timing in zip(live, timings):
                self.homes[j] = timing[1]
                self.states[j] = submit(self.client, operator.getitem, rounds[j], 0, home=self.homes[j])
                if len(pieces[j]) <= (r + 1) * step:
                    totals[j] = submit(self.client, operator.getitem, rounds[j], 2, home=self.homes[j])
            self.meter.add(time.perf_counter() - t0, [(None, *t) for t in timings], [self.tokens[j] for j in live])
            self.meter.traffic(0, nbytes(list(sent.values())), nbytes((vocab, trans, rows, l)), moved)
            if change:  # C <- C + sum_j (C_j - C), C_j - C nonzero only on the rows V_j (summed on the workers)
                moves = np.zeros_like(C_emit)
                moves[vocab] = rows
                C_trans, C_emit = C_trans + trans, C_emit + moves
            else:
                C_trans, C_emit = trans, C_emit.copy()
                C_emit[vocab] = rows
            ll += l
        self.C = self._summed(totals)
        trans_out[:] = C_trans
        emit_out[:] = C_emit
        return float(ll)

    def labels(self) -> np.ndarray:
        """Each token's most probable state under its ``q(z_t)``, in corpus order."""
        return np.concatenate(self.client.gather([submit(self.client, _labels, s) for s in self.states]))
