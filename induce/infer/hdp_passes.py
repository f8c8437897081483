"""Compiled corpus passes for the HDP-HMM (thesis 5.3): batch CVI and the SCVI minibatch step.

Both share :func:`induce.kernels.hmm.forward_backward` with the finite HMM and
differ from it only in the transition prior: the symmetric ``alpha`` of eq.
3.49 becomes ``sigma G[pi_k]`` (eq. 5.38), so the surrogate rows
``(E[C^{\\i}_{j,k}] + sigma G[pi_k]) / (E[C^{\\i}_{j,.}] + sigma)`` are
sub-normalised (the missing mass belongs to the states beyond the
truncation).  After each sentence's forward-backward the chosen
``q(C^i = 0)`` method of :mod:`induce.kernels.hdp_qc` adds that sentence's
``log q(C^i_{j,k} = 0)`` and ``log q(C^i_{j,.} = 0)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels.hdp_qc import accumulate_qc, sample_transition_counts
from ..kernels.hmm import fb_workspace, forward_backward
from .hmm_passes import _max_length, move_emissions, replace_sentence, surrogate_transitions


@njit(cache=True, inline="always")
def _log_none(q):
    """``log(1 - q)``: one token's factor of ``log q(C_{w,k} = 0)`` (eq. 5.46), floored at 1e-300."""
    return np.log(max(1.0 - q, 1e-300))


@njit(cache=True)
def _surrogate(C_trans, row_tot, own, C_emit, col_tot, prior, sigma, emit_prior, emit_total, tokens, s, T, A, E):
    """Eq. 5.38 (transitions, prior ``sigma G[pi_k]``, without the sentence's own
    transition counts ``own``: :func:`induce.infer.hmm_passes.surrogate_transitions`)
    and eq. 5.39 (emissions, from counts the caller already took its tokens out of).

    Emission prior counts ``emit_prior[w]`` over ``emit_total``: ``beta`` over
    ``W beta`` for ``Dir(beta)``; ``beta tau_w`` over ``beta`` for the
    asymmetric ``Dir(beta tau)`` of thesis 5.5.3.
    """
    K = C_trans.shape[1]
    surrogate_transitions(C_trans, row_tot, own, prior, sigma, A)
    for t in range(T):
        w = tokens[s + t]
        for k in range(K):
            E[t, k] = (max(C_emit[w, k], 0.0) + emit_prior[w]) / (max(col_tot[k], 0.0) + emit_total)


@njit(cache=True)
def _buffers(T_max, K):
    """Work arrays of one sentence: forward, backward, potentials, scales, pair statistics, transitions."""
    fwd, bwd, E, scale, xi = fb_workspace(T_max, K)
    return fwd, bwd, E, scale, xi, np.empty((K + 1, K))


@njit(cache=True)
def _posterior(A, E, T, fwd, bwd, scale, xi, qc_method, n_samples, logq0, logq0_row):
    """Forward-backward of one sentence plus its ``log q(C^i = 0)``; returns ``log p(x^i)``."""
    logZ = forward_backward(A, E, T, fwd, bwd, scale, xi)
    accumulate_qc(qc_method, A, E, T, fwd, bwd, scale, logZ, n_samples, logq0, logq0_row)
    return logZ


@njit(cache=True)
def _chain_entropy(A, E, T, fwd, bwd, xi, logZ):
    """Entropy of one sentence's chain posterior ``q(z^i)`` under the potentials ``A``, ``E``.

    ``q(z) = p~(x, z) / Z`` with ``log p~(x, z) = sum_t log A[z_{t-1}, z_t] + log E[t, z_t]``, so
    ``H(q) = log Z - E_q[log p~(x, z)]``: the expected transition counts (``q(z_0)`` for the start
    row, ``A[j+1, k] xi[j, k]`` for the others) against ``log A`` and the marginals against ``log E``.
    The ``-E[log q(z)]`` term of the collapsed bound, thesis eq. 5.13.
    """
    K = A.shape[1]
    h = logZ
    for k in range(K):
        q = fwd[0, k] * bwd[0, k]
        if q > 0.0:
            h -= q * np.log(A[0, k])
    for j in range(K):
        for k in range(K):
            c = A[j + 1, k] * xi[j, k]
            if c > 0.0:
                h -= c * np.log(A[j + 1, k])
    for t in range(T):
        for k in range(K):
            q = fwd[t, k] * bwd[t, k]
            if q > 0.0:
                h -= q * np.log(E[t, k])
    return h


