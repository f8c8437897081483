"""CVI algorithm 3: one long sequence as consecutive subsequences (thesis section 3.6).

The sequence ``tokens`` is cut at ``sub_offsets`` into subsequences
``z^1..z^I``; ``q(z) = prod_i q(z^i)`` (3.58).  Local statistics kept per
subsequence: its interior expected transition counts ``pair[i]`` (K, K) and the
token marginals ``gamma`` (N, K).  Under the factorised ``q`` the transition
between neighbours ``i-1`` and ``i`` has expected count
``outer(gamma[last of i-1], gamma[first of i])`` (the first subsequence enters
from the start state, row 0).  "Subsequence ``i``'s transitions" are its
interior pairs and its entering edge, so excluding ``i`` (3.56-3.57) removes
``T + 1`` transitions: those two and the edge into ``i + 1``.

The update of ``q(z^i)`` (3.70) runs :func:`induce.kernels.subchain.subchain_forward_backward`
with the surrogate parameters 3.63-3.64 from ``C^{\\i}`` and the guard messages
from ``C^{\\i-1,i}`` (left, 3.61a, 3.68) and ``C^{\\i,i+1}`` (right, 3.61c, 3.69)
with the neighbours' boundary marginals ``q(z_0^i)``, ``q(z_{T+1}^i)`` (3.72, 3.76).
With a single subsequence this is exactly CVI algorithm 2 on one sequence.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels.hmm import fb_workspace_for, forward_backward, gather_emissions
from ..kernels.subchain import guard_in, guard_out, subchain_forward_backward
from ..kernels.ratio import cvi_ratio_nb


@njit(cache=True)
def _edge(C, sign, gamma, so, i):
    """Add ``sign`` times the expected entering transition of subsequence ``i`` to ``C`` (K+1, K)."""
    K = C.shape[1]
    s = so[i]
    if i == 0:
        for k in range(K):
            C[0, k] += sign * gamma[s, k]
    else:
        for j in range(K):
            a = sign * gamma[s - 1, j]
            for k in range(K):
                C[j + 1, k] += a * gamma[s, k]


@njit(cache=True)
def _interior(C, sign, pair, i):
    K = C.shape[1]
    for j in range(K):
        for k in range(K):
            C[j + 1, k] += sign * pair[i, j, k]


@njit(cache=True)
def _emissions(C_emit, sign, tokens, gamma, lo, hi):
    K = C_emit.shape[1]
    for p in range(lo, hi):
        w = tokens[p]
        for k in range(K):
            C_emit[w, k] += sign * gamma[p, k]


@njit(cache=True)
def _store_local(A, xi, fwd, bwd, T, pair, i, gamma, s):
    """Subsequence ``i``'s interior expected transitions ``A * xi`` and token marginals ``fwd * bwd``."""
    K = A.shape[1]
    for j in range(K):
        for k in range(K):
            pair[i, j, k] = A[j + 1, k] * xi[j, k]
    for t in range(T):
        for k in range(K):
            gamma[s + t, k] = fwd[t, k] * bwd[t, k]


@njit(cache=True)
def cvi3_totals(tokens, sub_offsets, pair, gamma, C_trans, C_emit):
    """Global expected counts as the exact sum of the local statistics (no drift)."""
    C_trans[:] = 0.0
    C_emit[:] = 0.0
    I = sub_offsets.shape[0] - 1
    for i in range(I):
        _interior(C_trans, 1.0, pair, i)
        _edge(C_trans, 1.0, gamma, sub_offsets, i)
    _emissions(C_emit, 1.0, tokens, gamma, 0, tokens.shape[0])


