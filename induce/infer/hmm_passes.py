"""Compiled corpus passes for HMM inference: one call = one sweep over the corpus.

All passes share :func:`induce.kernels.hmm.forward_backward` (or, for the
per-token algorithms, no dynamic program at all) and differ only in how the
parameters are formed from counts and when the counts change (see
``induce.infer.estimators``):

* :func:`batch_pass`  -- E-step under fixed parameters (EM, VI); sentences in
  parallel (``prange``) with per-thread count buffers;
* :func:`cvi2_pass`   -- CVI algorithm 2 (thesis 3.44-3.50): for each sentence
  subtract its stored expected counts, run forward-backward under the surrogate
  parameters, store and add back the new counts;
* :func:`cvi1_pass`   -- CVI algorithm 1 (thesis 3.33 with 3.37-3.39): fully
  factorised ``q(z_t)``, O(K^2) per token;
* :func:`cgs_pass`    -- collapsed Gibbs sampling (thesis 3.25) with a
  temperature.

Count layout: transitions ``(K+1, K)`` with row 0 the start state, emissions
``(W, K)`` by word.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange
from numba.core import types
from numba.extending import overload

from ..kernels.hmm import _flushed, forward_backward, forward_backward_into, gather_emissions, transpose_transitions

_TINY = 1e-300


def n_threads() -> int:
    """Threads numba's parallel passes use."""
    return numba.get_num_threads()


def per_state(prior, K):
    """A Dirichlet concentration per state: ``prior`` itself if it is an array of length ``K``, else ``K`` copies
    of the scalar.  The cvi2 kernels take the emission concentration either way (a scalar: the symmetric
    ``Dir(beta)`` of every row; an array: row ``k`` ~ ``Dir(beta_k)``), with the same arithmetic."""
    if np.ndim(prior) == 0:
        return np.full(K, float(prior))
    if np.shape(prior) != (K,):
        raise ValueError(f"a per-state prior needs {K} values, got shape {np.shape(prior)}")
    return np.asarray(prior, dtype=np.float64)


@overload(per_state)
def _per_state_compiled(prior, K):
    """:func:`per_state` inside compiled kernels, resolved on the argument's type at compile time."""
    if isinstance(prior, types.Array):
        return lambda prior, K: prior
    return lambda prior, K: np.full(K, np.float64(prior))


@njit(cache=True)
def _max_length(offsets, lo, hi):
    m = 1
    for i in range(lo, hi):
        m = max(m, offsets[i + 1] - offsets[i])
    return m


@njit(cache=True, parallel=True)
def batch_pass(A, emit, allowed, tokens, offsets, trans_out, emit_out, gamma_out, n_chunks):
    """Expected counts of the whole corpus under fixed ``A`` and ``emit``.

    ``trans_out`` (K+1, K) and ``emit_out`` (W, K) are overwritten with the
    expected transition and emission counts; when ``gamma_out`` has N rows the
    token marginals are written there.  Returns ``sum_i log p(x^i)`` under the
    (possibly sub-normalised) parameters.  Sentences are split into
    ``n_chunks`` contiguous blocks processed in parallel (one per thread).
    """
    K = A.shape[1]
    W = emit_out.shape[0]
    I = offsets.shape[0] - 1
    n_chunks = max(1, min(n_chunks, I))
    trans_loc = np.zeros((n_chunks, K + 1, K))
    emit_loc = np.zeros((n_chunks, W, K))
    ll_loc = np.zeros(n_chunks)
    store = gamma_out.shape[0] == tokens.shape[0]
    for c in prange(n_chunks):
        lo = c * I // n_chunks
        hi = (c + 1) * I // n_chunks
        T_max = _max_length(offsets, lo, hi)
        fwd = np.empty((T_max, K))
        bwd = np.empty((T_max, K))
        E = np.empty((T_max, K))
        scale = np.empty(T_max)
        xi = np.empty((K, K))
        ll = 0.0
        for i in range(lo, hi):
            s = offsets[i]
            T = offsets[i + 1] - s
            if T == 0:
                continue
            x = tokens[s : s + T]
            gather_emissions(emit, x, allowed, E)
            ll += forward_backward(A, E, T, fwd, bwd, scale, xi)
            for k in range(K):
                trans_loc[c, 0, k] += fwd[0, k] * bwd[0, k]
            for j in range(K):
                for k in range(K):
                    trans_loc[c, j + 1, k] += A[j + 1, k] * xi[j, k]
            for t in range(T):
                w = x[t]
                for k in range(K):
                    g = fwd[t, k] * bwd[t, k]
                    emit_loc[c, w, k] += g
                    if store:
                        gamma_out[s + t, k] = g
        ll_loc[c] = ll
    trans_out[:] = 0.0
    emit_out[:] = 0.0
    for c in range(n_chunks):
        trans_out += trans_loc[c]
        emit_out += emit_loc[c]
    return ll_loc.sum()


