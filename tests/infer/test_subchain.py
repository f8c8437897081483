"""Guarded-subsequence sum-product (thesis 3.71-3.82) and CVI algorithm 3 against brute force."""

import itertools

import numpy as np
import pytest

from induce.infer import hmm_passes as passes
from induce.infer.cvi3 import cvi3_pass, cvi3_totals, subsequence_offsets
from induce.kernels.subchain import (
    guard_in,
    guard_out,
    left_edge_pairs,
    stationary_distribution,
    subchain_batch_pass,
    subchain_forward_backward,
)


def expanded_brute_force(q0, C, theta, phi, x, q_next, alpha):
    """Enumerate q2(z_0, z_1..z_T, z_{T+1}) of eq. 3.71 with the potentials 3.72-3.76 written out."""
    K = theta.shape[0]
    T = len(x)
    f0 = q0                                                                   # 3.72
    f1 = (C + alpha / (K * q0[:, None])) * phi[:, x[0]][None, :]              # 3.73
    fT1 = (C + alpha / (K * q_next[None, :])) / (C.sum(axis=1, keepdims=True) + K * alpha)  # 3.75
    fT2 = q_next                                                              # 3.76
    Z = 0.0
    gamma = np.zeros((T, K))
    pairs = np.zeros((K, K))  # interior pairs t in [2, T]
    first_pair = np.zeros((K, K))
    for path in itertools.product(range(K), repeat=T + 2):
        z0, z, zn = path[0], path[1:-1], path[-1]
        p = f0[z0] * f1[z0, z[0]]
        for t in range(1, T):
            p *= theta[z[t - 1], z[t]] * phi[z[t], x[t]]                      # 3.74
        p *= fT1[z[-1], zn] * fT2[zn]
        Z += p
        for t in range(T):
            gamma[t, z[t]] += p
            if t:
                pairs[z[t - 1], z[t]] += p
        first_pair[z0, z[0]] += p
    return gamma / Z, pairs / Z, first_pair / Z


