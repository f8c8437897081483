"""Sum-product for a subsequence of one long HMM chain with guarding variables.

CVI algorithm 3 (thesis section 3.6) splits one long sequence into consecutive
subsequences ``z^i = z_1..z_T`` and updates each one given its neighbours'
boundary marginals.  The update is the marginal of the expanded distribution
(thesis eq. 3.71; Wang & Blunsom, paper 001 eq. 13)

    q2(z_0, z_1..z_T, z_{T+1}) ∝ f_0(z_0) prod_{t=1}^{T+1} f_t(z_{t-1}, z_t) f_{T+2}(z_{T+1})

with the guarding variables ``z_0`` (the last state of the previous subsequence)
and ``z_{T+1}`` (the first state of the next one) and the potentials 3.72-3.76:

    f_0(z_0)            = q(z_0)                                          (3.72)
    f_1(z_0, z_1)       = (E[C_{z_0,z_1}] + a / (K q(z_0))) phi_{z_1,x_1}   (3.73)
    f_t(z_{t-1}, z_t)   = theta_{z_{t-1},z_t} phi_{z_t,x_t},  t in [2, T]  (3.74)
    f_{T+1}(z_T, z_{T+1}) = (E[C_{z_T,z_{T+1}}] + a / (K q(z_{T+1}))) / (E[C_{z_T,.}] + K a)   (3.75)
    f_{T+2}(z_{T+1})    = q(z_{T+1})                                      (3.76)

The leaf messages 3.77-3.80 through the guards collapse to two vectors::

    left(z_1)  = sum_{z_0} f_0(z_0) f_1'(z_0, z_1)     = sum_j q(z_0=j) C_{j,z_1} + a       (3.68, 3.79 at t=1)
    right(z_T) = sum_{z_{T+1}} f_{T+1}(z_T, z_{T+1}) f_{T+2}(z_{T+1})
               = (sum_k C_{z_T,k} q(z_{T+1}=k) + a) / (C_{z_T,.} + K a)                    (3.69, 3.80 at t=T)

(``f_1'`` is ``f_1`` without the emission).  The remaining recursions 3.79-3.80
for ``t in [2, T]`` are the standard scaled forward-backward, so
:func:`subchain_forward_backward` folds ``left`` into the start row of the
transition table and ``right`` into the last emission row and calls
:func:`induce.kernels.hmm.forward_backward`; the marginals 3.81-3.82 are its
``fwd * bwd`` and pair statistics.  The same kernel serves every boundary
treatment of the single-sequence algorithms: guards (``cvi3``, ``scvi3``), the
stationary distribution as ``left`` and ``right = 1`` (the "vanilla" baselines)
and padded windows (SVI with the buffering of Foti et al. 2014), whose
statistics are read off an inner range with :func:`window_pair_counts`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .hmm import fb_workspace_for, forward_backward, gather_emissions

_TINY = 1e-300


@njit(cache=True)
def guard_in(q0, C, alpha, out):
    """Left guard message ``out[k] = sum_j q0[j] C[j, k] + alpha`` (thesis eq. 3.68, 3.72-3.73, 3.79).

    ``C`` is the ``(K, K)`` state-to-state block of the expected transition
    counts (``C^{\\i-1,i}`` in batch CVI-3, the stochastic counts in SCVI-3).
    """
    K = out.shape[0]
    for k in range(K):
        out[k] = alpha
    for j in range(K):
        a = q0[j]
        if a == 0.0:
            continue
        row = C[j]
        for k in range(K):
            out[k] += a * max(row[k], 0.0)


@njit(cache=True)
def guard_out(q_next, C, alpha, out):
    """Right guard message (thesis eq. 3.69, 3.75-3.76, 3.80):

    ``out[j] = (sum_k C[j, k] q_next[k] + alpha) / (C[j, .] + K alpha)``.
    """
    K = out.shape[0]
    for j in range(K):
        row = C[j]
        num = alpha
        den = K * alpha
        for k in range(K):
            c = max(row[k], 0.0)
            num += c * q_next[k]
            den += c
        out[j] = num / den


@njit(cache=True)
def guard_messages(q0, q_next, C, start, alpha, has_prev, has_next, left, right):
    """Guard messages of a minibatch of subsequences: ``left[m]`` by :func:`guard_in` from the
    previous subsequence's last marginal ``q0[m]`` (or ``start + alpha``, the start-state row, for
    the first subsequence of the sequence), ``right[m]`` by :func:`guard_out` from the next one's
    first marginal ``q_next[m]`` (or ones for the last subsequence).  Thesis eq. 3.68-3.69.
    """
    K = left.shape[1]
    for m in range(left.shape[0]):
        if has_prev[m]:
            guard_in(q0[m], C, alpha, left[m])
        else:
            for k in range(K):
                left[m, k] = max(start[k], 0.0) + alpha
        if has_next[m]:
            guard_out(q_next[m], C, alpha, right[m])
        else:
            for k in range(K):
                right[m, k] = 1.0


@njit(cache=True)
def subchain_forward_backward(A, E, T, left, right, fwd, bwd, scale, xi):
    """Marginals of the expanded distribution 3.71 by the sum-product 3.77-3.82.

    ``A`` (K+1, K): rows ``1..K`` are the interior transitions (3.74); its row 0
    is overwritten with ``left`` normalised to sum to one (a constant factor
    does not change the marginals).  ``E`` (T, K): emission potentials; its last
    row is multiplied by ``right`` in place.  On return ``fwd[t] * bwd[t]`` is
    ``q2(z_t)`` (3.81) and ``A[j+1, k] * xi[j, k]`` the interior pair marginals
    (3.82) summed over ``t in [2, T]``; returns ``log Z`` of the normalised
    expansion.
    """
    K = A.shape[1]
    s = 0.0
    for k in range(K):
        s += left[k]
    inv = 1.0 / max(s, _TINY)
    for k in range(K):
        A[0, k] = left[k] * inv
        E[T - 1, k] *= right[k]
    return forward_backward(A, E, T, fwd, bwd, scale, xi)


@njit(cache=True)
def left_edge_pairs(q0, C, alpha, left, gamma1, out, weight):
    """``out[j, k] += weight * q2(z_0 = j, z_1 = k)`` (thesis eq. 3.82 at t = 1).

    ``q2(z_0, z_1) = f_0(z_0) f_1'(z_0, z_1) m(z_1) / Z`` with
    ``f_0 f_1' = q0[j] C[j, k] + alpha / K``; since ``q2(z_1) = gamma1[k]`` and
    ``left[k] = sum_j f_0 f_1'`` (:func:`guard_in`, unnormalised), the pair
    marginal is ``(q0[j] C[j, k] + alpha / K) * gamma1[k] / left[k]``.
    ``out`` is ``(K, K)``.
    """
    K = gamma1.shape[0]
    ratio = np.empty(K)
    for k in range(K):
        ratio[k] = weight * gamma1[k] / left[k]
    a_k = alpha / K
    for j in range(K):
        a = q0[j]
        row = C[j]
        dst = out[j]
        for k in range(K):
            dst[k] += (a * max(row[k], 0.0) + a_k) * ratio[k]


@njit(cache=True)
def window_pair_counts(A, E, fwd, bwd, scale, lo, hi, out):
    """``out[j+1, k] += sum_{t=lo+1}^{hi-1} q(z_{t-1}=j, z_t=k)`` from a finished forward-backward.

    The pair marginal (thesis eq. 3.82) is
    ``fwd[t-1, j] A[j+1, k] E[t, k] bwd[t, k] / scale[t]``; only transitions
    with both ends inside the window ``[lo, hi)`` are counted (the padding of
    a buffered subsequence contributes messages, not statistics).
    """
    K = A.shape[1]
    eb = np.empty(K)
    for t in range(lo + 1, hi):
        inv = 1.0 / scale[t]
        for k in range(K):
            eb[k] = E[t, k] * bwd[t, k] * inv
        prev = fwd[t - 1]
        for j in range(K):
            a = prev[j]
            row = A[j + 1]
            for k in range(K):
                out[j + 1, k] += a * row[k] * eb[k]


def stationary_distribution(A: np.ndarray) -> np.ndarray:
    """Stationary distribution ``pi = pi P`` of the state-to-state block ``P = A[1:]`` (rows normalised).

    The "vanilla" single-sequence baselines start every subsequence from it
    (thesis section 3.8.4; Foti et al. 2014).  Solved as the left eigenvector of
    eigenvalue one by a least-squares system with the normalisation row.
    """
    P = np.asarray(A[1:], dtype=np.float64)
    P = P / P.sum(axis=1, keepdims=True)
    K = P.shape[0]
    M = np.vstack([P.T - np.eye(K), np.ones((1, K))])
    b = np.zeros(K + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(M, b, rcond=None)[0]
    pi = np.maximum(pi, 0.0)
    return pi / pi.sum()


@njit(cache=True)
def subchain_batch_pass(A, emit, tokens, win_offsets, inner_lo, inner_hi, left, right, edge, q0, C, alpha,
                        trans_out, emit_out, first_out, last_out):
    """Expected counts of a minibatch of subsequence windows under fixed parameters.

    Window ``m`` is ``tokens[win_offsets[m]:win_offsets[m+1]]`` (ids into the
    rows of ``emit``), with ``left[m]`` / ``right[m]`` the guard messages of
    :func:`subchain_forward_backward`.  Statistics are taken from the inner
    range ``[inner_lo[m], inner_hi[m])`` (the whole window unless padded):
    emission counts into ``emit_out`` (rows of ``emit``), interior transitions
    into rows ``1..K`` of ``trans_out``, and the entering transition by
    ``edge[m]``: 0 none (vanilla / buffered), 1 from the start state (row 0;
    the first subsequence of the sequence), 2 the guard pair ``q2(z_0, z_1)``
    of :func:`left_edge_pairs` with ``q0[m]``, counts ``C`` and ``left[m]``
    (which must then be :func:`guard_in` of them, unnormalised).  The inner
    boundary marginals ``q(z_1)``, ``q(z_T)`` go to ``first_out[m]``,
    ``last_out[m]``.  Returns the summed ``log Z``.
    """
    K = A.shape[1]
    Mw = win_offsets.shape[0] - 1
    fwd, bwd, E, scale, xi = fb_workspace_for(win_offsets, K)
    Aw = A.copy()
    no_mask = np.zeros((0, 0), dtype=np.uint8)
    ll = 0.0
    for m in range(Mw):
        s = win_offsets[m]
        T = win_offsets[m + 1] - s
        if T == 0:
            continue
        x = tokens[s:s + T]
        gather_emissions(emit, x, no_mask, E)
        ll += subchain_forward_backward(Aw, E, T, left[m], right[m], fwd, bwd, scale, xi)
        lo = inner_lo[m]
        hi = inner_hi[m]
        if lo == 0 and hi == T:
            for j in range(K):
                for k in range(K):
                    trans_out[j + 1, k] += Aw[j + 1, k] * xi[j, k]
        else:
            window_pair_counts(Aw, E, fwd, bwd, scale, lo, hi, trans_out)
        for t in range(lo, hi):
            w = x[t]
            for k in range(K):
                emit_out[w, k] += fwd[t, k] * bwd[t, k]
        for k in range(K):
            first_out[m, k] = fwd[lo, k] * bwd[lo, k]
            last_out[m, k] = fwd[hi - 1, k] * bwd[hi - 1, k]
        if edge[m] == 1:
            for k in range(K):
                trans_out[0, k] += first_out[m, k]
        elif edge[m] == 2:
            left_edge_pairs(q0[m], C, alpha, left[m], first_out[m], trans_out[1:], 1.0)
    return ll
