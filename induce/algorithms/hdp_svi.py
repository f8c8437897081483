"""The HDP-HMM's SVI baseline (``HDPHMMTagger(infer="svi")``): Johnson & Willsky (2014), section 4 (paper 002).

Mean-field factors ``q(pi_j) = Dir(lam_j)`` over the ``K`` states plus the rest of the stick (``K+1``
components, rows ``j = 0..K`` with 0 the start state) and ``q(phi_k) = Dir(lam_k)`` over words; the top-level
stick is a point estimate ``b*`` (``b*_{K+1}`` the remaining mass).  Per minibatch, ``rho_m`` of
:func:`induce.algorithms.minibatch.step` and this module's updater:

* local step: forward-backward under ``exp(E[log pi])``, ``exp(E[log phi])``
  (:func:`induce.infer.hmm_passes.batch_pass` on the minibatch, or on a dask client's workers);
* global step (J&W eq. 10-11 with the prior ``sigma * b*``): ``lam <- (1 - rho) lam + rho (prior + (I/|B|)
  E[C^B])`` via :func:`induce.infer.schedules.blend`;
* a truncated gradient step on ``b*`` (:func:`induce.infer.hdp_svi.stick_gradient`,
  :func:`~induce.infer.hdp_svi.truncated_step`).

``sigma`` and ``gamma`` stay fixed, as in J&W.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma

from ..base import resolve_batch_size
from ..infer import hdp
from ..infer import hmm_passes as passes
from ..infer.hdp_svi import stick_gradient, truncated_step
from ..infer.schedules import blend, exponential_init, minibatches
from .base import HDPCore, Algorithm, Fitted, Sequences, register_hdp, worker_corpus
from .minibatch import Updater, step


@register_hdp("svi")
class HDPSVI(Algorithm):
    """Stochastic mean-field VI with a point-estimated top-level stick; ``opts``: ``tau``, ``kappa`` (the step
    ``(tau + m)^-kappa``), ``batch_size`` (``None``: 100, or planned for ``planned_epochs`` on ``client``)."""

    cluster = True

    def fit(self, core: HDPCore, data: Sequences, loop, opts) -> Fitted:
        K, W = core.K, data.W
        I, N = data.offsets.shape[0] - 1, data.tokens.shape[0]
        rng = np.random.default_rng(int(loop.seeds[0]))
        sigma, gamma, beta = core.sigma, core.gamma, core.beta
        b = np.full(K + 1, 1.0 / (K + 1))
        lam = sigma * b[None, :] + np.hstack([exponential_init(rng, (K + 1, K), N / K**2), np.zeros((K + 1, 1))])
        lam_e = beta + exponential_init(rng, (W, K), N / (K * W))
        local = _local_step(data, opts, K)
        loop.meter = getattr(local, "meter", None)
        size = resolve_batch_size(opts.batch_size, 100, I, None, opts.planned_epochs, opts.client)
        updater = _Updater(local, core, I, b, (lam, lam_e))
        m, rho = 0, None

        def one_pass(it: int) -> float:
            """One epoch of minibatches; returns its summed minibatch log-likelihood."""
            nonlocal m, rho
            ll = 0.0
            for items in minibatches(I, size, rng, 1):
                rho, batch_ll, _ = step(updater, (lam, lam_e), np.sort(items), m, opts.tau, opts.kappa)
                ll += batch_ll
                m += 1
            return ll

        loop.run("minibatch_log_likelihood", one_pass,
                 settle=lambda it, stop: loop.entries((lam_e - beta).sum(axis=0), gamma, sigma, step=rho))
        emit = np.maximum(lam_e - beta, 0.0)
        extra = {"stick_u_": np.zeros(0), "stick_v_": np.zeros(0),
                 "stick_order_": hdp.usage_order(emit.sum(axis=0)).astype(np.int64),
                 "state_prior_": sigma * updater.b[:K], "qc_positive_": np.zeros((0, K)), "batch_size_": size}
        return Fitted(np.maximum(lam[:, :K] - sigma * updater.b[None, :K], 0.0), emit, None, loop.last, loop.max_iter,
                      loop.monitor, loop.trace, loop.meter, extra)


class _Updater(Updater):
    """One minibatch of J&W section 4 (:mod:`induce.algorithms.minibatch`): the local step under ``exp E[log pi]``
    and ``exp E[log phi]`` of ``counts = (lam, lam_e)``, J&W eq. 10-11 toward the prior plus the scaled statistics
    (``I / |B|``), then the truncated gradient step on the stick ``b``."""

    def __init__(self, run, core: HDPCore, n_sentences: int, b: np.ndarray, counts: tuple):
        self.run, self.K, self.I, self.b, self.lam = run, core.K, n_sentences, b, counts[0]
        self.sigma, self.gamma, self.beta = core.sigma, core.gamma, core.beta
        self.trans_b, self.emit_b = np.zeros((core.K + 1, core.K)), np.zeros((counts[1].shape[0], core.K))

    def local(self, counts, items):
        (lam, lam_e), K = counts, self.K
        A = np.exp(digamma(lam[:, :K]) - digamma(lam.sum(axis=1, keepdims=True)))
        B = np.ascontiguousarray(np.exp(digamma(lam_e) - digamma(lam_e.sum(axis=0, keepdims=True))))
        ll = self.run(A, B, items, self.trans_b, self.emit_b)
        return ll, (self.trans_b, self.emit_b), self.I / len(items), len(items)

    def blend(self, counts, rho: float, stats, scale: float) -> None:
        (lam, lam_e), (trans_b, emit_b) = counts, stats
        target = self.sigma * self.b[None, :] + scale * np.hstack([trans_b, np.zeros((self.K + 1, 1))])
        blend(lam, target, rho, 1.0)  # J&W eq. 11 with prior sigma * b*
        blend(lam_e, self.beta + scale * emit_b, rho, 1.0)  # J&W eq. 10

    def after(self, rho: float) -> None:
        grad = stick_gradient(self.b, self.lam, self.sigma, self.gamma)
        self.b = truncated_step(self.b, grad, rho / max(1.0, self.I))


def _local_step(data: Sequences, opts, K: int):
    """The forward-backward of a minibatch ``items`` under ``A``, ``B`` into ``trans_b``, ``emit_b`` (returns its
    log-likelihood): on ``opts.client``'s shards (:class:`induce.distributed.ClusterHDPSVI`) or here."""
    if opts.client is not None:
        from ..distributed import ClusterHDPSVI

        return ClusterHDPSVI(worker_corpus(opts.client, data, opts.vocab))
    lengths, no_mask = np.diff(data.offsets), np.zeros((0, 0), dtype=np.uint8)

    def local(A, B, items, trans_b, emit_b):
        off = np.concatenate([[0], np.cumsum(lengths[items])]).astype(np.int64)
        tok = np.concatenate([data.tokens[data.offsets[i]:data.offsets[i + 1]] for i in items])
        return passes.batch_pass(A, B, no_mask, tok, off, trans_b, emit_b, np.empty((0, K)), passes.n_threads())

    return local
