"""CVI algorithm 1: a fully factorised ``q(z_t)`` updated token by token against the collapsed counts (thesis
eq. 3.33, 3.37-3.39); it traces the mean change of ``q`` and runs every pass of the cap."""

from __future__ import annotations

import numpy as np

from ..infer import hmm_passes as passes
from .base import Algorithm, Fitted, random_start, register


@register("cvi1")
class CVI1(Algorithm):
    """Token-wise collapsed VI (:func:`induce.infer.hmm_passes.cvi1_pass`)."""

    def fit(self, core, data, loop, opts) -> Fitted:
        K = core.K
        _, gamma = random_start(core, data, loop.seeds[0])
        q = np.ascontiguousarray(gamma, dtype=np.float64)
        G = np.zeros((K + 1, K))
        emit = np.zeros((data.W, K))
        passes.factorised_counts(data.tokens, data.offsets, q, data.W, G, emit)

        def one_pass(it):
            change = passes.cvi1_pass(G, emit, q, data.tokens, data.offsets, loop.visit(it), core.priors.alpha,
                                      core.priors.beta, core.allowed)
            passes.factorised_counts(data.tokens, data.offsets, q, data.W, G, emit)
            return change

        loop.run("mean_abs_change", one_pass, core, self.stoppable, lambda: q.argmax(axis=1))
        return Fitted(G, emit, q.argmax(axis=1), loop.last, loop.max_iter, None, loop.trace)
