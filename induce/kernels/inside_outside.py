"""Inside-outside for PCFGs in Chomsky normal form (numba kernels).

One dynamic program over spans in CKY order serves every use:

* :func:`inside_chart` fills ``chart[i, j, A]`` = P(A =>* x_i .. x_{j-1})
  (Lari & Young 1990) in the sum semiring, or the best-derivation score in the
  max semiring (Viterbi);
* :func:`outside_counts` runs the outside pass as the adjoint of the inside pass
  and accumulates expected rule counts (thesis eq. 4.8-4.9);
* :func:`trace_tree` walks the chart top-down, either taking the best split
  (Viterbi) or sampling a split in proportion to its inside mass, which draws an
  exact tree from ``p(z | x, theta)`` (Goodman 1998; the proposal of thesis
  eq. 4.15);
* corpus passes (batch E-step, collapsed variational pass thesis eq. 4.24,
  collapsed blocked Metropolis-Hastings thesis eq. 4.14-4.16) are single
  compiled calls.

Layout.  ``N`` nonterminals, ``V`` terminals.  Binary rules are stored as
``rules[B, C, A]`` = theta(A -> B C) (the parent last so that the innermost loop
is contiguous), terminal rules as ``emit[A, w]``.  A sentence's terminal
probabilities are gathered into ``e[j, A]`` = theta(A -> x_j).  Every row of
``e`` is divided by its sum ``s_j`` before the dynamic program: each tree emits
each word exactly once, so every tree's probability is scaled by the same
``prod_j s_j`` and long sentences cannot underflow; ``log Z`` adds the
``log s_j`` back.  A word no nonterminal can emit (``s_j = 0``) gets a flat row
so that it can still be parsed, and the sentence's log-likelihood is ``-inf``.

Trees are ``int32[2n-1, 6]`` node arrays in preorder: ``(A, i, j, k, B, C)``
for a binary node ``A -> B C`` over ``[i, j)`` split at ``k``, and
``(A, i, i+1, -1, -1, -1)`` for a preterminal emitting ``x_i``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .ratio import cvi_ratio_nb

NODE_COLS = 6


# --------------------------------------------------------------------- helpers
@njit(cache=True)
def _scale_rows(e):
    """Divide each row of ``e`` by its sum; return ``sum_j log s_j`` (``-inf`` if a row is 0)."""
    log_scale = 0.0
    for j in range(e.shape[0]):
        s = 0.0
        for a in range(e.shape[1]):
            s += e[j, a]
        if s > 0.0:
            for a in range(e.shape[1]):
                e[j, a] /= s
            log_scale += math.log(s)
        else:
            for a in range(e.shape[1]):
                e[j, a] = 1.0
            log_scale = -math.inf
    return log_scale


@njit(cache=True)
def gather_emissions(emit, words):
    """``e[j, A] = emit[A, words[j]]``, scaled in place; returns ``(e, sum_j log s_j)``."""
    n = words.shape[0]
    e = np.empty((n, emit.shape[0]))
    for j in range(n):
        for a in range(emit.shape[0]):
            e[j, a] = emit[a, words[j]]
    return e, _scale_rows(e)


# ------------------------------------------------------------------ inside DP
@njit(cache=True)
def inside_chart(rules, e, use_max):
    """Inside chart ``chart[i, j, A]`` over spans ``[i, j)`` in CKY order.

    ``chart[i, i+1, A] = e[i, A]`` and, for ``j - i >= 2``,
    ``chart[i, j, A] = sum_{k, B, C} theta(A -> B C) chart[i, k, B] chart[k, j, C]``
    (sum replaced by max when ``use_max``).
    """
    n = e.shape[0]
    nt = e.shape[1]
    chart = np.zeros((n + 1, n + 1, nt))
    for i in range(n):
        for a in range(nt):
            chart[i, i + 1, a] = e[i, a]
    for width in range(2, n + 1):
        for i in range(n - width + 1):
            j = i + width
            out = chart[i, j]
            for k in range(i + 1, j):
                left = chart[i, k]
                right = chart[k, j]
                for b in range(nt):
                    lb = left[b]
                    if lb == 0.0:
                        continue
                    for c in range(nt):
                        t = lb * right[c]
                        if t == 0.0:
                            continue
                        r = rules[b, c]
                        if use_max:
                            for a in range(nt):
                                v = r[a] * t
                                if v > out[a]:
                                    out[a] = v
                        else:
                            for a in range(nt):
                                out[a] += r[a] * t
    return chart


@njit(cache=True)
def outside_counts(rules, e, chart, start, bin_counts, pos_counts):
    """Outside pass and expected counts for one sentence (thesis eq. 4.8-4.9).

    The outside scores are the adjoints of the inside pass:
    ``out[i, k, B] += sum_A out[i, j, A] theta(A -> B C) chart[k, j, C]`` and
    symmetrically for ``C``.  Adds ``E[C(A -> B C)]`` to ``bin_counts[B, C, A]``
    and ``E[C(A -> x_i)]`` to ``pos_counts[i, A]`` (word positions, so that the
    caller can scatter them to ``emit`` columns).  Returns the scaled ``Z``.
    """
    n = e.shape[0]
    nt = e.shape[1]
    z = chart[0, n, start]
    if z == 0.0:
        return 0.0
    outside = np.zeros((n + 1, n + 1, nt))
    outside[0, n, start] = 1.0 / z
    for width in range(n, 1, -1):
        for i in range(n - width + 1):
            j = i + width
            oa = outside[i, j]
            for k in range(i + 1, j):
                left = chart[i, k]
                right = chart[k, j]
                for b in range(nt):
                    lb = left[b]
                    if lb == 0.0:
                        continue
                    for c in range(nt):
                        rc = right[c]
                        if rc == 0.0:
                            continue
                        r = rules[b, c]
                        s = 0.0
                        for a in range(nt):
                            s += oa[a] * r[a]
                        if s == 0.0:
                            continue
                        outside[i, k, b] += s * rc
                        outside[k, j, c] += s * lb
                        t = lb * rc
                        cnt = bin_counts[b, c]
                        for a in range(nt):
                            cnt[a] += oa[a] * r[a] * t
    for i in range(n):
        for a in range(nt):
            pos_counts[i, a] += outside[i, i + 1, a] * e[i, a]
    return z


@njit(cache=True)
def trace_tree(rules, chart, start, uniforms, sample, nodes):
    """Write a tree into ``nodes`` (preorder) by walking ``chart`` top-down.

    With ``sample`` a split ``(k, B, C)`` of ``A`` over ``[i, j)`` is drawn with
    probability ``theta(A -> B C) chart[i,k,B] chart[k,j,C] / chart[i,j,A]``
    using one uniform per binary node (``uniforms`` has ``>= n - 1`` entries),
    which samples exactly from ``p(z | x, theta)`` when ``chart`` is the sum
    chart; otherwise the best split is taken (Viterbi, on the max chart).
    """
    n = chart.shape[0] - 1
    nt = chart.shape[2]
    stack = np.empty((2 * n, 3), dtype=np.int64)
    stack[0, 0] = start
    stack[0, 1] = 0
    stack[0, 2] = n
    top = 1
    pos = 0
    draw = 0
    while top > 0:
        top -= 1
        a = stack[top, 0]
        i = stack[top, 1]
        j = stack[top, 2]
        nodes[pos, 0] = a
        nodes[pos, 1] = i
        nodes[pos, 2] = j
        if j - i == 1:
            nodes[pos, 3] = -1
            nodes[pos, 4] = -1
            nodes[pos, 5] = -1
            pos += 1
            continue
        target = uniforms[draw] * chart[i, j, a] if sample else 0.0
        draw += 1
        best = -1.0
        acc = 0.0
        bk = -1
        bb = -1
        bc = -1
        done = False
        for k in range(i + 1, j):
            for b in range(nt):
                lb = chart[i, k, b]
                if lb == 0.0:
                    continue
                for c in range(nt):
                    v = rules[b, c, a] * lb * chart[k, j, c]
                    if v == 0.0:
                        continue
                    if sample:
                        acc += v
                        bk, bb, bc = k, b, c
                        if acc >= target:
                            done = True
                            break
                    elif v > best:
                        best = v
                        bk, bb, bc = k, b, c
                if done:
                    break
            if done:
                break
        nodes[pos, 3] = bk
        nodes[pos, 4] = bb
        nodes[pos, 5] = bc
        pos += 1
        # push the right child first so that the left subtree comes next in preorder
        stack[top, 0] = bc
        stack[top, 1] = bk
        stack[top, 2] = j
        stack[top + 1, 0] = bb
        stack[top + 1, 1] = i
        stack[top + 1, 2] = bk
        top += 2
    return pos


@njit(cache=True)
def tree_log_prob(rules, emit, words, nodes):
    """``log P_G(x, z | theta)``: the sum of the log rule probabilities of tree ``z``."""
    lp = 0.0
    for p in range(nodes.shape[0]):
        a = nodes[p, 0]
        if nodes[p, 3] < 0:
            v = emit[a, words[nodes[p, 1]]]
        else:
            v = rules[nodes[p, 4], nodes[p, 5], a]
        if v <= 0.0:
            return -math.inf
        lp += math.log(v)
    return lp


# ----------------------------------------------------- counts <-> parameters
@njit(cache=True)
def add_tree_counts(nodes, words, sign, bin_counts, emit_counts, totals):
    """Add ``sign`` times the rule counts of tree ``nodes`` to the count tables."""
    for p in range(nodes.shape[0]):
        a = nodes[p, 0]
        if nodes[p, 3] < 0:
            emit_counts[a, words[nodes[p, 1]]] += sign
        else:
            bin_counts[nodes[p, 4], nodes[p, 5], a] += sign
        totals[a] += sign


@njit(cache=True)
def collapsed_tree_log_prob(nodes, words, bin_counts, emit_counts, totals, n_outcomes, prior):
    """``log p(z^i | x, z^{\\i}, alpha)`` up to a constant (thesis eq. 4.14 in the form 4.20/4.22).

    The counts passed in are ``C^{\\i}``; each rule use multiplies in
    ``(C^{\\i}_r + m_r + alpha) / (C^{\\i}_A. + m_A + |R_A| alpha)`` where ``m``
    counts the earlier uses in this tree.  The tables are restored on return.
    """
    lp = 0.0
    for p in range(nodes.shape[0]):
        a = nodes[p, 0]
        if nodes[p, 3] < 0:
            w = words[nodes[p, 1]]
            num = emit_counts[a, w]
            emit_counts[a, w] += 1.0
        else:
            b = nodes[p, 4]
            c = nodes[p, 5]
            num = bin_counts[b, c, a]
            bin_counts[b, c, a] += 1.0
        lp += math.log(num + prior) - math.log(totals[a] + n_outcomes[a] * prior)
        totals[a] += 1.0
    add_tree_counts(nodes, words, -1.0, bin_counts, emit_counts, totals)
    return lp


@njit(cache=True)
def surrogate_rules(bin_counts, totals, bin_mask, n_outcomes, prior):
    """``theta(A -> B C) = (C_{A->BC} + alpha) / (C_A. + |R_A| alpha)`` on allowed rules (eq. 4.16/4.24)."""
    nt = totals.shape[0]
    out = np.zeros((nt, nt, nt))
    for b in range(nt):
        for c in range(nt):
            for a in range(nt):
                if bin_mask[b, c, a]:
                    out[b, c, a] = cvi_ratio_nb(bin_counts[b, c, a], totals[a], prior, n_outcomes[a])
    return out


@njit(cache=True)
def surrogate_emissions(emit_counts, totals, emit_mask, n_outcomes, prior, words):
    """Per-position ``e[j, A] = (C_{A->x_j} + alpha) / (C_A. + |R_A| alpha)`` (eq. 4.16/4.24), unscaled."""
    n = words.shape[0]
    nt = totals.shape[0]
    e = np.zeros((n, nt))
    for j in range(n):
        w = words[j]
        for a in range(nt):
            if emit_mask[a, w]:
                e[j, a] = cvi_ratio_nb(emit_counts[a, w], totals[a], prior, n_outcomes[a])
    return e


@njit(cache=True)
def _scatter_positions(pos_counts, words, sign, emit_counts, totals):
    for j in range(words.shape[0]):
        for a in range(pos_counts.shape[1]):
            v = sign * pos_counts[j, a]
            emit_counts[a, words[j]] += v
            totals[a] += v


@njit(cache=True)
def _add_binary(src, sign, bin_counts, totals):
    nt = totals.shape[0]
    for b in range(nt):
        for c in range(nt):
            for a in range(nt):
                v = sign * src[b, c, a]
                bin_counts[b, c, a] += v
                totals[a] += v


# --------------------------------------------------------------- corpus passes
@njit(cache=True)
def estep_pass(tokens, offsets, rules, emit, start, bin_out, pos_out):
    """Batch E-step with fixed parameters (EM thesis eq. 4.5-4.9, VI with eq. 4.12 parameters).

    Adds sentence ``s``'s expected binary-rule counts to ``bin_out[s]`` when
    ``bin_out`` has one slab per sentence, else to ``bin_out[0]``, and its
    per-position terminal counts to ``pos_out[offsets[s]:offsets[s+1]]``.
    Returns the corpus log-likelihood ``sum_i log P(x^i | theta)``.
    """
    per_sentence = bin_out.shape[0] == offsets.shape[0] - 1
    total = 0.0
    for s in range(offsets.shape[0] - 1):
        words = tokens[offsets[s] : offsets[s + 1]]
        if words.shape[0] == 0:
            continue
        e, log_scale = gather_emissions(emit, words)
        chart = inside_chart(rules, e, False)
        z = outside_counts(rules, e, chart, start, bin_out[s if per_sentence else 0],
                           pos_out[offsets[s] : offsets[s + 1]])
        total += math.log(z) + log_scale if z > 0.0 else -math.inf
    return total


@njit(cache=True)
def trees_to_counts(tokens, offsets, trees, tree_offsets, bin_counts, emit_counts, totals):
    """Add the rule counts of every sentence's tree to the tables (sampler state)."""
    for s in range(offsets.shape[0] - 1):
        add_tree_counts(trees[tree_offsets[s] : tree_offsets[s + 1]], tokens[offsets[s] : offsets[s + 1]],
                        1.0, bin_counts, emit_counts, totals)


