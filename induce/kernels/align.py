"""Numba kernels for word alignment: IBM Model 1 posteriors and the alignment HMM.

Layout (one direction, target words generated from source words).  A bitext of
``P`` sentence pairs is two CSR corpora with offsets ``src_off``/``tgt_off``
(``int64[P+1]``).  Pair ``s`` with ``I`` source and ``J`` target words owns the
``(I+1)*J`` *cells* ``cell_off[s] + j*(I+1) + i`` (``i = 0`` is the NULL word,
``i >= 1`` source position ``i``), and ``cells[c]`` is the index of the
translation-table entry ``t(f_j | e_i)`` in the sparse (CSR by source word)
table; ``entry_row[k]`` is the table row of entry ``k`` (row 0 = NULL).
Per-cell posteriors use the same layout.  ``n_outcomes[r]`` is the number of
outcomes ``K_e`` of the Dirichlet prior on table row ``r``.

Alignment HMM (Vogel, Ney & Tillmann 1996) with the NULL handling of Och & Ney
(2003, sec. 3.2): ``2I+1`` hidden states per target position -- real states
``i = 1..I`` and NULL states ``null_p`` (``p = 0..I``) that remember the last
real position ``p`` (``null_0``: none yet).  From a state at position ``p``

* ``p(real i | p) = (1 - p0) * jp[p, i]``, Vogel's jump-width model with
  the jump ``i - p`` clipped to ``[-D, D]`` (see :func:`jump_matrix`),
* ``p(null_p | p) = p0``,

and the chain starts at position 0.  Emissions: ``t(f_j | e_i)`` for real
states and ``t(f_j | NULL)`` for NULL states.  Because transitions depend only
on the position ``p`` of the previous state, the forward recursion works on the
position mass ``m(p)`` and costs ``O(J I^2)``.

Every corpus pass takes ``order``, the sentence indices to visit, so that
callers can chunk a pass (progress bars) or visit sentences in random order.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .ratio import cvi_ratio_nb


# --------------------------------------------------------------- utilities
@njit(cache=True)
def cell_keys(src_tok, src_off, tgt_tok, tgt_off, n_tgt_vocab):
    """Key ``row * V_f + f`` of every cell (row 0 = NULL, row ``e + 1`` = source word ``e``).

    Returns ``(keys int64[n_cells], cell_off int64[P+1])``.
    """
    n_pairs = len(src_off) - 1
    cell_off = np.zeros(n_pairs + 1, dtype=np.int64)
    for s in range(n_pairs):
        n_src = src_off[s + 1] - src_off[s]
        n_tgt = tgt_off[s + 1] - tgt_off[s]
        cell_off[s + 1] = cell_off[s] + (n_src + 1) * n_tgt
    keys = np.empty(cell_off[n_pairs], dtype=np.int64)
    for s in range(n_pairs):
        n_src = src_off[s + 1] - src_off[s]
        c = cell_off[s]
        for j in range(tgt_off[s], tgt_off[s + 1]):
            f = tgt_tok[j]
            keys[c] = f
            c += 1
            for i in range(src_off[s], src_off[s + 1]):
                keys[c] = (np.int64(src_tok[i]) + 1) * n_tgt_vocab + f
                c += 1
    return keys, cell_off


@njit(cache=True)
def lookup_cells(row_ptr, cols, src_tok, src_off, tgt_tok, tgt_off):
    """Table entries of the cells of (possibly unseen) sentence pairs by binary search.

    A word id ``-1`` marks an unknown word.  A pair never seen in training maps
    to ``nnz + row`` (the row's fallback value), an unknown source word to
    ``nnz + n_rows``.  Returns ``(cells int64[n_cells], cell_off int64[P+1])``.
    """
    n_pairs = len(src_off) - 1
    n_rows = len(row_ptr) - 1
    nnz = row_ptr[n_rows]
    cell_off = np.zeros(n_pairs + 1, dtype=np.int64)
    for s in range(n_pairs):
        cell_off[s + 1] = cell_off[s] + (src_off[s + 1] - src_off[s] + 1) * (tgt_off[s + 1] - tgt_off[s])
    cells = np.empty(cell_off[n_pairs], dtype=np.int64)
    for s in range(n_pairs):
        c = cell_off[s]
        for j in range(tgt_off[s], tgt_off[s + 1]):
            f = tgt_tok[j]
            for i in range(src_off[s] - 1, src_off[s + 1]):
                row = 0 if i < src_off[s] else src_tok[i] + 1
                if row <= 0 and i >= src_off[s]:
                    cells[c] = nnz + n_rows
                else:
                    lo = row_ptr[row]
                    hi = row_ptr[row + 1]
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if cols[mid] < f:
                            lo = mid + 1
                        else:
                            hi = mid
                    if f >= 0 and lo < row_ptr[row + 1] and cols[lo] == f:
                        cells[c] = lo
                    else:
                        cells[c] = nnz + row
                c += 1
    return cells, cell_off


@njit(cache=True, inline="always")
def jump_bucket(d, max_jump):
    """Bucket of a jump of width ``d``: ``clip(d, -D, D) + D``."""
    if d < -max_jump:
        d = -max_jump
    elif d > max_jump:
        d = max_jump
    return d + max_jump


@njit(cache=True)
def jump_matrix(n_src, weights, max_jump, jp, norm):
    """Jump probabilities ``jp[p, i-1] = w[d] / (n_d(p) * Z_p)`` with ``d = b(i - p)``.

    A categorical distribution over the jump buckets reachable from position
    ``p`` (``b(1-p) .. b(I-p)``, normaliser ``Z_p = sum_d w[d]``, stored in
    ``norm[p]``), spread uniformly over the ``n_d(p)`` positions of a clipped
    bucket: Vogel et al. (1996) eq. 4 with width classes.  Rows ``p = 0..I``
    (0 = sentence start), columns real positions ``1..I``.  A row whose
    weights are all zero is uniform.
    """
    for p in range(n_src + 1):
        lo = jump_bucket(1 - p, max_jump)
        hi = jump_bucket(n_src - p, max_jump)
        z = 0.0
        for d in range(lo, hi + 1):
            z += weights[d]
        norm[p] = z
        n_low = max(0, p - max_jump)  # positions l >= 1 with l - p <= -D
        n_high = max(0, n_src - p - max_jump + 1)  # positions l <= I with l - p >= D
        for i in range(1, n_src + 1):
            d = jump_bucket(i - p, max_jump)
            mult = n_low if d == 0 else (n_high if d == 2 * max_jump else 1)
            jp[p, i - 1] = weights[d] / (mult * z) if z > 0.0 else 1.0 / n_src


@njit(cache=True, inline="always")
def _pair_dims(s, src_off, tgt_off):
    return src_off[s + 1] - src_off[s], tgt_off[s + 1] - tgt_off[s]


@njit(cache=True)
def _fill_emissions(c0, n_src, n_tgt, cells, vals, emis):
    for j in range(n_tgt):
        for i in range(n_src + 1):
            emis[j, i] = vals[cells[c0 + j * (n_src + 1) + i]]


@njit(cache=True)
def _fill_cvi_emissions(c0, n_src, n_tgt, cells, entry_row, counts, totals, prior, n_outcomes, emis):
    """Surrogate ``(C^{\\i}(e,f) + a) / (C^{\\i}(e,.) + K_e a)`` per cell (thesis eq. 3.50)."""
    for j in range(n_tgt):
        for i in range(n_src + 1):
            k = cells[c0 + j * (n_src + 1) + i]
            emis[j, i] = cvi_ratio_nb(counts[k], totals[entry_row[k]], prior, n_outcomes[entry_row[k]])


@njit(cache=True)
def _move_cell_counts(c0, n, cells, entry_row, q, sign, counts, totals):
    """``counts += sign * q`` over the cells ``c0 .. c0+n`` (and their row totals)."""
    for c in range(c0, c0 + n):
        k = cells[c]
        v = sign * np.float64(q[c])
        counts[k] += v
        totals[entry_row[k]] += v


# ---------------------------------------------------------------- IBM Model 1
@njit(cache=True)
def ibm1_posterior_row(c0, n_src, j, cells, vals, out):
    """Posterior ``q(a_j = i) = t(f_j|e_i) / sum_i' t(f_j|e_i')`` (Brown et al. 1993 eq. 16).

    Writes into ``out[0..I]`` and returns ``sum_i t(f_j|e_i)``.
    """
    base = c0 + j * (n_src + 1)
    z = 0.0
    for i in range(n_src + 1):
        v = vals[cells[base + i]]
        out[i] = v
        z += v
    if z > 0.0:
        for i in range(n_src + 1):
            out[i] /= z
    else:
        for i in range(n_src + 1):
            out[i] = 1.0 / (n_src + 1)
    return z


@njit(cache=True)
def ibm1_batch_pass(order, src_off, tgt_off, cell_off, cells, vals, counts):
    """E-step of IBM Model 1 for EM and VI (thesis eq. 3.13 / 3.21 parameters in ``vals``).

    Adds expected counts ``E[c(e_i, f_j)]`` to ``counts`` and returns
    ``sum log p(f | e) = sum_j log(sum_i t(f_j|e_i) / (I+1))``.
    """
    max_src = 0
    for s in order:
        max_src = max(max_src, src_off[s + 1] - src_off[s])
    post = np.empty(max_src + 1)
    loglik = 0.0
    for s in order:
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        c0 = cell_off[s]
        for j in range(n_tgt):
            z = ibm1_posterior_row(c0, n_src, j, cells, vals, post)
            loglik += math.log(max(z, 1e-300) / (n_src + 1))
            base = c0 + j * (n_src + 1)
            for i in range(n_src + 1):
                counts[cells[base + i]] += post[i]
    return loglik


@njit(cache=True)
def ibm1_cvi_pass(order, src_off, tgt_off, cell_off, cells, entry_row, counts, totals, q, prior, n_outcomes):
    """CVI-1 for IBM Model 1, one target word at a time (thesis eq. 3.33 without transitions).

    For each target word ``f_j``: subtract its stored ``q(a_j)`` from the
    counts, set ``q(a_j = i) ∝ (C^{\\j}(e_i, f_j) + a) / (C^{\\j}(e_i, .) + K_e a)``
    (first-order Taylor approximation, eq. 3.32), add the new ``q`` back.
    The counts always sum to the number of target words.  Returns the pass's
    objective ``sum_j log(sum_i t-bar(f_j|e_i) / (I+1))`` under the surrogates.
    """
    max_src = 0
    for s in order:
        max_src = max(max_src, src_off[s + 1] - src_off[s])
    post = np.empty(max_src + 1)
    loglik = 0.0
    for s in order:
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        for j in range(n_tgt):
            base = cell_off[s] + j * (n_src + 1)
            _move_cell_counts(base, n_src + 1, cells, entry_row, q, -1.0, counts, totals)
            z = 0.0
            for i in range(n_src + 1):
                k = cells[base + i]
                v = cvi_ratio_nb(counts[k], totals[entry_row[k]], prior, n_outcomes[entry_row[k]])
                post[i] = v
                z += v
            for i in range(n_src + 1):
                q[base + i] = post[i] / z
            loglik += math.log(max(z, 1e-300) / (n_src + 1))
            _move_cell_counts(base, n_src + 1, cells, entry_row, q, 1.0, counts, totals)
    return loglik


@njit(cache=True)
def cell_argmax(src_off, tgt_off, cell_off, scores, links):
    """``links[t]``: the cell of largest ``scores`` of target token ``t`` (0-based source position, -1 = NULL;
    ties go to the earlier cell, NULL first): IBM-1 Viterbi links from ``t(f | e)`` per cell, or the argmax of
    link marginals."""
    for s in range(len(src_off) - 1):
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        for j in range(n_tgt):
            base = cell_off[s] + j * (n_src + 1)
            best = 0
            for i in range(1, n_src + 1):
                if scores[base + i] > scores[base + best]:
                    best = i
            links[tgt_off[s] + j] = best - 1


@njit(cache=True)
def ibm1_posterior_pass(src_off, tgt_off, cell_off, cells, vals, post):
    """Posteriors ``q(a_j = i)`` of every cell (for thresholding)."""
    buf = np.empty(int(np.max(np.diff(src_off))) + 1 if len(src_off) > 1 else 1)
    for s in range(len(src_off) - 1):
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        for j in range(n_tgt):
            ibm1_posterior_row(cell_off[s], n_src, j, cells, vals, buf)
            base = cell_off[s] + j * (n_src + 1)
            for i in range(n_src + 1):
                post[base + i] = buf[i]


# -------------------------------------------------------------- alignment HMM
@njit(cache=True)
def hmm_forward_backward(n_src, n_tgt, emis, jp, norm, p0, max_jump, post, jumps, jump_denom):
    """Scaled forward-backward of the alignment HMM for one sentence pair.

    ``emis[j, 0]`` = ``t(f_j|NULL)``, ``emis[j, i]`` = ``t(f_j|e_i)``; ``jp``/``norm``
    from :func:`jump_matrix`.  Writes the emission posteriors into ``post[j, i]``
    (``i = 0``: summed over the NULL states), *adds* the expected jump counts
    ``sum_j xi_j(p -> i)`` per bucket ``b(i - p)`` to ``jumps`` (Baum-Welch,
    Rabiner 1989 eq. 37) and ``N_p / Z_p`` to each bucket reachable from ``p``
    in ``jump_denom`` (``N_p`` = expected jumps out of ``p``; for the EM jump
    update, see :func:`induce.align.table.jump_weights`).
    Returns ``log p(f | e)`` = the sum of the log scale factors.
    """
    fr = np.empty((n_tgt, n_src))  # forward, real states
    fn = np.empty((n_tgt, n_src + 1))  # forward, NULL states by remembered position
    scale = np.empty(n_tgt)
    mass = np.zeros(n_src + 1)
    mass[0] = 1.0
    loglik = 0.0
    for j in range(n_tgt):
        total = 0.0
        for i in range(n_src):
            acc = 0.0
            for p in range(n_src + 1):
                acc += mass[p] * jp[p, i]
            v = emis[j, i + 1] * (1.0 - p0) * acc
            fr[j, i] = v
            total += v
        for p in range(n_src + 1):
            v = emis[j, 0] * p0 * mass[p]
            fn[j, p] = v
            total += v
        if total <= 0.0:
            total = 1e-300
        scale[j] = total
        loglik += math.log(total)
        mass[0] = fn[j, 0] / total
        fn[j, 0] = mass[0]
        for p in range(1, n_src + 1):
            fr[j, p - 1] /= total
            fn[j, p] /= total
            mass[p] = fr[j, p - 1] + fn[j, p]
    # backward over positions: beta_j(state) depends only on the state's position
    back = np.ones(n_src + 1)
    nxt = np.empty(n_src + 1)
    for j in range(n_tgt - 1, -1, -1):
        null_post = 0.0
        for i in range(n_src):
            post[j, i + 1] = fr[j, i] * back[i + 1]
        for p in range(n_src + 1):
            null_post += fn[j, p] * back[p]
        post[j, 0] = null_post
        # expected jumps into position j: xi(p -> i) = m_{j-1}(p) (1-p0) jp e beta / c_j
        for p in range(n_src + 1):
            if j == 0:
                m_prev = 1.0 if p == 0 else 0.0
            elif p == 0:
                m_prev = fn[j - 1, 0]
            else:
                m_prev = fr[j - 1, p - 1] + fn[j - 1, p]
            if m_prev == 0.0:
                continue
            row_total = 0.0
            for i in range(n_src):
                xi = m_prev * (1.0 - p0) * jp[p, i] * emis[j, i + 1] * back[i + 1] / scale[j]
                jumps[jump_bucket(i + 1 - p, max_jump)] += xi
                row_total += xi
            if norm[p] > 0.0:
                for d in range(jump_bucket(1 - p, max_jump), jump_bucket(n_src - p, max_jump) + 1):
                    jump_denom[d] += row_total / norm[p]
        if j > 0:
            for p in range(n_src + 1):
                acc = 0.0
                for i in range(n_src):
                    acc += jp[p, i] * emis[j, i + 1] * back[i + 1]
                nxt[p] = ((1.0 - p0) * acc + p0 * emis[j, 0] * back[p]) / scale[j]
            back[:] = nxt
    return loglik


@njit(cache=True)
def hmm_viterbi(n_src, n_tgt, emis, jp, p0, out):
    """Most probable state sequence (max-product in logs); ``out[j]`` = 0-based source position or -1."""
    neg = -np.inf
    lr = np.empty((n_tgt, n_src))
    ln = np.empty((n_tgt, n_src + 1))
    back_r = np.empty((n_tgt, n_src), dtype=np.int64)  # encoded previous state: p*2 + is_null
    back_n = np.empty((n_tgt, n_src + 1), dtype=np.int64)
    best_at = np.empty(n_src + 1)  # best log score of any state at position p
    arg_at = np.empty(n_src + 1, dtype=np.int64)
    log_stay = math.log(p0) if p0 > 0.0 else neg
    log_move = math.log(1.0 - p0) if p0 < 1.0 else neg
    for j in range(n_tgt):
        if j == 0:
            best_at[:] = neg
            best_at[0] = 0.0
            arg_at[:] = 1
        else:
            best_at[0] = ln[j - 1, 0]
            arg_at[0] = 1
            for p in range(1, n_src + 1):
                if lr[j - 1, p - 1] >= ln[j - 1, p]:
                    best_at[p] = lr[j - 1, p - 1]
                    arg_at[p] = 2 * p
                else:
                    best_at[p] = ln[j - 1, p]
                    arg_at[p] = 2 * p + 1
        for i in range(n_src):
            best = neg
            arg = 1
            for p in range(n_src + 1):
                if jp[p, i] > 0.0 and best_at[p] > neg:
                    v = best_at[p] + math.log(jp[p, i])
                    if v > best:
                        best = v
                        arg = arg_at[p]
            e = emis[j, i + 1]
            lr[j, i] = best + log_move + (math.log(e) if e > 0.0 else neg)
            back_r[j, i] = arg
        e0 = emis[j, 0]
        le0 = math.log(e0) if e0 > 0.0 else neg
        for p in range(n_src + 1):
            ln[j, p] = best_at[p] + log_stay + le0
            back_n[j, p] = arg_at[p]
    # best final state
    state = 1  # null_0
    best = ln[n_tgt - 1, 0]
    for i in range(n_src):
        if lr[n_tgt - 1, i] > best:
            best = lr[n_tgt - 1, i]
            state = 2 * (i + 1)
    for p in range(1, n_src + 1):
        if ln[n_tgt - 1, p] > best:
            best = ln[n_tgt - 1, p]
            state = 2 * p + 1
    for j in range(n_tgt - 1, -1, -1):
        p = state // 2
        if state % 2 == 1:
            out[j] = -1
            state = back_n[j, p]
        else:
            out[j] = p - 1
            state = back_r[j, p - 1]


@njit(cache=True)
def _max_src(order, src_off):
    best = 0
    for s in order:
        best = max(best, src_off[s + 1] - src_off[s])
    return best


@njit(cache=True)
def _max_tgt(order, tgt_off):
    best = 0
    for s in order:
        best = max(best, tgt_off[s + 1] - tgt_off[s])
    return best


@njit(cache=True)
def hmm_batch_pass(order, src_off, tgt_off, cell_off, cells, vals, weights, p0, max_jump,
                   counts, jumps, jump_denom):
    """E-step of the alignment HMM for EM/VI: adds translation and jump expected counts.

    ``vals`` are the translation parameters (EM eq. 3.13 or VI eq. 3.21),
    ``weights`` the jump weights.  Returns the summed ``log p(f | e)``.
    """
    max_src = _max_src(order, src_off)
    max_tgt = _max_tgt(order, tgt_off)
    emis = np.empty((max_tgt, max_src + 1))
    post = np.empty((max_tgt, max_src + 1))
    jp = np.empty((max_src + 1, max(max_src, 1)))
    norm = np.empty(max_src + 1)
    loglik = 0.0
    for s in order:
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        c0 = cell_off[s]
        _fill_emissions(c0, n_src, n_tgt, cells, vals, emis)
        jump_matrix(n_src, weights, max_jump, jp, norm)
        loglik += hmm_forward_backward(n_src, n_tgt, emis, jp, norm, p0, max_jump, post, jumps, jump_denom)
        for j in range(n_tgt):
            for i in range(n_src + 1):
                counts[cells[c0 + j * (n_src + 1) + i]] += post[j, i]
    return loglik


@njit(cache=True)
def hmm_cvi2_pass(order, src_off, tgt_off, cell_off, cells, entry_row, counts, totals, q,
                  jumps, sent_jumps, prior, n_outcomes, jump_prior, p0, max_jump):
    """CVI-2 for the alignment HMM, one sentence pair at a time (thesis sec. 3.5).

    For pair ``s``: subtract its stored expected translation counts ``q`` and
    jump counts ``sent_jumps[s]``; form the surrogate parameters from the other
    pairs' counts, ``(C^{\\s} + a) / (C.^{\\s} + K a)`` (eq. 3.49-3.50; jump
    weights ``C^{\\s}_d + a`` renormalised over the valid range); run
    forward-backward (eq. 3.48); add the new expected counts back and store them.
    Returns the summed ``log p(f | e)`` under the surrogate parameters.
    """
    max_src = _max_src(order, src_off)
    max_tgt = _max_tgt(order, tgt_off)
    n_buckets = 2 * max_jump + 1
    emis = np.empty((max_tgt, max_src + 1))
    post = np.empty((max_tgt, max_src + 1))
    jp = np.empty((max_src + 1, max(max_src, 1)))
    norm = np.empty(max_src + 1)
    weights = np.empty(n_buckets)
    mine = np.empty(n_buckets)
    scratch = np.empty(n_buckets)
    loglik = 0.0
    for s in order:
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        c0 = cell_off[s]
        n_cells = (n_src + 1) * n_tgt
        _move_cell_counts(c0, n_cells, cells, entry_row, q, -1.0, counts, totals)
        for d in range(n_buckets):
            jumps[d] -= sent_jumps[s, d]
            weights[d] = max(jumps[d], 0.0) + jump_prior
            mine[d] = 0.0
        _fill_cvi_emissions(c0, n_src, n_tgt, cells, entry_row, counts, totals, prior, n_outcomes, emis)
        jump_matrix(n_src, weights, max_jump, jp, norm)
        loglik += hmm_forward_backward(n_src, n_tgt, emis, jp, norm, p0, max_jump, post, mine, scratch)
        for j in range(n_tgt):
            for i in range(n_src + 1):
                q[c0 + j * (n_src + 1) + i] = post[j, i]
        _move_cell_counts(c0, n_cells, cells, entry_row, q, 1.0, counts, totals)
        for d in range(n_buckets):
            sent_jumps[s, d] = mine[d]
            jumps[d] += mine[d]
    return loglik


# ------------------------------------------------- CVI-1 for the alignment HMM
@njit(cache=True)
def _position_mass(qs, base, n_src, mass):
    """``m(p)``: probability that the state at a position sits at source position ``p``."""
    mass[0] = qs[base + n_src]
    for p in range(1, n_src + 1):
        mass[p] = qs[base + p - 1] + qs[base + n_src + p]


@njit(cache=True)
def _transition_counts(qs, prev_base, base, n_src, max_jump, sign, jumps, mass):
    """Mean-field expected jump counts of one transition (prev_base < 0: from the start).

    Under ``q(a_{j-1}) q(a_j)`` the transition ``j-1 -> j`` lands in bucket
    ``b(i - p)`` with probability ``m_{j-1}(p) q(a_j = i)`` (thesis eq. 3.37-3.38).
    """
    if prev_base < 0:
        mass[:] = 0.0
        mass[0] = 1.0
    else:
        _position_mass(qs, prev_base, n_src, mass)
    for p in range(n_src + 1):
        if mass[p] == 0.0:
            continue
        for i in range(n_src):
            jumps[jump_bucket(i + 1 - p, max_jump)] += sign * mass[p] * np.float64(qs[base + i])


@njit(cache=True)
def _move_state_emissions(qs, base, c0, j, n_src, cells, entry_row, sign, counts, totals):
    """Translation counts of one position's state marginals (NULL states pooled)."""
    row = c0 + j * (n_src + 1)
    null = 0.0
    for p in range(n_src + 1):
        null += np.float64(qs[base + n_src + p])
    k = cells[row]
    counts[k] += sign * null
    totals[entry_row[k]] += sign * null
    for i in range(n_src):
        k = cells[row + i + 1]
        v = sign * np.float64(qs[base + i])
        counts[k] += v
        totals[entry_row[k]] += v


