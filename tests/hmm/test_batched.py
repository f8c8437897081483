"""The faster passes of induce.infer.hmm_batched against the reference passes of hmm_passes."""

import numpy as np
import pytest

from .hmm_brute import brute_force, random_hmm

from induce.infer import hmm_passes as passes
from induce.infer.hmm_batched import Layout, lockstep_pass
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