@njit(cache=True)
def log_likelihood_pass(tokens, offsets, rules, emit, start, out):
    """``out[i] = log P(x^i | theta)`` for every sentence (inside pass only)."""
    for s in range(offsets.shape[0] - 1):
        words = tokens[offsets[s] : offsets[s + 1]]
        if words.shape[0] == 0:
            out[s] = 0.0
            continue
        e, log_scale = gather_emissions(emit, words)
        chart = inside_chart(rules, e, False)
        z = chart[0, words.shape[0], start]
        out[s] = math.log(z) + log_scale if z > 0.0 else -math.inf


@njit(cache=True)
def cvi_pass(tokens, offsets, order, start, bin_counts, emit_counts, totals,
             sent_bin, sent_pos, bin_mask, emit_mask, n_outcomes, prior):
    """One collapsed variational pass (thesis eq. 4.24), sentences in ``order``.

    For each sentence: subtract its stored expected counts (``sent_bin[s]`` and
    the rows ``sent_pos[offsets[s]:offsets[s+1]]``) from the global tables,
    form the surrogate parameters ``(C^{\\i} + alpha) / (C^{\\i}_. + |R_A| alpha)``
    from what is left, run inside-outside, store the new counts and add them
    back.  Returns the sum of ``log P(x^i | theta-bar^{\\i})``.
    """
    total = 0.0
    for s in order:
        words = tokens[offsets[s] : offsets[s + 1]]
        pos = sent_pos[offsets[s] : offsets[s + 1]]
        _add_binary(sent_bin[s], -1.0, bin_counts, totals)
        _scatter_positions(pos, words, -1.0, emit_counts, totals)
        rules = surrogate_rules(bin_counts, totals, bin_mask, n_outcomes, prior)
        e = surrogate_emissions(emit_counts, totals, emit_mask, n_outcomes, prior, words)
        log_scale = _scale_rows(e)
        chart = inside_chart(rules, e, False)
        sent_bin[s][:] = 0.0
        pos[:] = 0.0
        z = outside_counts(rules, e, chart, start, sent_bin[s], pos)
        total += math.log(z) + log_scale if z > 0.0 else -math.inf
        _add_binary(sent_bin[s], 1.0, bin_counts, totals)
        _scatter_positions(pos, words, 1.0, emit_counts, totals)
    return total


