"""Explicit-duration HSMM messages and Viterbi segmentation in log space (paper 002 eq. 6-7, 13).

Conventions (0-based steps, segments are half-open ``[s, e)``):

* ``logpi`` (K,) initial state, ``logA`` (K, K) transitions between segments (``-inf`` diagonal for the
  HSMM without self-transitions; the kernels do not assume it), ``logL`` (T, K) emission log-rows,
  ``logD`` (K, D) duration log-potentials of ``d = 1..D``, ``logLast`` (K, D) those of the *last*
  segment, which ends at ``T`` (``logLast = logD``: the series ends with a segment, paper 002 eq. 6-7
  with ``B_T = 1``; ``logLast`` = log survival ``P(d' >= d)``: the last segment is right-censored, as
  the HMM's is).
* ``F[e, i]``  = log p(x[:e], a segment of ``i`` ends at ``e``)                      (eq. 6, ``F``)
  ``Fs[s, i]`` = log p(x[:s], a segment of ``i`` starts at ``s``)                     (eq. 6, ``F*``)
  ``Bs[s, i]`` = log p(x[s:] | a segment of ``i`` starts at ``s``)                    (eq. 7, ``B*``)
  ``B[e, i]``  = log p(x[e:] | a segment of ``i`` ended at ``e``), ``e < T``          (eq. 7, ``B``)
* segment emission sums come from a cumulative sum of ``logL``, so a message is O(K D) per step and
  the whole pass O(T K D + T K^2); log-sum-exp in every sum, so long series never underflow.
"""

from __future__ import annotations

import numpy as np
from numba import njit

NEG = -np.inf


@njit(cache=True)
def _cumulative(logL):
    T, K = logL.shape
    cum = np.zeros((T + 1, K))
    for t in range(T):
        for k in range(K):
            cum[t + 1, k] = cum[t, k] + logL[t, k]
    return cum


@njit(cache=True)
def _logsumexp(buf, n):
    """``log sum_{m < n} exp(buf[m])`` (``-inf`` for an empty or all ``-inf`` buffer)."""
    top = NEG
    for m in range(n):
        if buf[m] > top:
            top = buf[m]
    if top == NEG:
        return NEG
    acc = 0.0
    for m in range(n):
        acc += np.exp(buf[m] - top)
    return top + np.log(acc)


@njit(cache=True)
def hsmm_messages(logpi, logA, logL, logD, logLast):
    """Forward and backward messages; returns ``(log Z, F, Fs, B, Bs)`` (each ``(T+1, K)``).

    ``F[T]`` holds the segments ending at ``T`` under ``logLast``; ``B[T] = 0``; ``Bs[T] = -inf``.
    """
    T, K = logL.shape
    Dm = logD.shape[1]
    cum = _cumulative(logL)
    F = np.full((T + 1, K), NEG)
    Fs = np.full((T + 1, K), NEG)
    B = np.full((T + 1, K), NEG)
    Bs = np.full((T + 1, K), NEG)
    buf = np.empty(max(Dm, K))
    for i in range(K):
        Fs[0, i] = logpi[i]
    for e in range(1, T + 1):
        dur = logLast if e == T else logD
        for i in range(K):
            n = min(Dm, e)
            for d in range(1, n + 1):
                s = e - d
                buf[d - 1] = Fs[s, i] + dur[i, d - 1] + cum[e, i] - cum[s, i]
            F[e, i] = _logsumexp(buf, n)
        if e < T:
            for i in range(K):  # F*[e, i] = sum_j A[j, i] F[e, j]
                for j in range(K):
                    buf[j] = F[e, j] + logA[j, i]
                Fs[e, i] = _logsumexp(buf, K)
    for i in range(K):
        B[T, i] = 0.0
    for s in range(T - 1, -1, -1):
        for i in range(K):  # B*[s, i] = sum_d D[d, i] L[s:s+d, i] B[s+d, i]
            n = min(Dm, T - s)
            for d in range(1, n + 1):
                e = s + d
                w = logLast[i, d - 1] if e == T else logD[i, d - 1]
                buf[d - 1] = w + cum[e, i] - cum[s, i] + B[e, i]
            Bs[s, i] = _logsumexp(buf, n)
        if s > 0:
            for i in range(K):  # B[s, i] = sum_j A[i, j] B*[s, j]
                for j in range(K):
                    buf[j] = logA[i, j] + Bs[s, j]
                B[s, i] = _logsumexp(buf, K)
    for i in range(K):
        buf[i] = logpi[i] + Bs[0, i]
    return _logsumexp(buf, K), F, Fs, B, Bs


