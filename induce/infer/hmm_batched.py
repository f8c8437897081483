"""Faster corpus passes for HMM inference (same results as :mod:`induce.infer.hmm_passes`).

* :func:`lockstep_pass` -- the E-step of EM / VI (fixed parameters) with all
  sentences of a length-sorted block advancing together through
  :func:`induce.kernels.hmm_lockstep.forward_backward_lockstep` (matrix-matrix
  products); returns what :func:`induce.infer.hmm_passes.batch_pass` returns.

Count layout as everywhere: transitions ``(K+1, K)`` with row 0 the start
state, emissions ``(W, K)`` by word.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

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
