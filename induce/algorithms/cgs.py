"""Collapsed Gibbs sampling (thesis eq. 3.25) with simulated annealing (Goldwater & Griffiths 2007): every
sweep of the cap runs, at a temperature falling geometrically from ``temperature[0]`` to ``temperature[1]``."""

from __future__ import annotations

import numpy as np

from ..infer import hmm_passes as passes
from .base import Algorithm, Fitted, random_start, register


@register("cgs")
class CGS(Algorithm):
    """Token-wise collapsed Gibbs sweeps (:func:`induce.infer.hmm_passes.cgs_pass`); decoded by the last sample
    or, with ``cgs_keep``, by each token's mode over the last ``cgs_keep`` samples."""

    def fit(self, core, data, loop, opts) -> Fitted:
        K = core.K
        _, gamma = random_start(core, data, loop.seeds[0])
        rng = np.random.default_rng(int(loop.seeds[0]))
        # z_t ~ the same random initial local posteriors
        cum = np.cumsum(gamma, axis=1)
        z = (rng.random(len(cum))[:, None] * cum[:, -1:] > cum).sum(axis=1).astype(np.int32)
        z = np.minimum(z, K - 1)
        Ct = np.zeros((K + 1, K), dtype=np.int64)
        Ce = np.zeros((data.W, K), dtype=np.int64)
        passes.hard_counts(data.tokens, data.offsets, z, data.W, K, Ct, Ce)
        t_start, t_end = opts.temperature
        n = max(1, loop.max_iter - 1)
        votes_empty = np.zeros((0, K), dtype=np.int32)
        votes = np.zeros((data.tokens.shape[0], K), dtype=np.int32) if opts.cgs_keep > 0 else votes_empty

        def one_pass(it):
            temp = t_start * (t_end / t_start) ** ((it - 1) / n)
            keep = opts.cgs_keep > 0 and it > loop.max_iter - opts.cgs_keep
            changed = passes.cgs_pass(Ct, Ce, z, data.tokens, data.offsets, core.priors.alpha, core.priors.beta,
                                      temp, int(loop.seeds[it]), core.allowed, votes if keep else votes_empty)
            return changed, {"temperature": temp}

        loop.run("changed_states", one_pass, core, self.stoppable, lambda: z)
        labels = votes.argmax(axis=1) if opts.cgs_keep > 0 else z.copy()
        return Fitted(Ct.astype(np.float64), Ce.astype(np.float64), labels, loop.last, loop.max_iter, None,
                      loop.trace)
