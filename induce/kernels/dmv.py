"""Inside-outside for the Dependency Model with Valence (numba kernels).

Klein & Manning (2004): a root tag is drawn from ``P_root``; every head ``h``
then generates dependents outward on each side ``d`` (0 = left, 1 = right):
while ``P_stop(CONTINUE | h, d, v)`` it draws a dependent tag from
``P_choose(a | h, d)``, and finally ``P_stop(STOP | h, d, v)``, where the
valence ``v`` is 0 before the first dependent on that side (adjacent) and 1
after.  Parameter tables (all rows are categorical distributions over the last
axis, so the estimators of :mod:`induce.infer.estimators` apply directly):

* ``root[T]``;  ``stop[T, 2 dir, 2 valence, 2]`` with last axis (STOP, CONTINUE);
  ``attach[T, 2 dir, T]``.

The two sides of a head are independent, which gives the split-head O(n^3)
dynamic program (Eisner 1996/2000) with these charts over words ``i <= j``:

* ``RI[i, j]``: arc ``i -> j`` with ``i``'s nearer right dependents and ``j``'s
  sealed left half, ``LI[i, j]``: arc ``j -> i`` symmetrically;
* ``RC[i, j]``/``LC[i, j]``: head ``i`` (resp. ``j``) whose dependents on that
  side span to ``j`` (resp. ``i``), not yet stopped;
* ``RS``/``LS``: the same halves sealed by their STOP factor.

Recurrences (sum, or max in the Viterbi semiring), ``v(x) = 1 if x else 0``::

    RC[i,i] = LC[i,i] = 1;  RS[i,i] = stop(i,R,0);  LS[i,i] = stop(i,L,0)
    RI[i,j] = att(i->j) sum_{k=i}^{j-1} RC[i,k] cont(i,R,v(k>i)) LS[k+1,j]
    LI[i,j] = att(j->i) sum_{k=i}^{j-1} RS[i,k] LC[k+1,j] cont(j,L,v(k+1<j))
    RC[i,j] = sum_{k=i+1}^{j} RI[i,k] RS[k,j];   LC[i,j] = sum_{k=i}^{j-1} LS[i,k] LI[k,j]
    RS[i,j] = RC[i,j] stop(i,R,1);  LS[i,j] = LC[i,j] stop(j,L,1)
    Z = sum_h root(h) LS[0,h] RS[h,n-1]

The outside pass is the adjoint of these recurrences; each factor's expected
count is ``theta dZ/dtheta / Z`` (the DMV instance of thesis eq. 4.8-4.9).
Each word is generated exactly once (by the root or one attachment), so the
attachment column and root factor of word ``j`` are divided by their maximum
``s_j`` and ``log Z`` adds ``sum_j log s_j`` back, as in the PCFG kernel.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .ratio import cvi_ratio_nb

RI, LI, RC, LC, RS, LS = 0, 1, 2, 3, 4, 5
LEFT, RIGHT = 0, 1
STOP, CONT = 0, 1


@njit(cache=True)
def _scale_words(root, att):
    """Divide word ``j``'s generating factors by their max; return ``sum_j log s_j``."""
    n = root.shape[0]
    log_scale = 0.0
    for j in range(n):
        s = root[j]
        for i in range(n):
            if att[i, j] > s:
                s = att[i, j]
        if s > 0.0:
            root[j] /= s
            for i in range(n):
                att[i, j] /= s
            log_scale += math.log(s)
        else:
            root[j] = 1.0
            for i in range(n):
                if i != j:
                    att[i, j] = 1.0
            log_scale = -math.inf
    return log_scale


@njit(cache=True)
def sentence_factors(tags, root_p, stop_p, attach_p):
    """Per-position factors ``(root[n], att[n, n], stop[n, 2, 2, 2], log_scale)`` from the tables."""
    n = tags.shape[0]
    root = np.empty(n)
    att = np.zeros((n, n))
    stop = np.empty((n, 2, 2, 2))
    for i in range(n):
        t = tags[i]
        root[i] = root_p[t]
        stop[i] = stop_p[t]
        for j in range(n):
            if j != i:
                att[i, j] = attach_p[t, RIGHT if j > i else LEFT, tags[j]]
    return root, att, stop, _scale_words(root, att)


@njit(cache=True)
def _plus(x, v, use_max):
    if use_max:
        return v if v > x else x
    return x + v


