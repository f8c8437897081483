"""Collapsed variational inference of the fertility model (``--model fertility --infer cvi``): its expected
counts and its update against their definitions by enumeration, against the exact posterior on a tiny bitext,
fertility recovery, seeding."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from induce.align import WordAligner
from induce.align.table import build_table
from induce.kernels.align_gibbs import cvi_counts, cvi_sweep

from .test_gibbs import ALPHA, FERT_ALPHA, JUMP_ALPHA, MAX_JUMP, N_FERT, P0, _exact, _fertility_bitext, _flat

# PAIRS of test_gibbs plus a longer pair (its update sees left and right masses and a fertility of 2)
PAIRS = [([0, 1], [0, 1]), ([1, 0, 2], [1]), ([2], [2, 0]), ([0, 2, 1], [2, 1, 1])]
N_SRC, N_TGT = 3, 3
N_BUCKETS = 2 * MAX_JUMP + 1


class _State:
    """The arrays of the kernels for ``pairs`` with random mean-field marginals ``q`` and their counts."""

    def __init__(self, pairs=PAIRS, seed=0):
        self.pairs = pairs
        self.src_tok, self.src_off, self.tgt_tok, self.tgt_off = _flat(pairs)
        table, self.cells, self.cell_off = build_table(self.src_tok, self.src_off, self.tgt_tok, self.tgt_off,
                                                        N_SRC, N_TGT)
        self.entry_row, self.n_outcomes, self.nnz, self.n_rows = (
            table.entry_row, table.row_outcomes("vocabulary"), table.nnz, table.n_rows)
        rng = np.random.default_rng(seed)
        self.q = np.empty(len(self.cells), dtype=np.float32)
        for s, (src, tgt) in enumerate(pairs):
            for j in range(len(tgt)):
                w = rng.random(len(src) + 1) + 0.05
                self.q[self._cell(s, j, -1):self._cell(s, j, len(src))] = w / w.sum()
        self.counts = self.recount(3)

    def _cell(self, s, j, i):
        return self.cell_off[s] + j * (len(self.pairs[s][0]) + 1) + i + 1

    def recount(self, level):
        out = (np.zeros(self.nnz), np.zeros(self.n_rows), np.zeros(N_BUCKETS), np.zeros(N_SRC * N_FERT))
        cvi_counts(self.src_off, self.tgt_off, self.src_tok, self.cell_off, self.cells, self.entry_row, self.q,
                   N_FERT, level, *out)
        return out

    def sweep(self, order, level):
        lex, lex_tot, jumps, fert = self.counts
        return cvi_sweep(np.asarray(order, dtype=np.int64), self.src_off, self.tgt_off, self.src_tok, self.cell_off,
                         self.cells, self.entry_row, self.q, lex, lex_tot, ALPHA, self.n_outcomes, jumps, JUMP_ALPHA,
                         fert, N_FERT, FERT_ALPHA, P0, level)

    def link_prob(self, s, j, i):
        return float(self.q[self._cell(s, j, i)])


def _bucket(d):
    return int(np.clip(d, -MAX_JUMP, MAX_JUMP)) + MAX_JUMP


def _configurations(state, s, skip=None):
    """Every alignment of pair ``s`` (``skip``: that token left out, ``None`` in its place) with its
    probability under the product of the tokens' ``q``."""
    src, tgt = state.pairs[s]
    choices = [[None] if j == skip else range(-1, len(src)) for j in range(len(tgt))]
    for a in itertools.product(*choices):
        yield a, np.prod([1.0 if i is None else state.link_prob(s, j, i) for j, i in enumerate(a)])


def _pair_counts(state, s):
    """Expected jump and fertility counts of pair ``s`` by enumeration (the definitions of the module)."""
    src, tgt = state.pairs[s]
    jumps, fert = np.zeros(N_BUCKETS), np.zeros((N_SRC, N_FERT))
    for a, p in _configurations(state, s):
        prev, phi = -1, [0] * len(src)
        for i in a:
            if i >= 0:
                jumps[_bucket(i - prev)] += p
                phi[i] += 1
                prev = i
        jumps[_bucket(len(src) - prev)] += p
        for e, n in zip(src, phi):
            fert[e, min(n, N_FERT - 1)] += p
    return jumps, fert.reshape(-1)


def test_expected_counts_by_enumeration():
    state = _State()
    lex, lex_tot, jumps, fert = state.counts
    want_jumps = sum(_pair_counts(state, s)[0] for s in range(len(PAIRS)))
    want_fert = sum(_pair_counts(state, s)[1] for s in range(len(PAIRS)))
    np.testing.assert_allclose(jumps, want_jumps, rtol=1e-6)
    np.testing.assert_allclose(fert, want_fert, rtol=1e-6, atol=1e-9)
    # counts sum to the tokens
    assert lex.sum() == pytest.approx(len(state.tgt_tok), rel=1e-6)
    assert lex_tot.sum() == pytest.approx(len(state.tgt_tok), rel=1e-6)
    assert fert.sum() == pytest.approx(len(state.src_tok), rel=1e-6)
    non_null = sum(1.0 - state.q[state._cell(s, j, -1)] for s, (_, t) in enumerate(PAIRS) for j in range(len(t)))
    assert jumps.sum() == pytest.approx(non_null + len(PAIRS), rel=1e-6)


