"""The NB HMM embedding (paper 002 section 5.1) against the explicit-duration HSMM messages, and the
learned-r family (section 5.2) against direct computation."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from induce.durations import get_duration
from induce.infer.hsmm_embed import (NBChain, embed_expectations, embed_path, embedded_transitions,
                                     sample_states)
from induce.kernels.hsmm import hsmm_expectations


def random_model(rng, T, K):
    logpi = np.log(rng.dirichlet(np.ones(K)))
    A = rng.dirichlet(np.ones(K - 1), size=K)
    full = np.zeros((K, K))
    full[~np.eye(K, dtype=bool)] = A.ravel()
    with np.errstate(divide="ignore"):
        logA = np.log(full)
    rows = rng.normal(size=(T, K)) * 2.0
    return logpi, logA, rows


def nb_logpmf(r, p, D):
    """``(K, D)`` log pmf of eq. 14 by scipy: ``d - 1 ~ nbinom(r, 1 - p)``."""
    return np.array([stats.nbinom.logpmf(np.arange(D), rk, 1.0 - pk) for rk, pk in zip(r, p)])


@pytest.mark.parametrize("seed,r", [(0, [1, 1, 1]), (1, [2, 3, 1]), (2, [4, 1, 5])])
@pytest.mark.parametrize("expected", [False, True])
def test_embedding_equals_explicit_hsmm(seed, r, expected):
    """log p(x), marginals, boundaries, first state and duration statistics equal the explicit HSMM's
    with D large enough that the truncated NB mass is below 1e-12."""
    rng = np.random.default_rng(seed)
    T, K = 60, 3
    logpi, logA, rows = random_model(rng, T, K)
    r = np.array(r)
    p = rng.uniform(0.3, 0.8, size=K)
    D = 400
    logD = nb_logpmf(r, p, D)
    assert np.all(np.exp(logsumexp(logD, axis=1)) > 1 - 1e-12)
    if expected:  # vi-style potentials: log p and log(1 - p) that do not sum to one
        lp, lq = np.log(p) - 0.1, np.log1p(-p) - 0.2
        logD = logD + (np.arange(D) * -0.1)[None, :] + (r * -0.2)[:, None]
    else:
        lp, lq = np.log(p), np.log1p(-p)
    chain = NBChain(r, lp, lq)
    logz, init, trans, Sd, gamma = embed_expectations(logpi, logA, rows, chain)
    ez, einit, etrans, dur, last, egamma = hsmm_expectations(logpi, logA, rows, logD, logD)
    assert logz == pytest.approx(ez, abs=1e-8)
    np.testing.assert_allclose(gamma, egamma, atol=1e-8)
    np.testing.assert_allclose(init, einit, atol=1e-8)
    np.testing.assert_allclose(trans, etrans, atol=1e-8)
    np.testing.assert_allclose(Sd, get_duration("geometric", D).stats(dur + last), atol=1e-7)


def test_embedded_rows_are_stochastic_and_r1_is_the_hmm():
    rng = np.random.default_rng(3)
    logpi, logA, _ = random_model(rng, 5, 3)
    p = np.array([0.2, 0.5, 0.9])
    A = embedded_transitions(logpi, logA, NBChain(np.array([3, 1, 4]), np.log(p), np.log1p(-p)))
    np.testing.assert_allclose(A.sum(axis=1), 1.0, atol=1e-12)
    # r = 1 everywhere: the HMM with self-transition p and off-diagonal (1 - p) A
    A1 = embedded_transitions(logpi, logA, NBChain(np.ones(3, dtype=int), np.log(p), np.log1p(-p)))
    np.testing.assert_allclose(A1[1:], np.diag(p) + (1 - p)[:, None] * np.exp(logA), atol=1e-12)


def test_sampled_paths_follow_the_posterior():
    """Frequencies of backward-sampled states match the embedded posterior marginals."""
    rng = np.random.default_rng(4)
    logpi, logA, rows = random_model(rng, 12, 3)
    rows *= 0.3
    p = np.array([0.4, 0.6, 0.5])
    chain = NBChain(np.array([2, 1, 3]), np.log(p), np.log1p(-p))
    logz, _, _, _, gamma = embed_expectations(logpi, logA, rows, chain)
    draws = np.array([sample_states(logpi, logA, rows, chain, rng)[1] for _ in range(4000)])
    freq = np.stack([(draws == k).mean(axis=0) for k in range(3)], axis=1)
    np.testing.assert_allclose(freq, gamma, atol=0.04)
    assert sample_states(logpi, logA, rows, chain, rng)[0] == pytest.approx(logz)


def test_embedded_viterbi_r1_equals_hmm_states():
    rng = np.random.default_rng(5)
    logpi, logA, rows = random_model(rng, 30, 3)
    p = np.array([0.5, 0.5, 0.5])
    path = embed_path(logpi, logA, rows * 3, NBChain(np.ones(3, dtype=int), np.log(p), np.log1p(-p)))
    assert path.shape == (30,) and set(path) <= {0, 1, 2}


def test_learned_r_family_against_direct_computation():
    fam = get_duration("negbin", 30, r=None, max_r=6, a=2.0, b=3.0)
    rng = np.random.default_rng(6)
    N = rng.uniform(0, 2, size=(2, 30))
    S = fam.stats(N)
    assert S.shape == (2, 8)
    d = np.arange(1, 31)
    grid = np.linspace(1e-6, 1 - 1e-6, 20001)
    # log-likelihood of the expected durations at every (r, p) of the grid: (2, R, G)
    ll = np.stack([N @ stats.nbinom.logpmf(d[:, None] - 1, r, 1 - grid[None, :]) for r in range(1, 7)], axis=1)
    post = ll + stats.beta.logpdf(grid, 2.0, 3.0)
    est = fam.point_estimate(S)
    for k in range(2):
        # log q(r) by numerical integration over p of p(r) p(p) exp(E_N log NB(d | r, p))
        lw = logsumexp(post[k], axis=1)
        np.testing.assert_allclose(fam.log_qr(S)[k], lw - logsumexp(lw), atol=1e-4)
        # joint MAP of (r, p) by grid search
        r, g = np.unravel_index(post[k].argmax(), post[k].shape)
        assert est["r"][k] == r + 1 and est["p"][k] == pytest.approx(grid[g], abs=1e-3)
    # E_q log pmf by Monte Carlo over q(r) q(p | r)
    draws = [fam.sample(S, rng) for _ in range(5000)]
    mc = np.mean([fam.log_pmf(s) for s in draws], axis=0)
    np.testing.assert_allclose(fam.expected_log_pmf(S), mc, rtol=0.03, atol=0.1)
    assert np.isfinite(fam.kl(S)) and fam.kl(S) > 0


def test_learned_r_predictive_pmf_is_the_mean_of_the_pmf_under_q():
    fam = get_duration("negbin", 30, r=None, max_r=4, a=2.0, b=3.0)
    S = fam.stats(np.random.default_rng(7).uniform(0, 2, size=(2, 30)))
    rng = np.random.default_rng(8)
    mc = np.mean([np.exp(fam.log_pmf(fam.sample(S, rng))) for _ in range(6000)], axis=0)
    np.testing.assert_allclose(np.exp(fam.log_predictive(S, 30)), mc, atol=5e-3)
    assert np.exp(fam.log_predictive(S, 3000)).sum(axis=1) == pytest.approx(1.0, abs=1e-3)
