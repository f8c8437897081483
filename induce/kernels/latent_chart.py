"""Pruned chart parsing with a latent-annotation PCFG (numba kernels).

The grammar is sparse: ``bin_rules[r] = (A, B, C)`` over ``S`` unsplit symbols,
annotated probabilities ``bin_p[r, a, b, c]`` = theta(A[a] -> B[b] C[c]) with
``H`` subtypes (``H = 1`` is a plain treebank PCFG), ``root_p[A, a]`` =
theta(ROOT -> A[a]).  A sentence's lexical scores are ``e[i, A, a]`` =
theta(A[a] -> x_i), each row divided by its sum as in
:mod:`induce.kernels.inside_outside` (every tree emits every word once, so the
scaling is shared by all trees).

The chart holds only the *allowed* items ``(i, j, A)`` (a boolean mask, e.g.
all items for the coarse pass and the items whose coarse posterior passes a
threshold for the fine pass: coarse-to-fine pruning, Petrov & Klein 2007).
Each allowed item owns a row of ``H`` scores in a pool, ``idx[i, j, A]`` is
its row (``-1`` when pruned); ``act`` lists per cell the symbols with a
non-zero inside score.  Binary rules are visited by their left child
(``left_off``/``left_rules``, a CSR index) once, in the inside pass, which
records every rule application with live children; the outside and decoding
passes replay that list.  Every binary rule is multiplied by
``scale``: all trees over ``[i, j)`` have ``j - i - 1`` binary nodes, so this
rescales every tree of the sentence by ``scale^(n-1)`` and leaves posteriors
and argmaxes unchanged while keeping long sentences inside the double range.

* :func:`chart_inside` -- inside scores (thesis eq. 4.8; Lari & Young 1990) or
  Viterbi scores (max semiring) over the annotated grammar;
* :func:`chart_outside` -- outside scores (eq. 4.9) and ``Z``;
* :func:`max_rule_sum` -- the tree maximising the sum of the posteriors of its
  anchored unsplit rules ``r(A -> B C, i, k, j) = sum_{a,b,c} O(i,j,A[a])
  theta(A[a] -> B[b] C[c]) I(i,k,B[b]) I(k,j,C[c]) / Z`` and of its
  preterminal items (Petrov & Klein 2007, max-rule-sum);
* :func:`viterbi_trace` -- the best annotated derivation, its annotations dropped.

Output trees are ``int32[2n-1, 6]`` node rows in preorder as in
:mod:`induce.kernels.inside_outside`: ``(A, i, j, k, B, C)``, ``k = B = C = -1``
for a preterminal.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .latent_tree import binary_adjoint


@njit(cache=True)
def index_items(allowed):
    """Pool rows of the allowed items: ``idx[i, j, A]`` (``-1`` when not allowed) and their number."""
    n1 = allowed.shape[0]
    idx = np.full(allowed.shape, -1, dtype=np.int32)
    rows = 0
    for i in range(n1):
        for j in range(i + 1, n1):
            for a in range(allowed.shape[2]):
                if allowed[i, j, a]:
                    idx[i, j, a] = rows
                    rows += 1
    return idx, rows


@njit(cache=True)
def _grow(apps, used):
    """``apps`` with twice the capacity (the first ``used`` rows kept)."""
    bigger = np.empty((2 * apps.shape[0], apps.shape[1]), dtype=apps.dtype)
    bigger[:used] = apps[:used]
    return bigger


@njit(cache=True)
def _lexical_cell(e, idx, inside, i):
    """Width-1 items: ``inside(i, i+1, A[a]) = e[i, A, a]``, theta(A[a] -> x_i) (thesis eq. 4.8's base case)."""
    for a_sym in range(e.shape[1]):
        row = idx[i, i + 1, a_sym]
        if row >= 0:
            for a in range(e.shape[2]):
                inside[row, a] = e[i, a_sym, a]


@njit(cache=True)
def _record(apps, used, k, r, prow, lrow, rrow):
    """Append the rule application ``(k, r, parent row, left row, right row)``; returns ``apps`` (grown when full)."""
    if used == apps.shape[0]:
        apps = _grow(apps, used)
    apps[used, 0] = k
    apps[used, 1] = r
    apps[used, 2] = prow
    apps[used, 3] = lrow
    apps[used, 4] = rrow
    return apps


@njit(cache=True)
def _apply_rule(bin_p, r, inside, prow, lrow, rrow, scale, use_max, back, t, tmp):
    """Add one binary rule application ``A -> B C`` over ``(i, k, j)`` to the parent's inside scores
    (thesis eq. 4.8): ``inside(A[a]) += scale sum_{b,c} theta(A[a] -> B[b] C[c]) I(B[b]) I(C[c])``;
    with ``use_max`` the max over ``(b, c)`` replaces the sum and improvements set the back-pointer
    ``back[prow, a] = (t, b, c)`` (``t``: the application's index)."""
    h = inside.shape[1]
    for b in range(h):
        for c in range(h):
            tmp[b, c] = inside[lrow, b] * inside[rrow, c]
    for a in range(h):
        s = 0.0
        arg = 0
        for b in range(h):
            for c in range(h):
                v = bin_p[r, a, b, c] * tmp[b, c]
                if use_max:
                    if v > s:
                        s = v
                        arg = b * h + c
                else:
                    s += v
        s *= scale
        if use_max:
            if s > inside[prow, a]:
                inside[prow, a] = s
                back[prow, a, 0] = t
                back[prow, a, 1] = arg // h
                back[prow, a, 2] = arg % h
        else:
            inside[prow, a] += s


@njit(cache=True)
def _activate(idx, inside, live, act, top, i, j):
    """Mark the items of cell ``(i, j)`` with a non-zero score live and list their symbols in ``act``
    from ``top``; returns the new end of ``act``."""
    for a_sym in range(idx.shape[2]):
        row = idx[i, j, a_sym]
        if row < 0:
            continue
        for a in range(inside.shape[1]):
            if inside[row, a] > 0.0:
                live[row] = True
                break
        if live[row]:
            act[top] = a_sym
            top += 1
    return top


@njit(cache=True)
def chart_inside(e, allowed, bin_rules, left_off, left_rules, bin_p, scale, use_max):
    """Inside (or Viterbi, ``use_max``) scores of the allowed items.

    Returns ``(idx, inside, live, apps, back)``: pool rows, scores
    ``inside[row, a]``, ``live[row]`` (score non-zero), the rule applications
    ``apps[t] = (k, r, parent row, left row, right row)`` whose children are
    live, in bottom-up order (the outside and decoding passes replay them), and
    for ``use_max`` the back-pointers ``back[row, a] = (t, b, c)`` of the best
    derivation of each item (shape ``(0, h, 3)`` otherwise).  Cells by width:
    :func:`_lexical_cell` or, for each split ``k``, live left child and rule
    with an allowed parent and a live right child, :func:`_record` and
    :func:`_apply_rule`; then :func:`_activate`.
    """
    n = e.shape[0]
    h = e.shape[2]
    idx, rows = index_items(allowed)
    inside = np.zeros((rows, h))
    live = np.zeros(rows, dtype=np.bool_)
    act_start = np.zeros((n + 1, n + 1), dtype=np.int64)
    act_len = np.zeros((n + 1, n + 1), dtype=np.int64)
    act = np.empty(rows, dtype=np.int32)
    apps = np.empty((max(16, 4 * rows), 5), dtype=np.int32)
    used = 0
    back = np.full((rows if use_max else 0, h, 3), -1, dtype=np.int32)
    top = 0
    tmp = np.empty((h, h))
    for width in range(1, n + 1):
        for i in range(n - width + 1):
            j = i + width
            if width == 1:
                _lexical_cell(e, idx, inside, i)
            else:
                for k in range(i + 1, j):
                    for q in range(act_start[i, k], act_start[i, k] + act_len[i, k]):
                        b_sym = act[q]
                        lrow = idx[i, k, b_sym]
                        for x in range(left_off[b_sym], left_off[b_sym + 1]):
                            r = left_rules[x]
                            prow = idx[i, j, bin_rules[r, 0]]
                            if prow < 0:
                                continue
                            rrow = idx[k, j, bin_rules[r, 2]]
                            if rrow < 0 or not live[rrow]:
                                continue
                            apps = _record(apps, used, k, r, prow, lrow, rrow)
                            _apply_rule(bin_p, r, inside, prow, lrow, rrow, scale, use_max, back, used, tmp)
                            used += 1
            act_start[i, j] = top
            top = _activate(idx, inside, live, act, top, i, j)
            act_len[i, j] = top - act_start[i, j]
    return idx, inside, live, apps[:used], back


@njit(cache=True)
def sentence_z(n, idx, inside, root_p):
    """``Z = sum_{A, a} theta(ROOT -> A[a]) I(0, n, A[a])`` (scaled)."""
    z = 0.0
    for a_sym in range(root_p.shape[0]):
        row = idx[0, n, a_sym]
        if row >= 0:
            for a in range(root_p.shape[1]):
                z += root_p[a_sym, a] * inside[row, a]
    return z


@njit(cache=True)
def chart_outside(idx, inside, apps, bin_p, scale, root_p):
    """Outside scores ``outside[row, a]`` (thesis eq. 4.9), replaying the applications top-down; and ``Z``."""
    n = idx.shape[0] - 1
    h = inside.shape[1]
    outside = np.zeros(inside.shape)
    no_post = np.zeros((0, 0))
    z = sentence_z(n, idx, inside, root_p)
    if z <= 0.0:
        return outside, z
    for a_sym in range(root_p.shape[0]):
        row = idx[0, n, a_sym]
        if row >= 0:
            for a in range(h):
                outside[row, a] = root_p[a_sym, a]
    for t in range(apps.shape[0] - 1, -1, -1):
        r, prow, lrow, rrow = apps[t, 1], apps[t, 2], apps[t, 3], apps[t, 4]
        for a in range(h):
            binary_adjoint(outside[prow, a] * scale, bin_p[r, a], inside[lrow], inside[rrow], outside[lrow],
                           outside[rrow], no_post)
    return outside, z


@njit(cache=True)
def item_posteriors(idx, inside, outside, z):
    """``P(A spans [i, j) | x) = sum_a I(i,j,A[a]) O(i,j,A[a]) / Z`` for every item (0 when pruned)."""
    post = np.zeros(idx.shape)
    if z <= 0.0:
        return post
    n1 = idx.shape[0]
    for i in range(n1):
        for j in range(i + 1, n1):
            for a_sym in range(idx.shape[2]):
                row = idx[i, j, a_sym]
                if row >= 0:
                    s = 0.0
                    for a in range(inside.shape[1]):
                        s += inside[row, a] * outside[row, a]
                    post[i, j, a_sym] = s / z
    return post


@njit(cache=True, inline="always")
def _put(nodes, pos, a_sym, i, j, k, b_sym, c_sym):
    """Write node row ``pos`` = ``(A, i, j, k, B, C)``; returns ``pos + 1``."""
    nodes[pos, 0] = a_sym
    nodes[pos, 1] = i
    nodes[pos, 2] = j
    nodes[pos, 3] = k
    nodes[pos, 4] = b_sym
    nodes[pos, 5] = c_sym
    return pos + 1


@njit(cache=True)
def _write_tree(top_sym, top_sub, idx, apps, back, bin_rules, nodes):
    """Preorder node rows of the derivation rooted in ``(0, n, top_sym[top_sub])`` following
    ``back[row, a] = (application, b, c)``."""
    n = idx.shape[0] - 1
    stack = np.empty((2 * n, 4), dtype=np.int64)
    stack[0, 0] = top_sym
    stack[0, 1] = top_sub
    stack[0, 2] = 0
    stack[0, 3] = n
    top = 1
    pos = 0
    while top > 0:
        top -= 1
        a_sym, a, i, j = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
        if j - i == 1:
            pos = _put(nodes, pos, a_sym, i, j, -1, -1, -1)
            continue
        t, b, c = back[idx[i, j, a_sym], a]
        k, r = apps[t, 0], apps[t, 1]
        pos = _put(nodes, pos, a_sym, i, j, k, bin_rules[r, 1], bin_rules[r, 2])
        stack[top, 0] = bin_rules[r, 2]
        stack[top, 1] = c
        stack[top, 2] = k
        stack[top, 3] = j
        stack[top + 1, 0] = bin_rules[r, 1]
        stack[top + 1, 1] = b
        stack[top + 1, 2] = i
        stack[top + 1, 3] = k
        top += 2
    return pos


@njit(cache=True)
def max_rule_sum(idx, inside, outside, z, live, apps, bin_rules, bin_p, scale, root_p, nodes):
    """Max-rule-sum decoding (Petrov & Klein 2007) into ``nodes``; returns the tree's score.

    ``best(i, j, A) = max_{k, A->BC} r(A -> B C, i, k, j) + best(i, k, B) + best(k, j, C)``
    with ``best(i, i+1, A)`` the posterior of the preterminal item, and the root
    symbol's posterior ``sum_a theta(ROOT -> A[a]) I(0,n,A[a]) / Z`` added at the top.
    Returns ``-inf`` (and writes nothing) when ``Z = 0``.
    """
    n = idx.shape[0] - 1
    h = inside.shape[1]
    rows = inside.shape[0]
    if z <= 0.0:
        return -math.inf
    best = np.full(rows, -math.inf)
    back = np.full((rows, 1, 3), 0, dtype=np.int32)
    for i in range(n):
        for a_sym in range(idx.shape[2]):
            row = idx[i, i + 1, a_sym]
            if row < 0 or not live[row]:
                continue
            s = 0.0
            for a in range(h):
                s += inside[row, a] * outside[row, a]
            if s > 0.0:
                best[row] = s / z
    for t in range(apps.shape[0]):
        r, prow, lrow, rrow = apps[t, 1], apps[t, 2], apps[t, 3], apps[t, 4]
        if best[lrow] == -math.inf or best[rrow] == -math.inf:
            continue
        post = 0.0
        for a in range(h):
            oa = outside[prow, a]
            if oa == 0.0:
                continue
            for b in range(h):
                ob = oa * inside[lrow, b]
                for c in range(h):
                    post += ob * bin_p[r, a, b, c] * inside[rrow, c]
        if post <= 0.0:
            continue
        cand = post * scale / z + best[lrow] + best[rrow]
        if cand > best[prow]:
            best[prow] = cand
            back[prow, 0, 0] = t
    top_sym = -1
    top_score = -math.inf
    for a_sym in range(root_p.shape[0]):
        row = idx[0, n, a_sym]
        if row < 0 or best[row] == -math.inf:
            continue
        s = 0.0
        for a in range(h):
            s += root_p[a_sym, a] * inside[row, a]
        if s <= 0.0:
            continue
        score = best[row] + s / z
        if score > top_score:
            top_score = score
            top_sym = a_sym
    if top_sym < 0:
        return -math.inf
    _write_tree(top_sym, 0, idx, apps, back, bin_rules, nodes)
    return top_score


@njit(cache=True)
def viterbi_trace(idx, inside, back, apps, bin_rules, root_p, nodes):
    """The best annotated derivation of a max-semiring :func:`chart_inside` chart, written to ``nodes``
    without its annotations; returns its scaled probability (0 when the sentence has no parse)."""
    n = idx.shape[0] - 1
    top_sym = -1
    top_sub = -1
    top_score = 0.0
    for a_sym in range(root_p.shape[0]):
        row = idx[0, n, a_sym]
        if row < 0:
            continue
        for a in range(root_p.shape[1]):
            v = root_p[a_sym, a] * inside[row, a]
            if v > top_score:
                top_score = v
                top_sym = a_sym
                top_sub = a
    if top_sym < 0:
        return 0.0
    _write_tree(top_sym, top_sub, idx, apps, back, bin_rules, nodes)
    return top_score
