"""Inside-outside over the latent subtypes of observed trees (PCFG-LA training; numba kernels).

In a PCFG with latent annotations (Matsuzaki et al. 2005; Petrov et al. 2006;
thesis section 4.5.3) every nonterminal ``A`` of a treebank tree carries a
hidden subtype ``a in [0, H)``; an annotated rule is ``A[a] -> B[b] C[c]`` or
``A[a] -> w``, and the start symbol chooses the root's ``A[a]``.  The tree
skeleton is observed, so the E-step is the inside-outside algorithm of thesis
eq. 4.8-4.9 restricted to one tree: ``O(H^3)`` per binary node.

Trees are flat ``int32[m, 5]`` node arrays in preorder, one row per node:
``(A, rule, left, right, slot)`` where ``rule`` indexes the binary rule table
(``left``/``right`` are the children's row numbers inside the tree) or, for a
preterminal (``left = -1``), the lexical rule table; ``slot`` numbers the
binary (resp. lexical) nodes of the whole corpus consecutively, for the
per-node counts that CVI keeps.  A corpus is the rows of all trees with
``tree_offsets``.

Parameters: ``bin_p[r, a, b, c]`` = theta(A[a] -> B[b] C[c]) of binary rule ``r``,
``lex_p[l, a]`` = theta(A[a] -> w) of lexical rule ``l``, ``root_p[A, a]`` =
theta(ROOT -> A[a]).  Scores of a tree are gathered into per-node tables
(``tb[p]``, ``tl[p]``, ``troot``) so that EM/VI (global parameters) and CVI
(per-tree surrogate parameters, thesis eq. 4.24) share one dynamic program.

Since each node of a fixed tree uses exactly one rule, the posterior over the
annotations of a node sums to one; inside and outside vectors are therefore
rescaled at every node and the posteriors normalised per node, which cannot
underflow however deep the tree is.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .ratio import cvi_ratio_nb

TREE_COLS = 5


@njit(cache=True, inline="always")
def binary_adjoint(oa, theta, in_left, in_right, out_left, out_right, post):
    """Outside pass through one annotated binary rule ``A[a] -> B[b] C[c]`` (thesis eq. 4.9).

    With ``oa`` = O(A[a]) and ``theta[b, c]``: ``out_left[b] += oa sum_c theta[b, c] in_right[c]``,
    ``out_right[c] += oa sum_b theta[b, c] in_left[b]``; when ``post`` has rows it receives the
    unnormalised posteriors ``oa theta[b, c] in_left[b] in_right[c]``.  Returns their sum.
    """
    keep = post.shape[0] > 0
    tot = 0.0
    if oa == 0.0:
        return tot
    for b in range(theta.shape[0]):
        lb = in_left[b]
        for c in range(theta.shape[1]):
            v = oa * theta[b, c]
            out_left[b] += v * in_right[c]
            out_right[c] += v * lb
            w = v * lb * in_right[c]
            tot += w
            if keep:
                post[b, c] = w
    return tot


@njit(cache=True)
def tree_posteriors(nodes, tb, tl, troot, post_bin, post_lex, post_root):
    """Inside-outside over the subtypes of one tree; returns ``log P(tree | scores)``.

    ``inside[p, a]`` = P(subtree of ``p`` | A_p[a]) (thesis eq. 4.8 on a fixed tree),
    ``outside[p, a]`` its complement (eq. 4.9).  Writes the annotation posteriors
    ``E[C(A[a] -> B[b] C[c])]`` of binary node ``p`` to ``post_bin[p]``,
    ``E[C(A[a] -> w)]`` of preterminal ``p`` to ``post_lex[p]`` and of the root
    to ``post_root``; each sums to one.  Returns ``-inf`` if the tree has
    probability 0 (posteriors are then left at 0).
    """
    m = nodes.shape[0]
    h = troot.shape[0]
    inside = np.zeros((m, h))
    outside = np.zeros((m, h))
    log_scale = 0.0
    for p in range(m - 1, -1, -1):
        left = nodes[p, 2]
        if left < 0:
            for a in range(h):
                inside[p, a] = tl[p, a]
        else:
            right = nodes[p, 3]
            for a in range(h):
                s = 0.0
                for b in range(h):
                    lb = inside[left, b]
                    for c in range(h):
                        s += tb[p, a, b, c] * lb * inside[right, c]
                inside[p, a] = s
        tot = 0.0
        for a in range(h):
            tot += inside[p, a]
        if tot <= 0.0:
            return -math.inf
        for a in range(h):
            inside[p, a] /= tot
        log_scale += math.log(tot)
    z = 0.0
    for a in range(h):
        z += troot[a] * inside[0, a]
    if z <= 0.0:
        return -math.inf
    for a in range(h):
        post_root[a] = troot[a] * inside[0, a] / z
        outside[0, a] = troot[a] / z
    for p in range(m):
        left = nodes[p, 2]
        if left < 0:
            tot = 0.0
            for a in range(h):
                post_lex[p, a] = outside[p, a] * inside[p, a]
                tot += post_lex[p, a]
            for a in range(h):
                post_lex[p, a] /= tot
            continue
        right = nodes[p, 3]
        tot = 0.0
        for a in range(h):
            tot += binary_adjoint(outside[p, a], tb[p, a], inside[left], inside[right], outside[left],
                                  outside[right], post_bin[p, a])
        for a in range(h):
            for b in range(h):
                for c in range(h):
                    post_bin[p, a, b, c] /= tot
        for child in (left, right):
            s = 0.0
            for a in range(h):
                s += outside[child, a]
            for a in range(h):
                outside[child, a] /= s
    return math.log(z) + log_scale


@njit(cache=True)
def _gather(nodes, bin_p, lex_p, tb, tl):
    for p in range(nodes.shape[0]):
        r = nodes[p, 1]
        if nodes[p, 2] < 0:
            tl[p] = lex_p[r]
        else:
            tb[p] = bin_p[r]


@njit(cache=True)
def estep_trees(nodes, tree_offsets, bin_p, lex_p, root_p, bin_c, lex_c, root_c, store_bin, store_lex, store_root):
    """Batch E-step over a treebank (EM thesis eq. 4.5-4.9; VI with eq. 4.12 parameters).

    Adds every tree's expected annotated-rule counts to ``bin_c[r]``,
    ``lex_c[l]`` and ``root_c[A]``; returns ``sum_t log P(tree_t | theta)``.
    When ``store_root`` has a row per tree, the per-node counts are also kept
    in ``store_*`` (the CVI starting point, :func:`cvi_trees`).
    """
    h = root_p.shape[1]
    keep = store_root.shape[0] == tree_offsets.shape[0] - 1
    total = 0.0
    for t in range(tree_offsets.shape[0] - 1):
        tree = nodes[tree_offsets[t] : tree_offsets[t + 1]]
        m = tree.shape[0]
        tb = np.zeros((m, h, h, h))
        tl = np.zeros((m, h))
        _gather(tree, bin_p, lex_p, tb, tl)
        post_bin = np.zeros((m, h, h, h))
        post_lex = np.zeros((m, h))
        post_root = np.zeros(h)
        total += tree_posteriors(tree, tb, tl, root_p[tree[0, 0]], post_bin, post_lex, post_root)
        for p in range(m):
            r = tree[p, 1]
            if tree[p, 2] < 0:
                lex_c[r] += post_lex[p]
                if keep:
                    store_lex[tree[p, 4]] = post_lex[p]
            else:
                bin_c[r] += post_bin[p]
                if keep:
                    store_bin[tree[p, 4]] = post_bin[p]
        root_c[tree[0, 0]] += post_root
        if keep:
            store_root[t] = post_root
    return total


@njit(cache=True)
def _move_tree_counts(tree, t, sign, bin_parent, lex_parent, bin_c, lex_c, root_c, totals, root_total,
                      store_bin, store_lex, store_root):
    """Add ``sign`` times tree ``t``'s stored counts to the global tables and the row totals."""
    h = store_root.shape[1]
    for p in range(tree.shape[0]):
        r = tree[p, 1]
        slot = tree[p, 4]
        if tree[p, 2] < 0:
            a_sym = lex_parent[r]
            for a in range(h):
                v = sign * np.float64(store_lex[slot, a])
                lex_c[r, a] += v
                totals[a_sym, a] += v
        else:
            a_sym = bin_parent[r]
            for a in range(h):
                s = 0.0
                for b in range(h):
                    for c in range(h):
                        v = sign * np.float64(store_bin[slot, a, b, c])
                        bin_c[r, a, b, c] += v
                        s += v
                totals[a_sym, a] += s
    sym = tree[0, 0]
    for a in range(h):
        v = sign * np.float64(store_root[t, a])
        root_c[sym, a] += v
        root_total[0] += v