@njit(cache=True)
def init_chain_posteriors(tokens, offsets, K, seed, sent_trans, gamma):
    """Random initial local posteriors ``q(z_t | z_{t-1}) ~ U[0, 1]`` (thesis footnote 5).

    Each sentence's ``q(z^i)`` is a Markov chain with row-normalised uniform
    random conditionals; its marginals go to ``gamma`` (N, K) and its expected
    transition counts to ``sent_trans[i]`` ((K+1, K); row 0 = start).
    """
    np.random.seed(seed)
    I = offsets.shape[0] - 1
    prev = np.empty(K)
    cur = np.empty(K)
    P = np.empty(K)
    for i in range(I):
        s = offsets[i]
        T = offsets[i + 1] - s
        sent_trans[i] = 0.0
        if T == 0:
            continue
        tot = 0.0
        for k in range(K):
            P[k] = np.random.random()
            tot += P[k]
        for k in range(K):
            prev[k] = P[k] / tot
            sent_trans[i, 0, k] = prev[k]
            gamma[s, k] = prev[k]
        for t in range(1, T):
            for k in range(K):
                cur[k] = 0.0
            for j in range(K):
                tot = 0.0
                for k in range(K):
                    P[k] = np.random.random()
                    tot += P[k]
                for k in range(K):
                    v = prev[j] * P[k] / tot
                    sent_trans[i, j + 1, k] += v
                    cur[k] += v
            for k in range(K):
                prev[k] = cur[k]
                gamma[s + t, k] = cur[k]


@njit(cache=True)
def totals_from_local(tokens, offsets, sent_trans, gamma, W, trans_out, emit_out):
    """Global counts as the exact sum of the stored per-sentence statistics."""
    K = gamma.shape[1]
    trans_out[:] = 0.0
    emit_out[:] = 0.0
    for i in range(offsets.shape[0] - 1):
        for j in range(K + 1):
            for k in range(K):
                trans_out[j, k] += sent_trans[i, j, k]
    for p in range(tokens.shape[0]):
        w = tokens[p]
        for k in range(K):
            emit_out[w, k] += gamma[p, k]


@njit(cache=True)
def shift_transitions(C_trans, row_tot, old, new):
    """Replace a sentence's stored transition table ``old`` by ``new`` (both (K+1, K))
    and move ``C_trans`` and its row sums ``row_tot`` by ``new - old``, in one sweep."""
    K = C_trans.shape[1]
    for j in range(K + 1):
        moved = 0.0
        for k in range(K):
            d = np.float64(new[j, k]) - np.float64(old[j, k])
            old[j, k] = new[j, k]
            C_trans[j, k] += d
            moved += d
        row_tot[j] += moved


@njit(cache=True)
def move_emissions(C_emit, col_tot, gamma, tokens, s, T, sign):
    """Add or subtract the state marginals ``gamma[s:s+T]`` of one sentence from the
    emission counts ``C_emit``, keeping its column sums ``col_tot`` in step."""
    K = C_emit.shape[1]
    for t in range(T):
        w = tokens[s + t]
        for k in range(K):
            v = sign * np.float64(gamma[s + t, k])
            C_emit[w, k] += v
            col_tot[k] += v


