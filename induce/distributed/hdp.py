"""HDP-HMM ``scvi`` and ``svi`` with each minibatch's local step on the workers (docs/experiments/distributed.md).

* ``scvi``: :class:`ClusterHDPMinibatch` runs the kernel of the single process
  (:func:`induce.infer.hdp_passes.hdp_minibatch_rows`, with the emission ``log q(C = 0)`` for the asymmetric
  prior) on each worker over its sentences of the minibatch, under the global counts ``N``.  scvi's minibatches
  are fixed for the whole fit, so each worker cuts its pieces of all of them once, at the start, from its shard
  (a :class:`WorkerCorpus`: read by the workers from the corpus file, or shipped once for in-memory data) and
  keeps them; the client learns each piece's distinct words once.  A step then sends each worker the transition
  counts, the emission count rows of its piece's words, their prior pseudo-counts and the emission column
  totals, and gets back the rows of those words: the bytes a token do not grow with the number of workers and
  fall with the minibatch size (the distinct words of ``M`` sentences grow slower than ``M``).  Every output is
  a sum over sentences (expected counts, ``log q(C^m = 0)`` = sum of the sentences' ``log q(C^i = 0)``, thesis
  5.3), so the client adds the pieces.  Piece ``j`` samples with ``seed + j`` (``qc="sampling"``): with one
  shard the run is the single-process run bit for bit.
* ``svi``: :class:`ClusterHDPSVI`, the minibatch's forward-backward under the
  expected parameters (Johnson & Willsky 2014, eq. 10-11) on the workers'
  shards by :func:`induce.distributed.minibatch.shard_statistics`, as for the
  HMM's ``svi`` over a :class:`WorkerCorpus`.
"""

from __future__ import annotations

import time

import numpy as np

from ..corpus.corpus import distinct, gather_sentences
from ..infer.hdp_passes import column_totals, hdp_minibatch_rows
from ..infer.stochastic_hmm import _NO_MASK
from .cluster import Meter, nbytes, submit, timed
from .minibatch import cut_pieces, shard_statistics
from .shards import WorkerCorpus


def _cut(shard, batches: list) -> list:
    """On a worker, once: its sentences of every minibatch (local indices, in the minibatch's order) as pieces
    ``(words, tokens as indices into them (int32), offsets)``."""
    pieces = []
    for idx in batches:
        tokens, offsets = gather_sentences(shard[0], shard[1], idx)
        words, local = distinct(tokens)
        pieces.append((words, local.astype(np.int32), offsets))
    return pieces


def _words(pieces: list) -> list:
    return [(p[0], len(p[1])) for p in pieces]


def _hdp_piece(pieces: list, b: int, N_trans, rows, col_tot, prior_rows, prior, sigma, emit_total, qc_method,
               n_samples, seed, emission_q0: bool):
    """On a worker: the minibatch kernel on its piece of minibatch ``b`` under the emission count rows ``rows`` and
    prior pseudo-counts ``prior_rows`` of the piece's words: ``(log-lik, trans, their emission rows, log q0,
    log q0 by row, their rows of the emission log q0 or None)``."""
    words, tokens, offsets = pieces[b]
    K = N_trans.shape[1]
    trans, emit, q0, q0_row = np.zeros((K + 1, K)), np.zeros((len(words), K)), np.zeros((K + 1, K)), np.zeros(K + 1)
    q0_emit = np.zeros((len(words), K) if emission_q0 else (0, 0))
    no_memory = np.zeros((0, K + 1, K)), np.zeros((0, K))
    ll = hdp_minibatch_rows(N_trans, rows, col_tot, tokens, offsets, np.arange(len(offsets) - 1, dtype=np.int64),
                            prior, sigma, prior_rows, emit_total, qc_method, n_samples, seed, trans, emit, q0, q0_row,
                            *no_memory, q0_emit)
    return ll, trans, emit, q0, q0_row, (q0_emit if emission_q0 else None)


