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
from .hmm_passes import _max_length, move_emissions, per_state, shift_transitions, surrogate_transitions
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


@njit(cache=True)
def _block_starts(offsets, order, lo, nb, start):
    """``start[m]``: where sentence ``order[lo + m]`` of the block begins in the block's token scratch."""
    start[0] = 0
    for m in range(nb):
        i = order[lo + m]
        start[m + 1] = start[m] + offsets[i + 1] - offsets[i]


@njit(cache=True)
def _block_emissions(C_emit, col_tot, gamma, tokens, s, T, b, allowed, own, link, first, own_col, E):
    """Surrogate emissions of thesis eq. 3.50 against the block's frozen counts, for the ``T`` tokens
    of the sentence at ``s``: ``E[t, k] = (C_{x_t,k} - own_{x_t,k} + b_k) / (C_{.,k} - own_{.,k} + W b_k)``
    (``b`` the (K,) emission concentrations),
    zero where ``allowed`` forbids ``k``.  A word may repeat in the sentence, so its own counts are
    summed by word type first (``own[f]`` at its first position ``f = link[t]``; ``first`` (W,) is the
    scratch index, left all -1)."""
    K = C_emit.shape[1]
    W = C_emit.shape[0]
    for k in range(K):
        own_col[k] = col_tot[k]
    for t in range(T):
        w = tokens[s + t]
        f = first[w]
        if f < 0:
            first[w] = t
            link[t] = t
            for k in range(K):
                own[t, k] = gamma[s + t, k]
        else:
            link[t] = f
            for k in range(K):
                own[f, k] += gamma[s + t, k]
        for k in range(K):
            own_col[k] -= gamma[s + t, k]
    for k in range(K):
        own_col[k] = 1.0 / (max(own_col[k], 0.0) + W * b[k])
    constrained = allowed.shape[0] > 0
    for t in range(T):
        w = tokens[s + t]
        f = link[t]
        for k in range(K):
            E[t, k] = (max(C_emit[w, k] - own[f, k], 0.0) + b[k]) * own_col[k]
        if constrained:
            for k in range(K):
                if allowed[w, k] == 0:
                    E[t, k] = 0.0
    for t in range(T):
        first[tokens[s + t]] = -1


@njit(cache=True)
def _commit_sentence(C_trans, row_tot, C_emit, col_tot, sent_trans, gamma, tokens, s, T, new_trans, new_gamma):
    """Replace a sentence's stored statistics (``sent_trans`` (K+1, K), ``gamma[s:s+T]``) by the new ones,
    already rounded to the storage dtype, and move the totals by the change (the add-back of thesis
    eq. 3.44), so they stay the exact sums of what is stored."""
    shift_transitions(C_trans, row_tot, sent_trans, new_trans)
    move_emissions(C_emit, col_tot, gamma, tokens, s, T, -1.0)
    gamma[s:s + T] = new_gamma
    move_emissions(C_emit, col_tot, gamma, tokens, s, T, 1.0)


@njit(cache=True, parallel=True)
def cvi2_block_pass(C_trans, C_emit, sent_trans, gamma, tokens, offsets, order, alpha, beta, allowed, block,
                    n_chunks):
    """One sweep of block-parallel CVI algorithm 2: sentences in a block see the counts frozen at the block start.

    Same arguments and contract as :func:`induce.infer.hmm_passes.cvi2_pass`
    (``beta`` a scalar or per-state array) plus ``block`` (sentences per block) and ``n_chunks`` (threads).  The
    sentences ``order[b : b + block]`` are updated in parallel: sentence ``i``
    runs forward-backward under the surrogate parameters (thesis eq. 3.49-3.50,
    :func:`induce.infer.hmm_passes.surrogate_transitions`, :func:`_block_emissions`) formed from ``C - c_i``
    with ``C`` the counts at the start of its block and ``c_i`` its own stored
    statistics; after the block every sentence's change ``c_i^new - c_i^old`` is
    added to ``C`` (:func:`_commit_sentence`).  With ``block == 1`` this is the
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
    new_trans = np.empty((block, K + 1, K), dtype=sent_trans.dtype)
    new_gamma = np.empty((max_tok, K), dtype=gamma.dtype)
    start = np.empty(block + 1, dtype=np.int64)
    ll_loc = np.zeros(n_chunks)
    prior = np.full(K, alpha)
    b = per_state(beta, K)
    for lo in range(0, I, block):
        nb = min(I, lo + block) - lo
        _block_starts(offsets, order, lo, nb, start)
        for c in prange(n_chunks):
            for m in range(c * nb // n_chunks, (c + 1) * nb // n_chunks):
                i = order[lo + m]
                s = offsets[i]
                T = offsets[i + 1] - s
                if T == 0:
                    continue
                surrogate_transitions(C_trans, row_tot, sent_trans[i], prior, K * alpha, A[c])
                _block_emissions(C_emit, col_tot, gamma, tokens, s, T, b, allowed, own[c], link[c], first[c],
                                 own_col[c], E[c])
                ll_loc[c] += forward_backward(A[c], E[c], T, fwd[c], bwd[c], scale[c], xi[c])
                store_sentence(A[c], fwd[c], bwd[c], xi[c], T, new_trans[m], new_gamma[start[m]:start[m] + T])
        for m in range(nb):
            i = order[lo + m]
            s = offsets[i]
            T = offsets[i + 1] - s
            if T > 0:
                _commit_sentence(C_trans, row_tot, C_emit, col_tot, sent_trans[i], gamma, tokens, s, T, new_trans[m],
                                 new_gamma[start[m]:start[m] + T])
    return ll_loc.sum()
