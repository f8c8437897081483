"""Numba kernels of the collapsed Gibbs sampler for word alignment (Östling & Tiedemann 2016, eflomal).

Same layout as :mod:`induce.kernels.align`: pair ``s`` owns the ``(I+1)*J`` cells
``cell_off[s] + j*(I+1) + i`` (``i = 0`` NULL, ``i >= 1`` source position
``i``), ``cells[c]`` is the translation-table entry of a cell, ``entry_row[k]``
its row (0 = NULL).  The sampler state is one link per target token,
``links[t]`` (0-based source position, ``-1`` = NULL), and the counts it implies:

* ``lex[k]`` / ``lex_tot[r]``: links per table entry / row,
* ``jumps[b]``: jumps between consecutive non-NULL links of a pair, bucketed
  ``b = clip(i - p, -D, D) + D``, from the start (``p = -1``) and to the end
  (``i = I``),
* ``fert[e * F + min(phi, F - 1)]``: source tokens of word ``e`` with
  fertility ``phi`` (links to them), ``F`` fertility buckets.

The model is the product of Dirichlet-multinomial marginals (all parameters
integrated out), with a fixed NULL probability ``p0``::

    P(a) ∝ prod_j [p0 if a_j = NULL else (1 - p0) (/ I at level 1)]
           * DM(lex | alpha) [* DM(jumps | beta) at level >= 2] [* prod_e DM(fert_e | gamma) at level 3]

Level 1 is IBM Model 1, 2 the HMM (jumps), 3 adds fertility (eflomal's
``-m 1/2/3``).  A sweep resamples every ``a_j`` from its exact collapsed
conditional ``P(a_j = i | a_{-j}) ∝ P(a with a_j = i)``: remove everything
``a_j`` contributes to the counts, then multiply the predictive probabilities
of adding it back (for the two jumps in turn, so that a shared bucket counts
the first).  Unlike eflomal, the fertility distributions are collapsed too
(eflomal draws them once per pass).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .align import _max_src, _max_tgt, _pair_dims, jump_bucket


@intrinsic
def _prefetch(typingctx, array, index):
    """Ask the CPU to bring ``array[index]`` into its caches (LLVM's ``llvm.prefetch``: a read, high locality):
    no effect on any value, no fault on any address.  The sampler's counts are random reads of a table of millions
    of entries; asking for the next target token's entries while the current one is sampled lets those misses
    overlap (docs/experiments/alignment.md, "Throughput, fourth round")."""
    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        ary = context.make_array(array_type)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, array_type, ary, [args[1]], wraparound=False)
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        # (the unmangled name: LLVM's auto-upgrade mangles it for the pointer type of its version, p0i8 or p0)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
                                            "llvm.prefetch")
        builder.call(fn, [builder.bitcast(ptr, byte_ptr), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


@njit(cache=True, inline="always")
def _prefetch_token(lex, cells, base, n):
    """Prefetch the counts of one target token's ``n`` cells from ``base`` on."""
    for c in range(base, base + n):
        _prefetch(lex, cells[c])


@njit(cache=True, inline="always")
def _prefetch_pair(s, src_off, tgt_off, src_tok, cell_off, cells, lex, inv_tot, fert, n_fert):
    """Prefetch what pair ``s``'s first target token reads: its cells' counts, and its source words' inverse row
    normalisers and fertility counts."""
    if tgt_off[s + 1] > tgt_off[s]:
        _prefetch_token(lex, cells, cell_off[s], src_off[s + 1] - src_off[s] + 1)
    for x in range(src_off[s], src_off[s + 1]):
        _prefetch(inv_tot, src_tok[x] + 1)
        _prefetch(fert, src_tok[x] * n_fert)


@njit(cache=True, nogil=True)
def gibbs_random_links(src_off, tgt_off, p0, seed, links):
    """eflomal's start: each link NULL with probability ``p0``, else a uniform source position."""
    np.random.seed(seed)
    for s in range(len(src_off) - 1):
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        for t in range(tgt_off[s], tgt_off[s + 1]):
            links[t] = -1 if n_src == 0 or np.random.random() < p0 else np.random.randint(0, n_src)


@njit(cache=True, nogil=True)
def gibbs_counts(src_off, tgt_off, src_tok, cell_off, cells, entry_row, links, n_fert, lex, lex_tot, jumps, fert):
    """Fill the count arrays (zeroed first) from ``links`` (module docstring)."""
    lex[:] = 0
    lex_tot[:] = 0
    jumps[:] = 0
    fert[:] = 0
    max_jump = (len(jumps) - 1) // 2
    phi = np.zeros(int(np.max(np.diff(src_off))) + 1 if len(src_off) > 1 else 1, dtype=np.int64)
    for s in range(len(src_off) - 1):
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        phi[:n_src] = 0
        prev = -1
        for j in range(n_tgt):
            i = links[tgt_off[s] + j]
            k = cells[cell_off[s] + j * (n_src + 1) + i + 1]
            lex[k] += 1
            lex_tot[entry_row[k]] += 1
            if i >= 0:
                jumps[jump_bucket(i - prev, max_jump)] += 1
                phi[i] += 1
                prev = i
        if n_src:
            jumps[jump_bucket(n_src - prev, max_jump)] += 1
        for i in range(n_src):
            fert[src_tok[src_off[s] + i] * n_fert + min(phi[i], n_fert - 1)] += 1


@njit(cache=True, inline="always")
def _move_fert(fert, e, n_fert, old, new):
    """One source token of word ``e`` goes from fertility ``old`` to ``new``."""
    fert[e * n_fert + min(old, n_fert - 1)] -= 1
    fert[e * n_fert + min(new, n_fert - 1)] += 1


@njit(cache=True, fastmath=True, inline="always")
def _conditional(c0, n_src, j, prev, nxt, e_row, phi, cells, lex, inv_tot, alpha,
                 jumps, jump_tot, jump_alpha, fert, n_fert, fert_alpha, p0, level, probs):
    """Unnormalised ``P(a_j = i | rest)`` into ``probs[0..I]`` (0 = NULL) with ``a_j``'s counts removed;
    ``prev`` / ``nxt``: the nearest non-NULL links left (-1 at the start) and right (``I`` at the end);
    ``inv_tot[r] = 1 / (C(r, .) + K_r alpha)`` (see :func:`_move_lex`).

    At level >= 2 every entry is scaled by ``(N + D beta) (N + 1 + D beta)`` (``N`` jumps, ``D`` buckets): the
    NULL entry keeps one factor, the real ones none (two divisions less per cell)."""
    max_jump = (len(jumps) - 1) // 2
    base = c0 + j * (n_src + 1)
    # thesis eq. 3.49 with the row's inverse normaliser kept: (C(e, f) + a) / (C(e, .) + K_e a)
    v = p0 * (lex[cells[base]] + alpha) * inv_tot[0]
    if level >= 2:
        v *= (jumps[jump_bucket(nxt - prev, max_jump)] + jump_alpha) * (jump_tot + 1.0 + len(jumps) * jump_alpha)
    probs[0] = v
    z = v
    real = (1.0 - p0) / n_src if level == 1 else 1.0 - p0
    unclipped = n_src + 1 <= max_jump  # then the buckets run max_jump + p - prev up and max_jump + nxt - p down
    up, down, same = max_jump - prev, max_jump + nxt, prev + nxt
    for p in range(n_src):  # source position p = cell i - 1
        v = (lex[cells[base + 1 + p]] + alpha) * inv_tot[e_row[p] + 1] * real
        if level >= 2:
            if unclipped:
                v *= (jumps[up + p] + jump_alpha) * (jumps[down - p] + jump_alpha + (1.0 if 2 * p == same else 0.0))
            else:
                d1 = jump_bucket(p - prev, max_jump)
                d2 = jump_bucket(nxt - p, max_jump)
                v *= (jumps[d1] + jump_alpha) * (jumps[d2] + jump_alpha + (1.0 if d1 == d2 else 0.0))
        if level >= 3:
            f_old = min(phi[p], n_fert - 1)
            f_new = min(phi[p] + 1, n_fert - 1)
            if f_new != f_old:
                row = e_row[p] * n_fert
                v *= (fert[row + f_new] + fert_alpha) / (fert[row + f_old] - 1.0 + fert_alpha)
        probs[p + 1] = v
        z += v
    return z


@njit(cache=True, inline="always")
def _move_lex(k, sign, lex, lex_tot, inv_tot, entry_row, alpha, n_outcomes):
    """Add ``sign`` links to table entry ``k``, keeping its row's ``inv_tot = 1 / (C(r, .) + K_r alpha)``."""
    r = entry_row[k]
    lex[k] += sign
    lex_tot[r] += sign
    inv_tot[r] = 1.0 / (lex_tot[r] + n_outcomes[r] * alpha)


@njit(cache=True, inline="always")
def _jump_move(jumps, prev, nxt, i, sign, max_jump):
    """Add (``sign`` 1) or remove (-1) the jumps a link to ``i`` (-1 = NULL) makes between ``prev`` and ``nxt``;
    returns the change of the jump total."""
    if i < 0:
        jumps[jump_bucket(nxt - prev, max_jump)] += sign
        return sign
    jumps[jump_bucket(i - prev, max_jump)] += sign
    jumps[jump_bucket(nxt - i, max_jump)] += sign
    return 2 * sign


@njit(cache=True, fastmath=True, nogil=True)
def gibbs_sweep(order, src_off, tgt_off, src_tok, cell_off, cells, entry_row, links, lex, lex_tot, alpha,
                n_outcomes, jumps, jump_alpha, fert, n_fert, fert_alpha, p0, level, seed, acc, acc_weight):
    """One Gibbs sweep over the pairs ``order`` at model ``level`` (module docstring).

    With ``acc_weight > 0`` the conditionals themselves are added, times ``acc_weight``, to the per-cell link
    marginals ``acc`` (a Rao-Blackwellised estimate, as eflomal's final pass).  Returns ``sum_j log z_j``, the
    log normalisers of the (scaled, :func:`_conditional`) conditionals: a diagnostic that settles as the chain
    mixes.
    """
    np.random.seed(seed)
    max_jump = (len(jumps) - 1) // 2
    max_src = _max_src(order, src_off)  # (of this call's pairs only: no pass over the corpus per call)
    probs = np.empty(max_src + 1)
    phi = np.zeros(max_src + 1, dtype=np.int64)
    nxt_of = np.empty(_max_tgt(order, tgt_off) + 1, dtype=np.int64)
    jump_tot = 0.0
    for b in range(len(jumps)):
        jump_tot += jumps[b]
    inv_tot = 1.0 / (lex_tot + n_outcomes[:len(lex_tot)] * alpha)
    total, scale = 0.0, 1.0
    for x in range(len(order)):
        s = order[x]
        if x + 1 < len(order):
            _prefetch_pair(order[x + 1], src_off, tgt_off, src_tok, cell_off, cells, lex, inv_tot, fert, n_fert)
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        if n_src == 0 or n_tgt == 0:
            continue
        t0, c0 = tgt_off[s], cell_off[s]
        e_row = src_tok[src_off[s]:src_off[s + 1]]
        phi[:n_src] = 0
        nxt = n_src
        for j in range(n_tgt - 1, -1, -1):  # nearest non-NULL link to the right of each j
            nxt_of[j] = nxt
            if links[t0 + j] >= 0:
                nxt = links[t0 + j]
                phi[nxt] += 1
        prev = -1
        for j in range(n_tgt):
            if j + 1 < n_tgt:  # (the next token's counts arrive while this one is sampled)
                _prefetch_token(lex, cells, c0 + (j + 1) * (n_src + 1), n_src + 1)
            old = links[t0 + j]
            _move_lex(cells[c0 + j * (n_src + 1) + old + 1], -1, lex, lex_tot, inv_tot, entry_row, alpha, n_outcomes)
            jump_tot += _jump_move(jumps, prev, nxt_of[j], old, -1, max_jump)
            if old >= 0:
                _move_fert(fert, e_row[old], n_fert, phi[old], phi[old] - 1)
                phi[old] -= 1
            z = _conditional(c0, n_src, j, prev, nxt_of[j], e_row, phi, cells, lex, inv_tot, alpha,
                             jumps, jump_tot, jump_alpha, fert, n_fert, fert_alpha, p0, level, probs)
            scale *= z  # (the log of the product, taken before it can overflow: no log per token)
            if scale > 1e150 or scale < 1e-150:
                total += np.log(scale)
                scale = 1.0
            if acc_weight > 0.0:
                w = acc_weight / z
                for i in range(n_src + 1):
                    acc[c0 + j * (n_src + 1) + i] += w * probs[i]
            u = np.random.random() * z
            new = n_src  # (guards rounding: the last cell)
            run = 0.0
            for i in range(n_src + 1):
                run += probs[i]
                if u < run:
                    new = i
                    break
            new -= 1
            links[t0 + j] = new
            _move_lex(cells[c0 + j * (n_src + 1) + new + 1], 1, lex, lex_tot, inv_tot, entry_row, alpha, n_outcomes)
            jump_tot += _jump_move(jumps, prev, nxt_of[j], new, 1, max_jump)
            if new >= 0:
                _move_fert(fert, e_row[new], n_fert, phi[new], phi[new] + 1)
                phi[new] += 1
                prev = new
    return total + np.log(scale)



# ------------------------------------------------ collapsed variational inference over the same counts
# q(a_j) is one distribution per target token over its cells (the layout of ``cells``: NULL first), and the
# counts above become their expectations under the mean field: ``lex`` / ``lex_tot`` from the cells' q, the jump
# buckets from the distribution of the nearest non-NULL link to the left / right of each token, the fertility
# buckets from the Poisson-binomial distribution of each source token's fertility (truncated at F - 1).


@njit(cache=True, inline="always")
def _bernoulli_step(dist, q, n_fert):
    """``dist`` (a fertility distribution, the last bucket ">= F-1") convolved with one Bernoulli(q) link."""
    top = n_fert - 1
    dist[top] += q * dist[top - 1]
    for b in range(top - 1, 0, -1):
        dist[b] = (1.0 - q) * dist[b] + q * dist[b - 1]
    dist[0] *= 1.0 - q


@njit(cache=True)
def _pair_fertility(q, c0, n_src, n_tgt, n_fert, dist):
    """``dist[i]``: the Poisson-binomial distribution of source position ``i``'s fertility under the
    independent ``q(a_j = i)`` of the pair's target tokens (Teh et al. 2007, sec. 3: counts under the mean field
    are sums of independent Bernoullis), truncated at ``F - 1``."""
    for i in range(n_src):
        dist[i, :] = 0.0
        dist[i, 0] = 1.0
    for j in range(n_tgt):
        base = c0 + j * (n_src + 1) + 1
        for i in range(n_src):
            _bernoulli_step(dist[i], np.float64(q[base + i]), n_fert)


@njit(cache=True)
def _pair_jumps(q, c0, n_src, n_tgt, sign, jumps, left):
    """Add ``sign`` times the pair's expected jump counts: ``q(a_j = i) m_j(p)`` in bucket ``b(i - p)`` with
    ``m_j(p)`` the probability that the nearest non-NULL link left of ``j`` is ``p`` (``p = -1``: the start;
    ``m_{j+1} = q(a_j = NULL) m_j + q(a_j = .)``), and the end jump ``b(I - p)`` with ``m_J``.  ``left`` is
    scratch of ``I + 1`` entries (``left[p + 1] = m(p)``)."""
    max_jump = (len(jumps) - 1) // 2
    left[:n_src + 1] = 0.0
    left[0] = 1.0
    for j in range(n_tgt):
        base = c0 + j * (n_src + 1)
        for i in range(n_src):
            qi = sign * np.float64(q[base + 1 + i])
            for p in range(-1, n_src):
                if left[p + 1] != 0.0:
                    jumps[jump_bucket(i - p, max_jump)] += qi * left[p + 1]
        q_null = np.float64(q[base])
        for p in range(-1, n_src):
            left[p + 1] *= q_null
        for i in range(n_src):
            left[i + 1] += np.float64(q[base + 1 + i])
    for p in range(-1, n_src):
        jumps[jump_bucket(n_src - p, max_jump)] += sign * left[p + 1]


@njit(cache=True)
def _add_pair_structure(q, c0, n_src, n_tgt, e_row, level, jumps, fert, n_fert, left, dist):
    """Add the pair's expected jump (level >= 2) and fertility (level 3) counts of its marginals ``q``; ``e_row``
    the rows of its source words."""
    if level >= 2:
        _pair_jumps(q, c0, n_src, n_tgt, 1.0, jumps, left)
    if level >= 3:
        _pair_fertility(q, c0, n_src, n_tgt, n_fert, dist)
        for i in range(n_src):
            for b in range(n_fert):
                fert[e_row[i] * n_fert + b] += dist[i, b]


@njit(cache=True)
def cvi_counts(src_off, tgt_off, src_tok, cell_off, cells, entry_row, q, n_fert, level, lex, lex_tot, jumps, fert):
    """Fill the expected counts (float64, zeroed first) of the cell marginals ``q`` (the jumps at level >= 2,
    the fertilities at level 3): the module's counts under the mean field."""
    lex[:] = 0.0
    lex_tot[:] = 0.0
    jumps[:] = 0.0
    fert[:] = 0.0
    max_src = int(np.max(np.diff(src_off))) if len(src_off) > 1 else 0
    dist = np.empty((max_src + 1, n_fert))
    left = np.empty(max_src + 2)
    for s in range(len(src_off) - 1):
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        c0 = cell_off[s]
        for c in range(c0, c0 + (n_src + 1) * n_tgt):
            lex[cells[c]] += q[c]
            lex_tot[entry_row[cells[c]]] += q[c]
        if n_src == 0:
            continue
        _add_pair_structure(q, c0, n_src, n_tgt, src_tok[src_off[s]:src_off[s + 1]], level, jumps, fert, n_fert,
                            left, dist)


@njit(cache=True)
def _cvi_pair_start(q, c0, n_src, n_tgt, e_row, level, jumps, fert, n_fert, fert_alpha, left, right, dist, suffix,
                    ratio):
    """Take the pair's expected jump (level >= 2) and fertility (level 3) counts out and set up its visit:
    ``right[j, n]`` the probability that the nearest non-NULL link right of ``j`` is ``n`` (``n = I``: the end),
    ``left`` that of the start (``m(-1) = 1``), ``suffix[j, i]`` the fertility distribution of ``i`` from the
    tokens after ``j``, ``dist[i]`` (from the tokens before ``j``) empty, ``ratio[i, phi]`` the fertility ratio of
    ``i``'s word with the pair's counts out (1 in the last bucket)."""
    if level >= 2:
        _pair_jumps(q, c0, n_src, n_tgt, -1.0, jumps, left)
        right[n_tgt - 1, :n_src + 1] = 0.0
        right[n_tgt - 1, n_src] = 1.0
        for j in range(n_tgt - 1, 0, -1):
            base = c0 + j * (n_src + 1)
            q_null = np.float64(q[base])
            for n in range(n_src + 1):
                right[j - 1, n] = q_null * right[j, n]
            for i in range(n_src):
                right[j - 1, i] += np.float64(q[base + 1 + i])
        left[:n_src + 1] = 0.0
        left[0] = 1.0
    if level >= 3:
        _pair_fertility(q, c0, n_src, n_tgt, n_fert, dist)
        for i in range(n_src):
            row = e_row[i] * n_fert
            for b in range(n_fert):
                fert[row + b] -= dist[i, b]
                suffix[n_tgt - 1, i, b] = 1.0 if b == 0 else 0.0
                dist[i, b] = 1.0 if b == 0 else 0.0
        for i in range(n_src):  # (after every token of the pair is out: F_e of the other pairs)
            row = e_row[i] * n_fert
            for b in range(n_fert - 1):
                ratio[i, b] = (max(fert[row + b + 1], 0.0) + fert_alpha) / (max(fert[row + b], 0.0) + fert_alpha)
            ratio[i, n_fert - 1] = 1.0
        for j in range(n_tgt - 1, 0, -1):
            base = c0 + j * (n_src + 1) + 1
            for i in range(n_src):
                suffix[j - 1, i, :] = suffix[j, i, :]
                _bernoulli_step(suffix[j - 1, i], np.float64(q[base + i]), n_fert)


@njit(cache=True, fastmath=True, inline="always")
def _cvi_weights(base, n_src, j, cells, entry_row, lex, inv_tot, alpha, jumps, norm, jump_alpha, n_fert, p0, level,
                 left, right, dist, suffix, ratio, new):
    """The unnormalised ``q(a_j)`` of :func:`cvi_sweep` into ``new[0..I]`` (0 = NULL), scaled as in
    :func:`_conditional` (``norm = N + D b``); returns their sum."""
    max_jump = (len(jumps) - 1) // 2
    v = p0 * (max(lex[cells[base]], 0.0) + alpha) * inv_tot[entry_row[cells[base]]]
    if level >= 2:
        e_skip = 0.0
        for p in range(-1, n_src):
            if left[p + 1] != 0.0:
                acc = 0.0
                for n in range(n_src + 1):
                    acc += right[j, n] * max(jumps[jump_bucket(n - p, max_jump)], 0.0)
                e_skip += left[p + 1] * acc
        v *= (e_skip + jump_alpha) * (norm + 1.0)
    new[0] = v
    z = v
    real = (1.0 - p0) / n_src if level == 1 else 1.0 - p0
    for i in range(n_src):
        k = cells[base + 1 + i]
        v = (max(lex[k], 0.0) + alpha) * inv_tot[entry_row[k]] * real
        if level >= 2:
            e_in, e_out = 0.0, 0.0
            for p in range(-1, n_src):
                e_in += left[p + 1] * max(jumps[jump_bucket(i - p, max_jump)], 0.0)
            for n in range(n_src + 1):
                e_out += right[j, n] * max(jumps[jump_bucket(n - i, max_jump)], 0.0)
            v *= (e_in + jump_alpha) * (e_out + jump_alpha)
        if level >= 3:  # E over the fertility from the other tokens: (before j) * (after j), truncated
            e_fert, low = 0.0, 0.0
            for b in range(n_fert - 1):
                pb = 0.0
                for a in range(b + 1):
                    pb += dist[i, a] * suffix[j, i, b - a]
                e_fert += pb * ratio[i, b]
                low += pb
            v *= e_fert + max(1.0 - low, 0.0)
        new[i + 1] = v
        z += v
    return z


@njit(cache=True, inline="always")
def _cvi_move_lex(base, n_src, q, sign, cells, entry_row, lex, lex_tot, inv_tot, alpha, n_outcomes):
    """Add ``sign`` times token ``base``'s ``q`` to the lexical counts, keeping ``inv_tot`` (:func:`_move_lex`)."""
    for x in range(n_src + 1):
        k = cells[base + x]
        r = entry_row[k]
        lex[k] += sign * q[base + x]
        lex_tot[r] += sign * q[base + x]
        inv_tot[r] = 1.0 / (max(lex_tot[r], 0.0) + n_outcomes[r] * alpha)


@njit(cache=True, fastmath=True, nogil=True)
def cvi_sweep(order, src_off, tgt_off, src_tok, cell_off, cells, entry_row, q, lex, lex_tot, alpha, n_outcomes,
              jumps, jump_alpha, fert, n_fert, fert_alpha, p0, level):
    """One pass of collapsed variational inference at model ``level`` over the pairs ``order``: the mean-field
    ``q(a_j)`` of every target token in turn, the counts kept as expectations under ``q`` (:func:`cvi_counts`).

    CVI-1 per target token (thesis sec. 3.4, eq. 3.33 to first order, eq. 3.32: the expectation of each factor of
    the collapsed conditional of :func:`_conditional` taken under ``q``, the counts replaced by their expectations,
    i.e. the zero-order CVB0 of Asuncion et al. 2009)::

        q(a_j = i) ∝ (1 - p0) (E(e_i, f_j) + a) / (E(e_i, .) + K a)
                     * E_m[n(b(i - p)) + b] E_r[n(b(n - i)) + b] / ((N + D b) (N + 1 + D b))      (level >= 2)
                     * E_{phi ~ P_i^{-j}}[(F_e(phi + 1) + g) / (F_e(phi) + g)]                        (level 3)
        q(a_j = NULL) ∝ p0 (E(NULL, f_j) + a) / (E(NULL, .) + K a) * E_{m, r}[n(b(n - p)) + b] / (N + D b)

    ``m`` / ``r``: the distributions of the nearest non-NULL link left / right of ``j`` under the other tokens'
    ``q`` (independent under the mean field); ``P_i^{-j}``: the Poisson-binomial distribution of position ``i``'s
    fertility from the other tokens' ``q`` (truncated at ``F - 1``, where the ratio is 1), ``F_e`` the expected
    fertility counts of the other pairs.  The approximation of the fertility term: the mean field asks for
    ``exp E_q[log r_e(phi)]`` of the ratio ``r_e`` at the token's random fertility ``phi``; with the counts at their
    expectations (eq. 3.32) it is taken as ``E[r_e(phi)]`` over the exact distribution of ``phi`` (the first-order
    step the thesis takes for the random neighbours of the HMM's transitions, eq. 3.33-3.35), and apart from the
    jump factors (they are correlated through the other links: the expectation of the product is replaced by the
    product of the expectations).  The lexical counts leave per token (CVI-1); the
    pair's expected jump and fertility counts leave while the pair is visited (as CVI-2 per pair, sec. 3.5) and
    return computed from its new ``q``.  Returns ``sum_j log z_j`` (the normalisers, scaled as in
    :func:`_conditional`): the objective of the stopping rule.
    """
    max_src, max_tgt = _max_src(order, src_off), _max_tgt(order, tgt_off)
    new = np.empty(max_src + 1)
    left = np.empty(max_src + 2)
    right = np.empty((max_tgt + 1, max_src + 1))
    dist = np.empty((max_src + 1, n_fert))
    suffix = np.empty((max_tgt + 1, max_src + 1, n_fert))
    ratio = np.empty((max_src + 1, n_fert))
    inv_tot = 1.0 / (np.maximum(lex_tot, 0.0) + n_outcomes[:len(lex_tot)] * alpha)
    total = 0.0
    for s in order:
        n_src, n_tgt = _pair_dims(s, src_off, tgt_off)
        if n_src == 0 or n_tgt == 0:
            continue
        c0 = cell_off[s]
        e_row = src_tok[src_off[s]:src_off[s + 1]]
        _cvi_pair_start(q, c0, n_src, n_tgt, e_row, level, jumps, fert, n_fert, fert_alpha, left, right, dist,
                        suffix, ratio)
        norm = len(jumps) * jump_alpha
        for b in range(len(jumps)):
            norm += max(jumps[b], 0.0)
        for j in range(n_tgt):
            base = c0 + j * (n_src + 1)
            _cvi_move_lex(base, n_src, q, -1.0, cells, entry_row, lex, lex_tot, inv_tot, alpha, n_outcomes)
            z = _cvi_weights(base, n_src, j, cells, entry_row, lex, inv_tot, alpha, jumps, norm, jump_alpha, n_fert,
                             p0, level, left, right, dist, suffix, ratio, new)
            total += np.log(z)
            for x in range(n_src + 1):
                q[base + x] = new[x] / z
            _cvi_move_lex(base, n_src, q, 1.0, cells, entry_row, lex, lex_tot, inv_tot, alpha, n_outcomes)
            if level >= 2:  # the left mass and the fertilities before j + 1
                q_null = np.float64(q[base])
                for p in range(-1, n_src):
                    left[p + 1] *= q_null
                for i in range(n_src):
                    left[i + 1] += np.float64(q[base + 1 + i])
            if level >= 3:
                for i in range(n_src):
                    _bernoulli_step(dist[i], np.float64(q[base + 1 + i]), n_fert)
        _add_pair_structure(q, c0, n_src, n_tgt, e_row, level, jumps, fert, n_fert, left, dist)
    return total
