"""Batch ``em`` / ``vi`` with the E-step mapped over the shards on the workers (docs/experiments/distributed.md)."""

from __future__ import annotations

import time

import numpy as np

from ..infer import hmm_passes as passes
from ..infer.hmm_batched import Layout, lockstep_pass
from ..kernels.wire import add_sparse
from .cluster import Meter, nbytes, rerun, same, submit, timed, timed_carried, tree_reduce
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


def _counts_task(A, B, layout):
    """One shard's expected counts with its vocabulary ``V_s``: ``(V_s, trans, emit (|V_s|, K), log-lik, 0)``
    (the last: bytes its sums moved between workers, none yet)."""
    trans, emit, ll, _ = _estep_task(A, B, layout, False)
    return layout[2], trans, emit, ll, 0


def add_counts(a, b):
    """Two shards' (or sums of shards') counts added, the emission rows on the union of their vocabularies (a
    step of the tree reduction): the counts are additive over sentences; the bytes moved are both operands'
    and the second's counts (which travel to the first's worker)."""
    vocab, emit = add_sparse(a[0], a[2], b[0], b[2])
    return vocab, a[1] + b[1], emit, a[3] + b[3], a[4] + b[4] + nbytes(b[:4])


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
    the order of float additions.  Without token marginals to return the sum
    is taken as a tree on the workers (:meth:`_reduced`) and the client
    receives the rows of ``union V_s`` once, not every shard's.
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
        if gamma_out.shape[0] == 0:
            return self._reduced(t0, A, B, trans_out, emit_out)
        timed_results = rerun(lambda: self._map(A, B, True))
        results = self.meter.add(time.perf_counter() - t0, timed_results, np.diff(self.token_bounds))
        self._traffic(A, B, nbytes(results))
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

    def _reduced(self, t0: float, A, B, trans_out, emit_out) -> float:
        """The counts summed as a tree on the workers (:func:`~.cluster.tree_reduce`, in shard order: with two
        shards the client's own sum bit for bit); the client gathers the one sum."""
        def run():
            A_f, B_f = submit(self.client, same, A), submit(self.client, same, B)
            futures = [submit(self.client, timed_carried, _counts_task, A_f, B_f, lay) for lay in self.layouts]
            return self.client.gather(tree_reduce(self.client, futures, add_counts)[0][0])

        (vocab, trans, emit, ll, moved), timings = rerun(run)
        self.meter.add(time.perf_counter() - t0, [(None, *t) for t in timings], np.diff(self.token_bounds))
        self._traffic(A, B, nbytes((vocab, trans, emit, ll)), moved)
        trans_out[:] = trans
        emit_out[:] = 0.0
        emit_out[vocab] = emit
        return float(ll)

    def _traffic(self, A, B, received: int, moved: int = 0) -> None:
        """A pass's bytes in the meter: ``A`` and ``B`` sent once and passed on to the other shards (an estimate:
        shards on one worker share a copy), the results ``received``, the tree's sums ``moved``."""
        sent = nbytes((A, B))
        self.meter.traffic(0, sent, received, (self.n_shards - 1) * sent + moved)

    def _map(self, A, B, want_gamma):
        """Broadcast ``A`` and ``B``, run every shard's E-step, gather the results in shard order."""
        A_f, B_f = submit(self.client, same, A), submit(self.client, same, B)
        return self.client.gather([submit(self.client, timed, _estep_task, A_f, B_f, lay, want_gamma)
                                   for lay in self.layouts])
