"""EM (Baum-Welch; MAP under the priors or maximum likelihood) and mean-field VB (thesis eq. 3.21-3.22).

Each pass is an M-step from the current expected counts followed by the lockstep E-step over every sentence
(:func:`induce.infer.hmm_batched.lockstep_pass`, or on a dask cluster :class:`induce.distributed.ClusterEStep`).
"""

from __future__ import annotations

import numpy as np

from ..infer import hmm_passes as passes
from ..infer.estimators import dirichlet_kl, em_params, map_params, vi_params
from ..infer.hmm_batched import Layout, lockstep_pass
from .base import Algorithm, Fitted, random_start, register, worker_corpus

# sentences per lockstep block of the EM / VI E-step (small blocks keep a block's
# messages in cache; 64-256 measured equally fast on CoNLL-2000, K=45)
LOCKSTEP_BLOCK = 128


def point_estimate(infer: str, map_estimate: bool, counts: np.ndarray, prior) -> np.ndarray:
    """The rows of ``counts`` as parameters: VB's ``theta~`` (eq. 3.21), the MAP estimate, or the maximum
    likelihood one (``map_estimate`` false)."""
    if infer == "vi":
        return vi_params(counts, prior)
    if map_estimate:
        return map_params(counts, prior)
    return em_params(counts)


def _log_support(P: np.ndarray) -> float:
    """``sum log P`` over the positive entries of ``P`` (the support of a clipped MAP estimate)."""
    return float(np.log(P[P > 0]).sum())


class BatchEM(Algorithm):
    """EM / VI: M-step from the current counts, then a parallel E-step."""

    stoppable = True
    cluster = True

    def fit(self, core, data, loop, opts) -> Fitted:
        K = core.K
        sent_trans, gamma = random_start(core, data, loop.seeds[0])
        trans = sent_trans.sum(axis=0)
        emit = np.zeros((data.W, K))
        np.add.at(emit, data.tokens, gamma)
        del sent_trans
        want_gamma = loop.gold is not None or bool(core.priors.learned)
        g = np.empty((data.tokens.shape[0] if want_gamma else 0, K))
        estep = self._estep(core, data, opts, loop)

        def one_pass(it):
            alpha, beta = core.priors.alpha, core.priors.beta
            prev_t, prev_e = trans.copy(), emit.T.copy()
            A = point_estimate(self.name, opts.map_estimate, prev_t, alpha)
            B = np.ascontiguousarray(point_estimate(self.name, opts.map_estimate, prev_e, beta).T)
            ll = estep(A, B, trans, emit, g)
            if self.name == "vi":
                # ELBO = sum_i log Z_i(theta~) - KL(q(theta) || p(theta)), q(theta) = Dir(C + prior)
                return ll - dirichlet_kl(prev_t + alpha, alpha) - dirichlet_kl(prev_e + beta, beta)
            if opts.map_estimate:
                # log posterior up to a constant; the log prior is taken over the support
                # (entries the clipped MAP of ``map_params`` keeps positive): with a prior
                # below 1 the density is unbounded at the zeros it creates
                return ll + (alpha - 1) * _log_support(A) + (beta - 1) * _log_support(B)
            return ll

        loop.run(self.objective(opts), one_pass, core, self.stoppable, lambda: g.argmax(axis=1))
        return Fitted(trans, emit, None, loop.last, loop.max_iter, loop.monitor, loop.trace, loop.meter)

    def objective(self, opts) -> str:
        """The trace name of the passes' objective: vi's ELBO, the log posterior (MAP) or the log-likelihood."""
        if self.name == "vi":
            return "elbo"
        return "log_posterior" if opts.map_estimate else "log_likelihood"

    @staticmethod
    def _estep(core, data, opts, loop):
        """``(A, B, trans, emit, gamma) -> log-likelihood``: the E-step in this process or on ``opts.client``."""
        if opts.client is not None:
            from ..distributed import ClusterEStep

            estep = ClusterEStep(opts.client, worker_corpus(opts.client, data, opts.vocab), core.allowed,
                                 LOCKSTEP_BLOCK)
            loop.meter = estep.meter
            return estep
        lay = Layout(data.tokens, data.offsets, LOCKSTEP_BLOCK)
        return lambda A, B, t, e, g: lockstep_pass(A, B, core.allowed, lay.lay_tokens, lay.lay_flat,  # noqa: E731
                                                   lay.pos_start, lay.block_pos, t, e, g, passes.n_threads())


@register("em")
class EM(BatchEM):
    """Baum-Welch; MAP under the priors (``map_estimate``) or maximum likelihood."""


@register("vi")
class VI(BatchEM):
    """Mean-field VB with the inverted expected natural parameters (eq. 3.21-3.22)."""