@njit(cache=True)
def hdp_cvi_pass(C_trans, C_emit, sent_trans, gamma, tokens, offsets, order, prior, sigma, emit_prior, emit_total,
                 qc_method, n_samples, seed, logq0, logq0_row, sampled, entropy):
    """One sweep of batch CVI for the HDP-HMM (thesis eq. 5.37-5.39), sentences in ``order``.

    As :func:`induce.infer.hmm_passes.cvi2_pass` -- per sentence: surrogate
    parameters without its stored expected counts, forward-backward, the new
    counts replace the old (same bookkeeping, shared functions) -- with the HDP prior
    ``prior[k] = sigma G[pi_k]`` and the emission prior counts ``emit_prior``
    ``(W,)`` over ``emit_total`` (see :func:`_surrogate`).  ``logq0`` ``(K+1, K)`` and ``logq0_row``
    ``(K+1,)`` are reset and receive ``sum_i log q(C^i = 0)`` by
    ``qc_method`` (the sentences' *new* posteriors).  Returns the collapsed
    predictive log-likelihood ``sum_i log p(x^i | theta-^{\\i})``.

    ``sampled`` ``(S, K+1, K)`` is reset and, when ``S > 0``, receives ``S``
    draws of the corpus transition counts from the new ``q(z)``
    (:func:`induce.kernels.hdp_qc.sample_transition_counts`).  ``entropy`` ``(I,)`` receives each
    visited sentence's ``H(q(z^i))`` (:func:`_chain_entropy`; the others keep theirs).
    """
    np.random.seed(seed)
    K = C_trans.shape[1]
    row_tot = C_trans.sum(axis=1)
    col_tot = C_emit.sum(axis=0)
    fwd, bwd, E, scale, xi, A = _buffers(_max_length(offsets, 0, offsets.shape[0] - 1), K)
    path = np.empty(fwd.shape[0], dtype=np.int64)
    sampled[:] = 0.0
    logq0[:] = 0.0
    logq0_row[:] = 0.0
    ll = 0.0
    for n in range(order.shape[0]):
        i = order[n]
        s = offsets[i]
        T = offsets[i + 1] - s
        if T == 0:
            continue
        old = sent_trans[i]
        move_emissions(C_emit, col_tot, gamma, tokens, s, T, -1.0)
        _surrogate(C_trans, row_tot, old, C_emit, col_tot, prior, sigma, emit_prior, emit_total, tokens, s, T, A, E)
        logZ = _posterior(A, E, T, fwd, bwd, scale, xi, qc_method, n_samples, logq0, logq0_row)
        ll += logZ
        entropy[i] = _chain_entropy(A, E, T, fwd, bwd, xi, logZ)
        if sampled.shape[0] > 0:
            sample_transition_counts(A, E, T, fwd, path, sampled)
        replace_sentence(C_trans, row_tot, C_emit, col_tot, A, fwd, bwd, xi, T, old, gamma, tokens, s)
    return ll


@njit(cache=True)
def column_totals(N_emit):
    """The emission counts' column totals ``N_emit.sum(axis=0)`` (K), summed as every caller of
    :func:`hdp_minibatch_rows` sums them."""
    return N_emit.sum(axis=0)


@njit(cache=True)
def hdp_minibatch_pass(N_trans, N_emit, tokens, offsets, items, prior, sigma, emit_prior, emit_total, qc_method,
                       n_samples, seed, trans_out, emit_out, logq0, logq0_row, mem_trans, mem_gamma, logq0_emit):
    """The local step of stochastic CVI for one minibatch (thesis 5.3 "Stochastic CVI", eq. 3.98-3.102).

    Every sentence in ``items`` sees the surrogate parameters formed from the
    global stochastic counts ``N`` (eq. 3.99 with the prior ``sigma G[pi_k]``
    of eq. 5.38); its expected counts go to ``trans_out`` / ``emit_out``
    (overwritten) and its ``log q(C^i = 0)`` to ``logq0`` / ``logq0_row``
    (overwritten: the minibatch's local statistic ``q(C^m = 0)``).  Returns
    ``sum log p(x^i)`` under those parameters.

    With a sentence memory (``mem_trans`` ``(I, K+1, K)``, ``mem_gamma`` ``(N, K)``; empty arrays: none)
    each sentence's surrogate is formed from the global counts without its own expected counts of its
    previous visit, ``N - c^i`` (the ``C^{\\i}`` of eq. 3.99 / 5.38 read off the stochastic totals,
    which hold every sentence's last counts once each), and the memory then takes its new counts.

    ``logq0_emit`` ``(W, K)`` (``(0, 0)``: not wanted) receives the minibatch's emission ``log q(C^m_{w,k} = 0)
    = sum_{t in the minibatch: x_t = w} log(1 - q(z_t = k))`` (overwritten), what :func:`emission_log_q0`
    computes for the batch pass: the statistic the asymmetric emission prior ``Dir(beta tau)`` (thesis 5.5.3)
    needs for its table counts (eq. 5.35, 5.46).
    """
    return hdp_minibatch_rows(N_trans, N_emit, column_totals(N_emit), tokens, offsets, items, prior, sigma, emit_prior,
                              emit_total, qc_method, n_samples, seed, trans_out, emit_out, logq0, logq0_row, mem_trans,
                              mem_gamma, logq0_emit)