@njit(cache=True)
def inside_charts(root, att, stop, use_max):
    """Fill the six split-head charts ``ch[6, n, n]``; return ``(ch, Z)`` (scaled)."""
    n = root.shape[0]
    ch = np.zeros((6, n, n))
    for i in range(n):
        ch[RC, i, i] = 1.0
        ch[LC, i, i] = 1.0
        ch[RS, i, i] = stop[i, RIGHT, 0, STOP]
        ch[LS, i, i] = stop[i, LEFT, 0, STOP]
    for width in range(1, n):
        for i in range(n - width):
            j = i + width
            acc_r = 0.0
            acc_l = 0.0
            for k in range(i, j):
                vr = 1 if k > i else 0
                vl = 1 if k + 1 < j else 0
                acc_r = _plus(acc_r, ch[RC, i, k] * stop[i, RIGHT, vr, CONT] * ch[LS, k + 1, j], use_max)
                acc_l = _plus(acc_l, ch[RS, i, k] * ch[LC, k + 1, j] * stop[j, LEFT, vl, CONT], use_max)
            ch[RI, i, j] = att[i, j] * acc_r
            ch[LI, i, j] = att[j, i] * acc_l
            acc_r = 0.0
            acc_l = 0.0
            for k in range(i + 1, j + 1):
                acc_r = _plus(acc_r, ch[RI, i, k] * ch[RS, k, j], use_max)
            for k in range(i, j):
                acc_l = _plus(acc_l, ch[LS, i, k] * ch[LI, k, j], use_max)
            ch[RC, i, j] = acc_r
            ch[LC, i, j] = acc_l
            ch[RS, i, j] = acc_r * stop[i, RIGHT, 1, STOP]
            ch[LS, i, j] = acc_l * stop[j, LEFT, 1, STOP]
    z = 0.0
    for h in range(n):
        z = _plus(z, root[h] * ch[LS, 0, h] * ch[RS, h, n - 1], use_max)
    return ch, z


@njit(cache=True)
def outside_counts(root, att, stop, ch, z, root_c, att_c, stop_c):
    """Adjoint pass: add posterior expected counts per position.

    ``root_c[h]`` = P(h is the root), ``att_c[h, d]`` = P(arc h -> d),
    ``stop_c[i, dir, v, STOP|CONT]`` = expected number of stop/continue
    decisions of word ``i``.
    """
    n = root.shape[0]
    if z == 0.0:
        return
    o = np.zeros((6, n, n))
    for h in range(n):
        g = root[h] / z
        o[LS, 0, h] += g * ch[RS, h, n - 1]
        o[RS, h, n - 1] += g * ch[LS, 0, h]
        root_c[h] += g * ch[LS, 0, h] * ch[RS, h, n - 1]
    for width in range(n - 1, 0, -1):
        for i in range(n - width):
            j = i + width
            g = o[RS, i, j]
            o[RC, i, j] += g * stop[i, RIGHT, 1, STOP]
            stop_c[i, RIGHT, 1, STOP] += g * ch[RS, i, j]
            g = o[LS, i, j]
            o[LC, i, j] += g * stop[j, LEFT, 1, STOP]
            stop_c[j, LEFT, 1, STOP] += g * ch[LS, i, j]
            g = o[RC, i, j]
            for k in range(i + 1, j + 1):
                o[RI, i, k] += g * ch[RS, k, j]
                o[RS, k, j] += g * ch[RI, i, k]
            g = o[LC, i, j]
            for k in range(i, j):
                o[LS, i, k] += g * ch[LI, k, j]
                o[LI, k, j] += g * ch[LS, i, k]
            g = o[RI, i, j]
            if g != 0.0:
                att_c[i, j] += g * ch[RI, i, j]
                ga = g * att[i, j]
                for k in range(i, j):
                    v = 1 if k > i else 0
                    c = stop[i, RIGHT, v, CONT]
                    o[RC, i, k] += ga * c * ch[LS, k + 1, j]
                    o[LS, k + 1, j] += ga * ch[RC, i, k] * c
                    stop_c[i, RIGHT, v, CONT] += ga * ch[RC, i, k] * c * ch[LS, k + 1, j]
            g = o[LI, i, j]
            if g != 0.0:
                att_c[j, i] += g * ch[LI, i, j]
                ga = g * att[j, i]
                for k in range(i, j):
                    v = 1 if k + 1 < j else 0
                    c = stop[j, LEFT, v, CONT]
                    o[RS, i, k] += ga * ch[LC, k + 1, j] * c
                    o[LC, k + 1, j] += ga * ch[RS, i, k] * c
                    stop_c[j, LEFT, v, CONT] += ga * ch[RS, i, k] * ch[LC, k + 1, j] * c
    for i in range(n):
        stop_c[i, RIGHT, 0, STOP] += o[RS, i, i] * ch[RS, i, i]
        stop_c[i, LEFT, 0, STOP] += o[LS, i, i] * ch[LS, i, i]


