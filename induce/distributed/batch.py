"""Batch ``em`` / ``vi`` with the E-step mapped over the shards on the workers (docs/experiments/distributed.md)."""

from __future__ import annotations

import time

import numpy as np

from ..infer import hmm_passes as passes
from ..infer.hmm_batched import Layout, lockstep_pass
from .cluster import Meter, rerun, same, submit, timed
from .shards import WorkerCorpus


def _layout_task(shard, block):
    return Layout(shard[0], shard[1], block)


def _estep_task(A, B, allowed, lay: Layout, W: int, want_gamma: bool):
    """One shard's E-step (:func:`lockstep_pass`): ``(trans (K+1, K), emit (W, K), log-lik, gamma or None)``."""
    K = A.shape[1]
    trans = np.zeros((K + 1, K))
    emit = np.zeros((W, K))
    g = np.empty((lay.n_tokens if want_gamma else 0, K))
    ll = lockstep_pass(A, B, allowed, lay.lay_tokens, lay.lay_flat, lay.pos_start, lay.block_pos, trans, emit, g,
                       passes.n_threads())
    return trans, emit, ll, (g if want_gamma else None)


class ClusterEStep:
    """The batch em / vi E-step mapped over the shards of a :class:`WorkerCorpus`.

    Each shard's lockstep layout is built on its worker once, at
    construction.  Per pass the client broadcasts ``A`` (K+1, K) and ``B``
    (W, K), every shard runs :func:`lockstep_pass`, and the client sums the
    expected counts in shard order (so a run is reproducible).  The counts are
    additive over sentences, so the sum equals the single-process E-step up to
    the order of float additions.
    """

    def __init__(self, client, corpus: WorkerCorpus, allowed: np.ndarray, block: int):
        self.client = client
        self.allowed = allowed  # (sent with each task: lost with no worker)
        self.token_bounds = corpus.token_bounds
        self.layouts = [submit(client, _layout_task, s, block) for s in corpus.shards]
        self.meter = Meter()

    @property
    def n_shards(self) -> int:
        return len(self.layouts)

    def __call__(self, A, B, trans_out, emit_out, gamma_out) -> float:
        """Same contract as :func:`lockstep_pass` on the whole corpus: overwrites ``trans_out`` / ``emit_out``
        with the expected counts, fills ``gamma_out`` when it has N rows, returns ``sum_i log p(x^i)``."""
        t0 = time.perf_counter()
        timed_results = rerun(lambda: self._map(A, B, emit_out.shape[0], gamma_out.shape[0] > 0))
        results = self.meter.add(time.perf_counter() - t0, timed_results, np.diff(self.token_bounds))
        trans_out[:] = 0.0
        emit_out[:] = 0.0
        ll = 0.0
        for s, (t, e, l, g) in enumerate(results):
            trans_out += t
            emit_out += e
            ll += l
            if g is not None:
                gamma_out[self.token_bounds[s]:self.token_bounds[s + 1]] = g
        return float(ll)

    def _map(self, A, B, W, want_gamma):
        """Broadcast the parameters, run every shard's E-step, gather the results in shard order."""
        A_f, B_f = submit(self.client, same, A), submit(self.client, same, B)
        return self.client.gather([submit(self.client, timed, _estep_task, A_f, B_f, self.allowed, lay, W, want_gamma)
                                   for lay in self.layouts])