@njit(cache=True)
def hmm_cvi1_counts(src_off, tgt_off, cell_off, cells, entry_row, state_off, qs, counts, totals, jumps):
    """Accumulate the translation and jump counts implied by the state marginals ``qs``."""
    max_src = _max_src(np.arange(len(src_off) - 1), src_off)
    mass = np.empty(max_src + 1)
    for s in range(len(src_off) - 1):
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        width = 2 * n_src + 1
        for j in range(n_tgt):
            base = state_off[s] + j * width
            _move_state_emissions(qs, base, cell_off[s], j, n_src, cells, entry_row, 1.0, counts, totals)
            prev = base - width if j > 0 else -1
            _transition_counts(qs, prev, base, n_src, _jump_radius(jumps), 1.0, jumps, mass)


@njit(cache=True, inline="always")
def _jump_radius(jumps):
    return (len(jumps) - 1) // 2


@njit(cache=True)
def hmm_cvi1_pass(order, src_off, tgt_off, cell_off, cells, entry_row, state_off, qs, counts, totals,
                  jumps, prior, n_outcomes, jump_prior, p0):
    """CVI-1 for the alignment HMM: mean-field ``q(a_j)`` per target position (thesis sec. 3.4).

    For position ``j``: subtract its translation counts and the expected jump
    counts of the transitions ``j-1 -> j`` and ``j -> j+1`` (eq. 3.35-3.39),
    then with surrogate parameters from the remaining counts set (eq. 3.33,
    first-order Taylor, eq. 3.32)::

        q(a_j = s) ∝ t̄(f_j | s) * E_{q(a_{j-1})}[p̄(s | a_{j-1})] * E_{q(a_{j+1})}[p̄(a_{j+1} | s)]

    and add the new counts back.  The O(1/N) delta corrections of eq. 3.33 for
    a transition sharing a bucket with its neighbour are left out.  Returns
    ``sum_j log Z_j`` over the normalisers of the updates (no likelihood: a
    surrogate objective that settles as ``q`` does, for the stopping rule).
    """
    max_jump = _jump_radius(jumps)
    n_buckets = 2 * max_jump + 1
    max_src = _max_src(order, src_off)
    jp = np.empty((max_src + 1, max(max_src, 1)))
    norm = np.empty(max_src + 1)
    weights = np.empty(n_buckets)
    mass = np.empty(max_src + 1)
    new = np.empty(2 * max_src + 1)
    total = 0.0
    for s in order:
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        width = 2 * n_src + 1
        c0 = cell_off[s]
        for j in range(n_tgt):
            base = state_off[s] + j * width
            prev = base - width if j > 0 else -1
            _move_state_emissions(qs, base, c0, j, n_src, cells, entry_row, -1.0, counts, totals)
            _transition_counts(qs, prev, base, n_src, max_jump, -1.0, jumps, mass)
            if j + 1 < n_tgt:
                _transition_counts(qs, base, base + width, n_src, max_jump, -1.0, jumps, mass)
            for d in range(n_buckets):
                weights[d] = max(jumps[d], 0.0) + jump_prior
            jump_matrix(n_src, weights, max_jump, jp, norm)
            # incoming: E_{q(a_{j-1})}[p(s | a_{j-1})]
            if prev < 0:
                mass[:] = 0.0
                mass[0] = 1.0
            else:
                _position_mass(qs, prev, n_src, mass)
            row = c0 + j * (n_src + 1)
            k0 = cells[row]
            e_null = cvi_ratio_nb(counts[k0], totals[entry_row[k0]], prior, n_outcomes[entry_row[k0]])
            for i in range(n_src):
                acc = 0.0
                for p in range(n_src + 1):
                    acc += mass[p] * jp[p, i]
                k = cells[row + i + 1]
                new[i] = (1.0 - p0) * acc * cvi_ratio_nb(counts[k], totals[entry_row[k]], prior, n_outcomes[entry_row[k]])
            for p in range(n_src + 1):
                new[n_src + p] = p0 * mass[p] * e_null
            # outgoing: E_{q(a_{j+1})}[p(a_{j+1} | s)], a function of the position of s
            if j + 1 < n_tgt:
                nb = base + width
                for p in range(n_src + 1):
                    acc = 0.0
                    for i in range(n_src):
                        acc += np.float64(qs[nb + i]) * jp[p, i]
                    out = (1.0 - p0) * acc + p0 * np.float64(qs[nb + n_src + p])
                    if p >= 1:
                        new[p - 1] *= out
                    new[n_src + p] *= out
            z = 0.0
            for x in range(width):
                z += new[x]
            for x in range(width):
                qs[base + x] = new[x] / z if z > 0.0 else 1.0 / width
            total += math.log(max(z, 1e-300))
            _move_state_emissions(qs, base, c0, j, n_src, cells, entry_row, 1.0, counts, totals)
            _transition_counts(qs, prev, base, n_src, max_jump, 1.0, jumps, mass)
            if j + 1 < n_tgt:
                _transition_counts(qs, base, base + width, n_src, max_jump, 1.0, jumps, mass)
    return total