class ClusterHDPMinibatch:
    """scvi's local steps with each fixed minibatch's sentences split over the shards (see the module
    docstring): the pieces are cut on the workers when it is made."""

    def __init__(self, corpus: WorkerCorpus, batches: list):
        """``batches``: the fit's fixed minibatches (global sentence indices, any order)."""
        self.client = corpus.client
        self.corpus = corpus
        self.meter = Meter()
        bounds = corpus.sentence_bounds
        shard_of = [np.searchsorted(bounds, idx, side="right") - 1 for idx in batches]
        #: for each minibatch, the shards holding some of it
        self._live = [[j for j in range(corpus.n_shards) if np.any(of == j)] for of in shard_of]
        local = [[idx[of == j] - bounds[j] for idx, of in zip(batches, shard_of)] for j in range(corpus.n_shards)]
        #: the pieces of every minibatch (empty ones too), one future a shard, kept on its worker
        self._pieces = [submit(self.client, _cut, corpus.shards[j], local[j]) for j in range(corpus.n_shards)]
        #: the distinct words and the tokens of each shard's piece of each minibatch
        self._words = self.client.gather([submit(self.client, _words, p) for p in self._pieces])
        self.meter.traffic(0, nbytes(local), nbytes(self._words))

    def __call__(self, b: int, N_trans, N_emit, prior, sigma, emit_prior, emit_total, qc_method, n_samples, seed,
                 trans_out, emit_out, logq0, logq0_row, logq0_emit=None) -> float:
        """:func:`~induce.infer.hdp_passes.hdp_minibatch_pass` on minibatch ``b`` without a sentence memory
        (``emit_prior`` by word), its outputs overwritten; ``logq0_emit`` (W, K), or None: not wanted."""
        t0 = time.perf_counter()
        col_tot, live = column_totals(N_emit), self._live[b]
        words = [self._words[j][b][0] for j in live]
        sent = [(N_trans, np.ascontiguousarray(N_emit[w]), col_tot, np.ascontiguousarray(emit_prior[w]))
                for w in words]
        futures = [submit(self.client, timed, _hdp_piece, self._pieces[j], b, *arrays, prior, sigma, emit_total,
                          qc_method, n_samples, seed + n, logq0_emit is not None)
                   for n, (j, arrays) in enumerate(zip(live, sent))]
        gathered = self.client.gather(futures)
        results = self.meter.add(time.perf_counter() - t0, gathered, [self._words[j][b][1] for j in live])
        self.meter.traffic(1, nbytes(sent), nbytes(results))
        ll = 0.0
        for out in (trans_out, emit_out, logq0, logq0_row, *(() if logq0_emit is None else (logq0_emit,))):
            out[:] = 0.0
        for (l, t, e, q, qr, qe), w in zip(results, words):
            ll += l
            trans_out += t
            emit_out[w] += e
            logq0 += q
            logq0_row += qr
            if logq0_emit is not None:
                logq0_emit[w] += qe
        return ll


class ClusterHDPSVI:
    """The HDP-HMM ``svi`` local step, forward-backward on a minibatch under dense ``A`` / ``B`` (as
    :func:`induce.infer.hmm_passes.batch_pass`), on the shards of a :class:`WorkerCorpus`: each worker cuts its
    sentences of the minibatch from its shard, gets the emission rows of their words only and returns theirs
    (:func:`induce.distributed.minibatch.shard_statistics`)."""

    def __init__(self, corpus: WorkerCorpus):
        self.corpus = corpus
        self.meter = Meter()

    def __call__(self, A, B, items, trans_out, emit_out) -> float:
        """Overwrites ``trans_out`` (K+1, K) and ``emit_out`` (W, K) with the expected counts of the sentences
        ``items`` (sorted global indices); returns their log-likelihood."""
        t0 = time.perf_counter()
        trans, ids, rows, ll, _ = shard_statistics(self.corpus, self.meter, t0, cut_pieces(self.corpus, items),
                                                   lambda ids: (A, B[ids], _NO_MASK))
        trans_out[:] = trans
        emit_out[:] = 0.0
        emit_out[ids] = rows
        return ll
