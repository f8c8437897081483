"""Token-level collapsed sweeps of HMMs with conjugate emission families over numeric series.

Both sweeps integrate out the transition rows (Dirichlet ``alpha``) and the emission parameters (the family's
conjugate prior) and visit the steps one at a time, as the text HMM's collapsed Gibbs sampler and CVI
algorithm 1 do (:mod:`induce.infer.hmm_passes`), with the categorical ratio ``(C_kw + b) / (C_k + W b)``
replaced by the family's posterior predictive given the other steps' statistics (thesis eq. 3.96: Student-t,
negative binomial), computed by the compiled :func:`induce.kernels.emissions.predictive_rows`:

* :func:`cgs_series_pass` -- collapsed Gibbs sampling, thesis eq. 3.25;
* :func:`cvi1_series_pass` -- CVI algorithm 1, a factorised ``q(z_t)`` per step, thesis eq. 3.33, 3.37-3.39.

Global state: transition counts ``C`` ``(K+1, K)`` (row 0 the start state, no end state) and emission statistics
``S`` ``(K, n_stats)`` in the family's layout (:mod:`induce.emissions.base`), ``F`` the per-step features
``<1, s(x_t)>``; items are the sequences ``X[bounds[i, 0]:bounds[i, 1]]``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .emissions import predictive_rows


@njit(cache=True)
def hard_statistics(F, bounds, z, C, S):
    """Transition counts ``C`` and emission statistics ``S = sum_{t: z_t = k} F_t`` of an assignment ``z``."""
    C[:] = 0
    S[:] = 0.0
    for i in range(bounds.shape[0]):
        for p in range(bounds[i, 0], bounds[i, 1]):
            prev = 0 if p == bounds[i, 0] else 1 + z[p - 1]
            C[prev, z[p]] += 1
            S[z[p]] += F[p]


@njit(cache=True)
def soft_statistics(F, bounds, q, G, S):
    """Expected counts under a fully factorised ``q(z_t)``: ``G[0] = sum q(z_first)``, ``G[1 + j, k] =
    sum_t q_{t-1}(j) q_t(k)``, ``S_k = sum_t q_t(k) F_t`` (thesis eq. 3.102)."""
    K = q.shape[1]
    G[:] = 0.0
    S[:] = 0.0
    for i in range(bounds.shape[0]):
        lo = bounds[i, 0]
        for p in range(lo, bounds[i, 1]):
            for k in range(K):
                S[k] += q[p, k] * F[p]
                if p == lo:
                    G[0, k] += q[p, k]
                else:
                    for j in range(K):
                        G[1 + j, k] += q[p - 1, j] * q[p, k]


@njit(cache=True)
def _weights(row, out):
    """``out = exp(row - max row)`` in place of the predictive log-row ``row (1, K)``."""
    m = -np.inf
    for k in range(out.shape[0]):
        m = max(m, row[0, k])
    for k in range(out.shape[0]):
        out[k] = math.exp(row[0, k] - m) if math.isfinite(m) else 1.0


@njit(cache=True)
def cgs_series_pass(X, F, bounds, z, C, S, alpha, code, hyper, seed):
    """One collapsed Gibbs sweep (thesis eq. 3.25) with the emission factor the predictive of family ``code``.

    For each step: remove its incoming and outgoing transition and its statistics ``F_t``, draw ``z_t = k`` with
    probability proportional to::

        (C_{z_{t-1},k} + a) (C_{k,z_{t+1}} + a + [z_{t-1} = k = z_{t+1}]) / (C_{k,.} + K a + [z_{t-1} = k])
        x p(x_t | S_k)                                   (eq. 3.96, the other steps of state k)

    (the last step of a sequence has no outgoing factor), and add it back.  ``C`` int64 and ``S`` must be
    :func:`hard_statistics` of ``z`` and are kept in sync; the draws are seeded by ``seed``.  Returns the number
    of changed states.
    """
    np.random.seed(seed)
    K = C.shape[1]
    R = np.zeros(K + 1, dtype=np.int64)
    for j in range(K + 1):
        for k in range(K):
            R[j] += C[j, k]
    row = np.empty((1, K))
    prob = np.empty(K)
    changed = 0
    for i in range(bounds.shape[0]):
        lo, hi = bounds[i, 0], bounds[i, 1]
        for p in range(lo, hi):
            old = z[p]
            prev = 0 if p == lo else 1 + z[p - 1]
            has_next = p + 1 < hi
            nxt = z[p + 1] if has_next else -1
            C[prev, old] -= 1
            R[prev] -= 1
            if has_next:
                C[1 + old, nxt] -= 1
                R[1 + old] -= 1
            S[old] -= F[p]
            predictive_rows(code, hyper, X[p:p + 1], S, row)
            _weights(row, prob)
            same = prev - 1  # z_{t-1} (-1 at a sequence start)
            tot = 0.0
            for k in range(K):
                v = prob[k] * (C[prev, k] + alpha)
                if has_next:
                    v *= ((C[1 + k, nxt] + alpha + (1.0 if (k == same and k == nxt) else 0.0))
                          / (R[1 + k] + K * alpha + (1.0 if k == same else 0.0)))
                prob[k] = v
                tot += v
            u = np.random.random() * tot
            new, acc = K - 1, 0.0
            for k in range(K):
                acc += prob[k]
                if u < acc:
                    new = k
                    break
            z[p] = new
            changed += new != old
            C[prev, new] += 1
            R[prev] += 1
            if has_next:
                C[1 + new, nxt] += 1
                R[1 + new] += 1
            S[new] += F[p]
    return changed


@njit(cache=True)
def _move_pairs(G, q, p, t, T, qt, sign):
    """``G += sign (q_{t-1} q_t' + q_t q_{t+1}')`` (the start row ``G[0]`` at ``t = 0``): step ``t``'s pairs."""
    K = G.shape[1]
    for k in range(K):
        if t == 0:
            G[0, k] += sign * qt[k]
        else:
            for j in range(K):
                G[1 + j, k] += sign * q[p - 1, j] * qt[k]
        if t < T - 1:
            for j in range(K):
                G[1 + k, j] += sign * qt[k] * q[p + 1, j]


