"""Batch ``em`` / ``vi`` with the E-step mapped over the shards on the workers (docs/experiments/distributed.md)."""

from __future__ import annotations

import time

import numpy as np

from ..infer import hmm_passes as passes
from ..infer.hmm_batched import Layout, lockstep_pass
from .cluster import Meter, rerun, same, submit, timed
from .shards import WorkerCorpus


def _layout_task(local, block, allowed, vocab):
    """On a worker, once: the lockstep :class:`Layout` of a local shard (:func:`~.shards.local_vocabulary`), its
    rows of the tag dictionary ``allowed`` and its vocabulary ``V_s``."""
    return Layout(local[0], local[1], block), allowed, vocab


def _estep_task(A, B, layout, want_gamma: bool):
    """One shard's E-step (:func:`lockstep_pass`) on its rows ``B[V_s]`` (|V_s|, K) of the broadcast emission
    table: ``(trans (K+1, K), emit (|V_s|, K), log-lik, gamma or None)``."""
    lay, allowed, vocab = layout
    B = np.ascontiguousarray(B[vocab])
    K = A.shape[1]
    trans = np.zeros((K + 1, K))
    emit = np.zeros((B.shape[0], K))
    g = np.empty((lay.n_tokens if want_gamma else 0, K))
    ll = lockstep_pass(A, B, allowed, lay.lay_tokens, lay.lay_flat, lay.pos_start, lay.block_pos, trans, emit, g,
                       passes.n_threads())
    return trans, emit, ll, (g if want_gamma else None)


class ClusterEStep:
    """The batch em / vi E-step mapped over the shards of a :class:`WorkerCorpus`.

    At construction each shard gets its own vocabulary ``V_s`` and its
    lockstep layout over local word ids, built on its worker once
    (:meth:`WorkerCorpus.local`).  Per pass the client broadcasts ``A``
    (K+1, K) and the emission table ``B`` (W, K) once (the workers pass it on
    among themselves; sending each shard its rows ``B[V_s]`` instead would
    upload ``sum_s |V_s|`` rows, more than W whenever the shards share words:
    1.34 W for Brown's two halves), each shard cuts its rows, runs
    :func:`lockstep_pass` and returns its emission
    counts for ``V_s`` only, which the client adds in shard order
    (``emit[V_s] += rows``, so a run is reproducible).  The counts are
    additive over sentences, so the sum equals the single-process E-step up to
    the order of float additions.
    """

    def __init__(self, client, corpus: WorkerCorpus, allowed: np.ndarray, block: int):
        self.client = client
        self.token_bounds = corpus.token_bounds
        local, self.vocabs = corpus.local()
        self.layouts = [submit(client, _layout_task, s, block, allowed[v] if allowed.shape[0] else allowed, v)
                        for s, v in zip(local, self.vocabs)]
        self.meter = Meter()

    @property
    def n_shards(self) -> int:
        return len(self.layouts)

    def __call__(self, A, B, trans_out, emit_out, gamma_out) -> float:
        """Same contract as :func:`lockstep_pass` on the whole corpus: overwrites ``trans_out`` / ``emit_out``
        with the expected counts, fills ``gamma_out`` when it has N rows, returns ``sum_i log p(x^i)``."""
        t0 = time.perf_counter()
        timed_results = rerun(lambda: self._map(A, B, gamma_out.shape[0] > 0))
        results = self.meter.add(time.perf_counter() - t0, timed_results, np.diff(self.token_bounds))
        trans_out[:] = 0.0
        emit_out[:] = 0.0
        ll = 0.0
        for s, (t, e, l, g) in enumerate(results):
            trans_out += t
            emit_out[self.vocabs[s]] += e
            ll += l
            if g is not None:
                gamma_out[self.token_bounds[s]:self.token_bounds[s + 1]] = g
        return float(ll)

    def _map(self, A, B, want_gamma):
        """Broadcast ``A`` and ``B``, run every shard's E-step, gather the results in shard order."""
        A_f, B_f = submit(self.client, same, A), submit(self.client, same, B)
        return self.client.gather([submit(self.client, timed, _estep_task, A_f, B_f, lay, want_gamma)
                                   for lay in self.layouts])
