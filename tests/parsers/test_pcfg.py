"""PCFG inference: EM monotonicity, the CVI bookkeeping, MH against the exact collapsed posterior."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import gammaln

from induce.errors import ConfigError, ModelFormatError
from induce.infer.estimators import cvi_params
from induce.kernels import inside_outside as IO
from induce.parsers import PCFGInducer
from induce.parsers.pcfg import _State
from induce.parsers.synthetic import generate, sparse_grammar
from induce.parsers.grammar import full_grammar

from .brute import pcfg_trees


@pytest.fixture(scope="module")
def strings():
    return generate(sparse_grammar(4, 12, 3, 3, seed=2), 150, max_length=8, seed=5)


def test_em_never_decreases_the_likelihood(strings):
    model = PCFGInducer(n_nonterminals=3, infer="em", n_iter=8, random_state=1).fit(strings)
    ll = [h["log_likelihood"] for h in model.history_[1:]]
    assert all(b >= a - 1e-6 * abs(a) for a, b in zip(ll, ll[1:]))
    np.testing.assert_allclose(model.rules_.reshape(3, -1).sum(1) + model.emissions_.sum(1), 1.0)


@pytest.mark.parametrize("infer", ["em", "vi", "cvi", "mh"])
def test_every_algorithm_fits_and_round_trips(strings, infer, tmp_path):
    model = PCFGInducer(n_nonterminals=3, infer=infer, n_iter=3, alpha=0.5, random_state=0).fit(strings)
    trees = model.parse(strings[:5])
    assert [t.leaves() for t in trees] == strings[:5]
    path = tmp_path / "m.npz"
    model.save(path)
    again = PCFGInducer.load(path)
    np.testing.assert_allclose(again.log_likelihood(strings), model.log_likelihood(strings))
    if infer == "mh":
        assert 0.0 < model.acceptance_rate_ <= 1.0


def test_seeded_fits_are_reproducible(strings):
    a = PCFGInducer(n_nonterminals=3, infer="cvi", n_iter=2, random_state=3).fit(strings)
    b = PCFGInducer(n_nonterminals=3, infer="cvi", n_iter=2, random_state=3).fit(strings)
    np.testing.assert_array_equal(a.rules_, b.rules_)


def test_cvi_pass_subtracts_recomputes_and_adds(strings):
    """After a pass the tables equal the sum of the stored per-sentence counts, and the first
    sentence's counts are those of inside-outside under (C^{\\i} + a)/(C^{\\i}. + K a)."""
    g = full_grammar(3, sorted({w for s in strings for w in s}))
    vocab = {w: i for i, w in enumerate(g.terminals)}
    tokens = np.array([vocab[w] for s in strings for w in s], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in strings])]).astype(np.int64)
    state = _State(g, tokens, offsets, 0.3)
    rows = np.random.default_rng(0).dirichlet(np.ones(9 + len(vocab)), size=3)
    binary, emit = g.split_rows(rows)
    state.initialise("cvi", rows, np.ascontiguousarray(binary.transpose(1, 2, 0)), emit, None)
    # reference for sentence 0 from numpy: remove its counts, surrogate params, inside-outside
    others = state.count_rows() - g.rows(state.sent_bin[0].transpose(2, 0, 1), _emit_of(state, 0, len(vocab)))
    ref_rows = cvi_params(others, 0.3)
    rb, re = g.split_rows(ref_rows)
    ref_bin = np.zeros((1, 3, 3, 3))
    ref_pos = np.zeros((offsets[1], 3))
    IO.estep_pass(tokens[: offsets[1]], offsets[:2], np.ascontiguousarray(rb.transpose(1, 2, 0)), re, 0,
                  ref_bin, ref_pos)
    IO.cvi_pass(tokens, offsets, np.arange(len(strings)), 0, state.bin_counts, state.emit_counts, state.totals,
                state.sent_bin, state.sent_pos, state.bin_mask, state.emit_mask, state.n_outcomes, 0.3)
    np.testing.assert_allclose(state.sent_bin[0], ref_bin[0], atol=1e-12)
    np.testing.assert_allclose(state.sent_pos[: offsets[1]], ref_pos, atol=1e-12)
    np.testing.assert_allclose(state.bin_counts, state.sent_bin.sum(0), atol=1e-9)
    emit_sum = np.zeros_like(state.emit_counts)
    np.add.at(emit_sum.T, tokens, state.sent_pos)
    np.testing.assert_allclose(state.emit_counts, emit_sum, atol=1e-9)
    np.testing.assert_allclose(state.totals, state.count_rows().sum(1), atol=1e-9)