@njit(cache=True)
def sample_pass(tokens, offsets, rules, emit, start, uniforms, trees, tree_offsets):
    """Draw one tree per sentence from ``p(z | x, theta)`` into ``trees`` (rows ``tree_offsets``).

    ``uniforms`` holds one uniform per token (``n - 1`` are used by sentence of length ``n``).
    """
    for s in range(offsets.shape[0] - 1):
        words = tokens[offsets[s] : offsets[s + 1]]
        if words.shape[0] == 0:
            continue
        e, _ = gather_emissions(emit, words)
        chart = inside_chart(rules, e, False)
        trace_tree(rules, chart, start, uniforms[offsets[s] : offsets[s + 1]], True,
                   trees[tree_offsets[s] : tree_offsets[s + 1]])


@njit(cache=True)
def viterbi_pass(tokens, offsets, rules, emit, start, trees, tree_offsets, scores):
    """Best tree per sentence (max semiring) and its log probability in ``scores``."""
    dummy = np.zeros(1)
    for s in range(offsets.shape[0] - 1):
        words = tokens[offsets[s] : offsets[s + 1]]
        if words.shape[0] == 0:
            scores[s] = 0.0
            continue
        e, log_scale = gather_emissions(emit, words)
        chart = inside_chart(rules, e, True)
        n = words.shape[0]
        z = chart[0, n, start]
        scores[s] = math.log(z) + log_scale if z > 0.0 else -math.inf
        trace_tree(rules, chart, start, dummy, False, trees[tree_offsets[s] : tree_offsets[s + 1]])