@njit(cache=True)
def hdp_minibatch_rows(N_trans, N_emit, col_tot, tokens, offsets, items, prior, sigma, emit_prior, emit_total,
                       qc_method, n_samples, seed, trans_out, emit_out, logq0, logq0_row, mem_trans, mem_gamma,
                       logq0_emit):
    """:func:`hdp_minibatch_pass` given the emission counts' column totals ``col_tot`` (K; changed in place with a
    sentence memory), so that ``N_emit``, ``emit_prior``, ``emit_out`` and ``logq0_emit`` may hold only the rows of
    the minibatch's words, ``tokens`` indexing them (a cluster worker's piece: :mod:`induce.distributed.hdp`)."""
    np.random.seed(seed)
    K = N_trans.shape[1]
    row_tot = N_trans.sum(axis=1)
    T_max = 1
    for n in range(items.shape[0]):
        T_max = max(T_max, offsets[items[n] + 1] - offsets[items[n]])
    fwd, bwd, E, scale, xi, A = _buffers(T_max, K)
    memory = mem_trans.shape[0] > 0
    no_own = np.zeros((K + 1, K))  # without a memory the global counts hold no minibatch sentence
    trans_out[:] = 0.0
    emit_out[:] = 0.0
    logq0[:] = 0.0
    logq0_row[:] = 0.0
    with_emit_q0 = logq0_emit.shape[0] > 0
    if with_emit_q0:
        logq0_emit[:] = 0.0
    ll = 0.0
    for n in range(items.shape[0]):
        i = items[n]
        s = offsets[i]
        T = offsets[i + 1] - s
        if T == 0:
            continue
        if memory:
            move_emissions(N_emit, col_tot, mem_gamma, tokens, s, T, -1.0)
            _surrogate(N_trans, row_tot, mem_trans[i], N_emit, col_tot, prior, sigma, emit_prior, emit_total,
                       tokens, s, T, A, E)
            move_emissions(N_emit, col_tot, mem_gamma, tokens, s, T, 1.0)
        else:
            _surrogate(N_trans, row_tot, no_own, N_emit, col_tot, prior, sigma, emit_prior, emit_total, tokens, s,
                       T, A, E)
        ll += _posterior(A, E, T, fwd, bwd, scale, xi, qc_method, n_samples, logq0, logq0_row)
        for k in range(K):
            c = fwd[0, k] * bwd[0, k]
            trans_out[0, k] += c
            if memory:
                mem_trans[i, 0, k] = c
        for j in range(K):
            for k in range(K):
                c = A[j + 1, k] * xi[j, k]
                trans_out[j + 1, k] += c
                if memory:
                    mem_trans[i, j + 1, k] = c
        for t in range(T):
            w = tokens[s + t]
            for k in range(K):
                q = fwd[t, k] * bwd[t, k]
                emit_out[w, k] += q
                if memory:
                    mem_gamma[s + t, k] = q
                if with_emit_q0:
                    logq0_emit[w, k] += _log_none(q)
    return ll


@njit(cache=True)
def emission_log_q0(tokens, gamma, out):
    """``out[w, k] = sum_{t: x_t = w} log(1 - q(z_t = k))``: ``log q(C_{w,k} = 0)`` (eq. 5.46 for emissions).

    Each token adds one Bernoulli to the emission count ``C_{w,k}``; the
    probability that none of them is ``k`` is the product over tokens (the
    factorisation the heuristic 5.67 also uses within a sentence).
    """
    out[:] = 0.0
    K = gamma.shape[1]
    for t in range(tokens.shape[0]):
        w = tokens[t]
        for k in range(K):
            out[w, k] += _log_none(gamma[t, k])
