"""Probabilities that a transition never occurs in a sequence: ``q(C^i_{j,k} = 0)`` (thesis 5.4).

The expected table counts of the HDP-HMM (thesis eq. 5.35) and the expected
digamma terms of the sigma update (eq. 5.36) need ``q(C_{j,k} > 0)`` and
``q(C_{j,.} > 0)``.  Both factorise over sequences (eq. 5.46):
``q(C_{j,k} > 0) = 1 - prod_i q(C^i_{j,k} = 0)``, so every kernel here *adds*
``log q(C^i_{j,k} = 0)`` of one sentence into ``logq0`` ``(K+1, K)`` (row 0:
the start state) and ``log q(C^i_{j,.} = 0)`` into ``logq0_row`` ``(K+1,)``.

``q(z^i)`` is the Markov chain of thesis eq. 5.47-5.49 defined by the
potentials ``A`` ``(K+1, K)`` and ``E`` ``(T, K)`` that were fed to
:func:`induce.kernels.hmm.forward_backward`, whose outputs (``fwd``, ``bwd``,
``scale``) the approximate methods reuse.  Four methods (thesis 5.4.2-5.4.3):

* ``exact``      message passing, eq. 5.53-5.56, O(T K^4) per sentence;
* ``meanfield``  the fully factorised chain, recursion over message sums 5.60-5.64, O(T K^2);
* ``sampling``   S chains from forward filtering, backward sampling (eq. 5.65), O(T K S);
* ``heuristic``  overlapping but independent pairs, eq. 5.67, O(T K^2).

The start row is exact for every method: ``q(C^i_{0,k} = 0) = 1 - q(z_1 = k)``
(eq. 5.51), and ``C^i_{0,.} = 1`` for every non-empty sentence.
``C^i_{j,.}`` counts the transitions *out of* ``j``, i.e. the visits of ``j``
at positions ``1..T-1`` (eq. 5.45).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..names import QC_METHODS  # noqa: F401 - re-exported: the names live where the CLI imports them cheaply

HEURISTIC, EXACT, MEANFIELD, SAMPLING = 0, 1, 2, 3

_TINY = 1e-300
_LOG_TINY = np.log(1e-300)


@njit(cache=True, inline="always")
def _log_keep(p):
    """``log(1 - p)`` floored at ``log(1e-300)`` (a certain event keeps the sum finite)."""
    r = 1.0 - p
    if r < _TINY:
        return _LOG_TINY
    return np.log(r)


@njit(cache=True)
def _start_row(fwd, bwd, T, logq0, logq0_row):
    """Eq. 5.51: ``q(C^i_{0,k} = 0) = 1 - q(z_1 = k)``; the start row always has one transition."""
    K = fwd.shape[1]
    for k in range(K):
        logq0[0, k] += _log_keep(fwd[0, k] * bwd[0, k])
    logq0_row[0] += _LOG_TINY


@njit(cache=True)
def qc_heuristic(A, E, T, fwd, bwd, scale, logq0, logq0_row):
    """Eq. 5.67: ``q(C^i_{j,k} = 0) ~ prod_{t=2}^T (1 - q(z_{t-1} = j, z_t = k))``.

    The pair marginals are ``fwd[t-1, j] A[j+1, k] E[t, k] bwd[t, k] / scale[t]``
    (the scaled forward-backward of :mod:`induce.kernels.hmm`).  Rows use the
    same independence: ``q(C^i_{j,.} = 0) ~ prod_{t=1}^{T-1} (1 - q(z_t = j))``
    (Wang & Blunsom, paper 004, eq. 25).
    """
    K = A.shape[1]
    _start_row(fwd, bwd, T, logq0, logq0_row)
    # products over t first, one log per cell and sentence (floored at 1e-300 there)
    P = np.ones((K, K))
    R = np.ones(K)
    eb = np.empty(K)
    for t in range(1, T):
        inv = 1.0 / scale[t]
        for k in range(K):
            eb[k] = E[t, k] * bwd[t, k] * inv
        for j in range(K):
            f = fwd[t - 1, j]
            row = A[j + 1]
            for k in range(K):
                P[j, k] *= 1.0 - f * row[k] * eb[k]
            R[j] *= 1.0 - f * bwd[t - 1, j]
        if t % 32 == 0:  # keep products out of the (slow) subnormal range
            for j in range(K):
                R[j] = max(R[j], _TINY)
                for k in range(K):
                    P[j, k] = max(P[j, k], _TINY)
    for j in range(K):
        for k in range(K):
            logq0[j + 1, k] += np.log(max(P[j, k], _TINY))
        logq0_row[j + 1] += np.log(max(R[j], _TINY))


@njit(cache=True)
def qc_meanfield(fwd, bwd, T, logq0, logq0_row):
    """Eq. 5.57-5.64: ``q(z^i) ~ prod_t q(z_t)``; O(1) per step and pair via message sums.

    With ``S_t = sum_z m_t(z)`` and ``m_t(j)`` (the only two quantities needed):
    ``S_t = S_{t-1} - q_t(k) m_{t-1}(j)`` (5.63) and
    ``m_t(j) = q_t(j) S_{t-1} - [j = k] q_t(j) m_{t-1}(j)`` (5.64), from
    ``m_1 = q(z_1)``; the result is ``S_T`` (5.62).  Rows under the factorised
    chain are exactly ``prod_{t=1}^{T-1} (1 - q_t(j))``.
    """
    K = fwd.shape[1]
    _start_row(fwd, bwd, T, logq0, logq0_row)
    q = np.empty((T, K))
    for t in range(T):
        for k in range(K):
            q[t, k] = fwd[t, k] * bwd[t, k]
    for j in range(K):
        for k in range(K):
            S = 1.0
            mj = q[0, j]
            for t in range(1, T):
                S_new = S - q[t, k] * mj
                if j == k:
                    mj = q[t, j] * S - q[t, j] * mj
                else:
                    mj = q[t, j] * S
                S = S_new
            logq0[j + 1, k] += np.log(max(S, _TINY))
        for t in range(T - 1):
            logq0_row[j + 1] += _log_keep(q[t, j])


@njit(cache=True)
def _forward_excluding(A, E, T, j, logZ, logq0, logq0_row):
    """All ``q(C^i_{j,k} = 0)``, ``k = 1..K``, and ``q(C^i_{j,.} = 0)`` for one source state ``j``.

    Eq. 5.53-5.56 with ``f_{t-1}(z_{t-1}, z_t) = q(z_t | z_{t-1}) delta((z_{t-1}, z_t) != (j, k))``.
    Since ``q(z_t | z_{t-1}) = A[z_{t-1}, z_t] E[t, z_t] beta_t(z_t) / beta_{t-1}(z_{t-1})``
    (eq. 5.49) the backward factors telescope, and the messages are the
    forward messages of the potentials with the transition ``j -> k`` removed:
    ``q(C^i_{j,k} = 0) = Z_{-(j,k)} / Z``.  Row ``r`` of ``M`` is the scaled
    message that excludes ``(j, r)``; one step is a ``K x K`` matrix product
    plus the correction of the excluded entry (the O(K^2) per message of 5.55).
    The row statistic forbids state ``j`` at positions ``1..T-1`` (eq. 5.45).
    """
    K = A.shape[1]
    T1 = A[1:]
    M = np.empty((K, K))
    logs = np.zeros(K)
    for r in range(K):
        for k in range(K):
            M[r, k] = A[0, k] * E[0, k]
    row = np.empty(K)
    for k in range(K):
        row[k] = A[0, k] * E[0, k]
    row[j] = 0.0 if T > 1 else row[j]
    log_row = 0.0
    for t in range(1, T):
        # normalise the previous messages (scaled message passing)
        for r in range(K):
            s = 0.0
            for k in range(K):
                s += M[r, k]
            s = max(s, _TINY)
            logs[r] += np.log(s)
            for k in range(K):
                M[r, k] /= s
        s = max(row.sum(), _TINY)
        log_row += np.log(s)
        row /= s
        N = np.dot(M, T1)
        for r in range(K):
            N[r, r] -= M[r, j] * A[j + 1, r]
            if N[r, r] < 0.0:
                N[r, r] = 0.0
        for r in range(K):
            for k in range(K):
                N[r, k] *= E[t, k]
        M[:, :] = N
        nrow = np.dot(row, T1) * E[t]
        if t < T - 1:
            nrow[j] = 0.0
        row[:] = nrow
    for r in range(K):
        s = 0.0
        for k in range(K):
            s += M[r, k]
        logq0[j + 1, r] += min(logs[r] + np.log(max(s, _TINY)) - logZ, 0.0)
    logq0_row[j + 1] += min(log_row + np.log(max(row.sum(), _TINY)) - logZ, 0.0)


@njit(cache=True)
def qc_exact(A, E, T, fwd, bwd, logZ, logq0, logq0_row):
    """Exact ``log q(C^i = 0)`` by message passing (thesis eq. 5.53-5.56); O(T K^4).

    ``logZ`` is the sentence's log normaliser (the return value of ``forward_backward``).
    """
    K = A.shape[1]
    _start_row(fwd, bwd, T, logq0, logq0_row)
    if T == 1:  # no transitions after the start: every q(C^i_{j,.} = 0) = 1
        return
    for j in range(K):
        _forward_excluding(A, E, T, j, logZ, logq0, logq0_row)


@njit(cache=True)
def backward_sample(A, E, T, fwd, out):
    """One path from ``q(z^i)`` by forward filtering, backward sampling (Scott 2002).

    ``fwd`` are the normalised forward messages of ``forward_backward`` under
    ``A``/``E``; ``z_T ~ fwd[T-1]`` and ``z_{t-1} ~ fwd[t-1, j] A[j+1, z_t]``.
    Uses numba's global ``np.random`` state (seed it in the calling kernel).
    """
    K = A.shape[1]
    w = np.empty(K)
    tot = 0.0
    for k in range(K):
        w[k] = fwd[T - 1, k]
        tot += w[k]
    out[T - 1] = _draw(w, tot)
    for t in range(T - 1, 0, -1):
        nxt = out[t]
        tot = 0.0
        for j in range(K):
            w[j] = fwd[t - 1, j] * A[j + 1, nxt]
            tot += w[j]
        out[t - 1] = _draw(w, tot)


@njit(cache=True)
def sample_transition_counts(A, E, T, fwd, path, counts):
    """Add one path ``z ~ q(z^i)`` (:func:`backward_sample`) per sample ``s`` to ``counts[s]`` ``(S, K+1, K)``.

    Row 0 is the start state, row ``j + 1`` the transitions out of ``j``.
    Summed over the sentences with the same ``s``, ``counts[s]`` is one draw
    of the corpus transition counts ``C`` from ``q(z) = prod_i q(z^i)``: the
    Monte Carlo estimate of the expected table counts and digamma terms that
    eq. 5.35-5.36 approximate to first order
    (:func:`induce.infer.hdp.sampled_tables`).  ``path`` holds at least ``T``.
    """
    for s in range(counts.shape[0]):
        backward_sample(A, E, T, fwd, path)
        counts[s, 0, path[0]] += 1.0
        for t in range(1, T):
            counts[s, path[t - 1] + 1, path[t]] += 1.0


@njit(cache=True, inline="always")
def _draw(w, tot):
    u = np.random.random() * tot
    acc = 0.0
    K = w.shape[0]
    for k in range(K):
        acc += w[k]
        if u < acc:
            return k
    # rounding: the last state with positive weight
    for k in range(K - 1, -1, -1):
        if w[k] > 0.0:
            return k
    return K - 1


@njit(cache=True)
def qc_sampling(A, E, T, fwd, bwd, n_samples, logq0, logq0_row):
    """Eq. 5.65: the fraction of ``n_samples`` sampled paths without a ``j -> k`` transition.

    Every sample serves all ``(j, k)`` at once; a stamp array marks the pairs
    seen in the current sample.  A zero fraction is floored at ``1e-300``.
    """
    K = A.shape[1]
    _start_row(fwd, bwd, T, logq0, logq0_row)
    path = np.empty(T, dtype=np.int64)
    seen = np.full((K, K), -1, dtype=np.int64)
    seen_row = np.full(K, -1, dtype=np.int64)
    absent = np.full((K, K), n_samples, dtype=np.int64)
    absent_row = np.full(K, n_samples, dtype=np.int64)
    for s in range(n_samples):
        backward_sample(A, E, T, fwd, path)
        for t in range(1, T):
            j = path[t - 1]
            k = path[t]
            if seen[j, k] != s:
                seen[j, k] = s
                absent[j, k] -= 1
            if seen_row[j] != s:
                seen_row[j] = s
                absent_row[j] -= 1
    inv = 1.0 / n_samples
    for j in range(K):
        for k in range(K):
            logq0[j + 1, k] += np.log(max(absent[j, k] * inv, _TINY))
        logq0_row[j + 1] += np.log(max(absent_row[j] * inv, _TINY))


@njit(cache=True)
def accumulate_qc(method, A, E, T, fwd, bwd, scale, logZ, n_samples, logq0, logq0_row):
    """Add one sentence's ``log q(C^i = 0)`` by ``method`` (``HEURISTIC``, ``EXACT``, ``MEANFIELD``, ``SAMPLING``)."""
    if method == EXACT:
        qc_exact(A, E, T, fwd, bwd, logZ, logq0, logq0_row)
    elif method == MEANFIELD:
        qc_meanfield(fwd, bwd, T, logq0, logq0_row)
    elif method == SAMPLING:
        qc_sampling(A, E, T, fwd, bwd, n_samples, logq0, logq0_row)
    else:
        qc_heuristic(A, E, T, fwd, bwd, scale, logq0, logq0_row)