@njit(cache=True)
def _push(stack, top, kind, i, j):
    stack[top, 0] = kind
    stack[top, 1] = i
    stack[top, 2] = j


@njit(cache=True)
def viterbi_heads(root, att, stop, ch, heads):
    """Backtrack the max-semiring charts into ``heads`` (1-based, 0 = root)."""
    n = root.shape[0]
    best = -1.0
    hb = 0
    for h in range(n):
        v = root[h] * ch[LS, 0, h] * ch[RS, h, n - 1]
        if v > best:
            best = v
            hb = h
    heads[hb] = 0
    stack = np.empty((4 * n + 4, 3), dtype=np.int64)
    top = 0
    _push(stack, top, LS, 0, hb)
    _push(stack, top + 1, RS, hb, n - 1)
    top += 2
    while top > 0:
        top -= 1
        kind, i, j = stack[top, 0], stack[top, 1], stack[top, 2]
        if i == j and kind != RI and kind != LI:
            continue
        if kind == RS:
            _push(stack, top, RC, i, j)
            top += 1
        elif kind == LS:
            _push(stack, top, LC, i, j)
            top += 1
        else:
            best = -1.0
            kb = -1
            if kind == RC:
                for k in range(i + 1, j + 1):
                    v = ch[RI, i, k] * ch[RS, k, j]
                    if v > best:
                        best, kb = v, k
                _push(stack, top, RI, i, kb)
                _push(stack, top + 1, RS, kb, j)
            elif kind == LC:
                for k in range(i, j):
                    v = ch[LS, i, k] * ch[LI, k, j]
                    if v > best:
                        best, kb = v, k
                _push(stack, top, LS, i, kb)
                _push(stack, top + 1, LI, kb, j)
            elif kind == RI:
                heads[j] = i + 1
                for k in range(i, j):
                    v = ch[RC, i, k] * stop[i, RIGHT, 1 if k > i else 0, CONT] * ch[LS, k + 1, j]
                    if v > best:
                        best, kb = v, k
                _push(stack, top, RC, i, kb)
                _push(stack, top + 1, LS, kb + 1, j)
            else:
                heads[i] = j + 1
                for k in range(i, j):
                    v = ch[RS, i, k] * ch[LC, k + 1, j] * stop[j, LEFT, 1 if k + 1 < j else 0, CONT]
                    if v > best:
                        best, kb = v, k
                _push(stack, top, RS, i, kb)
                _push(stack, top + 1, LC, kb + 1, j)
            top += 2


# ------------------------------------------------------------------ scatter
@njit(cache=True)
def _scatter(tags, sign, root_c, att_c, stop_c, root_counts, stop_counts, attach_counts, attach_totals, root_total):
    """Add ``sign`` times position-indexed counts to the tag-indexed tables."""
    n = tags.shape[0]
    for i in range(n):
        t = tags[i]
        root_counts[t] += sign * root_c[i]
        root_total[0] += sign * root_c[i]
        for d in range(2):
            for v in range(2):
                for o in range(2):
                    stop_counts[t, d, v, o] += sign * stop_c[i, d, v, o]
        for j in range(n):
            if j != i:
                d = RIGHT if j > i else LEFT
                attach_counts[t, d, tags[j]] += sign * att_c[i, j]
                attach_totals[t, d] += sign * att_c[i, j]


@njit(cache=True)
def surrogate_factors(tags, root_counts, stop_counts, attach_counts, attach_totals, root_total, priors):
    """Per-position CVI factors ``(C^{\\i} + alpha) / (C^{\\i}_. + K alpha)`` (thesis eq. 4.24) and scale;
    ``priors`` holds the ``alpha`` of the root, stop and attach rows."""
    n = tags.shape[0]
    nt = root_counts.shape[0]
    root = np.empty(n)
    att = np.zeros((n, n))
    stop = np.empty((n, 2, 2, 2))
    for i in range(n):
        t = tags[i]
        root[i] = cvi_ratio_nb(root_counts[t], root_total[0], priors[0], nt)
        for d in range(2):
            for v in range(2):
                tot = stop_counts[t, d, v, STOP] + stop_counts[t, d, v, CONT]
                for o in range(2):
                    stop[i, d, v, o] = cvi_ratio_nb(stop_counts[t, d, v, o], tot, priors[1], 2)
        for j in range(n):
            if j != i:
                d = RIGHT if j > i else LEFT
                att[i, j] = cvi_ratio_nb(attach_counts[t, d, tags[j]], attach_totals[t, d], priors[2], nt)
    return root, att, stop, _scale_words(root, att)