# ------------------------------------------------------------------- decoding
@njit(cache=True)
def hmm_decode_pass(src_off, tgt_off, cell_off, cells, vals, weights, p0, max_jump, viterbi, links, post_out):
    """Viterbi links (``links[t]``: 0-based source position or -1) or, with
    ``viterbi=False``, emission posteriors of every cell into ``post_out``."""
    order = np.arange(len(src_off) - 1)
    max_src = _max_src(order, src_off)
    max_tgt = _max_tgt(order, tgt_off)
    emis = np.empty((max_tgt, max_src + 1))
    post = np.empty((max_tgt, max_src + 1))
    jp = np.empty((max_src + 1, max(max_src, 1)))
    norm = np.empty(max_src + 1)
    n_buckets = 2 * max_jump + 1
    scratch = np.zeros(n_buckets)
    scratch2 = np.zeros(n_buckets)
    for s in order:
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        if n_tgt == 0:
            continue
        c0 = cell_off[s]
        _fill_emissions(c0, n_src, n_tgt, cells, vals, emis)
        jump_matrix(n_src, weights, max_jump, jp, norm)
        if viterbi:
            hmm_viterbi(n_src, n_tgt, emis, jp, p0, links[tgt_off[s]:tgt_off[s + 1]])
        else:
            hmm_forward_backward(n_src, n_tgt, emis, jp, norm, p0, max_jump, post, scratch, scratch2)
            for j in range(n_tgt):
                for i in range(n_src + 1):
                    post_out[c0 + j * (n_src + 1) + i] = post[j, i]


