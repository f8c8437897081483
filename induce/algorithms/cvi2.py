"""CVI algorithm 2: one ``q(z^i)`` per sentence, updated by forward-backward against the collapsed counts of
the other sentences (thesis eq. 3.44-3.50); ``cvi2_block`` > 0 updates that many consecutive sentences in
parallel against the counts frozen at their block's start (:func:`induce.infer.hmm_batched.cvi2_block_pass`);
on a dask cluster one block per worker (:mod:`induce.distributed.cvi2`)."""

from __future__ import annotations

import time

import numpy as np

from ..infer import hmm_passes as passes
from ..infer.hmm_batched import cvi2_block_pass
from .base import Algorithm, Fitted, random_start, register, worker_corpus


@register("cvi2")
class CVI2(Algorithm):
    """Sentence-wise collapsed VI; the totals are recomputed exactly from the stored local statistics before
    every pass (no drift).  ``local``: those statistics ``(sent_trans, gamma)`` in this process (a prior update
    from expected counts reads them: benchmarks/hyper_variants.py)."""

    stoppable = True
    cluster = True

    def fit(self, core, data, loop, opts) -> Fitted:
        K = core.K
        trans = np.zeros((K + 1, K))
        emit = np.zeros((data.W, K))
        if opts.client is not None:  # q(z^i) on the workers, one block per worker (induce.distributed.cvi2)
            from ..distributed import ClusterCVI2

            sweep = ClusterCVI2(worker_corpus(opts.client, data, opts.vocab), K, loop.seeds[0], data.W, core.allowed,
                                opts.cvi2_block)
            loop.meter, labels = sweep.meter, sweep.labels
        else:
            sent_trans, gamma = self.local = random_start(core, data, loop.seeds[0], np.float32)
            labels = lambda: gamma.argmax(axis=1)  # noqa: E731
        for it in loop:
            t0 = time.perf_counter()
            order, alpha, beta = loop.visit(it), core.priors.alpha, core.priors.beta
            if opts.client is not None:
                ll = sweep(order, alpha, beta, trans, emit)
            else:
                passes.totals_from_local(data.tokens, data.offsets, sent_trans, gamma, data.W, trans, emit)
                if opts.cvi2_block > 0:
                    ll = cvi2_block_pass(trans, emit, sent_trans, gamma, data.tokens, data.offsets, order, alpha,
                                         beta, core.allowed, int(opts.cvi2_block), passes.n_threads())
                else:
                    ll = passes.cvi2_pass(trans, emit, sent_trans, gamma, data.tokens, data.offsets, order, alpha,
                                          beta, core.allowed)
            loop.record(it, ll, "predictive_log_likelihood", time.perf_counter() - t0,
                        labels() if loop.gold is not None else None)
            if loop.step(it, core, self.stoppable, labels):
                break
        return Fitted(trans, emit, labels(), loop.last, loop.max_iter, loop.monitor, loop.trace, loop.meter)
