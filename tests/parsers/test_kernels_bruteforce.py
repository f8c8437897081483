"""Inside-outside kernels against brute-force enumeration of all trees."""

from __future__ import annotations

import numpy as np
import pytest

from induce.kernels import dmv as K
from induce.kernels import inside_outside as IO

from .brute import dmv_tree_prob, pcfg_enumerate, projective_trees, random_rows


def _pcfg(rng, nt=3, v=4):
    rows = random_rows(rng, (nt, nt * nt + v))
    rules_abc = rows[:, : nt * nt].reshape(nt, nt, nt)
    return rules_abc, rows[:, nt * nt :]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_pcfg_inside_outside_matches_enumeration(n):
    rng = np.random.default_rng(n)
    rules_abc, emit = _pcfg(rng)
    words = rng.integers(0, emit.shape[1], size=n).astype(np.int32)
    z, bin_ref, emit_ref, best, best_p = pcfg_enumerate(rules_abc, emit, words)
    rules = np.ascontiguousarray(rules_abc.transpose(1, 2, 0))
    offsets = np.array([0, n], dtype=np.int64)
    bin_c = np.zeros((1,) + rules.shape)
    pos_c = np.zeros((n, emit.shape[0]))
    ll = IO.estep_pass(words, offsets, rules, emit, 0, bin_c, pos_c)
    emit_c = np.zeros_like(emit)
    np.add.at(emit_c.T, words, pos_c)
    assert ll == pytest.approx(np.log(z), rel=1e-10)
    np.testing.assert_allclose(bin_c[0].transpose(2, 0, 1), bin_ref, atol=1e-10)
    np.testing.assert_allclose(emit_c, emit_ref, atol=1e-10)
    trees = np.zeros((2 * n - 1, IO.NODE_COLS), dtype=np.int32)
    scores = np.zeros(1)
    IO.viterbi_pass(words, offsets, rules, emit, 0, trees, np.array([0, 2 * n - 1]), scores)
    assert scores[0] == pytest.approx(np.log(best_p), rel=1e-10)
    assert [tuple(r) for r in trees] == best
    assert IO.tree_log_prob(rules, emit, words, trees) == pytest.approx(np.log(best_p), rel=1e-10)


def test_pcfg_sampling_matches_posterior():
    rng = np.random.default_rng(7)
    rules_abc, emit = _pcfg(rng, nt=2, v=2)
    words = np.array([0, 1, 1], dtype=np.int32)
    z, *_ = pcfg_enumerate(rules_abc, emit, words)
    from .brute import pcfg_tree_prob, pcfg_trees

    exact = {tuple(map(tuple, t)): pcfg_tree_prob(t, rules_abc, emit, words) / z for t in pcfg_trees(2, 0, 3, 0)}
    rules = np.ascontiguousarray(rules_abc.transpose(1, 2, 0))
    draws = 20000
    tokens = np.tile(words, draws)
    offsets = np.arange(0, 3 * draws + 1, 3, dtype=np.int64)
    tree_offsets = np.arange(0, 5 * draws + 1, 5, dtype=np.int64)
    trees = np.zeros((5 * draws, IO.NODE_COLS), dtype=np.int32)
    IO.sample_pass(tokens, offsets, rules, emit, 0, rng.random(len(tokens)), trees, tree_offsets)
    freq: dict = {}
    for s in range(draws):
        key = tuple(map(tuple, trees[5 * s : 5 * s + 5]))
        freq[key] = freq.get(key, 0) + 1
    assert set(freq) <= set(exact)
    tv = 0.5 * sum(abs(freq.get(k, 0) / draws - p) for k, p in exact.items())
    assert tv < 0.03


def _dmv_tables(rng, t):
    return random_rows(rng, (t,)), random_rows(rng, (t, 2, 2, 2)), random_rows(rng, (t, 2, t))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_dmv_inside_outside_matches_enumeration(n):
    rng = np.random.default_rng(10 + n)
    t = 3
    root_p, stop_p, attach_p = _dmv_tables(rng, t)
    tags = rng.integers(0, t, size=n).astype(np.int32)
    z = 0.0
    expected: dict = {}
    best, best_p = None, -1.0
    for heads in projective_trees(n):
        p, counts = dmv_tree_prob(heads, list(tags), root_p, stop_p, attach_p)
        z += p
        for key, c in counts.items():
            expected[key] = expected.get(key, 0.0) + p * c
        if p > best_p:
            best, best_p = heads, p
    offsets = np.array([0, n], dtype=np.int64)
    sq = np.array([0, n * n], dtype=np.int64)
    pos_root, pos_stop, pos_att = np.zeros(n), np.zeros((n, 2, 2, 2)), np.zeros(n * n)
    ll = K.position_counts_pass(tags, offsets, sq, root_p, stop_p, attach_p, pos_root, pos_stop, pos_att,
                                np.zeros(n, np.int32), np.zeros((1, 1)), 1.0)  # no rule bias
    assert ll == pytest.approx(np.log(z), rel=1e-10)
    root_c, stop_c, att_c = np.zeros(t), np.zeros((t, 2, 2, 2)), np.zeros((t, 2, t))
    att_tot, root_tot = np.zeros((t, 2)), np.zeros(1)
    K.tables_from_positions(tags, offsets, sq, pos_root, pos_stop, pos_att, root_c, stop_c, att_c, att_tot, root_tot)
    ref_root, ref_stop, ref_att = np.zeros_like(root_c), np.zeros_like(stop_c), np.zeros_like(att_c)
    for key, v in expected.items():
        if key[0] == "root":
            ref_root[key[1]] += v / z
        elif key[0] == "stop":
            ref_stop[key[1:]] += v / z
        else:
            ref_att[key[1:]] += v / z
    np.testing.assert_allclose(root_c, ref_root, atol=1e-10)
    np.testing.assert_allclose(stop_c, ref_stop, atol=1e-10)
    np.testing.assert_allclose(att_c, ref_att, atol=1e-10)
    np.testing.assert_allclose(att_tot, att_c.sum(-1), atol=1e-12)
    heads = np.zeros(n, dtype=np.int32)
    K.viterbi_pass(tags, offsets, root_p, stop_p, attach_p, heads)
    assert list(heads) == best


def test_projective_tree_counts_are_catalan_like():
    # number of projective single-root dependency trees over n words: 1, 2, 7, 30, 143
    assert [sum(1 for _ in projective_trees(n)) for n in range(1, 6)] == [1, 2, 7, 30, 143]
