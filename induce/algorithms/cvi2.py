"""CVI algorithm 2: one ``q(z^i)`` per item, updated by the chain's messages against the collapsed statistics of
the other items (thesis eq. 3.44-3.50; with a conjugate emission family eq. 3.95-3.96).

:func:`collapsed_sweep` is the sweep for every model and family: subtract an item's own statistics, its local
step under the rest, add the new ones back.  Its compiled forms are the families' fast paths: the text tagger's
categorical pass (:func:`induce.infer.hmm_passes.cvi2_pass`, tag-dictionary masks, run by :class:`CVI2`;
``cvi2_block`` > 0 updates that many consecutive sentences in parallel against the counts frozen at their
block's start, :func:`induce.infer.hmm_batched.cvi2_block_pass`; on a dask cluster one block per worker,
:mod:`induce.distributed.cvi2`) and, in :func:`family_sweep`, the series HMM's loop for families with a compiled
predictive (:func:`induce.kernels.series.cvi2_series_pass`).  The series HMM without one, the HSMM and their HDP
forms run :func:`collapsed_sweep` itself."""

from __future__ import annotations

import numpy as np

from ..infer import hmm_passes as passes
from ..infer.hmm_batched import cvi2_block_pass
from ..kernels.series import cvi2_series_pass
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

        def one_pass(it):
            order, alpha, beta = loop.visit(it), core.priors.alpha, core.priors.beta
            if opts.client is not None:
                return sweep(order, alpha, beta, trans, emit)
            passes.totals_from_local(data.tokens, data.offsets, sent_trans, gamma, data.W, trans, emit)
            if opts.cvi2_block > 0:
                return cvi2_block_pass(trans, emit, sent_trans, gamma, data.tokens, data.offsets, order, alpha, beta,
                                       core.allowed, int(opts.cvi2_block), passes.n_threads())
            return passes.cvi2_pass(trans, emit, sent_trans, gamma, data.tokens, data.offsets, order, alpha, beta,
                                    core.allowed)

        loop.run("predictive_log_likelihood", one_pass, core, self.stoppable, labels)
        return Fitted(trans, emit, labels(), loop.last, loop.max_iter, loop.monitor, loop.trace, loop.meter)


def collapsed_sweep(order, totals: tuple, owns: tuple, local) -> float:
    """One cvi2 sweep over the items in ``order`` (thesis 3.7.1, eq. 3.95-3.96; the HSMM's in docs/hsmm_cvi.md):
    each item's own statistics ``owns[j][i]`` are taken out of the global ``totals[j]`` (in place), ``local(i)``
    returns its ``(log Z, new statistics)`` under the surrogate parameters of the rest (eq. 3.49 transitions, the
    family's predictive rows), which are stored as its own and added back.  Returns the sum of ``log Z``."""
    total = 0.0
    for i in order:
        for target, own in zip(totals, owns):
            target -= own[i]
        logz, new = local(i)
        total += logz
        for target, own, stats in zip(totals, owns, new):
            own[i] = stats
            target += own[i]
    return total


def family_sweep(family, order, state: dict, prior: np.ndarray, prior_total: float, qc, local) -> float:
    """The series HMM's cvi2 sweep with any emission family (:class:`induce.infer.series.SeriesFit`; thesis eq.
    3.49 transitions with the prior counts ``prior`` / ``prior_total``, eq. 3.96 rows): one compiled loop
    (:func:`induce.kernels.series.cvi2_series_pass`) for a family with a compiled predictive
    (:meth:`induce.emissions.base.EmissionFamily.predictive_kernel`), else :func:`collapsed_sweep` with ``local``.
    ``state`` holds the global and own statistics (``C``, ``S``, ``own_C``, ``own_S``) and the stacked items;
    ``qc`` the HDP-HMM's ``log q(C^i = 0)`` accumulators (``None``: none)."""
    C, S, own_C, own_S = state["C"], state["S"], state["own_C"], state["own_S"]
    kernel = family.predictive_kernel()
    if kernel is None:
        return collapsed_sweep(order, (C, S), (own_C, own_S), local)
    K = C.shape[1]
    logq0, logq0_row = qc if qc is not None else (np.zeros((K + 1, K)), np.zeros(K + 1))
    return cvi2_series_pass(order, state["stacked"], state["features"], state["bounds"], C, S, own_C, own_S,
                            np.ascontiguousarray(prior, dtype=np.float64), float(prior_total), kernel[0], kernel[1],
                            qc is not None, logq0, logq0_row)