@njit(cache=True)
def rule_bias(ucls, rules, weight, root, att):
    """Posterior-regularisation factors (Ganchev et al. 2010; Naseem et al. 2010): multiply the root
    factor of word ``j`` by ``weight`` where ``rules[ROOT, c_j]`` and the arc ``i -> j`` where
    ``rules[c_i, c_j]`` (``c`` = ``ucls``, ``ROOT`` = the matrix's last row), then rescale the words
    (:func:`_scale_words`); returns the added log-scale.  ``weight = exp(lambda)``, so the chart
    sums ``p(z) exp(lambda f(z))`` with ``f(z)`` the number of rule-obeying arcs of tree ``z``."""
    n = root.shape[0]
    top = rules.shape[0] - 1
    for j in range(n):
        if rules[top, ucls[j]] > 0.0:
            root[j] *= weight
        for i in range(n):
            if i != j and rules[ucls[i], ucls[j]] > 0.0:
                att[i, j] *= weight
    return _scale_words(root, att)


@njit(cache=True)
def rule_arcs(ucls, offsets, sq_offsets, pos_root, pos_att, rules):
    """Expected number of rule-obeying arcs (root arcs included) under the stored position counts."""
    top = rules.shape[0] - 1
    total = 0.0
    for s in range(offsets.shape[0] - 1):
        a = offsets[s]
        n = offsets[s + 1] - a
        att_c = pos_att[sq_offsets[s] : sq_offsets[s + 1]].reshape((n, n))
        for j in range(n):
            total += pos_root[a + j] * rules[top, ucls[a + j]]
            for i in range(n):
                if i != j:
                    total += att_c[i, j] * rules[ucls[a + i], ucls[a + j]]
    return total


# -------------------------------------------------------------- corpus passes
@njit(cache=True)
def log_likelihood_pass(tags, offsets, root_p, stop_p, attach_p, out):
    """``out[i] = log P(x^i | theta)`` (inside pass only)."""
    for s in range(offsets.shape[0] - 1):
        t = tags[offsets[s] : offsets[s + 1]]
        if t.shape[0] == 0:
            out[s] = 0.0
            continue
        root, att, stop, log_scale = sentence_factors(t, root_p, stop_p, attach_p)
        _, z = inside_charts(root, att, stop, False)
        out[s] = math.log(z) + log_scale if z > 0.0 else -math.inf


@njit(cache=True)
def viterbi_pass(tags, offsets, root_p, stop_p, attach_p, heads):
    """Best projective tree per sentence; ``heads`` aligned with ``tags`` (1-based, 0 = root)."""
    for s in range(offsets.shape[0] - 1):
        t = tags[offsets[s] : offsets[s + 1]]
        if t.shape[0] == 0:
            continue
        root, att, stop, _ = sentence_factors(t, root_p, stop_p, attach_p)
        ch, _ = inside_charts(root, att, stop, True)
        viterbi_heads(root, att, stop, ch, heads[offsets[s] : offsets[s + 1]])


