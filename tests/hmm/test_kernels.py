"""The HMM dynamic programs against brute-force enumeration of all state paths."""

import numpy as np
import pytest

from .hmm_brute import brute_force, random_hmm

from induce.kernels.hmm import forward_backward, gather_emissions, viterbi


def run_fb(A, B, x):
    K = A.shape[1]
    T = len(x)
    E = np.empty((T, K))
    gather_emissions(B, np.asarray(x, dtype=np.int32), np.zeros((0, 0), np.uint8), E)
    fwd, bwd, scale, xi = np.empty((T, K)), np.empty((T, K)), np.empty(T), np.empty((K, K))
    ll = forward_backward(A, E, T, fwd, bwd, scale, xi)
    trans = np.zeros((K + 1, K))
    trans[0] = fwd[0] * bwd[0]
    trans[1:] = A[1:] * xi
    return fwd * bwd, trans, ll, E


@pytest.mark.parametrize("T", [1, 2, 3, 6])
@pytest.mark.parametrize("K", [1, 2, 3])
def test_forward_backward_matches_enumeration(T, K):
    A, B = random_hmm(K, 5, seed=10 * T + K)
    x = np.random.default_rng(T).integers(0, 5, size=T)
    gamma_bf, trans_bf, ll_bf, path_bf, logp_bf = brute_force(A, B, x)
    gamma, trans, ll, E = run_fb(A, B, x)
    np.testing.assert_allclose(gamma, gamma_bf, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(trans, trans_bf, rtol=1e-10, atol=1e-12)
    assert ll == pytest.approx(ll_bf, rel=1e-12)
    # expected transition counts sum to T (one incoming transition per token)
    assert trans.sum() == pytest.approx(T)
    out = np.empty(T, dtype=np.int32)
    logp = viterbi(A, E, T, out)
    assert logp == pytest.approx(logp_bf, rel=1e-10)
    assert np.array_equal(out, path_bf)


def test_long_sentence_does_not_underflow():
    K, W, T = 10, 1000, 20000
    A, B = random_hmm(K, W, seed=3)
    x = np.random.default_rng(0).integers(0, W, size=T)
    gamma, trans, ll, _ = run_fb(A, B, x)
    assert np.isfinite(ll) and ll < -T  # about log(1/W) per token
    assert np.all(np.isfinite(gamma))
    np.testing.assert_allclose(gamma.sum(axis=1), 1.0, rtol=1e-9)
    assert trans.sum() == pytest.approx(T, rel=1e-9)


def test_tag_dictionary_zeroes_forbidden_states():
    A, B = random_hmm(3, 4, seed=1)
    allowed = np.ones((4, 3), dtype=np.uint8)
    allowed[2] = [0, 1, 0]
    x = np.array([0, 2, 1], dtype=np.int32)
    E = np.empty((3, 3))
    gather_emissions(B, x, allowed, E)
    assert E[1, 0] == 0 and E[1, 2] == 0 and E[1, 1] == B[2, 1]


def test_store_sentence_never_writes_subnormal_float32():
    """Expected counts below 1e-30 are stored as 0: float32 subnormals (< 1.2e-38)
    slowed every later pass over the stored statistics 1.5x (microcode assists)."""
    from induce.kernels.hmm import store_sentence

    K, T = 3, 2
    A = np.full((K + 1, K), 1.0 / K)
    fwd = np.array([[1.0, 1e-20, 1e-25], [1.0, 1e-25, 1e-10]])
    bwd = np.array([[1.0, 1e-20, 1e-25], [1.0, 1.0, 1e-30]])
    xi = np.outer(fwd[0], [1.0, 1e-25, 1e-20])
    trans = np.empty((K + 1, K), dtype=np.float32)
    gamma = np.empty((T, K), dtype=np.float32)
    store_sentence(A, fwd, bwd, xi, T, trans, gamma)
    for out in (trans, gamma):
        tiny = out[out != 0]
        assert np.all(np.abs(tiny) >= np.finfo(np.float32).tiny)
    assert gamma[0, 1] == 0.0 and gamma[1, 1] == np.float32(1e-25)  # 1e-40 flushed, 1e-25 kept
    assert trans[0, 0] == 1.0 and trans[2, 1] == 0.0