@njit(cache=True)
def _transition_factors(G, q, p, t, T, alpha, out):
    """``out *=`` thesis eq. 3.37 x 3.39 with ``G`` the expected counts without step ``t``'s pairs::

        (E[C_{z_{t-1},k}] + a) (E[C_{k,z_{t+1}}] + a + q_{t-1}(k) q_{t+1}(k)) / (E[C_{k,.}] + K a + q_{t-1}(k))

    ``E[C_{z_{t-1},k}] = sum_j q_{t-1}(j) G[1+j, k]`` except the pair ``(t-2, t-1)``, which shares ``z_{t-1}``
    and so contributes ``q_{t-2}(k) q_{t-1}(k)`` (the correction below); likewise the pair ``(t+1, t+2)`` in
    the outgoing count.  The start row ``G[0]`` at ``t = 0``; no outgoing factor at the last step."""
    K = G.shape[1]
    dot_a, dot_b = 0.0, 0.0  # q_{t-1}.q_{t-2} and q_{t+1}.q_{t+2}: the shared-state corrections
    for j in range(K):
        if t >= 2:
            dot_a += q[p - 1, j] * q[p - 2, j]
        if t < T - 2:
            dot_b += q[p + 1, j] * q[p + 2, j]
    for k in range(K):
        a_k = q[p - 1, k] if t > 0 else 0.0
        if t == 0:
            inc = G[0, k]
        else:
            inc = 0.0
            for j in range(K):
                inc += q[p - 1, j] * G[1 + j, k]
            if t >= 2:
                inc += a_k * (q[p - 2, k] - dot_a)
        f = max(inc, 0.0) + alpha
        if t < T - 1:
            b_k = q[p + 1, k]
            num, row = 0.0, 0.0
            for j in range(K):
                num += G[1 + k, j] * q[p + 1, j]
                row += G[1 + k, j]
            if t < T - 2:
                num += b_k * (q[p + 2, k] - dot_b)
            f *= (max(num, 0.0) + alpha + a_k * b_k) / (max(row, 0.0) + K * alpha + a_k)
        out[k] *= f


@njit(cache=True)
def cvi1_series_pass(X, F, bounds, q, G, S, alpha, code, hyper):
    """One sweep of CVI algorithm 1 (thesis eq. 3.33 with 3.37-3.39) over the steps in order.

    ``q`` ``(N, K)`` holds the factorised marginals; ``G`` and ``S`` are set from it first
    (:func:`soft_statistics`) and kept in sync.  Per step: remove its pairs and its expected statistics
    ``q_t(k) F_t``, set ``q(z_t = k)`` proportional to the transition factors (:func:`_transition_factors`)
    times the predictive ``p(x_t | S_k)`` (eq. 3.96, the zeroth-order expectation of eq. 3.33), add it back.
    Returns the mean absolute change of ``q`` per step.
    """
    soft_statistics(F, bounds, q, G, S)
    K = G.shape[1]
    row = np.empty((1, K))
    new = np.empty(K)
    change = 0.0
    for i in range(bounds.shape[0]):
        lo, hi = bounds[i, 0], bounds[i, 1]
        T = hi - lo
        for p in range(lo, hi):
            t = p - lo
            qt = q[p]
            _move_pairs(G, q, p, t, T, qt, -1.0)
            for k in range(K):
                S[k] -= qt[k] * F[p]
            predictive_rows(code, hyper, X[p:p + 1], S, row)
            _weights(row, new)
            _transition_factors(G, q, p, t, T, alpha, new)
            tot = 0.0
            for k in range(K):
                tot += new[k]
            for k in range(K):
                v = new[k] / tot
                change += abs(v - qt[k])
                qt[k] = v
                S[k] += v * F[p]
            _move_pairs(G, q, p, t, T, qt, 1.0)
    return change / max(1, q.shape[0])