# ------------------------------------------------------------ symmetrisation
_NEIGHBOURS = np.array([[-1, 0], [0, -1], [1, 0], [0, 1], [-1, -1], [-1, 1], [1, -1], [1, 1]], dtype=np.int64)


@njit(cache=True)
def symmetrize_matrix(fwd, rev, method, out):
    """Combine two directional link matrices ``[I, J]`` (Och & Ney 2003 sec. 4.3; Koehn et al. 2003).

    ``method``: 0 intersection, 1 union, 2 grow-diag, 3 grow-diag-final,
    4 grow-diag-final-and.  Grow-diag starts from the intersection and, until
    nothing changes, adds union links that neighbour (8 directions) an
    existing link and cover a not-yet-aligned source or target word;
    ``final`` then adds each directional link whose source *or* target word
    is unaligned (``final-and``: *and*).
    """
    n_src, n_tgt = fwd.shape
    src_aligned = np.zeros(n_src, dtype=np.bool_)
    tgt_aligned = np.zeros(n_tgt, dtype=np.bool_)
    for i in range(n_src):
        for j in range(n_tgt):
            if method == 1:
                out[i, j] = fwd[i, j] or rev[i, j]
            else:
                out[i, j] = fwd[i, j] and rev[i, j]
            if out[i, j]:
                src_aligned[i] = True
                tgt_aligned[j] = True
    if method <= 1:
        return
    added = True
    while added:
        added = False
        for i in range(n_src):
            for j in range(n_tgt):
                if not out[i, j]:
                    continue
                for k in range(8):
                    ni = i + _NEIGHBOURS[k, 0]
                    nj = j + _NEIGHBOURS[k, 1]
                    if ni < 0 or nj < 0 or ni >= n_src or nj >= n_tgt or out[ni, nj]:
                        continue
                    if (fwd[ni, nj] or rev[ni, nj]) and (not src_aligned[ni] or not tgt_aligned[nj]):
                        out[ni, nj] = True
                        src_aligned[ni] = True
                        tgt_aligned[nj] = True
                        added = True
    if method == 2:
        return
    for pass_ in range(2):
        links = fwd if pass_ == 0 else rev
        for i in range(n_src):
            for j in range(n_tgt):
                if not links[i, j] or out[i, j]:
                    continue
                if method == 3:
                    ok = not src_aligned[i] or not tgt_aligned[j]
                else:
                    ok = not src_aligned[i] and not tgt_aligned[j]
                if ok:
                    out[i, j] = True
                    src_aligned[i] = True
                    tgt_aligned[j] = True