@pytest.mark.parametrize("seed,T", [(0, 1), (1, 2), (2, 3)])
def test_guarded_messages_match_enumeration_of_expanded_distribution(seed, T):
    rng = np.random.default_rng(seed)
    K, W, alpha = 3, 4, 0.3
    C = rng.exponential(2.0, size=(K, K))
    theta = rng.dirichlet(np.ones(K), size=K)
    phi = rng.dirichlet(np.ones(W), size=K)
    q0 = rng.dirichlet(np.ones(K))
    qn = rng.dirichlet(np.ones(K))
    x = rng.integers(0, W, size=T)
    g_ref, pairs_ref, first_ref = expanded_brute_force(q0, C, theta, phi, x, qn, alpha)

    left = np.empty(K)
    right = np.empty(K)
    guard_in(q0, C, alpha, left)
    guard_out(qn, C, alpha, right)
    A = np.vstack([np.zeros((1, K)), theta])
    E = phi[:, x].T.copy()
    fwd, bwd, scale, xi = np.empty((T, K)), np.empty((T, K)), np.empty(T), np.empty((K, K))
    subchain_forward_backward(A, E, T, left, right, fwd, bwd, scale, xi)
    np.testing.assert_allclose(fwd * bwd, g_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(A[1:] * xi, pairs_ref, rtol=1e-10, atol=1e-12)
    first = np.zeros((K, K))
    left_edge_pairs(q0, C, alpha, left, (fwd * bwd)[0], first, 1.0)
    np.testing.assert_allclose(first, first_ref, rtol=1e-10, atol=1e-12)


def test_batch_kernel_counts_inner_window_only():
    """A padded window's statistics equal the marginals of its inner range (SVI buffering)."""
    rng = np.random.default_rng(3)
    K, W, T = 3, 5, 6
    A = rng.dirichlet(np.ones(K), size=K + 1)
    B = rng.dirichlet(np.ones(W), size=K).T.copy()
    x = rng.integers(0, W, size=T).astype(np.int32)
    pi = stationary_distribution(A)
    np.testing.assert_allclose(pi @ (A[1:] / A[1:].sum(1, keepdims=True)), pi, atol=1e-12)
    from tests.hmm.hmm_brute import brute_force

    Ab = A.copy()
    Ab[0] = pi
    g_ref, _, _, _, _ = brute_force(Ab, B, x)
    trans = np.zeros((K + 1, K))
    emit = np.zeros((W, K))
    first, last = np.zeros((1, K)), np.zeros((1, K))
    subchain_batch_pass(A, B, x, np.array([0, T], dtype=np.int64), np.array([2]), np.array([5]),
                        pi[None, :], np.ones((1, K)), np.zeros(1, dtype=np.int8), np.zeros((1, K)),
                        np.zeros((K, K)), 0.1, trans, emit, first, last)
    np.testing.assert_allclose(first[0], g_ref[2], atol=1e-12)
    np.testing.assert_allclose(last[0], g_ref[4], atol=1e-12)
    assert emit.sum() == pytest.approx(3.0)
    assert trans.sum() == pytest.approx(2.0)  # transitions 2->3 and 3->4 only
    np.testing.assert_allclose(trans[1:].sum(axis=0), g_ref[3] + g_ref[4], atol=1e-12)


def _init(tokens, so, K, seed):
    I = len(so) - 1
    sent_trans = np.zeros((I, K + 1, K))
    gamma = np.zeros((len(tokens), K))
    passes.init_chain_posteriors(tokens, so, K, seed, sent_trans, gamma)
    return sent_trans, gamma


def test_cvi3_with_one_subsequence_is_cvi2_on_one_sequence():
    rng = np.random.default_rng(5)
    K, W, N, alpha, beta = 3, 6, 12, 0.2, 0.3
    tokens = rng.integers(0, W, size=N).astype(np.int32)
    so = subsequence_offsets(N, N)
    sent_trans, gamma = _init(tokens, so, K, 11)
    # cvi2 state
    st2, g2 = sent_trans.copy(), gamma.copy()
    Ct2, Ce2 = np.zeros((K + 1, K)), np.zeros((W, K))
    passes.totals_from_local(tokens, so, st2, g2, W, Ct2, Ce2)
    # cvi3 state
    pair, g3 = np.ascontiguousarray(sent_trans[:, 1:, :]), gamma.copy()
    Ct3, Ce3 = np.zeros((K + 1, K)), np.zeros((W, K))
    cvi3_totals(tokens, so, pair, g3, Ct3, Ce3)
    np.testing.assert_allclose(Ct3, Ct2)
    order = np.zeros(1, dtype=np.int64)
    no_mask = np.zeros((0, 0), dtype=np.uint8)
    for _ in range(3):
        ll2 = passes.cvi2_pass(Ct2, Ce2, st2, g2, tokens, so, order, alpha, beta, no_mask)
        ll3 = cvi3_pass(Ct3, Ce3, pair, g3, tokens, so, order, alpha, beta)
        np.testing.assert_allclose(g3, g2, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(pair, st2[:, 1:, :], rtol=1e-10, atol=1e-12)
        assert ll3 == pytest.approx(ll2, rel=1e-10)


def test_cvi3_counts_stay_consistent_with_local_statistics():
    rng = np.random.default_rng(6)
    K, W, N, alpha, beta = 3, 5, 23, 0.5, 0.5
    tokens = rng.integers(0, W, size=N).astype(np.int32)
    so = subsequence_offsets(N, 4)
    sent_trans, gamma = _init(tokens, so, K, 3)
    pair = np.ascontiguousarray(sent_trans[:, 1:, :])
    Ct, Ce = np.zeros((K + 1, K)), np.zeros((W, K))
    cvi3_totals(tokens, so, pair, gamma, Ct, Ce)
    order = np.arange(len(so) - 1, dtype=np.int64)
    for _ in range(2):
        cvi3_pass(Ct, Ce, pair, gamma, tokens, so, order, alpha, beta)
    Ct_ref, Ce_ref = np.zeros_like(Ct), np.zeros_like(Ce)
    cvi3_totals(tokens, so, pair, gamma, Ct_ref, Ce_ref)
    np.testing.assert_allclose(Ct, Ct_ref, atol=1e-9)
    np.testing.assert_allclose(Ce, Ce_ref, atol=1e-9)
    # one long chain: N transitions (start + N-1), N emissions
    assert Ct.sum() == pytest.approx(N)
    assert Ce.sum() == pytest.approx(N)
    np.testing.assert_allclose(gamma.sum(axis=1), 1.0)
