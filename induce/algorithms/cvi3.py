"""CVI algorithm 3 (thesis eq. 3.56-3.82): the corpus as one long sequence cut into subsequences of
``subseq_length``, each updated against the others with guarded boundaries (:mod:`induce.infer.cvi3`)."""

from __future__ import annotations

import numpy as np

from ..infer.cvi3 import cvi3_pass, cvi3_totals, init_from_parameters, subsequence_offsets
from ..infer.estimators import cvi_params
from ..infer.schedules import exponential_init
from .base import Algorithm, Fitted, register
from .loop import visit_order


@register("cvi3")
class CVI3(Algorithm):
    """Subsequence-wise collapsed VI over one long sequence."""

    stoppable = True

    def fit(self, core, data, loop, opts) -> Fitted:
        K, N = core.K, int(data.tokens.shape[0])
        so = subsequence_offsets(N, opts.subseq_length)
        I = so.shape[0] - 1
        # Start: the local posteriors under parameters drawn as scvi3 draws its
        # global counts (exponential, means N/K^2 and N/(K W), thesis eq.
        # 3.106-3.107).  Random local posteriors (footnote 5, the cvi2 start) are
        # nearly uniform after a chain's first token, and on one long sequence
        # nothing else breaks the symmetry: cvi3 then idles for ~150 passes
        # (docs/experiments/stochastic.md, "Batch cvi3: starting point").
        rng = np.random.default_rng(int(loop.seeds[0]))
        A = cvi_params(exponential_init(rng, (K + 1, K), N / K**2), core.priors.alpha)
        phi = cvi_params(exponential_init(rng, (K, data.W), N / (K * data.W)), core.priors.beta).T.copy()
        pair = np.zeros((I, K, K))
        gamma = np.zeros((N, K))
        init_from_parameters(A, phi, data.tokens, so, pair, gamma)
        trans = np.zeros((K + 1, K))
        emit = np.zeros((data.W, K))

        def one_pass(it):
            cvi3_totals(data.tokens, so, pair, gamma, trans, emit)
            return cvi3_pass(trans, emit, pair, gamma, data.tokens, so, visit_order(I, loop.order, loop.seeds[it]),
                             core.priors.alpha, core.priors.beta)

        loop.run("predictive_log_likelihood", one_pass, core, self.stoppable, lambda: gamma.argmax(axis=1))
        return Fitted(trans, emit, gamma.argmax(axis=1), loop.last, loop.max_iter, loop.monitor, loop.trace)
