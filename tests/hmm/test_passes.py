"""Corpus passes against slow reference implementations written from the thesis equations."""

import numpy as np
import pytest
from scipy.special import gammaln
from .hmm_brute import brute_force

from induce.infer import hmm_passes as passes
from induce.infer.estimators import cvi_params


NO_MASK = np.zeros((0, 0), dtype=np.uint8)


def tiny_corpus(seed, I=6, W=5, max_len=4):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len + 1, size=I)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = rng.integers(0, W, size=offsets[-1]).astype(np.int32)
    return tokens, offsets


def init_state(tokens, offsets, K, dtype=np.float64):
    I = len(offsets) - 1
    sent_trans = np.zeros((I, K + 1, K), dtype=dtype)
    gamma = np.zeros((len(tokens), K), dtype=dtype)
    passes.init_chain_posteriors(tokens, offsets, K, 7, sent_trans, gamma)
    return sent_trans, gamma


def test_initial_local_posteriors_are_consistent_chains():
    tokens, offsets = tiny_corpus(0)
    sent_trans, gamma = init_state(tokens, offsets, 3)
    np.testing.assert_allclose(gamma.sum(axis=1), 1.0)
    for i in range(len(offsets) - 1):
        s, e = offsets[i], offsets[i + 1]
        # counts of sentence i sum to its length; column sums of the pair
        # statistics equal the marginals of the following positions
        assert sent_trans[i].sum() == pytest.approx(e - s)
        np.testing.assert_allclose(sent_trans[i].sum(axis=0), gamma[s:e].sum(axis=0))