def _emit_of(state, s, v):
    out = np.zeros((state.grammar.n_nonterminals, v))
    a, b = state.offsets[s], state.offsets[s + 1]
    np.add.at(out.T, state.tokens[a:b], state.sent_pos[a:b])
    return out


def _collapsed_log_joint(count_rows, n_outcomes, prior):
    """log p(x, z | alpha) by thesis eq. 4.13."""
    k = n_outcomes.astype(float)
    return float(np.sum(gammaln(k * prior) - gammaln(k * prior + count_rows.sum(1)))
                 + np.sum(gammaln(prior + count_rows) - gammaln(prior)))


def test_collapsed_tree_probability_matches_gamma_form():
    """The sequential product (4.20/4.22) equals the Gamma-function ratio (4.14)."""
    rng = np.random.default_rng(4)
    nt, v = 2, 3
    bin_counts = rng.random((nt, nt, nt)) * 3
    emit_counts = rng.random((nt, v)) * 3
    totals = bin_counts.sum((0, 1)) + emit_counts.sum(1)
    n_out = np.full(nt, nt * nt + v)
    words = np.array([0, 2, 2, 1], dtype=np.int32)
    tree = np.array(next(itertools.islice(pcfg_trees(nt, 0, 4, 0), 17, None)), dtype=np.int32)
    lp = IO.collapsed_tree_log_prob(tree, words, bin_counts, emit_counts, totals, n_out, 0.7)
    before = np.concatenate([bin_counts.transpose(2, 0, 1).reshape(nt, -1), emit_counts], 1)
    after_b, after_e, after_t = bin_counts.copy(), emit_counts.copy(), totals.copy()
    IO.add_tree_counts(tree, words, 1.0, after_b, after_e, after_t)
    after = np.concatenate([after_b.transpose(2, 0, 1).reshape(nt, -1), after_e], 1)
    ref = _collapsed_log_joint(after, n_out, 0.7) - _collapsed_log_joint(before, n_out, 0.7)
    assert lp == pytest.approx(ref, rel=1e-10)
    np.testing.assert_array_equal(totals, bin_counts.sum((0, 1)) + emit_counts.sum(1))


def test_mh_sampler_targets_the_exact_collapsed_posterior():
    """Two 3-word sentences, 2 nonterminals: the chain's visit frequencies over the 32 x 32 tree
    pairs match p(z | x, alpha) of eq. 4.13 enumerated exactly.  (Always accepting the proposal
    instead gives a total variation of about 0.2 here, so the test separates the two.)"""
    nt, prior = 2, 0.1
    words = np.array([0, 1, 1, 1, 0, 1], dtype=np.int32)
    offsets = np.array([0, 3, 6], dtype=np.int64)
    g = full_grammar(nt, ["a", "b"])
    trees = [np.array(t, dtype=np.int32) for t in pcfg_trees(nt, 0, 3, 0)]
    n_out = g.n_outcomes.astype(np.int64)
    joint = np.zeros((len(trees), len(trees)))
    for i, t1 in enumerate(trees):
        for j, t2 in enumerate(trees):
            b, e, tot = np.zeros((nt, nt, nt)), np.zeros((nt, 2)), np.zeros(nt)
            IO.add_tree_counts(t1, words[:3], 1.0, b, e, tot)
            IO.add_tree_counts(t2, words[3:], 1.0, b, e, tot)
            joint[i, j] = _collapsed_log_joint(g.rows(b.transpose(2, 0, 1), e), n_out, prior)
    exact = np.exp(joint - joint.max())
    exact /= exact.sum()
    state = _State(g, words, offsets, prior)
    rng = np.random.default_rng(0)
    state.initialise("mh", None, np.full((nt, nt, nt), 0.25), np.full((nt, 2), 0.5), rng)
    index = {t.tobytes(): i for i, t in enumerate(trees)}
    freq = np.zeros_like(exact)
    sweeps = 100000
    for _ in range(sweeps):
        IO.mh_pass(words, offsets, np.array([0, 1]), 0, state.bin_counts, state.emit_counts, state.totals,
                   state.trees, state.tree_offsets, state.bin_mask, state.emit_mask, state.n_outcomes, prior,
                   rng.random(6))
        freq[index[state.trees[:5].tobytes()], index[state.trees[5:].tobytes()]] += 1
    freq /= sweeps
    assert 0.5 * np.abs(freq - exact).sum() < 0.06
    assert 0.5 * np.abs(freq.sum(1) - exact.sum(1)).sum() < 0.04


def test_bad_hyperparameters_raise(strings, tmp_path):
    with pytest.raises(ConfigError):
        PCFGInducer(infer="gibbs").fit(strings)
    bad = tmp_path / "x.npz"
    np.savez(bad, a=np.zeros(2))
    with pytest.raises(ModelFormatError):
        PCFGInducer.load(bad)