def _update(new, old, s, j):
    """``q(a_j)`` of token ``j`` of pair ``s`` from the definition (:func:`cvi_sweep`'s docstring): each factor's
    expectation by enumerating the other tokens' links, the earlier tokens' ``q`` from ``new`` (updated before
    ``j``), the later ones' from ``old`` (the state before the pair, whose jump and fertility counts leave)."""
    src, tgt = PAIRS[s]
    state = _State(seed=1)
    for jj in range(j):
        for i in range(-1, len(src)):
            state.q[state._cell(s, jj, i)] = new.q[state._cell(s, jj, i)]
    lex, lex_tot, jumps, fert = (x.copy() for x in old.counts)
    pair_jumps, pair_fert = _pair_counts(old, s)
    jumps, fert = jumps - pair_jumps, (fert - pair_fert).reshape(N_SRC, N_FERT)
    for jj in range(len(tgt)):  # the pair's lexical counts: the mixed q, none of j
        for i in range(-1, len(src)):
            k = state.cells[state._cell(s, jj, i)]
            d = (state.link_prob(s, jj, i) if jj != j else 0.0) - old.link_prob(s, jj, i)
            lex[k] += d
            lex_tot[state.entry_row[k]] += d
    n_jumps = jumps.sum() + N_BUCKETS * JUMP_ALPHA
    e_in, e_out, e_fert, e_skip = np.zeros(len(src)), np.zeros(len(src)), np.zeros(len(src)), 0.0
    for a, p in _configurations(state, s, skip=j):
        prev = ([-1] + [i for i in a[:j] if i >= 0])[-1]
        nxt = next((i for i in a[j + 1:] if i >= 0), len(src))
        phi = [sum(1 for i in a if i == x) for x in range(len(src))]
        e_skip += p * (jumps[_bucket(nxt - prev)] + JUMP_ALPHA)
        for x, e in enumerate(src):
            e_in[x] += p * (jumps[_bucket(x - prev)] + JUMP_ALPHA)
            e_out[x] += p * (jumps[_bucket(nxt - x)] + JUMP_ALPHA)
            lo, hi = min(phi[x], N_FERT - 1), min(phi[x] + 1, N_FERT - 1)
            e_fert[x] += p * (fert[e, hi] + FERT_ALPHA) / (fert[e, lo] + FERT_ALPHA) if lo != hi else p

    def t(i):
        k = state.cells[state._cell(s, j, i)]
        return (lex[k] + ALPHA) / (lex_tot[state.entry_row[k]] + N_TGT * ALPHA)

    w = [P0 * t(-1) * e_skip / n_jumps]
    w += [(1 - P0) * t(x) * e_in[x] * e_out[x] * e_fert[x] / (n_jumps * (n_jumps + 1)) for x in range(len(src))]
    return np.array(w) / sum(w)


@pytest.mark.parametrize("s", [0, 3])
def test_update_by_enumeration(s):
    old, state = _State(seed=1), _State(seed=1)
    state.sweep([s], 3)
    for j in range(len(PAIRS[s][1])):
        got = [state.link_prob(s, j, i) for i in range(-1, len(PAIRS[s][0]))]
        np.testing.assert_allclose(got, _update(state, old, s, j), rtol=1e-5)
    # and the counts kept through the pass equal a recount of the new q
    for kept, fresh in zip(state.counts, state.recount(3)):
        np.testing.assert_allclose(kept, fresh, rtol=1e-6, atol=1e-9)


def test_marginals_near_the_exact_posterior():
    """On the 3-pair bitext of test_gibbs (108 alignments) the mean-field marginals after the IBM-1, HMM and
    fertility stages are within 0.08 of the exact posterior marginals at every cell (0.05 observed)."""
    from . import test_gibbs as tg

    state = _State(pairs=tg.PAIRS)
    for s, (src, tgt) in enumerate(tg.PAIRS):
        state.q[state.cell_off[s]:state.cell_off[s] + (len(src) + 1) * len(tgt)] = 1.0 / (len(src) + 1)
    for level in (1, 2, 3):
        state.counts = state.recount(level)
        for _ in range(30):
            state.sweep(range(len(tg.PAIRS)), level)
    states, exact = _exact(3)
    marg = np.zeros(len(state.cells))
    t_start = np.concatenate([[0], np.cumsum([len(t) for _, t in tg.PAIRS])])
    for a, p in zip(states, exact):
        for s, (src, tgt) in enumerate(tg.PAIRS):
            for j in range(len(tgt)):
                marg[state._cell(s, j, a[t_start[s] + j])] += p
    np.testing.assert_allclose(state.q, marg, atol=0.08)


def test_fertility_recovery_and_seeding():
    pairs, truth = _fertility_bitext(n_pairs=150)
    fit = [WordAligner(model="fertility", infer="cvi", symmetrize="forward", random_state=seed).fit(pairs)
           for seed in (0, 0, 1)]
    fert = fit[0].forward_.fertility
    words = [fit[0].src_vocab_.stoi[f"s{e}"] for e in range(30)]
    assert [int(np.argmax(fert[w])) for w in words] == [e % 3 for e in range(30)]
    links = fit[0].align_training()
    assert sum(len(set(a) & b) for a, b in zip(links, truth)) >= 0.97 * sum(len(b) for b in truth)
    assert [name for name, *_ in fit[0].forward_.stages] == ["ibm1-cvi", "hmm-cvi", "fertility-cvi"]
    # same seed, same marginals and links; another seed visits the pairs in another order
    np.testing.assert_array_equal(fit[0].forward_.marginals, fit[1].forward_.marginals)
    assert links == fit[1].align_training()
    assert not np.array_equal(fit[0].forward_.marginals, fit[2].forward_.marginals)