@njit(cache=True)
def hsmm_expectations(logpi, logA, logL, logD, logLast):
    """Posterior expectations of one series (paper 002 section 3.2 and eq. 13).

    Returns ``(log Z, init (K,), trans (K, K), dur (K, D), last (K, D), gamma (T, K))``:
    ``init[i] = q(first segment is i)``, ``trans[i, j]`` the expected number of segment boundaries
    ``i -> j`` (``sum_e F[e, i] A[i, j] B*[e, j] / Z``), ``dur[i, d-1]`` the expected number of
    non-final segments of ``i`` with duration ``d`` (eq. 13), ``last[i, d-1]`` the same for the final
    segment (weighted by ``logLast``), and ``gamma[t, i] = q(x_t = i)`` by the difference of
    cumulative entries into and exits from ``i`` (``F* B*`` and ``F B``, section 3.2).
    """
    T, K = logL.shape
    Dm = logD.shape[1]
    logz, F, Fs, B, Bs = hsmm_messages(logpi, logA, logL, logD, logLast)
    cum = _cumulative(logL)
    init = np.zeros(K)
    trans = np.zeros((K, K))
    dur = np.zeros((K, Dm))
    last = np.zeros((K, Dm))
    gamma = np.zeros((T, K))
    for i in range(K):
        init[i] = np.exp(logpi[i] + Bs[0, i] - logz)
    for e in range(1, T):
        for i in range(K):
            if F[e, i] == NEG:
                continue
            for j in range(K):
                trans[i, j] += np.exp(F[e, i] + logA[i, j] + Bs[e, j] - logz)
    for s in range(T):
        for i in range(K):
            if Fs[s, i] == NEG:
                continue
            for d in range(1, min(Dm, T - s) + 1):
                e = s + d
                if e == T:
                    last[i, d - 1] += np.exp(Fs[s, i] + logLast[i, d - 1] + cum[e, i] - cum[s, i] - logz)
                else:
                    dur[i, d - 1] += np.exp(Fs[s, i] + logD[i, d - 1] + cum[e, i] - cum[s, i] + B[e, i] - logz)
    # q(x_t = i) = sum_{s <= t} q(segment of i starts at s) - sum_{e <= t} q(segment of i ends at e)
    for i in range(K):
        occ = 0.0
        for t in range(T):
            if Fs[t, i] != NEG:
                occ += np.exp(Fs[t, i] + Bs[t, i] - logz)
            if t > 0 and F[t, i] != NEG:
                occ -= np.exp(F[t, i] + B[t, i] - logz)
            gamma[t, i] = min(max(occ, 0.0), 1.0)
    return logz, init, trans, dur, last, gamma


@njit(cache=True)
def hsmm_viterbi(logpi, logA, logL, logD, logLast, path):
    """Most probable segmentation: writes the state of every step into ``path`` (T,) and returns its
    log-probability (the max-product version of eq. 6)."""
    T, K = logL.shape
    Dm = logD.shape[1]
    cum = _cumulative(logL)
    V = np.full((T + 1, K), NEG)     # best ending a segment of i at e
    Vs = np.full((T + 1, K), NEG)    # best starting a segment of i at s
    bd = np.zeros((T + 1, K), dtype=np.int64)   # its duration
    bj = np.zeros((T + 1, K), dtype=np.int64)   # the state before the segment starting at s
    for i in range(K):
        Vs[0, i] = logpi[i]
        bj[0, i] = -1
    for e in range(1, T + 1):
        dur = logLast if e == T else logD
        for i in range(K):
            best, arg = NEG, 1
            for d in range(1, min(Dm, e) + 1):
                s = e - d
                v = Vs[s, i] + dur[i, d - 1] + cum[e, i] - cum[s, i]
                if v > best:
                    best, arg = v, d
            V[e, i], bd[e, i] = best, arg
        if e < T:
            for i in range(K):
                best, arg = NEG, 0
                for j in range(K):
                    v = V[e, j] + logA[j, i]
                    if v > best:
                        best, arg = v, j
                Vs[e, i], bj[e, i] = best, arg
    best, i = NEG, 0
    for k in range(K):
        if V[T, k] > best:
            best, i = V[T, k], k
    e = T
    while e > 0:
        d = bd[e, i]
        for t in range(e - d, e):
            path[t] = i
        s = e - d
        if s > 0:
            i = bj[s, i]
        e = s
    return best