@pytest.mark.parametrize("beta", [0.2, np.array([0.05, 0.7])], ids=["symmetric", "per-state"])
def test_cvi2_pass_matches_reference(beta):
    """Exact sequential CVI-2: subtract, surrogate parameters (3.49-3.50, row k ~ Dir(beta_k) with a per-state
    beta), exact marginals, add back."""
    K, W, alpha = 2, 5, 0.3
    tokens, offsets = tiny_corpus(1, W=W)
    sent_trans, gamma = init_state(tokens, offsets, K)
    ref_trans, ref_gamma = sent_trans.copy(), gamma.copy()
    C_t, C_e = np.zeros((K + 1, K)), np.zeros((W, K))
    passes.totals_from_local(tokens, offsets, sent_trans, gamma, W, C_t, C_e)
    order = np.arange(len(offsets) - 1)
    for _ in range(2):
        ll = passes.cvi2_pass(C_t, C_e, sent_trans, gamma, tokens, offsets, order, alpha, beta, NO_MASK)
        ref_ll = 0.0
        for i in order:
            s, e = offsets[i], offsets[i + 1]
            Ct = ref_trans.sum(axis=0) - ref_trans[i]
            Ce = np.zeros((W, K))
            np.add.at(Ce, tokens, ref_gamma)
            np.add.at(Ce, tokens[s:e], -ref_gamma[s:e])
            A = cvi_params(Ct, alpha)
            B = cvi_params(Ce.T, np.reshape(beta, (-1, 1))).T
            g, tr, lz, _, _ = brute_force(A, B, tokens[s:e])
            ref_gamma[s:e] = g
            ref_trans[i] = tr
            ref_ll += lz
        np.testing.assert_allclose(gamma, ref_gamma, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(sent_trans, ref_trans, rtol=1e-9, atol=1e-12)
        assert ll == pytest.approx(ref_ll, rel=1e-10)
    # invariant: global counts are the sums of the local ones and sum to N
    np.testing.assert_allclose(C_t, sent_trans.sum(axis=0), atol=1e-12)
    assert C_e.sum() == pytest.approx(len(tokens))


def cvi1_reference_update(q, tokens, offsets, i, t, alpha, beta, K, W):
    """q(z_t) from eq. 3.33 with the expectations of 3.34 and 3.37-3.39, computed from scratch."""
    s, e = offsets[i], offsets[i + 1]
    T, p = e - s, offsets[i] + t

    def pair_counts(exclude):
        """E[C_{jk}] over all pairs (a, b) whose second position b is not in ``exclude``."""
        G = np.zeros((K + 1, K))
        for ii in range(len(offsets) - 1):
            ss, ee = offsets[ii], offsets[ii + 1]
            for b in range(ss, ee):
                if (ii == i and b - s in exclude):
                    continue
                if b == ss:
                    G[0] += q[b]
                else:
                    G[1:] += np.outer(q[b - 1], q[b])
        return G

    Ce = np.zeros((W, K))
    for b in range(len(tokens)):
        if b != p:
            Ce[tokens[b]] += q[b]
    f3 = (Ce[tokens[p]] + beta) / (Ce.sum(axis=0) + W * beta)
    if t == 0:
        f1 = pair_counts({t, t + 1})[0] + alpha
    else:
        G = pair_counts({t - 1, t, t + 1})  # C^{\t-1,t} (3.38)
        f1 = q[p - 1] @ G[1:] + alpha
        if t >= 2:
            f1 += q[p - 2] * q[p - 1]  # one contribution from t-2 to t-1 (3.37)
    f2 = np.ones(K)
    if t < T - 1:
        G = pair_counts({t, t + 1, t + 2})  # C^{\t,t+1}
        num = G[1:] @ q[p + 1] + alpha
        if t < T - 2:
            num += q[p + 1] * q[p + 2]  # (3.39)
        den = pair_counts({t, t + 1})[1:].sum(axis=1) + K * alpha
        if t > 0:
            num += q[p - 1] * q[p + 1]  # E[delta(z_{t-1} = z_t = z_{t+1})]
            den += q[p - 1]  # E[delta(z_{t-1} = z_t)]
        f2 = num / den
    new = f1 * f2 * f3
    return new / new.sum()


def test_cvi1_pass_matches_reference():
    K, W, alpha, beta = 3, 4, 0.4, 0.3
    tokens, offsets = tiny_corpus(2, I=4, W=W, max_len=5)
    _, q = init_state(tokens, offsets, K)
    ref = q.copy()
    G, Ce = np.zeros((K + 1, K)), np.zeros((W, K))
    passes.factorised_counts(tokens, offsets, q, W, G, Ce)
    passes.cvi1_pass(G, Ce, q, tokens, offsets, np.arange(len(offsets) - 1), alpha, beta, NO_MASK)
    for i in range(len(offsets) - 1):
        for t in range(offsets[i + 1] - offsets[i]):
            ref[offsets[i] + t] = cvi1_reference_update(ref, tokens, offsets, i, t, alpha, beta, K, W)
    np.testing.assert_allclose(q, ref, rtol=1e-9, atol=1e-12)
    G2, Ce2 = np.zeros_like(G), np.zeros_like(Ce)
    passes.factorised_counts(tokens, offsets, q, W, G2, Ce2)
    np.testing.assert_allclose(G, G2, atol=1e-10)
    np.testing.assert_allclose(Ce, Ce2, atol=1e-10)


def test_cgs_keeps_counts_in_sync_and_is_deterministic():
    K, W = 3, 5
    tokens, offsets = tiny_corpus(3, I=20, W=W, max_len=6)
    results = []
    for _ in range(2):
        z = (np.arange(len(tokens)) % K).astype(np.int32)
        Ct, Ce = np.zeros((K + 1, K), np.int64), np.zeros((W, K), np.int64)
        passes.hard_counts(tokens, offsets, z, W, K, Ct, Ce)
        for sweep in range(5):
            passes.cgs_pass(Ct, Ce, z, tokens, offsets, 0.5, 0.5, 1.0, 11 + sweep, NO_MASK, np.zeros((0, K), np.int32))
        Ct2, Ce2 = np.zeros_like(Ct), np.zeros_like(Ce)
        passes.hard_counts(tokens, offsets, z, W, K, Ct2, Ce2)
        assert np.array_equal(Ct, Ct2) and np.array_equal(Ce, Ce2)
        assert Ct.sum() == len(tokens)
        results.append(z.copy())
    assert np.array_equal(results[0], results[1])


def log_joint(z, tokens, offsets, K, W, alpha, beta):
    """log p(x, z | alpha, beta) of the collapsed HMM, thesis eq. 3.24."""
    Ct, Ce = np.zeros((K + 1, K)), np.zeros((K, W))
    for i in range(len(offsets) - 1):
        for p in range(offsets[i], offsets[i + 1]):
            Ct[0 if p == offsets[i] else 1 + z[p - 1], z[p]] += 1
            Ce[z[p], tokens[p]] += 1
    trans = (gammaln(K * alpha) - gammaln(K * alpha + Ct.sum(axis=1))).sum() + (gammaln(alpha + Ct) - gammaln(alpha)).sum()
    emit = (gammaln(W * beta) - gammaln(W * beta + Ce.sum(axis=1))).sum() + (gammaln(beta + Ce) - gammaln(beta)).sum()
    return trans + emit


def cgs_reference_sweep(z, tokens, offsets, K, W, alpha, beta, temperature, seed, allowed):
    """One Gibbs sweep with p(z_t = k | rest) proportional to the full joint (3.24) at z_t = k (eq. 3.25),
    raised to 1/temperature, drawn by inverse CDF from the same uniform stream as the kernel."""
    rng = np.random.RandomState(seed)
    for p in range(len(tokens)):
        logp = np.empty(K)
        for k in range(K):
            z[p] = k
            logp[k] = log_joint(z, tokens, offsets, K, W, alpha, beta)
        prob = np.exp((logp - logp.max()) / temperature)
        if allowed is not None:
            prob[allowed[tokens[p]] == 0] = 0.0
        cdf = np.cumsum(prob / prob.sum())
        z[p] = min(int(np.searchsorted(cdf, rng.random_sample(), side="right")), K - 1)


@pytest.mark.parametrize("masked", [False, True])
def test_cgs_pass_draws_from_the_joint_ratio(masked):
    """The kernel's draws equal inverse-CDF draws from the brute-force conditional (full-joint ratio, 3.24-3.25)
    with the same uniforms, at several temperatures, with and without a tag dictionary."""
    K, W, alpha, beta = 3, 4, 0.4, 0.3
    tokens, offsets = tiny_corpus(5, I=8, W=W, max_len=5)
    rng = np.random.default_rng(5)
    allowed = (rng.random((W, K)) < 0.6).astype(np.uint8)
    allowed[np.arange(W), rng.integers(0, K, W)] = 1
    z = rng.integers(0, K, len(tokens)).astype(np.int32)
    ref = z.copy()
    Ct, Ce = np.zeros((K + 1, K), np.int64), np.zeros((W, K), np.int64)
    passes.hard_counts(tokens, offsets, z, W, K, Ct, Ce)
    votes = np.zeros((len(tokens), K), np.int32)
    for sweep, temp in enumerate([1.0, 2.0, 0.5, 0.08, 1.0, 0.7]):
        before = z.copy()
        changed = passes.cgs_pass(Ct, Ce, z, tokens, offsets, alpha, beta, temp, 40 + sweep,
                                  allowed if masked else NO_MASK, votes)
        cgs_reference_sweep(ref, tokens, offsets, K, W, alpha, beta, temp, 40 + sweep, allowed if masked else None)
        assert np.array_equal(z, ref)
        assert changed == int((z != before).sum())
        Ct2, Ce2 = np.zeros_like(Ct), np.zeros_like(Ce)
        passes.hard_counts(tokens, offsets, z, W, K, Ct2, Ce2)
        assert np.array_equal(Ct, Ct2) and np.array_equal(Ce, Ce2)
    assert (votes.sum(axis=1) == 6).all()
    if masked:
        assert allowed[tokens, z].all()