@njit(cache=True)
def mh_pass(tokens, offsets, order, start, bin_counts, emit_counts, totals, trees, tree_offsets,
            bin_mask, emit_mask, n_outcomes, prior, uniforms):
    """One sweep of the collapsed, blocked Metropolis-Hastings sampler (Johnson et al. 2007).

    For each sentence ``i`` in ``order``: remove its current tree's counts, form
    ``theta^H = (C^{\\i} + alpha) / (C^{\\i}_. + |R_A| alpha)`` (thesis eq. 4.16, whose
    denominator prints ``C_{A->.}``; we use ``C^{\\i}`` as Johnson et al. 2007 and eq. 4.23 do),
    draw ``z'`` from ``p(z | x^i, theta^H)`` by inside-chart sampling (eq. 4.15),
    and accept it with probability
    ``min(1, p*(z') q(z) / (p*(z) q(z')))`` where ``p*`` is the exact collapsed
    conditional (eq. 4.14) and ``q = P_G(., x^i | theta^H)``.  The accepted tree's
    counts are added back.  ``uniforms`` has one entry per token (the last of a
    sentence's is the acceptance draw).  Returns the number of accepted proposals.
    """
    accepted = 0
    for s in order:
        words = tokens[offsets[s] : offsets[s + 1]]
        n = words.shape[0]
        current = trees[tree_offsets[s] : tree_offsets[s + 1]]
        add_tree_counts(current, words, -1.0, bin_counts, emit_counts, totals)
        rules = surrogate_rules(bin_counts, totals, bin_mask, n_outcomes, prior)
        e = surrogate_emissions(emit_counts, totals, emit_mask, n_outcomes, prior, words)
        _scale_rows(e)
        chart = inside_chart(rules, e, False)
        proposal = np.empty_like(current)
        u = uniforms[offsets[s] : offsets[s + 1]]
        trace_tree(rules, chart, start, u, True, proposal)
        # log q(z) up to the shared normaliser P(x | theta^H): scaled e is common to both trees
        q_new = 0.0
        q_old = 0.0
        for p in range(proposal.shape[0]):
            q_new += _node_log_score(rules, e, proposal[p])
            q_old += _node_log_score(rules, e, current[p])
        p_new = collapsed_tree_log_prob(proposal, words, bin_counts, emit_counts, totals, n_outcomes, prior)
        p_old = collapsed_tree_log_prob(current, words, bin_counts, emit_counts, totals, n_outcomes, prior)
        log_ratio = (p_new - p_old) - (q_new - q_old)
        if n == 1 or log_ratio >= 0.0 or math.log(max(u[n - 1], 1e-300)) < log_ratio:
            current[:] = proposal
            accepted += 1
        add_tree_counts(current, words, 1.0, bin_counts, emit_counts, totals)
    return accepted


@njit(cache=True)
def _node_log_score(rules, e, node):
    if node[3] < 0:
        v = e[node[1], node[0]]
    else:
        v = rules[node[4], node[5], node[0]]
    return math.log(v) if v > 0.0 else -math.inf
