"""SVI baseline for the HDP-HMM: Johnson & Willsky (2014), section 4 (paper 002).

Mean-field factors ``q(pi_j) = Dir(lam_j)`` over the ``K`` states plus the
rest of the stick (``K+1`` components, rows ``j = 0..K`` with 0 the start
state) and ``q(phi_k) = Dir(lam_k)`` over words; the top-level stick is a
point estimate ``b*`` (``b*_{K+1}`` the remaining mass).  Per minibatch:

* local step: forward-backward under ``exp(E[log pi])``, ``exp(E[log phi])``
  (:func:`induce.infer.hmm_passes.batch_pass` on the minibatch);
* global step (J&W eq. 10-11 with the prior ``sigma * b*``):
  ``lam <- (1 - rho) lam + rho (prior + (I/|B|) E[C^B])`` via
  :func:`induce.infer.schedules.blend`;
* a truncated gradient step on ``b*`` with backtracking so that every
  ``b*_k > 0`` (J&W section 4).  The gradient is that of
  ``ln p(b*) + sum_j E[ln p(pi_j | b*)]``; with ``c_i = 1 - sum_{l<i} b*_l``,
  ``ln GEM(b*; gamma) = sum_i (gamma - 1) ln c_{i+1} - gamma ln c_i`` (the
  Beta(1, gamma) sticks and the Jacobian of ``b* -> sticks``), so
  ``d/db*_k = gamma sum_{i>k} 1/c_i - (gamma - 1) sum_{i>=k} 1/c_{i+1}``, and
  ``d/db*_k E[ln Dir(pi_j; sigma b*)] = sigma (E[ln pi_jk] - E[ln pi_j,rest]
  - psi(sigma b*_k) + psi(sigma b*_rest))``.  (J&W print the second term with
  ``gamma`` in place of the DP concentration; this is the derivative.)

``sigma`` and ``gamma`` stay fixed, as in J&W.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.special import digamma

from . import hdp
from . import hmm_passes as passes
from .schedules import blend, exponential_init, minibatches, step_size


def stick_gradient(b: np.ndarray, lam: np.ndarray, sigma: float, gamma: float) -> np.ndarray:
    """Gradient of ``ln p(b*) + sum_j E[ln p(pi_j | b*)]`` w.r.t. the first ``K`` entries of ``b*``."""
    K = len(b) - 1
    c = 1.0 - np.concatenate([[0.0], np.cumsum(b[:K])])  # c[i] = 1 - sum_{l<i} b_l, i = 0..K
    inv_c = 1.0 / c
    # sum_{i>k} 1/c_i for i = k+1..K-1 (sticks within the truncation) and sum_{i>=k} 1/c_{i+1}
    tail_c = np.concatenate([np.cumsum(inv_c[1:K][::-1])[::-1], [0.0]])
    tail_c1 = np.cumsum(inv_c[1:K + 1][::-1])[::-1]
    g_prior = gamma * tail_c - (gamma - 1.0) * tail_c1
    elog = digamma(lam) - digamma(lam.sum(axis=1, keepdims=True))
    g_rows = sigma * ((elog[:, :K] - elog[:, K:]).sum(axis=0)
                      - lam.shape[0] * (digamma(sigma * b[:K]) - digamma(sigma * b[K])))
    return g_prior + g_rows


def truncated_step(b: np.ndarray, grad: np.ndarray, step: float, max_halvings: int = 40) -> np.ndarray:
    """``b + step * grad`` on the first ``K`` entries, halving ``step`` until all of ``b`` stay positive."""
    for _ in range(max_halvings):
        new = b.copy()
        new[:-1] = b[:-1] + step * grad
        new[-1] = 1.0 - new[:-1].sum()
        if np.all(new > 1e-12):
            return new
        step *= 0.5
    return b


def fit_svi(model, data, gold, seeds) -> None:
    """Fit ``model`` (an :class:`induce.HDPHMMTagger`) by SVI with a point-estimated top-level stick."""
    K, W = model.n_states_, data.W
    I, N = data.offsets.shape[0] - 1, data.tokens.shape[0]
    rng = np.random.default_rng(int(seeds[0]))
    sigma, gamma = model.sigma_, model.gamma_
    b = np.full(K + 1, 1.0 / (K + 1))
    lam = sigma * b[None, :] + np.hstack([exponential_init(rng, (K + 1, K), N / K**2), np.zeros((K + 1, 1))])
    lam_e = model.beta + exponential_init(rng, (W, K), N / (K * W))
    lengths = np.diff(data.offsets)
    trans_b, emit_b = np.zeros((K + 1, K)), np.zeros((W, K))
    no_mask = np.zeros((0, 0), dtype=np.uint8)
    cluster = None
    if getattr(model, "client", None) is not None:
        from ..distributed import ClusterHDPSVI, WorkerCorpus

        cluster = ClusterHDPSVI(WorkerCorpus.of(model.client, data.tokens, data.offsets, data.source, model.vocab_))
        model.cluster_meter_ = cluster.meter
    size = model._resolve_batch_size(100, I, epochs=model._planned_epochs())
    m = 0
    bar = model._iterations(data, gold, seeds)
    for it in bar:
        t0 = time.perf_counter()
        ll = 0.0
        for items in minibatches(I, size, rng, 1):
            items = np.sort(items)
            A = np.exp(digamma(lam[:, :K]) - digamma(lam.sum(axis=1, keepdims=True)))
            B = np.ascontiguousarray(np.exp(digamma(lam_e) - digamma(lam_e.sum(axis=0, keepdims=True))))
            if cluster is not None:  # the forward-backward on the workers' shards (induce.distributed.hdp)
                ll += cluster(A, B, items, trans_b, emit_b)
            else:
                off = np.concatenate([[0], np.cumsum(lengths[items])]).astype(np.int64)
                tok = np.concatenate([data.tokens[data.offsets[i]:data.offsets[i + 1]] for i in items])
                ll += passes.batch_pass(A, B, no_mask, tok, off, trans_b, emit_b, np.empty((0, K)),
                                        passes.n_threads())
            rho = step_size(m, model.tau, model.kappa)
            scale = I / len(items)
            target = sigma * b[None, :] + scale * np.hstack([trans_b, np.zeros((K + 1, 1))])
            blend(lam, target, rho, 1.0)  # J&W eq. 11 with prior sigma * b*
            blend(lam_e, model.beta + scale * emit_b, rho, 1.0)  # J&W eq. 10
            b = truncated_step(b, stick_gradient(b, lam, sigma, gamma), rho / max(1.0, I))
            m += 1
        usage = (lam_e - model.beta).sum(axis=0)
        model._hdp_record(bar, it, ll, "minibatch_log_likelihood", time.perf_counter() - t0, data, usage,
                          None, None, step=rho)
        if model._converging(it, ll):
            break
    bar.close()
    counts = np.maximum(lam[:, :K] - sigma * b[None, :K], 0.0)
    emit = np.maximum(lam_e - model.beta, 0.0)
    order = hdp.usage_order(emit.sum(axis=0))
    model.stick_u_ = np.zeros(0)
    model.stick_v_ = np.zeros(0)
    model.stick_order_ = order.astype(np.int64)
    model.state_prior_ = sigma * b[:K]
    model.qc_positive_ = np.zeros((0, K))
    model._local_labels = None
    model._finish(counts, emit, data)
    model._warn_cluster_overhead()