@njit(cache=True)
def symmetrize_pass(src_off, tgt_off, fwd_flat, rev_flat, method):
    """:func:`symmetrize_matrix` over a corpus of flat row-major ``I x J`` link matrices."""
    out = np.zeros(len(fwd_flat), dtype=np.bool_)
    start = 0
    for s in range(len(src_off) - 1):
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        size = n_src * n_tgt
        if size:
            fwd = fwd_flat[start:start + size].reshape((n_src, n_tgt))
            rev = rev_flat[start:start + size].reshape((n_src, n_tgt))
            res = out[start:start + size].reshape((n_src, n_tgt))
            symmetrize_matrix(fwd, rev, method, res)
        start += size
    return out


# ------------------------------------------------------------ conversions
@njit(cache=True)
def cvi1_states_from_cells(src_off, tgt_off, cell_off, q):
    """HMM state marginals from IBM-1 cell posteriors: real ``i`` keeps ``q(i)``,
    ``q(NULL)`` is spread evenly over the ``I+1`` NULL states.

    Returns ``(state_off int64[P+1], qs float32)`` with ``2I+1`` states per target
    position laid out ``[real 1..I, null_0..null_I]``.
    """
    n_pairs = len(src_off) - 1
    state_off = np.zeros(n_pairs + 1, dtype=np.int64)
    for s in range(n_pairs):
        state_off[s + 1] = state_off[s] + (2 * (src_off[s + 1] - src_off[s]) + 1) * (tgt_off[s + 1] - tgt_off[s])
    qs = np.empty(state_off[n_pairs], dtype=np.float32)
    for s in range(n_pairs):
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        for j in range(n_tgt):
            base = state_off[s] + j * (2 * n_src + 1)
            cell = cell_off[s] + j * (n_src + 1)
            for i in range(n_src):
                qs[base + i] = q[cell + i + 1]
            for p in range(n_src + 1):
                qs[base + n_src + p] = q[cell] / (n_src + 1)
    return state_off, qs


