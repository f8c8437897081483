"""``svi`` / ``scvi`` with each minibatch's local step on the workers (docs/experiments/distributed.md).

The corpus lives on the workers (:class:`~induce.distributed.shards.WorkerCorpus`:
read by them from the corpus file, or shipped once for data given in
memory); a minibatch is a list of global sentence indices.  Each worker cuts
its piece of the minibatch from its shard and tells the client which words it
holds (phase 1, :func:`cut_pieces`, prefetched for the next minibatch while
this one runs); the client forms the local parameters from the global counts,
the transition table and the emission rows of the minibatch's words only
(:func:`induce.infer.stochastic_hmm.local_parameters`), and sends each worker
the rows of its words; the workers run
:func:`induce.infer.stochastic_hmm.local_statistics` (forward-backward) and
return sparse statistics (rows of those words, not a dense K x W table;
phase 2, :func:`shard_statistics`); the client applies the step, thesis
eq. 3.103.  No token crosses the network.
"""

from __future__ import annotations

import time

import numpy as np

from ..corpus.corpus import distinct, gather_sentences
from ..infer import stochastic_hmm as stochastic
from . import cluster
from .cluster import Meter, nbytes, submit, timed
from .shards import WorkerCorpus


def _sum_statistics(results, rows, n_rows: int):
    """Sum of the pieces' ``(trans, emit rows, log-lik)``; piece ``j``'s rows go to rows ``rows[j]`` of
    ``(n_rows, K)``, added in piece order."""
    trans, emit, ll = results[0][0], np.zeros((n_rows, results[0][1].shape[1])), results[0][2]
    emit[rows[0]] = results[0][1]
    for (t, e, l), r in zip(results[1:], rows[1:]):
        trans = trans + t
        emit[r] += e
        ll += l
    return trans, emit, ll


def _minibatch_piece(shard, idx):
    """On a worker, phase 1: shard sentences ``idx`` as ``(words, local tokens, offsets)``: the distinct word ids
    and the tokens as indices into them."""
    tokens, offsets = gather_sentences(shard[0], shard[1], idx)
    words, local = distinct(tokens)
    return words, local.astype(np.int32), offsets


def _piece_words(p):
    return p[0], len(p[1])


def _piece_statistics(A, P, mask, p):
    """On a worker, phase 2: :func:`local_statistics` of a piece given the emission rows ``P`` of its words (and
    their tag-dictionary rows ``mask``, or an empty one)."""
    return stochastic.local_statistics(A, P, mask, p[1], p[2])


class WorkerSentenceUpdater(stochastic.SentenceUpdater):
    """``svi`` / ``scvi`` over a :class:`WorkerCorpus` (see the module docstring); minibatches come from
    :meth:`batches`.  Pieces are summed in shard order: given the seed and the shards a run is reproducible,
    and with one shard it equals the single-process run on the same minibatches."""

    def __init__(self, corpus: WorkerCorpus, algorithm: str, alpha: float, beta: float,
                 allowed: np.ndarray = stochastic._NO_MASK, n_sentences: int | None = None):
        """``n_sentences``: the training sentences (the scale ``I / |B|``), all of ``corpus`` when None; fewer
        where some of them are held out."""
        super().__init__(algorithm, alpha, beta, corpus.n_sentences if n_sentences is None else n_sentences,
                         allowed)
        self.corpus = corpus
        self.client = corpus.client
        self.meter = Meter()
        self._ahead = None  # (indices, phase-1 futures) of the next minibatch

    def batches(self, indices):
        """The minibatches of ``indices`` (global sentence indices, e.g.
        :func:`induce.corpus.stream.shuffled_batches`), each with the next one, so that the next one's pieces
        are cut while this one runs."""
        it = iter(indices)
        cur = next(it, None)
        while cur is not None:
            nxt = next(it, None)
            yield cur, nxt
            cur = nxt

    def local(self, counts, batch):
        """The minibatch's local step on the workers (the global step: :meth:`CountsUpdater.blend`)."""
        idx, nxt = batch
        t0 = time.perf_counter()
        ahead, self._ahead = self._ahead, None
        pieces = ahead[1] if ahead is not None and ahead[0] is idx else cut_pieces(self.corpus, idx)

        def prefetch():  # cut the next minibatch's pieces while this one runs
            if nxt is not None:
                self._ahead = (nxt, cut_pieces(self.corpus, nxt))

        ts, ids, es, ll, n = shard_statistics(
            self.corpus, self.meter, t0, pieces,
            lambda ids: (*stochastic.local_parameters(counts, self.estimator, self.alpha, self.beta, ids),
                         stochastic.dictionary_rows(self.allowed, ids, counts.n_states)), prefetch)
        self.meter.traffic(0, nbytes(idx), 0)
        scale = self.n_sentences / max(1, len(idx))
        return ll, (ts, ids, es), (scale, scale), n


def cut_pieces(corpus: WorkerCorpus, idx: np.ndarray) -> list:
    """Phase 1 for the global sentence indices ``idx`` (sorted): a future of each touched shard's piece."""
    bounds = corpus.sentence_bounds
    cut = np.searchsorted(idx, bounds)
    return [submit(corpus.client, _minibatch_piece, corpus.shards[j], idx[cut[j]:cut[j + 1]] - bounds[j])
            for j in range(corpus.n_shards) if cut[j + 1] > cut[j]]


def shard_statistics(corpus: WorkerCorpus, meter: Meter, t0: float, pieces: list, parameters, submitted=None):
    """Phase 2: :func:`~induce.infer.stochastic_hmm.local_statistics` of the ``pieces`` (:func:`cut_pieces`)
    under ``parameters(ids) -> (A (K+1, K), emission rows (len(ids), K), tag-dictionary rows (len(ids), K) or
    empty)`` of the pieces' distinct words ``ids``, each piece getting the rows of its own words; summed in
    shard order and recorded in ``meter``
    from ``t0``; ``submitted()`` is called once the tasks are submitted.  Returns ``(trans, ids, emission
    rows, log-lik, tokens)``."""
    client = corpus.client
    words = client.gather([submit(client, _piece_words, p) for p in pieces])
    ids = np.unique(np.concatenate([w for w, _ in words]))
    A, P, mask = parameters(ids)
    rows = [np.searchsorted(ids, w) for w, _ in words]
    A_f = submit(client, cluster.same, A)
    futures = [submit(client, timed, _piece_statistics, A_f, np.ascontiguousarray(P[r]),
                      np.ascontiguousarray(mask[r]) if mask.shape[0] else mask, p) for r, p in zip(rows, pieces)]
    if submitted is not None:
        submitted()
    gathered = client.gather(futures)
    results = meter.add(time.perf_counter() - t0, gathered, [n for _, n in words])
    meter.traffic(1, nbytes(A) + sum(nbytes(P[r]) + (nbytes(mask[r]) if mask.shape[0] else 0) for r in rows),
                  nbytes(words) + nbytes(results))
    trans, emit, ll = _sum_statistics(results, rows, len(ids))
    return trans, ids, emit, ll, sum(n for _, n in words)