@njit(cache=True)
def cvi_pass(tags, offsets, sq_offsets, order, root_counts, stop_counts, attach_counts, attach_totals,
             root_total, pos_root, pos_stop, pos_att, priors, ucls, rules, weight):
    """One collapsed variational pass (thesis eq. 4.24 applied to the DMV's rules).

    Per sentence: subtract its stored position-indexed expected counts
    (``pos_root``/``pos_stop`` rows ``offsets[s]:offsets[s+1]``, ``pos_att``
    entries ``sq_offsets[s]:sq_offsets[s+1]`` as an ``n x n`` matrix), build the
    surrogate factors from the remaining counts, run inside-outside, store and
    add back the new counts.  With ``weight != 1`` the factors carry the rule bias
    (:func:`rule_bias`).  Returns ``sum_i log P(x^i | theta-bar^{\\i})`` (times the bias).
    """
    total = 0.0
    for s in order:
        a = offsets[s]
        b = offsets[s + 1]
        n = b - a
        t = tags[a:b]
        root_c = pos_root[a:b]
        stop_c = pos_stop[a:b]
        att_c = pos_att[sq_offsets[s] : sq_offsets[s + 1]].reshape((n, n))
        _scatter(t, -1.0, root_c, att_c, stop_c, root_counts, stop_counts, attach_counts, attach_totals, root_total)
        root, att, stop, log_scale = surrogate_factors(
            t, root_counts, stop_counts, attach_counts, attach_totals, root_total, priors)
        if weight != 1.0:
            log_scale += rule_bias(ucls[a:b], rules, weight, root, att)
        ch, z = inside_charts(root, att, stop, False)
        root_c[:] = 0.0
        stop_c[:] = 0.0
        att_c[:] = 0.0
        outside_counts(root, att, stop, ch, z, root_c, att_c, stop_c)
        total += math.log(z) + log_scale if z > 0.0 else -math.inf
        _scatter(t, 1.0, root_c, att_c, stop_c, root_counts, stop_counts, attach_counts, attach_totals, root_total)
    return total


@njit(cache=True)
def position_counts_pass(tags, offsets, sq_offsets, root_p, stop_p, attach_p, pos_root, pos_stop, pos_att,
                         ucls, rules, weight):
    """Batch E-step that keeps the counts per position (to seed the CVI pass); returns log-likelihood.
    With ``weight != 1`` the factors carry the rule bias (:func:`rule_bias`)."""
    total = 0.0
    for s in range(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        n = b - a
        t = tags[a:b]
        root, att, stop, log_scale = sentence_factors(t, root_p, stop_p, attach_p)
        if weight != 1.0:
            log_scale += rule_bias(ucls[a:b], rules, weight, root, att)
        ch, z = inside_charts(root, att, stop, False)
        outside_counts(root, att, stop, ch, z, pos_root[a:b],
                       pos_att[sq_offsets[s] : sq_offsets[s + 1]].reshape((n, n)), pos_stop[a:b])
        total += math.log(z) + log_scale if z > 0.0 else -math.inf
    return total


@njit(cache=True)
def tables_from_positions(tags, offsets, sq_offsets, pos_root, pos_stop, pos_att,
                          root_counts, stop_counts, attach_counts, attach_totals, root_total):
    """Sum position-indexed counts into the tag tables (and their totals)."""
    for s in range(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        n = b - a
        _scatter(tags[a:b], 1.0, pos_root[a:b], pos_att[sq_offsets[s] : sq_offsets[s + 1]].reshape((n, n)),
                 pos_stop[a:b], root_counts, stop_counts, attach_counts, attach_totals, root_total)


@njit(cache=True)
def harmonic_counts(tags, offsets, root_counts, stop_counts, attach_counts):
    """Klein & Manning's harmonic initialiser as pseudo expected counts.

    Each word's head is the root with probability ``1/n``, otherwise word ``h``
    with probability proportional to ``1/|h - j|``.  With ``E`` the resulting
    expected number of dependents of a head on one side, the stop counts are
    those of a head taking ``E`` dependents there: CONTINUE ``min(1, E)`` and
    STOP ``1 - min(1, E)`` while adjacent, then CONTINUE ``max(E - 1, 0)`` and
    STOP ``min(1, E)`` after the first dependent.
    """
    for s in range(offsets.shape[0] - 1):
        t = tags[offsets[s] : offsets[s + 1]]
        n = t.shape[0]
        deps = np.zeros((n, 2))
        for j in range(n):
            root_counts[t[j]] += 1.0 / n
            norm = 0.0
            for h in range(n):
                if h != j:
                    norm += 1.0 / abs(h - j)
            for h in range(n):
                if h != j:
                    p = (1.0 - 1.0 / n) / abs(h - j) / norm
                    d = RIGHT if j > h else LEFT
                    attach_counts[t[h], d, t[j]] += p
                    deps[h, d] += p
        for h in range(n):
            for d in range(2):
                first = min(1.0, deps[h, d])
                stop_counts[t[h], d, 0, CONT] += first
                stop_counts[t[h], d, 0, STOP] += 1.0 - first
                stop_counts[t[h], d, 1, CONT] += max(deps[h, d] - 1.0, 0.0)
                stop_counts[t[h], d, 1, STOP] += first