@njit(cache=True)
def surrogate_transitions(C_trans, row_tot, own, prior, prior_total, A):
    """Surrogate transitions without one sentence's counts ``own`` (K+1, K):

        A[j, k] = (C_{j,k} - own_{j,k} + prior[k]) / (C_{j,.} - own_{j,.} + prior_total),

    eq. 3.49 (``prior = alpha``, ``prior_total = K alpha``) and, for the
    HDP-HMM, eq. 5.38 (``prior = sigma G[pi_k]``, ``prior_total = sigma``).
    ``C^{\\i} = C - own`` is read on the fly, never stored; counts that
    rounding left below 0 are read as 0.
    """
    K = C_trans.shape[1]
    for j in range(K + 1):
        o = 0.0
        for k in range(K):
            o += np.float64(own[j, k])
        den = 1.0 / (max(row_tot[j] - o, 0.0) + prior_total)
        for k in range(K):
            A[j, k] = (max(C_trans[j, k] - np.float64(own[j, k]), 0.0) + prior[k]) * den


@njit(cache=True)
def replace_sentence(C_trans, row_tot, C_emit, col_tot, A, fwd, bwd, xi, T, old, gamma, tokens, s):
    """After :func:`induce.kernels.hmm.forward_backward` under ``A``: the sentence's new expected
    counts replace its stored ones ``old`` (K+1, K) and ``gamma[s:s+T]``, in one sweep over each.

    The values are :func:`induce.kernels.hmm.store_sentence`'s (start row ``q(z_0)``, transitions
    ``A[j+1, k] xi[j, k]``, marginals ``fwd[t] bwd[t]``; below ``1e-30`` stored as 0; rounded to the
    storage dtype); the transition totals move by ``new - old`` as they are stored, and the new
    marginals are added to the emission totals, whose old ones the caller subtracted before the
    dynamic program.  Stored values are read back, so the totals stay exact sums of them."""
    K = A.shape[1]
    for j in range(K + 1):
        moved = 0.0
        for k in range(K):
            v = fwd[0, k] * bwd[0, k] if j == 0 else A[j, k] * xi[j - 1, k]
            was = np.float64(old[j, k])
            old[j, k] = _flushed(v)
            d = np.float64(old[j, k]) - was
            C_trans[j, k] += d
            moved += d
        row_tot[j] += moved
    for t in range(T):
        p = s + t
        w = tokens[p]
        for k in range(K):
            gamma[p, k] = _flushed(fwd[t, k] * bwd[t, k])
            v = np.float64(gamma[p, k])
            C_emit[w, k] += v
            col_tot[k] += v


@njit(cache=True)
def cvi2_pass(C_trans, C_emit, sent_trans, gamma, tokens, offsets, order, alpha, beta, allowed):
    """One sweep of CVI algorithm 2 (thesis 3.44-3.50), sentences in ``order``.

    ``C_trans`` (K+1, K) and ``C_emit`` (W, K) must equal the sums of the stored
    local statistics ``sent_trans`` (I, K+1, K) and ``gamma`` (N, K); all four
    are updated in place.  For each sentence ``i``: form the surrogate parameters
    ``(C^{\\i} + a) / (C.^{\\i} + K a)`` (3.49, :func:`surrogate_transitions`) and
    ``(C^{\\i}_{k,w} + b_k) / (C^{\\i}_{.,k} + W b_k)`` (3.50; ``beta`` a scalar, the same ``b`` for every
    state, or a length-K array of per-state concentrations, :func:`per_state`) from the totals without
    its counts, run forward-backward, store the new expected counts and move
    the totals to them (:func:`replace_sentence`).  The transition counts are
    never subtracted in place: ``C^{\\i}`` is read as ``C - c_i`` while forming
    ``A`` and the totals move by ``new - old`` in one sweep (17% faster than
    subtracting and adding back, CoNLL-2000, K=45).  Returns
    ``sum_i log p(x^i | theta-^{\\i})``, the collapsed predictive log-likelihood
    of approximation 3.47.
    """
    K = C_trans.shape[1]
    W = C_emit.shape[0]
    row_tot = C_trans.sum(axis=1)
    col_tot = C_emit.sum(axis=0)
    T_max = _max_length(offsets, 0, offsets.shape[0] - 1)
    fwd = np.empty((T_max, K))
    bwd = np.empty((T_max, K))
    E = np.empty((T_max, K))
    scale = np.empty(T_max)
    xi = np.empty((K, K))
    A = np.empty((K + 1, K))
    AT = np.empty((K, K))
    EB = np.empty((T_max, K))
    prior = np.full(K, alpha)
    b = per_state(beta, K)
    inv_den = np.empty(K)
    constrained = allowed.shape[0] > 0
    ll = 0.0
    for n in range(order.shape[0]):
        i = order[n]
        s = offsets[i]
        T = offsets[i + 1] - s
        if T == 0:
            continue
        old = sent_trans[i]
        surrogate_transitions(C_trans, row_tot, old, prior, K * alpha, A)  # thesis eq. 3.49
        transpose_transitions(A, AT)
        # surrogate emissions (thesis eq. 3.50): a word may repeat in the sentence,
        # so all of its tokens leave the totals before any is gathered
        move_emissions(C_emit, col_tot, gamma, tokens, s, T, -1.0)
        for k in range(K):
            inv_den[k] = 1.0 / (max(col_tot[k], 0.0) + W * b[k])
        for t in range(T):
            w = tokens[s + t]
            for k in range(K):
                E[t, k] = (max(C_emit[w, k], 0.0) + b[k]) * inv_den[k]
            if constrained:
                for k in range(K):
                    if allowed[w, k] == 0:
                        E[t, k] = 0.0
        ll += forward_backward_into(A, AT, E, T, fwd, bwd, scale, xi, EB)
        replace_sentence(C_trans, row_tot, C_emit, col_tot, A, fwd, bwd, xi, T, old, gamma, tokens, s)
    return ll