@njit(cache=True)
def links_to_matrix(src_off, tgt_off, links, reverse):
    """Flat row-major ``I x J`` link matrices from one link per word.

    Forward (``reverse=False``): ``links[t]`` is the source position of target
    token ``t``.  Reverse: ``links`` runs over *source* tokens and holds target
    positions (a model trained on the swapped bitext).  ``-1`` = NULL.
    """
    n_pairs = len(src_off) - 1
    total = 0
    for s in range(n_pairs):
        total += (src_off[s + 1] - src_off[s]) * (tgt_off[s + 1] - tgt_off[s])
    out = np.zeros(total, dtype=np.bool_)
    start = 0
    for s in range(n_pairs):
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        if reverse:
            for i in range(n_src):
                j = links[src_off[s] + i]
                if j >= 0:
                    out[start + i * n_tgt + j] = True
        else:
            for j in range(n_tgt):
                i = links[tgt_off[s] + j]
                if i >= 0:
                    out[start + i * n_tgt + j] = True
        start += n_src * n_tgt
    return out


@njit(cache=True)
def posteriors_to_matrix(src_off, tgt_off, cell_off, post, threshold, reverse):
    """Flat ``I x J`` link matrices of the cells whose posterior exceeds ``threshold``.

    ``cell_off``/``post`` belong to the model of the direction: for
    ``reverse=True`` the model generated the source side from the target side.
    """
    n_pairs = len(src_off) - 1
    total = 0
    for s in range(n_pairs):
        total += (src_off[s + 1] - src_off[s]) * (tgt_off[s + 1] - tgt_off[s])
    out = np.zeros(total, dtype=np.bool_)
    start = 0
    for s in range(n_pairs):
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        # the generating side has n_gen words, the conditioning side n_cond (+ NULL)
        n_gen = n_src if reverse else n_tgt
        n_cond = n_tgt if reverse else n_src
        for g in range(n_gen):
            for c in range(1, n_cond + 1):
                if post[cell_off[s] + g * (n_cond + 1) + c] > threshold:
                    i = g if reverse else c - 1
                    j = c - 1 if reverse else g
                    out[start + i * n_tgt + j] = True
        start += n_src * n_tgt
    return out


