"""Forward-backward for many sentences at once, position by position (lockstep).

The per-sentence kernel :func:`induce.kernels.hmm.forward_backward` spends its
time in K x K matrix-*vector* products, one per token.  When the parameters are
the same for every sentence (EM's theta*, VI's theta~) the recursions of all
sentences can advance together: at position ``t`` the forward messages of every
sentence still running form an ``n_t x K`` matrix, and one matrix-*matrix*
product (BLAS) advances all of them (thesis eq. 3.7-3.8 / Rabiner's scaled
recursions, unchanged, only evaluated for ``n_t`` sentences per call).

Layout (built once per corpus by :func:`lockstep_layout`): sentences are sorted
by length, longest first, and cut into blocks of ``block`` sentences.  Inside a
block the tokens are stored position-major: the rows of position ``t`` are the
``t``-th tokens of the ``n_t`` block sentences that are longer than ``t``, and
because the block is sorted these are always its first ``n_t`` sentences, so
position ``t``'s rows continue exactly the first ``n_t`` rows of position
``t-1``.  ``lay_flat[row]`` is the flat corpus index of a row's token.

Conventions as in :mod:`induce.kernels.hmm`: ``A`` is ``(K+1, K)`` with row 0 the
start state, emissions by word ``(W, K)``, scaled messages with
``sum(log(scale))`` the log-likelihood.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .hmm import gather_emissions

_TINY = 1e-300


@njit(cache=True)
def lockstep_layout(offsets, block):
    """Position-major layout of the corpus in blocks of ``block`` length-sorted sentences.

    Returns ``(lay_flat, pos_start, block_pos)``: ``lay_flat`` (N,) flat token
    index of each row; position record ``p`` covers rows
    ``pos_start[p]:pos_start[p + 1]``; block ``b`` owns position records
    ``block_pos[b]:block_pos[b + 1]`` (its position ``t`` is record
    ``block_pos[b] + t``).  Empty sentences are left out.
    """
    I = offsets.shape[0] - 1
    lengths = offsets[1:] - offsets[:-1]
    order = np.argsort(-lengths, kind="mergesort")
    n_sent = 0
    for i in range(I):
        if lengths[i] > 0:
            n_sent += 1
    block = max(1, block)
    n_blocks = (n_sent + block - 1) // block
    n_pos = 0
    for b in range(n_blocks):
        n_pos += lengths[order[b * block]]
    lay_flat = np.empty(offsets[I] - offsets[0], dtype=np.int64)
    pos_start = np.empty(n_pos + 1, dtype=np.int64)
    block_pos = np.empty(n_blocks + 1, dtype=np.int64)
    row = 0
    p = 0
    for b in range(n_blocks):
        lo = b * block
        hi = min(n_sent, lo + block)
        block_pos[b] = p
        n_active = hi - lo
        for t in range(lengths[order[lo]]):
            while lengths[order[lo + n_active - 1]] <= t:
                n_active -= 1
            pos_start[p] = row
            for r in range(n_active):
                lay_flat[row] = offsets[order[lo + r]] + t
                row += 1
            p += 1
    pos_start[p] = row
    block_pos[n_blocks] = p
    return lay_flat, pos_start, block_pos


@njit(cache=True)
def forward_backward_lockstep(A, emit, allowed, lay_tokens, pos_start, p0, p1, F, Bk, scale, E, tmp, xi):
    """Scaled forward-backward of one block (position records ``p0:p1``), all sentences in lockstep.

    Rows are local to the block (``row - pos_start[p0]``).  On return
    ``F[r] * Bk[r]`` is the state marginal of row ``r``; ``xi`` (K, K) has
    ``sum_{sentences, t} fwd[t-1, j] * E[t, k] * bwd[t, k] / scale[t]`` *added*
    to it, so the expected transition counts of the block are ``A[j+1, k] *
    xi[j, k]`` (the same quantity :func:`induce.kernels.hmm.forward_backward`
    returns per sentence).  ``E`` is a scratch buffer with at least as many rows
    as the block's first position, ``tmp`` a (K, K) scratch.  Returns the block's
    ``sum_i log p(x^i)``.

    Why a second kernel beside :func:`induce.kernels.hmm.forward_backward`: the
    batch E-step advances the messages of all ``n_t`` sentences still running at
    position ``t`` with one ``n_t x K`` by ``K x K`` matrix product, which needs
    the position-major layout of :func:`lockstep_layout`; the per-sentence
    kernel works on one sentence's ``T x K`` rows with matrix-vector products
    (what the incremental CVI passes need, one sentence at a time).  The two are
    tested equal to each other and to brute-force enumeration
    (tests/hmm/test_batched.py); the subchain kernel of CVI-3 is a thin layer
    over the per-sentence one (:func:`induce.kernels.subchain.subchain_forward_backward`).
    """
    K = A.shape[1]
    A1 = np.ascontiguousarray(A[1:])
    A1T = np.ascontiguousarray(A1.T)
    base = pos_start[p0]
    total = 0.0
    # forward: F_t = normalise((F_{t-1}[:n_t] @ A[1:]) * E_t)
    for p in range(p0, p1):
        r0 = pos_start[p] - base
        n = pos_start[p + 1] - pos_start[p]
        Et = E[:n]
        gather_emissions(emit, lay_tokens[base + r0 : base + r0 + n], allowed, Et)
        cur = F[r0 : r0 + n]
        if p == p0:
            for r in range(n):
                for k in range(K):
                    cur[r, k] = A[0, k] * Et[r, k]
        else:
            q0 = pos_start[p - 1] - base
            np.dot(F[q0 : q0 + n], A1, cur)
            for r in range(n):
                for k in range(K):
                    cur[r, k] *= Et[r, k]
        for r in range(n):
            s = 0.0
            for k in range(K):
                s += cur[r, k]
            if s < _TINY:
                s = _TINY
            scale[r0 + r] = s
            total += np.log(s)
            inv = 1.0 / s
            for k in range(K):
                cur[r, k] *= inv
    # backward: Bk_{t-1}[:n_t] = (E_t * Bk_t / scale_t) @ A[1:]^T; sentence ends get 1
    last = pos_start[p1 - 1] - base
    for r in range(pos_start[p1] - pos_start[p1 - 1]):
        for k in range(K):
            Bk[last + r, k] = 1.0
    for p in range(p1 - 1, p0, -1):
        r0 = pos_start[p] - base
        n = pos_start[p + 1] - pos_start[p]
        q0 = pos_start[p - 1] - base
        n_prev = r0 - q0
        EB = E[:n]
        gather_emissions(emit, lay_tokens[base + r0 : base + r0 + n], allowed, EB)
        for r in range(n):
            inv = 1.0 / scale[r0 + r]
            for k in range(K):
                EB[r, k] *= Bk[r0 + r, k] * inv
        # pair statistics of this position: xi += F_{t-1}[:n]^T @ EB
        np.dot(F[q0 : q0 + n].T, EB, tmp)
        xi += tmp
        np.dot(EB, A1T, Bk[q0 : q0 + n])
        for r in range(n, n_prev):
            for k in range(K):
                Bk[q0 + r, k] = 1.0
    return total