@njit(cache=True)
def _outer_add(G, row, qa, qb, sign):
    """``G[row + j, k] += sign * qa[j] * qb[k]`` and return nothing (pair statistics)."""
    K = qa.shape[0]
    for j in range(K):
        a = sign * qa[j]
        for k in range(K):
            G[row + j, k] += a * qb[k]


@njit(cache=True)
def factorised_counts(tokens, offsets, q, W, G, C_emit):
    """Expected counts under a fully factorised ``q(z_t)``: pairs contribute outer products."""
    K = q.shape[1]
    G[:] = 0.0
    C_emit[:] = 0.0
    for i in range(offsets.shape[0] - 1):
        s = offsets[i]
        e = offsets[i + 1]
        if e == s:
            continue
        for k in range(K):
            G[0, k] += q[s, k]
        for p in range(s + 1, e):
            _outer_add(G, 1, q[p - 1], q[p], 1.0)
    for p in range(tokens.shape[0]):
        for k in range(K):
            C_emit[tokens[p], k] += q[p, k]


_FASTMATH = {"reassoc", "contract"}  # cvi1's helpers share the pass's flags, so inlining changes no result


@njit(cache=True, fastmath=_FASTMATH)
def _neighbours(q, p, t, T, a, b):
    """``a = q(z_{t-1})``, ``b = q(z_{t+1})`` of token ``t`` at flat position ``p``; a missing
    neighbour contributes no pair (zero vector)."""
    K = q.shape[1]
    for k in range(K):
        a[k] = q[p - 1, k] if t > 0 else 0.0
        b[k] = q[p + 1, k] if t < T - 1 else 0.0


@njit(cache=True, fastmath=_FASTMATH)
def _pair_products(G, a, b, pending, pa, pd, pb, f1, num):
    """One pass over the pair counts ``G[1:]``: ``f1 = a^T G[1:]`` and ``num = G[1:] b``, the two
    products of thesis eq. 3.37 and 3.39, with token ``t``'s pairs still in.  When ``pending``, the
    previous token's deferred add-back ``G[1:] += pa pd^T + pd pb^T`` is applied in the same pass."""
    K = G.shape[1]
    for k in range(K):
        f1[k] = 0.0
    for j in range(K):
        aj = a[j]
        dot = 0.0
        if pending:
            paj = pa[j]
            pdj = pd[j]
            for k in range(K):
                g = G[1 + j, k] + paj * pd[k] + pdj * pb[k]
                G[1 + j, k] = g
                f1[k] += aj * g
                dot += g * b[k]
        else:
            for k in range(K):
                g = G[1 + j, k]
                f1[k] += aj * g
                dot += g * b[k]
        num[j] = dot


@njit(cache=True, fastmath=_FASTMATH)
def _norm_and_dot(u, v):
    """``(u.u, u.v)`` in one pass."""
    uu = 0.0
    uv = 0.0
    for k in range(u.shape[0]):
        uu += u[k] * u[k]
        uv += u[k] * v[k]
    return uu, uv