@njit(cache=True)
def _hot_first(rank, inverse, n_hot):
    """Renumber the entries (``rank`` and the keys' ``inverse``) so that the ``n_hot`` entries of the most keys
    come first, each group in its old order: the sampler's counts of the most-read entries then share a block that
    stays in a core's cache (docs/experiments/alignment.md, "Throughput, fourth round")."""
    nnz = len(rank)
    hits = np.zeros(nnz, dtype=np.int64)
    for c in range(len(inverse)):
        hits[inverse[c]] += 1
    threshold = np.partition(hits, nnz - n_hot)[nnz - n_hot]  # the n_hot-th most keys
    above = 0
    for e in range(nnz):
        if hits[e] > threshold:
            above += 1
    ties = n_hot - above  # entries at the threshold that still go first (the first ones)
    renumber = np.empty(nnz, dtype=np.int32)
    hot, cold = 0, n_hot
    for e in range(nnz):
        if hits[e] > threshold or (hits[e] == threshold and ties > 0):
            if hits[e] == threshold:
                ties -= 1
            renumber[e] = hot
            hot += 1
        else:
            renumber[e] = cold
            cold += 1
    for e in range(nnz):
        rank[e] = renumber[rank[e]]
    for c in range(len(inverse)):
        inverse[c] = renumber[inverse[c]]


