"""Emission families against scipy.stats: predictives, likelihoods, expectations and KLs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import digamma, gammaln

from induce.emissions import FAMILIES, EmissionFamily, family_names, get_family
from induce.emissions.base import register
from induce.errors import ConfigError, CorpusFormatError


def _gaussian_case(seed=0, d=2, T=40, K=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, d)) @ rng.normal(size=(d, d)) + rng.normal(size=d)
    gamma = rng.dirichlet(np.ones(K), size=T)
    return X, gamma


def _nw_draws(f, S, k, n, rng):
    """Draws (mu, Lambda) from the Normal-Wishart posterior of state k."""
    kn, nun, mn, Psin = f.posterior(S)
    lams = st.wishart(df=nun[k], scale=np.linalg.inv(Psin[k])).rvs(size=n, random_state=rng)
    chol = np.linalg.cholesky(np.linalg.inv(kn[k] * lams))
    mus = mn[k] + np.einsum("nij,nj->ni", chol, rng.standard_normal((n, mn.shape[1])))
    return mus, lams


def test_gaussian_predictive_is_multivariate_t():
    X, gamma = _gaussian_case()
    f = get_family("gaussian").default_prior(X)
    S = f.stats(X, gamma)
    rows = f.log_predictive(X[:6], S)
    kn, nun, mn, Psin = f.posterior(S)
    for k in range(3):
        dof = nun[k] - 1.0  # nu_n - d + 1 with d = 2
        shape = Psin[k] * (kn[k] + 1) / (kn[k] * dof)
        ref = st.multivariate_t(mn[k], shape, df=dof).logpdf(X[:6])
        np.testing.assert_allclose(rows[:, k], ref, rtol=1e-9)


def test_gaussian_likelihood_and_map():
    X, gamma = _gaussian_case(1)
    f = get_family("gaussian").default_prior(X)
    S = f.stats(X, gamma)
    for use_map in (True, False):
        p = f.point_estimate(S, map=use_map)
        rows = f.log_likelihood(X, p)
        for k in range(3):
            ref = st.multivariate_normal(p["means"][k], p["covars"][k]).logpdf(X)
            np.testing.assert_allclose(rows[:, k], ref, rtol=1e-9)
    # ML estimate = weighted mean / covariance
    p = f.point_estimate(S, map=False)
    w = gamma[:, 0] / gamma[:, 0].sum()
    np.testing.assert_allclose(p["means"][0], w @ X, rtol=1e-10)
    np.testing.assert_allclose(p["covars"][0], np.cov(X.T, aweights=w, bias=True) + 1e-6 * np.eye(2), rtol=1e-8)


def test_gaussian_expected_loglik_and_kl_monte_carlo():
    X, gamma = _gaussian_case(2, T=15)
    f = get_family("gaussian").default_prior(X)
    S = f.stats(X, gamma)
    rng = np.random.default_rng(5)
    rows = f.expected_log_likelihood(X[:3], S)
    kl_mc, kl_var = 0.0, 0.0
    for k in range(3):
        mus, lams = _nw_draws(f, S, k, 6000, rng)
        r = X[:3, None, :] - mus[None]  # (3, n, d)
        ll = 0.5 * np.linalg.slogdet(lams)[1] - np.log(2 * np.pi) - 0.5 * np.einsum("tni,nij,tnj->tn", r, lams, r)
        err = 4 * ll.std(axis=1) / np.sqrt(ll.shape[1])
        assert np.all(np.abs(rows[:, k] - ll.mean(axis=1)) < err)
        kn, nun, mn, Psin = f.posterior(S)
        d = mus - mn[k]
        d0 = mus - f.m0
        logq = (st.wishart(df=nun[k], scale=np.linalg.inv(Psin[k])).logpdf(np.moveaxis(lams, 0, -1))
                - 0.5 * kn[k] * np.einsum("ni,nij,nj->n", d, lams, d) + np.linalg.slogdet(kn[k] * lams)[1] / 2)
        logp = (st.wishart(df=f.nu0, scale=np.linalg.inv(f.Psi0)).logpdf(np.moveaxis(lams, 0, -1))
                - 0.5 * f.kappa0 * np.einsum("ni,nij,nj->n", d0, lams, d0) + np.linalg.slogdet(f.kappa0 * lams)[1] / 2)
        kl_mc += np.mean(logq - logp)
        kl_var += np.var(logq - logp) / len(logq)
    assert abs(f.kl(S) - kl_mc) < 4 * np.sqrt(kl_var)


def test_diag_gaussian_predictive_expectation_kl():
    X, gamma = _gaussian_case(3, d=3, T=12)
    f = get_family("diag-gaussian").default_prior(X)
    S = f.stats(X, gamma)
    kn, mn, an, bn = f.posterior(S)
    rows = f.log_predictive(X[:5], S)
    for k in range(3):
        scale = np.sqrt(bn[k] * (kn[k] + 1) / (an[k] * kn[k]))
        ref = st.t(df=2 * an[k], loc=mn[k], scale=scale).logpdf(X[:5]).sum(axis=1)
        np.testing.assert_allclose(rows[:, k], ref, rtol=1e-9)
    p = f.point_estimate(S)
    ref = np.stack([st.norm(p["means"][k], np.sqrt(p["vars"][k])).logpdf(X).sum(axis=1) for k in range(3)], axis=1)
    np.testing.assert_allclose(f.log_likelihood(X, p), ref, rtol=1e-9)
    # Monte Carlo over the Normal-Gamma posterior of state 0
    rng = np.random.default_rng(1)
    lam = rng.gamma(an[0], 1.0 / bn[0], size=(50000, 3))
    mu = rng.normal(mn[0], 1.0 / np.sqrt(kn[0] * lam))
    mc = st.norm(mu, 1 / np.sqrt(lam)).logpdf(X[0]).sum(axis=1).mean()
    assert f.expected_log_likelihood(X[:1], S)[0, 0] == pytest.approx(mc, abs=0.03)
    logq = st.gamma(an[0], scale=1 / bn[0]).logpdf(lam) + st.norm(mn[0], 1 / np.sqrt(kn[0] * lam)).logpdf(mu)
    logp = st.gamma(f.a0, scale=1 / f.b0).logpdf(lam) + st.norm(f.m0, 1 / np.sqrt(f.kappa0 * lam)).logpdf(mu)
    S0 = S.copy()
    S0[1:] = 0.0  # states 1, 2 at the prior contribute KL 0
    assert f.kl(S0) == pytest.approx(np.mean((logq - logp).sum(axis=1)), rel=0.03)
    assert f.kl(np.zeros_like(S)) == pytest.approx(0.0, abs=1e-10)


def test_poisson_predictive_expectation_kl():
    rng = np.random.default_rng(4)
    X = rng.poisson([3.0, 10.0], size=(30, 2)).astype(float)
    gamma = rng.dirichlet(np.ones(3), size=30)
    f = get_family("poisson").default_prior(X)
    S = f.stats(X, gamma)
    an, bn = f.posterior(S)
    rows = f.log_predictive(X, S)
    for k in range(3):
        ref = st.nbinom(an[k], (bn[k] / (bn[k] + 1))).logpmf(X).sum(axis=1)
        np.testing.assert_allclose(rows[:, k], ref, rtol=1e-9)
        lam = rng.gamma(an[k], 1.0 / bn[k], size=(200000, 2))
        mc = st.poisson(lam).logpmf(X[0]).sum(axis=1).mean()
        assert f.expected_log_likelihood(X[:1], S)[0, k] == pytest.approx(mc, abs=0.02)
        closed = (X[0] * (digamma(an[k]) - np.log(bn[k])) - an[k] / bn[k] - gammaln(X[0] + 1)).sum()
        assert f.expected_log_likelihood(X[:1], S)[0, k] == pytest.approx(closed, rel=1e-10)
    p = f.point_estimate(S)
    ref = np.stack([st.poisson(p["rates"][k]).logpmf(X).sum(axis=1) for k in range(3)], axis=1)
    np.testing.assert_allclose(f.log_likelihood(X, p), ref, rtol=1e-9)
    lam = rng.gamma(an, 1.0 / bn[:, None], size=(100000,) + an.shape)
    mc = np.mean(np.sum(st.gamma(an, scale=1 / bn[:, None]).logpdf(lam) - st.gamma(f.a0, scale=1 / f.b0).logpdf(lam),
                        axis=(1, 2)))
    assert f.kl(S) == pytest.approx(mc, rel=0.03)
    with pytest.raises(CorpusFormatError):
        f.check_data(np.array([[1.5, 2.0]]))


def test_categorical_against_hand_formulas():
    rng = np.random.default_rng(6)
    x = rng.integers(0, 4, size=25).astype(float)[:, None]
    gamma = rng.dirichlet(np.ones(2), size=25)
    f = get_family("categorical", beta=0.3).default_prior(x)
    S = f.stats(x, gamma)
    C = np.zeros((2, 4))
    for t in range(25):
        C[:, int(x[t, 0])] += gamma[t]
    np.testing.assert_allclose(S, C)
    pred = f.log_predictive(x, S)
    np.testing.assert_allclose(pred, np.log((C + 0.3) / (C.sum(1, keepdims=True) + 1.2)).T[x[:, 0].astype(int)])
    dirich = rng.dirichlet(C[0] + 0.3, size=100000)
    mc = np.log(dirich[:, x[:, 0].astype(int)]).mean(axis=0)
    np.testing.assert_allclose(f.expected_log_likelihood(x, S)[:, 0], mc, atol=0.02)
    logq = st.dirichlet(C[0] + 0.3).logpdf(dirich.T)
    logp = st.dirichlet(np.full(4, 0.3)).logpdf(dirich.T)
    S0 = S.copy()
    S0[1] = 0
    assert f.kl(S0) == pytest.approx(np.mean(logq - logp), rel=0.03)


def test_registry_and_a_new_family_is_one_class():
    assert set(family_names()) >= {"gaussian", "diag-gaussian", "poisson", "categorical"}
    with pytest.raises(ConfigError):
        get_family("gamma-ray")
    fam = get_family("gaussian", kappa0=0.5)
    assert get_family(fam) is fam and fam.kappa0 == 0.5

    @register("test-exponential-rate")
    class Fixed(get_family("poisson").__class__):
        """A registered subclass is found by name: the whole cost of a new family."""

    try:
        assert isinstance(get_family("test-exponential-rate"), EmissionFamily)
    finally:
        FAMILIES.pop("test-exponential-rate")


def test_statistics_are_additive_and_blendable():
    X, gamma = _gaussian_case(7)
    for name in ("gaussian", "diag-gaussian"):
        f = get_family(name).default_prior(X)
        whole = f.stats(X, gamma)
        parts = f.stats(X[:10], gamma[:10]) + f.stats(X[10:], gamma[10:])
        np.testing.assert_allclose(whole, parts, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(f.counts(whole), gamma.sum(axis=0))
        # predictive of a state with no data is the prior predictive, finite everywhere
        assert np.all(np.isfinite(f.log_predictive(X, f.zero_stats(3))))


@pytest.mark.parametrize("name", ["gaussian", "diag-gaussian", "poisson", "categorical"])
def test_sample_draws_from_the_point_estimate(name):
    rng = np.random.default_rng(8)
    X = rng.poisson(5.0, size=(60, 1 if name == "categorical" else 2)).astype(float)
    f = get_family(name).default_prior(X)
    p = f.point_estimate(f.stats(X, rng.dirichlet(np.ones(2), size=60)))
    draws = np.array([f.sample(p, 1, rng) for _ in range(4000)])
    if name == "categorical":
        np.testing.assert_allclose(np.bincount(draws[:, 0].astype(int), minlength=f.n_symbols) / 4000,
                                   p["probs"][1], atol=0.03)
    else:
        mean = p["rates"][1] if name == "poisson" else p["means"][1]
        np.testing.assert_allclose(draws.mean(axis=0), mean, rtol=0.05)


def test_poisson_rows_tabulated_by_count_equal_the_direct_formula():
    """Counts below the number of steps go through per-count tables (log-gamma once per value); a short item with
    a large count takes the direct formula: both equal scipy's negative binomial / Poisson log-pmf."""
    rng = np.random.default_rng(3)
    X = rng.poisson(4.0, size=(60, 2)).astype(float)
    f = get_family("poisson").default_prior(X)
    S = f.stats(X, rng.dirichlet(np.ones(3), size=60))
    an, bn = f.posterior(S)
    rates = f.point_estimate(S)["rates"]
    for part in (X, np.vstack([X[:2], [[70.0, 0.0]]])):  # 60 steps: tables; 3 steps with a 70: direct
        p = (bn / (bn + 1.0))[:, None]
        want = st.nbinom(an[None], p[None]).logpmf(part[:, None, :]).sum(axis=2)
        np.testing.assert_allclose(f.log_predictive(part, S), want, rtol=1e-10)
        want = st.poisson(rates[None]).logpmf(part[:, None, :]).sum(axis=2)
        np.testing.assert_allclose(f.log_likelihood(part, {"rates": rates}), want, rtol=1e-10)