@njit(cache=True, fastmath=_FASTMATH)
def _incoming_factor(G, q, p, t, a, qt, b, alpha, f1):
    """Factor 1 of the update (thesis eq. 3.37) in place of ``f1 = a^T G[1:]``:
    ``E[C^{\\t}_{z_{t-1},k}] + alpha``, the expected count of a move from ``z_{t-1}`` to ``k``
    without token ``t``'s pairs.  ``G^{\\t} = G - a q_t^T - q_t b^T``, so ``a^T G^{\\t}`` is ``f1``
    less ``(a.a) q_t + (a.q_t) b``; the pair ``(t-2, t-1)`` enters once, not through ``a^T G``
    (its correction ``a (q_{t-2} - a.q_{t-2})``).  At a sentence start it is the start count ``G[0]``."""
    K = G.shape[1]
    if t == 0:
        for k in range(K):
            f1[k] = max(G[0, k] - qt[k], 0.0) + alpha
        return
    aa, aq = _norm_and_dot(a, qt)
    for k in range(K):
        f1[k] -= aa * qt[k] + aq * b[k]
    if t >= 2:
        qpp = q[p - 2]
        dot = 0.0
        for j in range(K):
            dot += a[j] * qpp[j]
        for k in range(K):
            f1[k] += a[k] * (qpp[k] - dot)
    for k in range(K):
        f1[k] = max(f1[k], 0.0) + alpha


@njit(cache=True, fastmath=_FASTMATH)
def _outgoing_factor(R, q, p, t, T, a, qt, b, num, f1, alpha, new):
    """``new = f1 x`` factor 2 (thesis eq. 3.39): ``(E[C^{\\t}_{k,z_{t+1}}] + a + q_{t-1}(k) q_{t+1}(k))
    / (E[C^{\\t}_{k,.}] + K a + q_{t-1}(k))`` from ``num = G[1:] b`` less token ``t``'s pairs (and the
    pair ``(t+1, t+2)`` counted once) and the row totals ``R``; the last token of a sentence has no
    outgoing pair (``new = f1``)."""
    K = R.shape[0] - 1
    if t >= T - 1:
        for k in range(K):
            new[k] = f1[k]
        return
    bb, qb = _norm_and_dot(b, qt)
    bc = 0.0
    c = b
    if t < T - 2:
        c = q[p + 2]
        for k in range(K):
            bc += b[k] * c[k]
    for k in range(K):
        nk = num[k] - a[k] * qb - qt[k] * bb
        if t < T - 2:
            nk += b[k] * (c[k] - bc)
        nk = max(nk, 0.0) + alpha + a[k] * b[k]
        den = max(R[1 + k] - a[k] - qt[k], 0.0) + K * alpha + a[k]
        new[k] = f1[k] * nk / den


@njit(cache=True, fastmath=_FASTMATH)
def _emission_factor(C_emit, col_tot, w, qt, beta, allowed, new):
    """``new x`` factor 3 (thesis eq. 3.34), ``(E[C^{\\t}_{k,w}] + b) / (E[C^{\\t}_{.,k}] + W b)``,
    zero where the tag dictionary ``allowed`` (empty: none) forbids ``k`` for ``w``; returns the sum
    of ``new`` (the normaliser, at least ``_TINY``)."""
    K = C_emit.shape[1]
    W = C_emit.shape[0]
    constrained = allowed.shape[0] > 0
    tot = 0.0
    for k in range(K):
        v = new[k] * (max(C_emit[w, k] - qt[k], 0.0) + beta) / (max(col_tot[k] - qt[k], 0.0) + W * beta)
        if constrained and allowed[w, k] == 0:
            v = 0.0
        new[k] = v
        tot += v
    if tot < _TINY:
        tot = _TINY
    return tot


@njit(cache=True, fastmath=_FASTMATH)
def _set_marginal(new, tot, qt, d, change):
    """``q(z_t) <- new / tot`` (thesis eq. 3.33); ``d`` = new - old, what the counts change by.
    Returns the running total of changes ``change + sum |d|``."""
    for k in range(qt.shape[0]):
        v = new[k] / tot
        d[k] = v - qt[k]
        change += abs(d[k])
        qt[k] = v
    return change