@njit(cache=True)
def table_entries(keys, n_rows, n_cols, by_column=False, n_hot=0):
    """The sorted distinct keys ``row * n_cols + col`` as a CSR table, and the entry of every key.

    Equivalent to ``np.unique(keys, return_inverse=True)`` (entry ``k`` is the ``k``-th distinct key) in
    ``O(n + sum_r d_r log d_r)`` for ``d_r`` distinct columns in row ``r``, instead of sorting all ``n`` keys:
    a counting sort by row, then each row's distinct columns sorted.  Returns ``(row_ptr int64[n_rows + 1],
    cols int32[nnz], entry_row int32[nnz], inverse int32[n], rank int32[nnz])``; with ``by_column`` the entries
    are also numbered by column, then row (``rank[k]``: the number of entry ``k``; ``np.argsort(cols,
    kind="stable")`` inverted) and ``inverse`` holds these numbers, else ``rank`` is empty.  With ``n_hot`` too,
    the ``n_hot`` entries of the most keys come first (in that order among themselves; ties at the threshold to the
    first in that order), then the others (:func:`_hot_first`).
    """
    n = len(keys)
    by_row = np.zeros(n_rows + 1, dtype=np.int64)
    for c in range(n):
        by_row[keys[c] // n_cols + 1] += 1
    by_row = np.cumsum(by_row)
    order = np.empty(n, dtype=np.int64)
    col_of = np.empty(n, dtype=np.int64)  # the column of order[x] (one division per key, read in order below)
    fill = by_row[:-1].copy()
    for c in range(n):
        r = keys[c] // n_cols
        order[fill[r]] = c
        col_of[fill[r]] = keys[c] - r * n_cols
        fill[r] += 1
    stamp = np.full(n_cols, -1, dtype=np.int64)
    row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    cols = np.empty(n, dtype=np.int32)  # (trimmed to nnz below)
    nnz = 0
    for r in range(n_rows):
        start = nnz
        for x in range(by_row[r], by_row[r + 1]):
            f = col_of[x]
            if stamp[f] != r:
                stamp[f] = r
                cols[nnz] = f
                nnz += 1
        cols[start:nnz] = np.sort(cols[start:nnz])
        row_ptr[r + 1] = nnz
    cols = cols[:nnz].copy()
    rank = np.empty(nnz if by_column else 0, dtype=np.int32)
    if by_column:  # a counting sort of the entries by column (stable: by row within a column)
        col_start = np.zeros(n_cols + 1, dtype=np.int64)
        for e in range(nnz):
            col_start[cols[e] + 1] += 1
        col_start = np.cumsum(col_start)
        for e in range(nnz):
            rank[e] = col_start[cols[e]]
            col_start[cols[e]] += 1
    slot = np.empty(n_cols, dtype=np.int64)
    inverse = np.empty(n, dtype=np.int32)
    entry_row = np.empty(nnz, dtype=np.int32)
    for r in range(n_rows):
        for e in range(row_ptr[r], row_ptr[r + 1]):
            slot[cols[e]] = rank[e] if by_column else e
            entry_row[e] = r
        for x in range(by_row[r], by_row[r + 1]):
            inverse[order[x]] = slot[col_of[x]]
    if by_column and 0 < n_hot < nnz:
        _hot_first(rank, inverse, n_hot)
    return row_ptr, cols, entry_row, inverse, rank
