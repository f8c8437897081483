"""HDP-HMM ``scvi`` and ``svi`` with each minibatch's local step on the workers (docs/experiments/distributed.md).

* ``scvi``: :class:`ClusterHDPMinibatch` runs the existing kernel
  :func:`induce.infer.hdp_passes.hdp_minibatch_pass` (with the emission
  ``log q(C = 0)`` for the asymmetric prior) on each worker over the minibatch sentences of
  its shard (a :class:`WorkerCorpus`: read by the workers from the corpus
  file, or shipped once for in-memory data), under the
  global counts ``N`` broadcast per minibatch.  Every output is a sum over
  sentences (expected counts, ``log q(C^m = 0)`` = sum of the sentences'
  ``log q(C^i = 0)``, thesis 5.3), so the client adds the pieces; the workers
  return the emission rows of their words only.  Piece ``j`` samples with
  ``seed + j`` (``qc="sampling"``): with one shard the run is the
  single-process run.
* ``svi``: :class:`ClusterHDPSVI`, the minibatch's forward-backward under the
  expected parameters (Johnson & Willsky 2014, eq. 10-11) on the workers'
  shards by :func:`induce.distributed.minibatch.shard_statistics`, as for the
  HMM's ``svi`` over a :class:`WorkerCorpus`.
"""

from __future__ import annotations

import time

import numpy as np

from ..infer.hdp_passes import hdp_minibatch_pass
from ..infer.stochastic_hmm import _NO_MASK
from .cluster import Meter, same, submit, timed
from .minibatch import cut_pieces, shard_statistics
from .shards import WorkerCorpus


def _hdp_piece(emission_q0: bool, shard, N_trans, N_emit, items, *args):
    """On a worker: the minibatch kernel (``hdp_minibatch_pass``, with the emission log q0 if ``emission_q0``) on the
    shard sentences ``items``: ``(log-lik, trans, word ids, their emission rows, log q0, log q0 by row, their rows
    of the emission log q0 or None)``."""
    tokens, offsets = shard
    K, W = N_trans.shape[1], N_emit.shape[0]
    trans, emit, q0, q0_row = np.zeros((K + 1, K)), np.zeros((W, K)), np.zeros((K + 1, K)), np.zeros(K + 1)
    q0_emit = np.zeros((W, K) if emission_q0 else (0, 0))
    no_memory = np.zeros((0, K + 1, K)), np.zeros((0, K))
    ll = hdp_minibatch_pass(N_trans, N_emit, tokens, offsets, items, *args, trans, emit, q0, q0_row, *no_memory,
                            q0_emit)
    ids = np.unique(np.concatenate([tokens[offsets[i]:offsets[i + 1]] for i in items]))
    return ll, trans, ids, emit[ids], q0, q0_row, (q0_emit[ids] if emission_q0 else None)


class ClusterHDPMinibatch:
    """``hdp_minibatch_pass`` with the minibatch's sentences split over the shards (see the module docstring)."""

    def __init__(self, corpus: WorkerCorpus):
        self.client = corpus.client
        self.corpus = corpus
        self.meter = Meter()

    def __call__(self, emission_q0: bool, N_trans, N_emit, tokens, offsets, items, prior, sigma, emit_prior, emit_total,
                 qc_method, n_samples, seed, trans_out, emit_out, logq0, logq0_row, mem_trans, mem_gamma,
                 *logq0_emit) -> float:
        """Same arguments and contract as ``hdp_minibatch_pass`` (``logq0_emit`` given with ``emission_q0``,
        else left out); ``tokens`` / ``offsets`` are the shards' and are not sent; no sentence memory
        (``mem_trans`` / ``mem_gamma`` must be empty)."""
        t0 = time.perf_counter()
        bounds = self.corpus.sentence_bounds
        shard_of = np.searchsorted(bounds, items, side="right") - 1
        N_t, N_e = submit(self.client, same, N_trans), submit(self.client, same, N_emit)
        live = [j for j in range(self.corpus.n_shards) if np.any(shard_of == j)]
        futures = [submit(self.client, timed, _hdp_piece, emission_q0, self.corpus.shards[j], N_t, N_e,
                          items[shard_of == j] - bounds[j], prior, sigma, emit_prior, emit_total, qc_method,
                          n_samples, seed + n)
                   for n, j in enumerate(live)]
        lengths = np.diff(offsets)
        gathered = self.client.gather(futures)
        results = self.meter.add(time.perf_counter() - t0, gathered,
                                 [lengths[items[shard_of == j]].sum() for j in live])
        ll = 0.0
        for out in (trans_out, emit_out, logq0, logq0_row, *logq0_emit):
            out[:] = 0.0
        for l, t, ids, e, q, qr, qe in results:
            ll += l
            trans_out += t
            emit_out[ids] += e
            logq0 += q
            logq0_row += qr
            if logq0_emit:
                logq0_emit[0][ids] += qe
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