@njit(cache=True, fastmath=_FASTMATH)
def _add_back(G, R, C_emit, col_tot, w, t, T, a, b, d, pa, pd, pb):
    """Add token ``t``'s statistics back with its new ``q(z_t)`` (change ``d``): the start row
    ``G[0]`` at a sentence start, the row totals ``R`` of the pair ``(t, t+1)``, the emission counts.
    The pair rows' update ``G[1:] += a d^T + d b^T`` is deferred to the next pass over ``G``
    (:func:`_pair_products`): it is stored in ``(pa, pd, pb)``; returns whether it is pending."""
    K = G.shape[1]
    if t == 0:
        for k in range(K):
            G[0, k] += d[k]
    for k in range(K):
        pa[k] = a[k]
        pd[k] = d[k]
        pb[k] = b[k]
    if t < T - 1:
        for j in range(K):
            R[1 + j] += d[j]
    for k in range(K):
        C_emit[w, k] += d[k]
        col_tot[k] += d[k]
    return T > 1


@njit(cache=True, fastmath=_FASTMATH)
def _apply_rank2(G, pa, pd, pb):
    """The deferred add-back of the last token: ``G[1:] += pa pd^T + pd pb^T``."""
    K = G.shape[1]
    for j in range(K):
        for k in range(K):
            G[1 + j, k] += pa[j] * pd[k] + pd[j] * pb[k]


@njit(cache=True, fastmath=_FASTMATH)
def cvi1_pass(G, C_emit, q, tokens, offsets, order, alpha, beta, allowed):
    """One sweep of CVI algorithm 1 (thesis eq. 3.33 with 3.37-3.39), token by token.

    ``q`` (N, K) holds the factorised marginals; ``G`` (K+1, K) and ``C_emit``
    (W, K) must equal :func:`factorised_counts` of ``q`` and are kept in sync.
    For token ``t`` the pairs ``(t-1, t)``, ``(t, t+1)`` and its emission are
    removed, ``q(z_t)`` is set to::

        (E[C^{\\t}_{z_{t-1},k}] + a)                                  (3.37)
      x (E[C^{\\t}_{k,z_{t+1}}] + a + q_{t-1}(k) q_{t+1}(k))
        / (E[C^{\\t}_{k,.}] + K a + q_{t-1}(k))                       (3.39)
      x (E[C^{\\t}_{k,x_t}] + b) / (E[C^{\\t}_{.,k}] + W b)           (3.34)

    and the new statistics are added back.  Returns the mean absolute change of q.

    The counts without token ``t`` are never formed: with ``G^{\\t} = G - q_{t-1} q_t^T
    - q_t q_{t+1}^T``, the two products it enters, ``q_{t-1}^T G^{\\t}`` (3.37) and
    ``G^{\\t} q_{t+1}`` (3.39), are one pass over ``G`` plus O(K) corrections,
    and putting token ``t`` back with its new ``q_t`` is one rank-2 update of
    ``G`` by the change ``d = q_t^{new} - q_t``, made during the next token's
    pass: one O(K^2) pass over ``G`` per token (four multiply-adds per entry).
    Steps: :func:`_neighbours`, :func:`_pair_products`, :func:`_incoming_factor`,
    :func:`_outgoing_factor`, :func:`_emission_factor`, :func:`_set_marginal`,
    :func:`_add_back` (numba inlines them: same speed as one body, docs/experiments/speed.md).
    """
    K = G.shape[1]
    R = G.sum(axis=1)
    col_tot = C_emit.sum(axis=0)
    a = np.zeros(K)
    b = np.zeros(K)
    d = np.zeros(K)
    f1 = np.zeros(K)
    new = np.empty(K)
    num = np.empty(K)
    pa = np.zeros(K)
    pd = np.zeros(K)
    pb = np.zeros(K)
    pending = False
    change = 0.0
    for n in range(order.shape[0]):
        i = order[n]
        s = offsets[i]
        T = offsets[i + 1] - s
        for t in range(T):
            p = s + t
            w = tokens[p]
            qt = q[p]
            _neighbours(q, p, t, T, a, b)
            _pair_products(G, a, b, pending, pa, pd, pb, f1, num)
            _incoming_factor(G, q, p, t, a, qt, b, alpha, f1)
            _outgoing_factor(R, q, p, t, T, a, qt, b, num, f1, alpha, new)
            tot = _emission_factor(C_emit, col_tot, w, qt, beta, allowed, new)
            change = _set_marginal(new, tot, qt, d, change)
            pending = _add_back(G, R, C_emit, col_tot, w, t, T, a, b, d, pa, pd, pb)
    if pending:
        _apply_rank2(G, pa, pd, pb)
    return change / max(1, tokens.shape[0])


