"""The faster passes of induce.infer.hmm_batched against the reference passes of hmm_passes."""

import numpy as np
import pytest

from .hmm_brute import brute_force, random_hmm

from induce.infer import hmm_passes as passes
from induce.infer.estimators import cvi_params
from induce.infer.hmm_batched import Layout, cvi2_block_pass, lockstep_pass
from induce.kernels.hmm_lockstep import lockstep_layout

NO_MASK = np.zeros((0, 0), dtype=np.uint8)


def corpus_with_lengths(lengths, W, seed):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = rng.integers(0, W, size=offsets[-1]).astype(np.int32)
    return tokens, offsets


def mixed_lengths(seed, I=40):
    """Length-1 sentences, an empty one, ordinary ones and one very long sentence."""
    rng = np.random.default_rng(seed)
    lengths = list(rng.integers(1, 30, size=I)) + [1, 1, 0, 1, 2500, 3]
    rng.shuffle(lengths)
    return np.array(lengths)


def test_layout_is_a_position_major_permutation():
    lengths = mixed_lengths(0)
    tokens, offsets = corpus_with_lengths(lengths, 7, 0)
    for block in (1, 3, 16, 1000):
        lay_flat, pos_start, block_pos = lockstep_layout(offsets, block)
        assert np.array_equal(np.sort(lay_flat), np.arange(len(tokens)))
        for b in range(len(block_pos) - 1):
            p0, p1 = block_pos[b], block_pos[b + 1]
            sizes = np.diff(pos_start[p0 : p1 + 1])
            assert np.all(sizes[:-1] >= sizes[1:]) and sizes[-1] > 0
            # row r of position t continues row r of position t - 1 (same sentence, next token)
            for p in range(p0 + 1, p1):
                n = sizes[p - p0]
                prev = lay_flat[pos_start[p - 1] : pos_start[p - 1] + n]
                assert np.array_equal(lay_flat[pos_start[p] : pos_start[p] + n], prev + 1)


@pytest.mark.parametrize("block", [1, 4, 64, 10_000])
@pytest.mark.parametrize("masked", [False, True])
def test_lockstep_pass_equals_batch_pass(block, masked):
    """Identical counts, marginals and log-likelihood (1e-9), incl. length-1 and 2,500-token sentences."""
    K, W = 5, 9
    rng = np.random.default_rng(block)
    tokens, offsets = corpus_with_lengths(mixed_lengths(block), W, block)
    A = rng.dirichlet(np.ones(K), size=K + 1)
    B = np.ascontiguousarray(rng.dirichlet(np.ones(W), size=K).T)
    allowed = NO_MASK
    if masked:
        allowed = (rng.random((W, K)) < 0.6).astype(np.uint8)
        allowed[:, 0] = 1
    ref_t, ref_e, ref_g = np.zeros((K + 1, K)), np.zeros((W, K)), np.zeros((len(tokens), K))
    ref_ll = passes.batch_pass(A, B, allowed, tokens, offsets, ref_t, ref_e, ref_g, 2)
    lay = Layout(tokens, offsets, block)
    out_t, out_e, out_g = np.full((K + 1, K), 9.0), np.full((W, K), 9.0), np.zeros((len(tokens), K))
    ll = lockstep_pass(A, B, allowed, lay.lay_tokens, lay.lay_flat, lay.pos_start, lay.block_pos, out_t, out_e,
                       out_g, 3)
    assert np.isfinite(ll)
    assert ll == pytest.approx(ref_ll, rel=1e-9)
    np.testing.assert_allclose(out_t, ref_t, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out_e, ref_e, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out_g, ref_g, rtol=1e-9, atol=1e-12)
    assert out_t.sum() == pytest.approx(len(tokens))


def test_lockstep_pass_matches_enumeration():
    K, W = 3, 4
    A, B = random_hmm(K, W, seed=3)
    tokens, offsets = corpus_with_lengths([1, 4, 2, 4, 3], W, 5)
    lay = Layout(tokens, offsets, 2)
    t, e, g = np.zeros((K + 1, K)), np.zeros((W, K)), np.zeros((len(tokens), K))
    ll = lockstep_pass(A, B, NO_MASK, lay.lay_tokens, lay.lay_flat, lay.pos_start, lay.block_pos, t, e, g, 1)
    ref_ll, ref_t = 0.0, np.zeros((K + 1, K))
    for i in range(len(offsets) - 1):
        s, f = offsets[i], offsets[i + 1]
        gamma, trans, lz, _, _ = brute_force(A, B, tokens[s:f])
        np.testing.assert_allclose(g[s:f], gamma, rtol=1e-10, atol=1e-12)
        ref_t += trans
        ref_ll += lz
    np.testing.assert_allclose(t, ref_t, rtol=1e-10, atol=1e-12)
    assert ll == pytest.approx(ref_ll, rel=1e-12)