@njit(cache=True)
def cvi3_pass(C_trans, C_emit, pair, gamma, tokens, sub_offsets, order, alpha, beta):
    """One sweep of CVI algorithm 3 over the subsequences in ``order``; all arrays updated in place.

    ``C_trans`` (K+1, K) and ``C_emit`` (W, K) must equal :func:`cvi3_totals`
    of ``pair`` (I, K, K) and ``gamma`` (N, K).  Returns the summed ``log Z`` of
    the normalised expansions (the collapsed predictive proxy, as in CVI-2).
    """
    K = C_trans.shape[1]
    W = C_emit.shape[0]
    I = sub_offsets.shape[0] - 1
    fwd, bwd, E, scale, xi = fb_workspace_for(sub_offsets, K)
    A = np.empty((K + 1, K))
    Cx = np.empty((K + 1, K))
    left = np.empty(K)
    right = np.ones(K)
    col_tot = C_emit.sum(axis=0)
    ll = 0.0
    for n in range(order.shape[0]):
        i = order[n]
        s = sub_offsets[i]
        e = sub_offsets[i + 1]
        T = e - s
        if T == 0:
            continue
        # C^{\i} (3.57): interior, entering edge and the edge into i+1
        _interior(C_trans, -1.0, pair, i)
        _edge(C_trans, -1.0, gamma, sub_offsets, i)
        if i + 1 < I:
            _edge(C_trans, -1.0, gamma, sub_offsets, i + 1)
        for p in range(s, e):
            w = tokens[p]
            for k in range(K):
                C_emit[w, k] -= gamma[p, k]
                col_tot[k] -= gamma[p, k]
        # surrogate parameters (3.63-3.64)
        for j in range(1, K + 1):
            tot = 0.0
            for k in range(K):
                tot += max(C_trans[j, k], 0.0)
            for k in range(K):
                A[j, k] = cvi_ratio_nb(C_trans[j, k], tot, alpha, K)
        for t in range(T):
            w = tokens[s + t]
            for k in range(K):
                E[t, k] = cvi_ratio_nb(C_emit[w, k], col_tot[k], beta, W)
        # left guard (3.61a, 3.68, 3.72-3.73): C^{\i-1,i}
        if i == 0:
            for k in range(K):
                left[k] = max(C_trans[0, k], 0.0) + alpha
        else:
            Cx[:] = C_trans
            _interior(Cx, -1.0, pair, i - 1)
            _edge(Cx, -1.0, gamma, sub_offsets, i - 1)
            guard_in(gamma[s - 1], Cx[1:], alpha, left)
        # right guard (3.61c, 3.69, 3.75-3.76): C^{\i,i+1}
        if i + 1 < I:
            Cx[:] = C_trans
            _interior(Cx, -1.0, pair, i + 1)
            if i + 2 < I:
                _edge(Cx, -1.0, gamma, sub_offsets, i + 2)
            guard_out(gamma[e], Cx[1:], alpha, right)
        else:
            right[:] = 1.0
        ll += subchain_forward_backward(A, E, T, left, right, fwd, bwd, scale, xi)
        # store and add back
        _store_local(A, xi, fwd, bwd, T, pair, i, gamma, s)
        _interior(C_trans, 1.0, pair, i)
        _edge(C_trans, 1.0, gamma, sub_offsets, i)
        if i + 1 < I:
            _edge(C_trans, 1.0, gamma, sub_offsets, i + 1)
        for p in range(s, e):
            w = tokens[p]
            for k in range(K):
                C_emit[w, k] += gamma[p, k]
                col_tot[k] += gamma[p, k]
    return ll


@njit(cache=True)
def init_from_parameters(A, phi, tokens, sub_offsets, pair, gamma):
    """Local statistics of every subsequence under fixed parameters: the starting point of cvi3.

    ``A`` (K+1, K) transitions with row 0 the entry distribution of every
    subsequence, ``phi`` (W, K) emissions by word; ``gamma`` (N, K) and ``pair``
    (I, K, K) receive the forward-backward marginals and interior expected
    transition counts of each subsequence on its own.
    """
    K = A.shape[1]
    I = sub_offsets.shape[0] - 1
    fwd, bwd, E, scale, xi = fb_workspace_for(sub_offsets, K)
    no_mask = np.zeros((0, 0), dtype=np.uint8)
    for i in range(I):
        s = sub_offsets[i]
        T = sub_offsets[i + 1] - s
        if T == 0:
            continue
        gather_emissions(phi, tokens[s:s + T], no_mask, E)
        forward_backward(A, E, T, fwd, bwd, scale, xi)
        _store_local(A, xi, fwd, bwd, T, pair, i, gamma, s)


def subsequence_offsets(n_tokens: int, length: int) -> np.ndarray:
    """Cut points of ``n_tokens`` into consecutive subsequences of ``length`` (the last may be shorter)."""
    cuts = np.arange(0, n_tokens, max(1, int(length)), dtype=np.int64)
    return np.append(cuts, np.int64(n_tokens))