@njit(cache=True)
def hard_counts(tokens, offsets, z, W, K, Ct, Ce):
    """Transition (K+1, K) and emission (W, K) counts of a state assignment ``z``."""
    Ct[:] = 0
    Ce[:] = 0
    for i in range(offsets.shape[0] - 1):
        s = offsets[i]
        e = offsets[i + 1]
        for p in range(s, e):
            prev = 0 if p == s else 1 + z[p - 1]
            Ct[prev, z[p]] += 1
            Ce[tokens[p], z[p]] += 1


@njit(cache=True)
def _tempered_table(offset, power, n):
    """``out[c] = (c + offset) ** power`` for the integer counts ``c = 0 .. n-1``."""
    out = np.empty(n)
    for c in range(n):
        if power == 1.0:
            out[c] = c + offset
        elif power == -1.0:
            out[c] = 1.0 / (c + offset)
        else:
            out[c] = (c + offset) ** power
    return out


@njit(cache=True)
def _count_tables(alpha, beta, K, W, power, size):
    """Tempered factors of thesis eq. 3.25 for counts ``0 .. size-1``: transition numerators
    ``(c + alpha)^s``, row totals ``(c + K alpha)^-s``, state totals ``(c + W beta)^-s``."""
    return (_tempered_table(alpha, power, size), _tempered_table(K * alpha, -power, size),
            _tempered_table(W * beta, -power, size))


@njit(cache=True, inline="always")
def _draw(prob, tot, old):
    """A state drawn from the unnormalised ``prob`` (sum ``tot``) by inversion; ``old`` when all are zero."""
    K = prob.shape[0]
    u = np.random.random() * tot
    new = K - 1
    acc = 0.0
    for k in range(K):
        acc += prob[k]
        if u < acc:
            new = k
            break
    if tot <= 0.0:
        new = old
    return new


@njit(cache=True)
def _cgs_tables(Ct, Ce, N, alpha, beta, s):
    """The start of a :func:`cgs_pass` sweep at the power ``s = 1/temperature``: the row totals ``R`` and state
    totals ``Nk`` of the counts (checked to be those of one assignment), the emission numerators ``(c + beta)^s``
    for the counts up to the largest word frequency, and :func:`_count_tables` of ``size`` entries.

    Every factor of eq. 3.25 is an integer count plus a constant, so its tempered value ``(c + const) ** s`` is
    looked up in a table built once per sweep.  Every transition count and row total indexed is at most the
    largest state total ``C_{.,k}`` (each token has one incoming transition), so the transition and state-total
    tables are sized by that (and grow when it does); emission counts are at most the largest word frequency."""
    K = Ct.shape[1]
    W = Ce.shape[0]
    R = Ct.sum(axis=1)
    Nk = Ce.sum(axis=0)
    for k in range(K):
        if Ct[:, k].sum() != Nk[k]:
            raise ValueError("cgs_pass: Ct and Ce are not the counts of one state assignment")
    max_freq = 0
    for w in range(W):
        max_freq = max(max_freq, Ce[w].sum())
    emit_num = _tempered_table(beta, s, max_freq + 1)  # emission numerators (c + beta)^s
    size = min(N, 2 * Nk.max()) + 2
    trans_num, trans_den, emit_den = _count_tables(alpha, beta, K, W, s, size)
    return R, Nk, emit_num, size, trans_num, trans_den, emit_den


