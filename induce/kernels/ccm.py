"""Compiled charts of the constituent-context model (Klein & Manning 2002).

A sentence of ``n`` tags has the spans ``[i, j)``, ``0 <= i < j <= n``, stored in
the triangular order of :func:`tri` (``n (n + 1) / 2`` entries per sentence),
followed by its ``n + 1`` empty spans ``[i, i)``: K&M 2002 (Figure 2) score
every span of ``0 <= i <= j <= n``, and an empty span is a distituent in every
tree (it adds the empty yield and the context ``(tag i-1, tag i)``; their
distituent counts are the same in every tree, and its posterior is 0).
Each span has a yield id (its tag subsequence) and a context id (the tags just
outside it, sentence boundaries included); the model has four multinomials over
them, constituent (``c``) and distituent (``d``): ``P(yield | c)``,
``P(yield | d)``, ``P(context | c)``, ``P(context | d)``.

K&M 2002, eq. 1: ``P(S, B) = P(B) prod_{i<j} P(a_ij | b_ij) P(x_ij | b_ij)`` with
``P(B)`` uniform over the ``Catalan(n - 1)`` binary bracketings.  Every binary
tree has ``2n - 1`` constituents; spans of length 1 and the whole sentence are
constituents in all of them, the other spans vary.  With
``phi(i, j) = P(a|c) P(x|c) / (P(a|d) P(x|d))`` for the varying spans,

    P(S) = [prod_fixed P(a|c) P(x|c)] [prod_varying and empty P(a|d) P(x|d)]
           * sum_B prod_{varying (i,j) in B} phi(i, j) / Catalan(n - 1),

and the sum over trees is an inside pass over binary bracketings (in logs:
``score = log phi``, 0 for the fixed spans).  Outside scores give each span's
posterior probability of being a constituent.

The parameters enter as log tables ``lcy, ldy, lcx, ldx`` (em, vi) or as the
count tables and the Dirichlet pseudo-counts ``priors = (a_c, a_d)`` (cvi's
surrogates ``(C^{\\i} + a) / (C^{\\i}_. + V a)``, thesis eq. 3.49-3.50).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

NEG = -np.inf


@njit(cache=True)
def tri(i, j, n):
    """Index of span ``[i, j)`` among the spans of a sentence of ``n`` tags (row ``i`` first, then ``j``)."""
    return i * (2 * n - i + 1) // 2 + (j - i - 1)


@njit(cache=True)
def log_n_trees(n):
    """``log Catalan(n - 1)``: the number of binary bracketings of ``n`` leaves."""
    m = n - 1
    return math.lgamma(2 * m + 1) - math.lgamma(m + 2) - math.lgamma(m + 1)


@njit(cache=True)
def _logadd(a, b):
    if a == NEG:
        return b
    if b == NEG:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@njit(cache=True)
def inside_outside(score, n, post):
    """Span posteriors over binary bracketings weighted by ``prod exp(score)``; returns ``log sum_B prod``.

    ``score`` and ``post`` are the sentence's spans in :func:`tri` order.
    """
    ins = np.full((n + 1, n + 1), NEG)
    out = np.full((n + 1, n + 1), NEG)
    for i in range(n):
        ins[i, i + 1] = score[tri(i, i + 1, n)]
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length
            acc = NEG
            for k in range(i + 1, j):
                acc = _logadd(acc, ins[i, k] + ins[k, j])
            ins[i, j] = acc + score[tri(i, j, n)]
    logz = ins[0, n]
    out[0, n] = 0.0
    for length in range(n, 1, -1):
        for i in range(n - length + 1):
            j = i + length
            o = out[i, j] + score[tri(i, j, n)]
            if o == NEG:
                continue
            for k in range(i + 1, j):
                out[i, k] = _logadd(out[i, k], o + ins[k, j])
                out[k, j] = _logadd(out[k, j], o + ins[i, k])
    for i in range(n):
        for j in range(i + 1, n + 1):
            post[tri(i, j, n)] = math.exp(ins[i, j] + out[i, j] - logz)
    return logz


@njit(cache=True)
def split_uniform_posteriors(n, post):
    """Span posteriors when each span splits at a uniformly chosen point (K&M 2002's initial tree distribution)."""
    out = np.zeros((n + 1, n + 1))
    out[0, n] = 1.0
    for length in range(n, 1, -1):
        for i in range(n - length + 1):
            j = i + length
            share = out[i, j] / (length - 1)
            for k in range(i + 1, j):
                out[i, k] += share
                out[k, j] += share
    for i in range(n):
        for j in range(i + 1, n + 1):
            post[tri(i, j, n)] = out[i, j]


@njit(cache=True)
def start_pass(soff, lengths, split, post):
    """The span posteriors of the parameter-free start for every sentence: split-uniform (``split``) or uniform
    over binary trees (inside-outside with all scores 0)."""
    for s in range(len(lengths)):
        a, b = soff[s], soff[s + 1]
        if split:
            split_uniform_posteriors(lengths[s], post[a:b])
        else:
            inside_outside(np.zeros(b - a), lengths[s], post[a:b])


@njit(cache=True)
def best_tree(score, n, left, right):
    """The bracketing maximising the sum of ``score`` over its ``2n - 1`` spans, written to ``left``/``right``."""
    best = np.full((n + 1, n + 1), NEG)
    split = np.zeros((n + 1, n + 1), dtype=np.int64)
    for i in range(n):
        best[i, i + 1] = score[tri(i, i + 1, n)]
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length
            for k in range(i + 1, j):
                v = best[i, k] + best[k, j]
                if v > best[i, j]:
                    best[i, j], split[i, j] = v, k
            best[i, j] += score[tri(i, j, n)]
    stack = np.empty((2 * n, 2), dtype=np.int64)
    stack[0, 0], stack[0, 1] = 0, n
    top, m = 1, 0
    while top > 0:
        top -= 1
        i, j = stack[top, 0], stack[top, 1]
        left[m], right[m] = i, j
        m += 1
        if j - i > 1:
            k = split[i, j]
            stack[top, 0], stack[top, 1] = k, j
            stack[top + 1, 0], stack[top + 1, 1] = i, k
            top += 2
    return best[0, n]


@njit(cache=True)
def _fixed(i, j, n):
    return j - i == 1 or (i == 0 and j == n)


@njit(cache=True)
def _scores(cy, dy, cx, dx, n, score):
    """Fill ``score`` (log phi, 0 on fixed spans) from the per-span log factors ``cy[t] = log P(a_t | c)``,
    ``dy`` (distituent), ``cx``, ``dx`` (contexts); return the tree-independent part of ``log P(S)``."""
    base = -log_n_trees(n)
    for i in range(n):
        for j in range(i + 1, n + 1):
            t = tri(i, j, n)
            if _fixed(i, j, n):
                score[t] = 0.0
                base += cy[t] + cx[t]
            else:
                score[t] = cy[t] + cx[t] - dy[t] - dx[t]
                base += dy[t] + dx[t]
    for t in range(n * (n + 1) // 2, len(cy)):  # the empty spans: distituents in every tree
        base += dy[t] + dx[t]
    return base


@njit(cache=True)
def _gathered(yid, cid, a, b, n, lcy, ldy, lcx, ldx, score):
    """:func:`_scores` of the spans ``a:b`` under the log tables."""
    return _scores(lcy[yid[a:b]], ldy[yid[a:b]], lcx[cid[a:b]], ldx[cid[a:b]], n, score)


@njit(cache=True)
def _surrogates(yid, cid, a, b, n, cy, dy, cx, dx, totals, priors, score):
    """:func:`_scores` under cvi's surrogates ``(C + a) / (C. + V a)`` (thesis eq. 3.49-3.50), entry by entry."""
    ac, ad = priors[0], priors[1]
    y, x = yid[a:b], cid[a:b]
    nc_y, nd_y = math.log(totals[0] + len(cy) * ac), math.log(totals[1] + len(cy) * ad)
    nc_x, nd_x = math.log(totals[0] + len(cx) * ac), math.log(totals[1] + len(cx) * ad)
    return _scores(np.log(cy[y] + ac) - nc_y, np.log(dy[y] + ad) - nd_y, np.log(cx[x] + ac) - nc_x,
                   np.log(dx[x] + ad) - nd_x, n, score)


@njit(cache=True)
def _add_counts(yid, cid, a, post, sign, cy, dy, cx, dx, totals):
    """Add ``sign`` times one sentence's expected counts (``totals``: constituent, distituent); entries
    are kept non-negative against rounding."""
    for t in range(len(post)):
        p = sign * post[t]
        q = sign * (1.0 - post[t])
        y, x = yid[a + t], cid[a + t]
        cy[y], cx[x] = max(cy[y] + p, 0.0), max(cx[x] + p, 0.0)
        dy[y], dx[x] = max(dy[y] + q, 0.0), max(dx[x] + q, 0.0)
        totals[0], totals[1] = max(totals[0] + p, 0.0), max(totals[1] + q, 0.0)


@njit(cache=True)
def estep_pass(yid, cid, soff, lengths, lcy, ldy, lcx, ldx, post, cy, dy, cx, dx, totals):
    """Span posteriors ``post`` of every sentence and the expected counts they add; returns ``sum log P(S)``."""
    ll = 0.0
    for s in range(len(lengths)):
        n, a, b = lengths[s], soff[s], soff[s + 1]
        score = np.empty(b - a)
        base = _gathered(yid, cid, a, b, n, lcy, ldy, lcx, ldx, score)
        ll += base + inside_outside(score, n, post[a:b])
        _add_counts(yid, cid, a, post[a:b], 1.0, cy, dy, cx, dx, totals)
    return ll


@njit(cache=True)
def counts_pass(yid, cid, soff, post, cy, dy, cx, dx, totals):
    """The expected counts of fixed posteriors ``post`` (e.g. an initial tree distribution)."""
    for s in range(len(soff) - 1):
        a, b = soff[s], soff[s + 1]
        _add_counts(yid, cid, a, post[a:b], 1.0, cy, dy, cx, dx, totals)


@njit(cache=True)
def cvi_pass(order, yid, cid, soff, lengths, post, cy, dy, cx, dx, totals, priors):
    """One collapsed pass (thesis eq. 3.49-3.50 for the CCM): per sentence in ``order``, subtract its
    expected counts, recompute its posteriors under the surrogates, add them back.  Returns the sum of the sentences' surrogate ``log P(S)``."""
    ll = 0.0
    for s in order:
        n, a, b = lengths[s], soff[s], soff[s + 1]
        _add_counts(yid, cid, a, post[a:b], -1.0, cy, dy, cx, dx, totals)
        score = np.empty(b - a)
        base = _surrogates(yid, cid, a, b, n, cy, dy, cx, dx, totals, priors, score)
        ll += base + inside_outside(score, n, post[a:b])
        _add_counts(yid, cid, a, post[a:b], 1.0, cy, dy, cx, dx, totals)
    return ll


@njit(cache=True)
def decode_pass(yid, cid, soff, lengths, toff, lcy, ldy, lcx, ldx, mbr, left, right):
    """Per sentence, the Viterbi bracketing (max ``prod phi``) or, with ``mbr``, the bracketing with the
    most expected constituents (max sum of span posteriors); its ``2n - 1`` spans go to
    ``left[toff[s]:toff[s+1]]``, ``right[...]`` (preorder)."""
    for s in range(len(lengths)):
        n, a, b = lengths[s], soff[s], soff[s + 1]
        score = np.empty(b - a)
        _gathered(yid, cid, a, b, n, lcy, ldy, lcx, ldx, score)
        if mbr:
            post = np.empty(b - a)
            inside_outside(score, n, post)
            score = post
        best_tree(score, n, left[toff[s]:toff[s + 1]], right[toff[s]:toff[s + 1]])


@njit(cache=True)
def log_likelihood_pass(yid, cid, soff, lengths, lcy, ldy, lcx, ldx, out):
    """``log P(S)`` of each sentence into ``out``."""
    for s in range(len(lengths)):
        n, a, b = lengths[s], soff[s], soff[s + 1]
        score = np.empty(b - a)
        post = np.empty(b - a)
        out[s] = _gathered(yid, cid, a, b, n, lcy, ldy, lcx, ldx, score) + inside_outside(score, n, post)