@njit(cache=True)
def cvi_trees(nodes, tree_offsets, order, bin_parent, lex_parent, bin_c, lex_c, root_c, totals, root_total,
              n_outcomes, n_root_outcomes, prior, store_bin, store_lex, store_root):
    """One collapsed variational pass over a treebank (thesis eq. 4.24 on annotated rules).

    For each tree ``t`` in ``order``: subtract its stored expected counts
    (``store_*``, float32 per node) from the global tables, form the surrogate
    parameters ``(E[C^{\\t}_{A[a]->beta}] + alpha) / (E[C^{\\t}_{A[a]->.}] + |R_A| alpha)``
    of the rules the tree uses (``|R_A|`` = ``n_outcomes[A]`` annotated outcomes of
    ``A[a]``; ``totals[A, a]`` holds ``E[C_{A[a]->.}]``), run inside-outside over
    the subtypes, store the new counts and add them back.  Returns
    ``sum_t log P(tree_t | theta-bar^{\\t})``.
    """
    h = root_c.shape[1]
    total = 0.0
    for t in order:
        tree = nodes[tree_offsets[t] : tree_offsets[t + 1]]
        m = tree.shape[0]
        _move_tree_counts(tree, t, -1.0, bin_parent, lex_parent, bin_c, lex_c, root_c, totals, root_total,
                          store_bin, store_lex, store_root)
        tb = np.zeros((m, h, h, h))
        tl = np.zeros((m, h))
        troot = np.zeros(h)
        for p in range(m):
            r = tree[p, 1]
            if tree[p, 2] < 0:
                sym = lex_parent[r]
                for a in range(h):
                    tl[p, a] = cvi_ratio_nb(lex_c[r, a], totals[sym, a], prior, n_outcomes[sym])
            else:
                sym = bin_parent[r]
                for a in range(h):
                    for b in range(h):
                        for c in range(h):
                            tb[p, a, b, c] = cvi_ratio_nb(bin_c[r, a, b, c], totals[sym, a], prior,
                                                          n_outcomes[sym])
        sym = tree[0, 0]
        for a in range(h):
            troot[a] = cvi_ratio_nb(root_c[sym, a], root_total[0], prior, n_root_outcomes)
        post_bin = np.zeros((m, h, h, h))
        post_lex = np.zeros((m, h))
        post_root = np.zeros(h)
        total += tree_posteriors(tree, tb, tl, troot, post_bin, post_lex, post_root)
        for p in range(m):
            slot = tree[p, 4]
            if tree[p, 2] < 0:
                store_lex[slot] = post_lex[p]
            else:
                store_bin[slot] = post_bin[p]
        store_root[t] = post_root
        _move_tree_counts(tree, t, 1.0, bin_parent, lex_parent, bin_c, lex_c, root_c, totals, root_total,
                          store_bin, store_lex, store_root)
    return total


@njit(cache=True)
def stored_counts(nodes, tree_offsets, bin_parent, lex_parent, bin_c, lex_c, root_c, totals, root_total,
                  store_bin, store_lex, store_root):
    """Global tables as the sum of the stored per-node counts (as float32 values, see :func:`cvi_trees`)."""
    for t in range(tree_offsets.shape[0] - 1):
        _move_tree_counts(nodes[tree_offsets[t] : tree_offsets[t + 1]], t, 1.0, bin_parent, lex_parent,
                          bin_c, lex_c, root_c, totals, root_total, store_bin, store_lex, store_root)