@njit(cache=True)
def cgs_pass(Ct, Ce, z, tokens, offsets, alpha, beta, temperature, seed, allowed, votes):
    """One sweep of collapsed Gibbs sampling (thesis eq. 3.25) at a temperature.

    ``Ct`` (K+1, K), ``Ce`` (W, K) are integer counts of the assignment ``z``
    and are kept in sync.  Each ``z_t`` is drawn from the conditional raised to
    ``1/temperature``.  When ``votes`` has N rows the new sample is tallied into
    it (for max-marginal decoding over kept samples).  Returns the number of
    changed states.

    Every factor of eq. 3.25 is looked up in the tables of :func:`_cgs_tables`: a token's conditional costs
    ``5 K`` lookups and multiplications, no power or division; the deltas of eq. 3.25 (``z_{t-1} = z_t``,
    ``z_{t-1} = z_t = z_{t+1}``) are index offsets into them.
    Per token: remove its counts, its tempered conditional (eq. 3.25), a draw
    (:func:`_draw`), add its counts back.  These steps stay in the loop body:
    as njit helpers (plain or ``inline="always"``) numba kept reference-count
    operations on their array arguments per token and the sweep took 1.3x as
    long (docs/experiments/speed.md).
    """
    np.random.seed(seed)
    K = Ct.shape[1]
    W = Ce.shape[0]
    N = tokens.shape[0]
    s = 1.0 / temperature
    R, Nk, emit_num, size, trans_num, trans_den, emit_den = _cgs_tables(Ct, Ce, N, alpha, beta, s)
    prob = np.empty(K)
    tally = votes.shape[0] == N
    constrained = allowed.shape[0] > 0
    changed = 0
    for i in range(offsets.shape[0] - 1):
        start = offsets[i]
        end = offsets[i + 1]
        for p in range(start, end):
            w = tokens[p]
            old = z[p]
            prev = 0 if p == start else 1 + z[p - 1]
            has_next = p + 1 < end
            nxt = z[p + 1] if has_next else -1
            # remove the token's counts: transition in, transition out, emission
            Ct[prev, old] -= 1
            R[prev] -= 1
            if has_next:
                Ct[1 + old, nxt] -= 1
                R[1 + old] -= 1
            Ce[w, old] -= 1
            Nk[old] -= 1
            # eq. 3.25 with the counts C^{\t}, tempered; [prev = k] and [prev = k = next] as index offsets
            same = prev - 1  # the state of z_{t-1} (-1 at a sentence start)
            tot = 0.0
            for k in range(K):
                v = trans_num[Ct[prev, k]] * emit_num[Ce[w, k]] * emit_den[Nk[k]]
                if has_next:
                    d_prev = 1 if k == same else 0
                    d_all = 1 if (k == same and k == nxt) else 0
                    v *= trans_num[Ct[1 + k, nxt] + d_all] * trans_den[R[1 + k] + d_prev]
                if constrained and allowed[w, k] == 0:
                    v = 0.0
                prob[k] = v
                tot += v
            new = _draw(prob, tot, old)
            z[p] = new
            if new != old:
                changed += 1
            # add the token back in its new state
            Ct[prev, new] += 1
            R[prev] += 1
            if has_next:
                Ct[1 + new, nxt] += 1
                R[1 + new] += 1
            Ce[w, new] += 1
            Nk[new] += 1
            if Nk[new] + 2 > size:
                size = min(N, 2 * Nk[new]) + 2
                trans_num, trans_den, emit_den = _count_tables(alpha, beta, K, W, s, size)
            if tally:
                votes[p, new] += 1
    return changed


def random_start(tokens, offsets, K: int, seed: int, allowed: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """The shared starting point ``(sent_trans (I, K+1, K), gamma (N, K))``: random local posteriors
    (thesis footnote 5, :func:`init_chain_posteriors`), the token marginals restricted to the states
    ``allowed[word]`` (a tag dictionary; empty: none) and renormalised.  cvi2 on a cluster draws it per shard on
    the workers (:mod:`induce.distributed.cvi2`)."""
    sent_trans = np.zeros((len(offsets) - 1, K + 1, K), dtype=dtype)
    gamma = np.zeros((len(tokens), K), dtype=dtype)
    init_chain_posteriors(tokens, offsets, K, int(seed), sent_trans, gamma)
    if allowed.shape[0]:
        gamma *= allowed[tokens]
        gamma /= np.maximum(gamma.sum(axis=1, keepdims=True), 1e-300)
    return sent_trans, gamma
