"""Alignment posteriors, Viterbi and likelihoods against brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from induce.kernels import align as K


def _ibm1_arrays(n_src, n_tgt, rng):
    """One pair whose cells point at distinct table entries with random values."""
    vals = rng.uniform(0.05, 1.0, size=(n_src + 1) * n_tgt)
    cells = np.arange(len(vals), dtype=np.int64)
    src_off = np.array([0, n_src], dtype=np.int64)
    tgt_off = np.array([0, n_tgt], dtype=np.int64)
    cell_off = np.array([0, len(vals)], dtype=np.int64)
    return vals, cells, src_off, tgt_off, cell_off


@pytest.mark.parametrize("n_src,n_tgt", [(1, 1), (2, 3), (3, 2), (3, 3)])
def test_ibm1_posteriors_match_enumeration(n_src, n_tgt):
    rng = np.random.default_rng(n_src * 10 + n_tgt)
    vals, cells, src_off, tgt_off, cell_off = _ibm1_arrays(n_src, n_tgt, rng)
    t = vals.reshape(n_tgt, n_src + 1)
    marg = np.zeros_like(t)
    total = 0.0
    for a in itertools.product(range(n_src + 1), repeat=n_tgt):  # every alignment, 0 = NULL
        p = np.prod([t[j, a[j]] / (n_src + 1) for j in range(n_tgt)])
        total += p
        for j in range(n_tgt):
            marg[j, a[j]] += p
    post = np.zeros(len(vals))
    K.ibm1_posterior_pass(src_off, tgt_off, cell_off, cells, vals, post)
    np.testing.assert_allclose(post.reshape(n_tgt, n_src + 1), marg / total, rtol=1e-10)
    counts = np.zeros(len(vals))
    loglik = K.ibm1_batch_pass(np.array([0]), src_off, tgt_off, cell_off, cells, vals, counts)
    assert loglik == pytest.approx(math.log(total), rel=1e-10)
    np.testing.assert_allclose(counts, post, rtol=1e-10)


def _hmm_brute_force(n_src, n_tgt, emis, weights, p0, max_jump):
    """Enumerate all state sequences of the alignment HMM, built from its definition.

    States: ("r", i) real position i in 1..I, ("n", p) NULL remembering p in 0..I.
    """
    jp = np.empty((n_src + 1, n_src))
    K.jump_matrix(n_src, weights, max_jump, jp, np.empty(n_src + 1))
    states = [("r", i) for i in range(1, n_src + 1)] + [("n", p) for p in range(n_src + 1)]

    def pos(s):
        return s[1]

    def trans(prev_pos, s):
        return (1 - p0) * jp[prev_pos, s[1] - 1] if s[0] == "r" else (p0 if s[1] == prev_pos else 0.0)

    def emit(j, s):
        return emis[j, s[1]] if s[0] == "r" else emis[j, 0]

    post = np.zeros((n_tgt, n_src + 1))
    jumps = np.zeros(2 * max_jump + 1)
    total, best, best_seq = 0.0, -1.0, None
    for seq in itertools.product(states, repeat=n_tgt):
        p, prev = 1.0, 0
        for j, s in enumerate(seq):
            p *= trans(prev, s) * emit(j, s)
            prev = pos(s)
        if p == 0.0:
            continue
        total += p
        if p > best:
            best, best_seq = p, seq
        prev = 0
        for j, s in enumerate(seq):
            post[j, s[1] if s[0] == "r" else 0] += p
            if s[0] == "r":
                jumps[K.jump_bucket(s[1] - prev, max_jump)] += p
            prev = pos(s)
    viterbi = [s[1] - 1 if s[0] == "r" else -1 for s in best_seq]
    return post / total, jumps / total, math.log(total), viterbi


@pytest.mark.parametrize("n_src,n_tgt,max_jump", [(1, 2, 1), (2, 3, 1), (3, 3, 2), (4, 2, 1), (3, 4, 3)])
def test_hmm_forward_backward_matches_enumeration(n_src, n_tgt, max_jump):
    rng = np.random.default_rng(7 + n_src + 5 * n_tgt)
    emis = rng.uniform(0.05, 1.0, size=(n_tgt, n_src + 1))
    weights = rng.uniform(0.1, 2.0, size=2 * max_jump + 1)
    p0 = 0.3
    post_bf, jumps_bf, ll_bf, vit_bf = _hmm_brute_force(n_src, n_tgt, emis, weights, p0, max_jump)
    jp = np.empty((n_src + 1, n_src))
    norm = np.empty(n_src + 1)
    K.jump_matrix(n_src, weights, max_jump, jp, norm)
    np.testing.assert_allclose(jp.sum(axis=1), 1.0)
    post = np.empty((n_tgt, n_src + 1))
    jumps = np.zeros(2 * max_jump + 1)
    denom = np.zeros(2 * max_jump + 1)
    ll = K.hmm_forward_backward(n_src, n_tgt, emis, jp, norm, p0, max_jump, post, jumps, denom)
    assert ll == pytest.approx(ll_bf, rel=1e-10)
    np.testing.assert_allclose(post, post_bf, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(jumps, jumps_bf, rtol=1e-9, atol=1e-12)
    vit = np.empty(n_tgt, dtype=np.int64)
    K.hmm_viterbi(n_src, n_tgt, emis, jp, p0, vit)
    assert vit.tolist() == vit_bf


def test_jump_matrix_spreads_clipped_buckets_uniformly():
    weights = np.array([1.0, 2.0, 3.0])  # buckets <= -1, 0, >= +1
    jp = np.empty((5, 4))
    norm = np.empty(5)
    K.jump_matrix(4, weights, 1, jp, norm)
    # from the start (p = 0) only the ">= +1" bucket is reachable: uniform over 4 positions
    np.testing.assert_allclose(jp[0], 0.25)
    # from p = 2: bucket -1 covers position 1, bucket 0 position 2, bucket +1 positions 3, 4
    np.testing.assert_allclose(jp[2], np.array([1.0, 2.0, 1.5, 1.5]) / 6.0)
    assert norm[2] == pytest.approx(6.0)


def test_long_sentence_does_not_underflow():
    n_src, n_tgt = 60, 80
    rng = np.random.default_rng(3)
    emis = rng.uniform(1e-9, 1e-6, size=(n_tgt, n_src + 1))
    jp = np.empty((n_src + 1, n_src))
    norm = np.empty(n_src + 1)
    K.jump_matrix(n_src, np.ones(15), 7, jp, norm)
    post = np.empty((n_tgt, n_src + 1))
    ll = K.hmm_forward_backward(n_src, n_tgt, emis, jp, norm, 0.2, 7, post, np.zeros(15), np.zeros(15))
    assert np.isfinite(ll) and ll < -1000
    np.testing.assert_allclose(post.sum(axis=1), 1.0)


def test_table_entries_equal_np_unique():
    from induce.kernels.align import table_entries

    rng = np.random.default_rng(0)
    n_rows, n_cols = 7, 11
    keys = rng.integers(0, n_rows, 500) * n_cols + rng.integers(0, n_cols, 500)
    keys[:3] = [5 * n_cols + 10, 0, 5 * n_cols + 10]
    row_ptr, cols, entry_row, inverse, rank = table_entries(keys.astype(np.int64), n_rows, np.int64(n_cols))
    uniq, inv = np.unique(keys, return_inverse=True)
    np.testing.assert_array_equal(cols, uniq % n_cols)
    np.testing.assert_array_equal(entry_row, uniq // n_cols)
    np.testing.assert_array_equal(inverse, inv)
    np.testing.assert_array_equal(row_ptr, np.searchsorted(uniq // n_cols, np.arange(n_rows + 1)))
    assert len(rank) == 0
    # numbered by column, then row: the entries of np.unique's inverse renumbered by the stable sort of the columns
    *same, by_col, rank = table_entries(keys.astype(np.int64), n_rows, np.int64(n_cols), True)
    for a, b in zip(same, (row_ptr, cols, entry_row)):
        np.testing.assert_array_equal(a, b)
    want = np.empty(len(cols), dtype=np.int64)
    want[np.argsort(cols, kind="stable")] = np.arange(len(cols))
    np.testing.assert_array_equal(rank, want)
    np.testing.assert_array_equal(by_col, want[inv])
    # the n_hot entries of the most keys first, each group in the order by column (ties: the first in it)
    n_hot = 10
    *same, hot_inv, hot_rank = table_entries(keys.astype(np.int64), n_rows, np.int64(n_cols), True, n_hot)
    hits = np.bincount(inv, minlength=len(cols))
    by_column = np.argsort(want)
    hot = np.zeros(len(cols), dtype=bool)
    hot[by_column[np.argsort(-hits[by_column], kind="stable")[:n_hot]]] = True
    expect = np.empty(len(cols), dtype=np.int64)
    expect[by_column[hot[by_column]]] = np.arange(n_hot)
    expect[by_column[~hot[by_column]]] = np.arange(n_hot, len(cols))
    assert np.min(hits[hot]) >= np.max(hits[~hot])
    np.testing.assert_array_equal(hot_rank, expect)
    np.testing.assert_array_equal(hot_inv, expect[inv])
