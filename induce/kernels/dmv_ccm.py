"""The product of the DMV and the CCM over dependency trees (Klein & Manning 2004), one sentence at a time.

K&M 2004 score a dependency tree ``D`` by ``P_DMV(D) P_CCM(S, B)`` with ``B`` a
binary bracketing consistent with ``D``: the head-outward derivation of ``D``
attaches each head's dependents one at a time (nearest first on each side), and
every attachment makes one binary node whose span -- the head's span so far
plus the dependent's whole span -- is a constituent; single words and the whole
sentence are constituents of every ``B``.  Which derivations count is
``order``: ``RIGHT_FIRST`` (a head takes its right dependents, then its left
ones: one ``B`` per ``D``), ``LEFT_FIRST``, or ``ANY`` interleaving of the two
sides (every bracketing consistent with ``D``; the sum then runs over the
pairs ``(D, B)``).  ``P_CCM(S, B)`` is the CCM's tree-independent part times
``prod_{varying (i, j) in B} phi(i, j)`` (:mod:`induce.kernels.ccm`), so the
product's sum is a chart over headed spans (the DMV's original O(n^5) one)
with ``phi`` multiplied in at every attachment; the STOP factors, which do not
depend on the order, are applied when a head's span is complete::

    I[h, h, h+1] = 1
    I[i, h, j] = phi(i, j) [ sum_{h<k<j} I[i, h, k] cont(h, R, v(k > h+1)) sum_{k<=a<j} att(h->a) C[k, j, a]
                           + sum_{i<k<=h} I[k, h, j] cont(h, L, v(k < h)) sum_{i<=a<k} att(h->a) C[i, k, a] ]
    C[i, j, h] = I[i, h, j] stop(h, L, v(i < h)) stop(h, R, v(j > h+1))
    Z = sum_h root(h) C[0, n, h]

where the right term requires ``i == h`` under ``RIGHT_FIRST`` and the left
term ``j == h + 1`` under ``LEFT_FIRST`` (``stop``/``cont``/``att``/``root``:
the per-position DMV factors of :func:`induce.kernels.dmv.sentence_factors`).
The outside pass is the adjoint; each rule application's expected count is
``outside x weight x insides / Z``, giving the DMV's expected counts and the
CCM's span posteriors under the product.  With ``use_max`` both passes run in
the Viterbi semiring and a rule application lies on the best tree iff its
ratio is 1: that gives the best tree's heads and brackets.  Linear space; the
word factors are scaled as in the DMV kernel and the ``phi`` by one constant
per sentence (every tree has the same number of varying brackets), fine for
sentences of a few dozen words.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .ccm import _gathered, tri
from .dmv import CONT, LEFT, RIGHT, STOP, sentence_factors

#: a rule application whose max-product ratio is at least this lies on the Viterbi tree
ON_BEST = 1.0 - 1e-9
#: attachment orders (``order``): any interleaving of the two sides, right dependents first, left first
ANY, RIGHT_FIRST, LEFT_FIRST = 0, 1, 2


@njit(cache=True)
def _acc(x, v, use_max):
    return max(x, v) if use_max else x + v


@njit(cache=True)
def _right_last(order, i, h):
    """May an attachment on the right be the last one of head ``h`` whose span starts at ``i``?"""
    return order != RIGHT_FIRST or i == h


@njit(cache=True)
def _left_last(order, h, j):
    """May an attachment on the left be the last one of head ``h`` whose span ends at ``j``?"""
    return order != LEFT_FIRST or j == h + 1


@njit(cache=True)
def _inside(n, att, stop, phi, use_max, order):
    """The charts ``I[i, h, j]`` and ``C[i, j, h]`` (module docstring)."""
    I = np.zeros((n + 1, n + 1, n + 1))
    C = np.zeros((n + 1, n + 1, n + 1))
    for length in range(1, n + 1):
        for i in range(n - length + 1):
            j = i + length
            for h in range(i, j):
                if length == 1:
                    I[i, h, j] = 1.0
                else:
                    acc = 0.0
                    if _right_last(order, i, h):
                        for k in range(h + 1, j):
                            w = I[i, h, k] * stop[h, RIGHT, 1 if k > h + 1 else 0, CONT]
                            for a in range(k, j):
                                acc = _acc(acc, w * att[h, a] * C[k, j, a], use_max)
                    if _left_last(order, h, j):
                        for k in range(i + 1, h + 1):
                            w = I[k, h, j] * stop[h, LEFT, 1 if k < h else 0, CONT]
                            for a in range(i, k):
                                acc = _acc(acc, w * att[h, a] * C[i, k, a], use_max)
                    I[i, h, j] = phi[i, j] * acc
                C[i, j, h] = (I[i, h, j] * stop[h, LEFT, 1 if i < h else 0, STOP]
                              * stop[h, RIGHT, 1 if j > h + 1 else 0, STOP])
    return I, C


@njit(cache=True)
def _outside(n, att, stop, phi, I, C, z, use_max, order, root, mass):
    """Adjoint pass; ``mass`` receives ``root[h]``, ``stop[h, d, v, s]``, ``att[h, a]`` and bracket
    ``span[i, j]`` expectations (or, with ``use_max``, best-tree ratios) in its four arrays."""
    root_m, stop_m, att_m, span_m = mass
    oI = np.zeros((n + 1, n + 1, n + 1))
    oC = np.zeros((n + 1, n + 1, n + 1))
    for h in range(n):
        oC[0, n, h] = root[h] / z
        root_m[h] = root[h] * C[0, n, h] / z
    for length in range(n, 0, -1):
        for i in range(n - length + 1):
            j = i + length
            for h in range(i, j):
                vl, vr = 1 if i < h else 0, 1 if j > h + 1 else 0
                oI[i, h, j] = _acc(oI[i, h, j], oC[i, j, h] * stop[h, LEFT, vl, STOP] * stop[h, RIGHT, vr, STOP],
                                   use_max)
                m = oC[i, j, h] * C[i, j, h]
                stop_m[h, LEFT, vl, STOP] = _acc(stop_m[h, LEFT, vl, STOP], m, use_max)
                stop_m[h, RIGHT, vr, STOP] = _acc(stop_m[h, RIGHT, vr, STOP], m, use_max)
                if length == 1:
                    continue
                out = oI[i, h, j] * phi[i, j]
                if _right_last(order, i, h):
                    for k in range(h + 1, j):
                        v = 1 if k > h + 1 else 0
                        w = out * stop[h, RIGHT, v, CONT]
                        for a in range(k, j):
                            m = w * I[i, h, k] * att[h, a] * C[k, j, a]
                            oI[i, h, k] = _acc(oI[i, h, k], w * att[h, a] * C[k, j, a], use_max)
                            oC[k, j, a] = _acc(oC[k, j, a], w * I[i, h, k] * att[h, a], use_max)
                            _count(att_m, stop_m, span_m, h, a, RIGHT, v, i, j, m, use_max)
                if _left_last(order, h, j):
                    for k in range(i + 1, h + 1):
                        v = 1 if k < h else 0
                        w = out * stop[h, LEFT, v, CONT]
                        for a in range(i, k):
                            m = w * I[k, h, j] * att[h, a] * C[i, k, a]
                            oI[k, h, j] = _acc(oI[k, h, j], w * att[h, a] * C[i, k, a], use_max)
                            oC[i, k, a] = _acc(oC[i, k, a], w * I[k, h, j] * att[h, a], use_max)
                            _count(att_m, stop_m, span_m, h, a, LEFT, v, i, j, m, use_max)


@njit(cache=True)
def _count(att_m, stop_m, span_m, h, a, side, v, i, j, m, use_max):
    """Credit one attachment ``h -> a`` (making the bracket ``[i, j)``) with ``m``."""
    att_m[h, a] = _acc(att_m[h, a], m, use_max)
    stop_m[h, side, v, CONT] = _acc(stop_m[h, side, v, CONT], m, use_max)
    span_m[i, j] = _acc(span_m[i, j], m, use_max)


@njit(cache=True)
def _phi(score, n):
    """Linear ``phi[i, j]`` from the CCM's log ratios, scaled by one constant; returns ``(phi, log constant
    per tree)``."""
    phi = np.ones((n + 1, n + 1))
    lo, hi = math.inf, -math.inf
    for i in range(n):
        for j in range(i + 2, n + 1):
            if not (i == 0 and j == n):
                lo, hi = min(lo, score[tri(i, j, n)]), max(hi, score[tri(i, j, n)])
    mid = 0.0 if lo > hi else (lo + hi) / 2
    for i in range(n):
        for j in range(i + 2, n + 1):
            if not (i == 0 and j == n):
                phi[i, j] = math.exp(score[tri(i, j, n)] - mid)
    return phi, mid * max(n - 2, 0)


@njit(cache=True)
def product_sentence(tags, root_p, stop_p, attach_p, score, use_max, order, root_c, stop_c, attach_c, post, heads):
    """One sentence under the product: returns ``log sum_D P_DMV(D) prod_{B(D)} phi`` (or the max).

    Sum mode adds the expected DMV counts to ``root_c[T]``, ``stop_c[T, 2, 2, 2]``, ``attach_c[T, 2, T]``
    and writes the bracket posteriors (:func:`induce.kernels.ccm.tri` order) to ``post``; max mode
    writes the best tree's 1-based ``heads`` (0 = root) and its brackets (1/0) to ``post``.
    """
    n = len(tags)
    root, att, stop, log_scale = sentence_factors(tags, root_p, stop_p, attach_p)
    phi, log_phi = _phi(score, n)
    I, C = _inside(n, att, stop, phi, use_max, order)
    z = 0.0
    for h in range(n):
        z = _acc(z, root[h] * C[0, n, h], use_max)
    mass = (np.zeros(n), np.zeros((n, 2, 2, 2)), np.zeros((n, n)), np.zeros((n + 1, n + 1)))
    _outside(n, att, stop, phi, I, C, z, use_max, order, root, mass)
    root_m, stop_m, att_m, span_m = mass
    for i in range(n):
        for j in range(i + 1, n + 1):
            fixed = j == i + 1 or (i == 0 and j == n)
            p = 1.0 if fixed else span_m[i, j]
            post[tri(i, j, n)] = (1.0 if p >= ON_BEST else 0.0) if use_max else p
    for h in range(n):
        if use_max:
            if root_m[h] >= ON_BEST:
                heads[h] = 0
            for a in range(n):
                if att_m[h, a] >= ON_BEST:
                    heads[a] = h + 1
        else:
            root_c[tags[h]] += root_m[h]
            stop_c[tags[h]] += stop_m[h]
            for a in range(n):
                attach_c[tags[h], RIGHT if a > h else LEFT, tags[a]] += att_m[h, a]
    return math.log(z) + log_scale + log_phi


@njit(cache=True)
def product_pass(tags, offsets, yid, cid, soff, lcy, ldy, lcx, ldx, root_p, stop_p, attach_p, use_max, order,
                 root_c, stop_c, attach_c, post, heads):
    """:func:`product_sentence` over a corpus (CCM spans as in :mod:`induce.kernels.ccm`); returns the sum of
    ``log P_DMV P_CCM`` summed (or maximised) over each sentence's trees."""
    total = 0.0
    for s in range(len(offsets) - 1):
        n, a, b = offsets[s + 1] - offsets[s], soff[s], soff[s + 1]
        score = np.empty(b - a)
        base = _gathered(yid, cid, a, b, n, lcy, ldy, lcx, ldx, score)
        total += base + product_sentence(tags[offsets[s]:offsets[s + 1]], root_p, stop_p, attach_p, score, use_max,
                                         order, root_c, stop_c, attach_c, post[a:b], heads[offsets[s]:offsets[s + 1]])
    return total