def cvi2_state(tokens, offsets, K, W, dtype=np.float64):
    I = len(offsets) - 1
    sent_trans = np.zeros((I, K + 1, K), dtype=dtype)
    gamma = np.zeros((len(tokens), K), dtype=dtype)
    passes.init_chain_posteriors(tokens, offsets, K, 11, sent_trans, gamma)
    C_t, C_e = np.zeros((K + 1, K)), np.zeros((W, K))
    passes.totals_from_local(tokens, offsets, sent_trans, gamma, W, C_t, C_e)
    return sent_trans, gamma, C_t, C_e


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("masked", [False, True])
def test_cvi2_block_size_one_is_the_exact_pass(dtype, masked):
    """Block size 1 reproduces cvi2_pass (repeated words in a sentence, length-1 and long sentences)."""
    K, W, alpha, beta = 4, 6, 0.2, 0.05
    tokens, offsets = corpus_with_lengths(mixed_lengths(3, I=15)[:-1], W, 3)
    allowed = NO_MASK
    if masked:
        allowed = (np.random.default_rng(2).random((W, K)) < 0.6).astype(np.uint8)
        allowed[:, 1] = 1
    order = np.random.default_rng(4).permutation(len(offsets) - 1).astype(np.int64)
    ref = cvi2_state(tokens, offsets, K, W, dtype)
    out = [a.copy() for a in ref]
    for _ in range(3):
        ll_ref = passes.cvi2_pass(ref[2], ref[3], ref[0], ref[1], tokens, offsets, order, alpha, beta, allowed)
        ll = cvi2_block_pass(out[2], out[3], out[0], out[1], tokens, offsets, order, alpha, beta, allowed, 1, 2)
        assert ll == pytest.approx(ll_ref, rel=1e-9)
        for a, b in zip(out, ref):
            np.testing.assert_allclose(a, b, rtol=1e-6 if dtype == np.float32 else 1e-9, atol=1e-9)


@pytest.mark.parametrize("beta", [0.2, np.array([0.05, 0.7])], ids=["symmetric", "per-state"])
@pytest.mark.parametrize("block", [2, 5, 1000])
def test_cvi2_block_sees_counts_frozen_at_block_start(block, beta):
    """Each block sentence: forward-backward (brute force) under (C_block_start - c_i + prior) estimates."""
    K, W, alpha = 2, 4, 0.3
    tokens, offsets = corpus_with_lengths([1, 3, 2, 4, 1, 3, 2], W, 8)
    sent_trans, gamma, C_t, C_e = cvi2_state(tokens, offsets, K, W)
    ref_trans, ref_gamma = sent_trans.copy(), gamma.copy()
    order = np.array([3, 0, 6, 1, 5, 2, 4], dtype=np.int64)
    ll = cvi2_block_pass(C_t, C_e, sent_trans, gamma, tokens, offsets, order, alpha, beta, NO_MASK, block, 2)
    ref_ll = 0.0
    for lo in range(0, len(order), block):
        Ct0 = ref_trans.sum(axis=0)
        Ce0 = np.zeros((W, K))
        np.add.at(Ce0, tokens, ref_gamma)
        new = {}
        for i in order[lo : lo + block]:
            s, e = offsets[i], offsets[i + 1]
            Ce = Ce0.copy()
            np.add.at(Ce, tokens[s:e], -ref_gamma[s:e])
            A = cvi_params(Ct0 - ref_trans[i], alpha)
            B = cvi_params(Ce.T, np.reshape(beta, (-1, 1))).T
            g, tr, lz, _, _ = brute_force(A, B, tokens[s:e])
            new[i] = (g, tr)
            ref_ll += lz
        for i, (g, tr) in new.items():
            ref_gamma[offsets[i] : offsets[i + 1]] = g
            ref_trans[i] = tr
    assert ll == pytest.approx(ref_ll, rel=1e-10)
    np.testing.assert_allclose(gamma, ref_gamma, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sent_trans, ref_trans, rtol=1e-9, atol=1e-12)
    # invariants: global counts are the sums of the local ones and sum to N
    np.testing.assert_allclose(C_t, sent_trans.sum(axis=0), atol=1e-12)
    assert C_e.sum() == pytest.approx(len(tokens))


def test_tagger_cvi2_block_option():
    """HMMTagger(cvi2_block=1) is the exact algorithm; larger blocks recover a known HMM and are deterministic."""
    from induce.errors import ConfigError
    from induce.eval.tagging import many_to_one
    from induce.taggers import HMMTagger

    from .test_tagger import sample_hmm_corpus

    corpus = sample_hmm_corpus(n_sentences=200)
    kw = dict(n_states=4, infer="cvi2", n_iter=15, alpha=0.5, beta=0.1, random_state=3)
    exact = HMMTagger(**kw).fit(corpus)
    one = HMMTagger(cvi2_block=1, **kw).fit(corpus)
    np.testing.assert_allclose(one.transition_counts_, exact.transition_counts_, rtol=1e-6, atol=1e-6)
    assert np.array_equal(one.labels_, exact.labels_)
    kw["n_iter"] = 40
    runs = [HMMTagger(cvi2_block=32, **kw).fit(corpus) for _ in range(2)]
    assert np.array_equal(runs[0].labels_, runs[1].labels_)
    assert many_to_one(runs[0].labels_, corpus.tags["gold"]) > 0.85
    with pytest.raises(ConfigError):
        HMMTagger(cvi2_block=-1, **kw).fit(corpus)
