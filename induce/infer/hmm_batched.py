"""Faster corpus passes for HMM inference (same results as :mod:`induce.infer.hmm_passes`).

* :func:`lockstep_pass` -- the E-step of EM / VI (fixed parameters) with all
  sentences of a length-sorted block advancing together through
  :func:`induce.kernels.hmm_lockstep.forward_backward_lockstep` (matrix-matrix
  products); returns what :func:`induce.infer.hmm_passes.batch_pass` returns;
* :func:`cvi2_block_pass` -- block-parallel CVI algorithm 2: the sentences of a
  block are updated in parallel against the counts frozen at the block start
  (minus their own); block size 1 is the exact sequential
  :func:`induce.infer.hmm_passes.cvi2_pass`.

Count layout as everywhere: transitions ``(K+1, K)`` with row 0 the start
state, emissions ``(W, K)`` by word.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..kernels.hmm import forward_backward, store_sentence
from .hmm_passes import _max_length
from ..kernels.hmm_lockstep import forward_backward_lockstep, lockstep_layout


class Layout:
    """Lockstep layout of a corpus (see :func:`induce.kernels.hmm_lockstep.lockstep_layout`)."""

    def __init__(self, tokens: np.ndarray, offsets: np.ndarray, block: int = 1024):
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.lay_flat, self.pos_start, self.block_pos = lockstep_layout(offsets, int(block))
        self.lay_tokens = np.ascontiguousarray(tokens[self.lay_flat], dtype=np.int32)
        self.n_tokens = int(tokens.shape[0])


@njit(cache=True)
def _chunk_bounds(pos_start, block_pos, n_chunks):
    """Split the blocks into ``n_chunks`` contiguous runs of about equal token count."""
    nb = block_pos.shape[0] - 1
    n_chunks = max(1, min(n_chunks, nb))
    total = pos_start[block_pos[nb]]
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    bounds[0] = 0
    c = 1
    for b in range(nb):
        if c < n_chunks and pos_start[block_pos[b]] * n_chunks >= c * total:
            bounds[c] = b
            c += 1
    while c <= n_chunks:
        bounds[c] = nb
        c += 1
    return bounds


@njit(cache=True, parallel=True)
def lockstep_pass(A, emit, allowed, lay_tokens, lay_flat, pos_start, block_pos, trans_out, emit_out, gamma_out,
                  n_chunks):
    """Expected counts of the whole corpus under fixed ``A`` and ``emit``, blocks in lockstep.

    Same contract as :func:`induce.infer.hmm_passes.batch_pass`: ``trans_out``
    (K+1, K) and ``emit_out`` (W, K) are overwritten with the expected counts,
    token marginals go to ``gamma_out`` (flat corpus order) when it has N rows,
    and the return value is ``sum_i log p(x^i)``.  Blocks are split into
    ``n_chunks`` runs of about equal size processed in parallel.
    """
    K = A.shape[1]
    W = emit_out.shape[0]
    bounds = _chunk_bounds(pos_start, block_pos, n_chunks)
    n_chunks = bounds.shape[0] - 1
    start_loc = np.zeros((n_chunks, K))
    xi_loc = np.zeros((n_chunks, K, K))
    emit_loc = np.zeros((n_chunks, W, K))
    ll_loc = np.zeros(n_chunks)
    store = gamma_out.shape[0] == lay_flat.shape[0]
    for c in prange(n_chunks):
        max_rows = 1
        max_first = 1
        for b in range(bounds[c], bounds[c + 1]):
            p0 = block_pos[b]
            max_rows = max(max_rows, pos_start[block_pos[b + 1]] - pos_start[p0])
            max_first = max(max_first, pos_start[p0 + 1] - pos_start[p0])
        F = np.empty((max_rows, K))
        Bk = np.empty((max_rows, K))
        scale = np.empty(max_rows)
        E = np.empty((max_first, K))
        tmp = np.empty((K, K))
        ll = 0.0
        for b in range(bounds[c], bounds[c + 1]):
            p0 = block_pos[b]
            p1 = block_pos[b + 1]
            base = pos_start[p0]
            ll += forward_backward_lockstep(A, emit, allowed, lay_tokens, pos_start, p0, p1, F, Bk, scale, E, tmp,
                                            xi_loc[c])
            for r in range(pos_start[p0 + 1] - base):
                for k in range(K):
                    start_loc[c, k] += F[r, k] * Bk[r, k]
            for r in range(pos_start[p1] - base):
                w = lay_tokens[base + r]
                for k in range(K):
                    g = F[r, k] * Bk[r, k]
                    emit_loc[c, w, k] += g
                    if store:
                        gamma_out[lay_flat[base + r], k] = g
        ll_loc[c] = ll
    trans_out[:] = 0.0
    emit_out[:] = 0.0
    for c in range(n_chunks):
        for k in range(K):
            trans_out[0, k] += start_loc[c, k]
        for j in range(K):
            for k in range(K):
                trans_out[j + 1, k] += xi_loc[c, j, k]
        emit_out += emit_loc[c]
    for j in range(K):
        for k in range(K):
            trans_out[j + 1, k] *= A[j + 1, k]
    return ll_loc.sum()


@njit(cache=True)
def _block_tokens(offsets, order, block):
    """Largest number of tokens in any block of ``block`` consecutive sentences of ``order``."""
    best = 1
    for lo in range(0, order.shape[0], block):
        n = 0
        for m in range(lo, min(order.shape[0], lo + block)):
            i = order[m]
            n += offsets[i + 1] - offsets[i]
        best = max(best, n)
    return best


@njit(cache=True, parallel=True)
def cvi2_block_pass(C_trans, C_emit, sent_trans, gamma, tokens, offsets, order, alpha, beta, allowed, block,
                    n_chunks):
    """One sweep of block-parallel CVI algorithm 2: sentences in a block see the counts frozen at the block start.

    Same arguments and contract as :func:`induce.infer.hmm_passes.cvi2_pass`
    plus ``block`` (sentences per block) and ``n_chunks`` (threads).  The
    sentences ``order[b : b + block]`` are updated in parallel: sentence ``i``
    runs forward-backward under the surrogate parameters (thesis eq. 3.49-3.50)
    formed from ``C - c_i`` with ``C`` the counts at the start of its block and
    ``c_i`` its own stored statistics; after the block every sentence's change
    ``c_i^new - c_i^old`` is added to ``C``.  With ``block == 1`` this is the
    exact sequential algorithm.  Returns ``sum_i log p(x^i | theta-^{\\i})``.
    """
    K = C_trans.shape[1]
    W = C_emit.shape[0]
    I = order.shape[0]
    block = max(1, block)
    n_chunks = max(1, min(n_chunks, block))
    row_tot = C_trans.sum(axis=1)
    col_tot = C_emit.sum(axis=0)
    T_max = _max_length(offsets, 0, offsets.shape[0] - 1)
    max_tok = _block_tokens(offsets, order, block)
    fwd = np.empty((n_chunks, T_max, K))
    bwd = np.empty((n_chunks, T_max, K))
    E = np.empty((n_chunks, T_max, K))
    scale = np.empty((n_chunks, T_max))
    xi = np.empty((n_chunks, K, K))
    A = np.empty((n_chunks, K + 1, K))
    own = np.empty((n_chunks, T_max, K))
    link = np.empty((n_chunks, T_max), dtype=np.int64)
    first = np.full((n_chunks, W), -1, dtype=np.int64)
    own_col = np.empty((n_chunks, K))
    new_trans = np.empty((block, K + 1, K))
    new_gamma = np.empty((max_tok, K))
    start = np.empty(block + 1, dtype=np.int64)
    ll_loc = np.zeros(n_chunks)
    constrained = allowed.shape[0] > 0
    for lo in range(0, I, block):
        nb = min(I, lo + block) - lo
        start[0] = 0
        for m in range(nb):
            i = order[lo + m]
            start[m + 1] = start[m] + offsets[i + 1] - offsets[i]
        for c in prange(n_chunks):
            Ac = A[c]
            for m in range(c * nb // n_chunks, (c + 1) * nb // n_chunks):
                i = order[lo + m]
                s = offsets[i]
                T = offsets[i + 1] - s
                if T == 0:
                    continue
                # transitions: (C - c_i + a) / (C. - c_i. + K a)       (thesis eq. 3.49)
                for j in range(K + 1):
                    r = row_tot[j]
                    for k in range(K):
                        r -= sent_trans[i, j, k]
                    den = 1.0 / (max(r, 0.0) + K * alpha)
                    for k in range(K):
                        Ac[j, k] = (max(C_trans[j, k] - sent_trans[i, j, k], 0.0) + alpha) * den
                # emissions: own counts of each word type of the sentence  (thesis eq. 3.50)
                for k in range(K):
                    own_col[c, k] = col_tot[k]
                for t in range(T):
                    w = tokens[s + t]
                    f = first[c, w]
                    if f < 0:
                        first[c, w] = t
                        link[c, t] = t
                        for k in range(K):
                            own[c, t, k] = gamma[s + t, k]
                    else:
                        link[c, t] = f
                        for k in range(K):
                            own[c, f, k] += gamma[s + t, k]
                    for k in range(K):
                        own_col[c, k] -= gamma[s + t, k]
                for k in range(K):
                    own_col[c, k] = 1.0 / (max(own_col[c, k], 0.0) + W * beta)
                Ec = E[c]
                for t in range(T):
                    w = tokens[s + t]
                    f = link[c, t]
                    for k in range(K):
                        Ec[t, k] = (max(C_emit[w, k] - own[c, f, k], 0.0) + beta) * own_col[c, k]
                    if constrained:
                        for k in range(K):
                            if allowed[w, k] == 0:
                                Ec[t, k] = 0.0
                for t in range(T):
                    first[c, tokens[s + t]] = -1
                ll_loc[c] += forward_backward(Ac, Ec, T, fwd[c], bwd[c], scale[c], xi[c])
                store_sentence(Ac, fwd[c], bwd[c], xi[c], T, new_trans[m], new_gamma[start[m]:start[m] + T])
        # add every sentence's change to the counts (rounded to the storage dtype)
        for m in range(nb):
            i = order[lo + m]
            s = offsets[i]
            T = offsets[i + 1] - s
            if T == 0:
                continue
            for j in range(K + 1):
                for k in range(K):
                    old = np.float64(sent_trans[i, j, k])
                    sent_trans[i, j, k] = new_trans[m, j, k]
                    v = np.float64(sent_trans[i, j, k])
                    C_trans[j, k] = C_trans[j, k] - old + v
                    row_tot[j] += v - old
            g0 = start[m]
            for t in range(T):
                w = tokens[s + t]
                for k in range(K):
                    old = np.float64(gamma[s + t, k])
                    gamma[s + t, k] = new_gamma[g0 + t, k]
                    v = np.float64(gamma[s + t, k])
                    C_emit[w, k] = C_emit[w, k] - old + v
                    col_tot[k] += v - old
    return ll_loc.sum()

