"""Duration families against scipy.stats: pmf, MAP, expected log pmf and KL (Monte Carlo)."""

import numpy as np
import pytest
from scipy import optimize, stats

from induce.durations import get_duration
from induce.errors import ConfigError

D = 25
d = np.arange(1, D + 1)


def test_log_pmf_matches_scipy():
    geo = get_duration("geometric", D)
    np.testing.assert_allclose(geo.log_pmf({"p": np.array([0.3, 0.8])}),
                               [stats.geom.logpmf(d, 0.7), stats.geom.logpmf(d, 0.2)], atol=1e-12)
    nb = get_duration("negbin", D, r=3.0)
    np.testing.assert_allclose(nb.log_pmf({"p": np.array([0.4])})[0], stats.nbinom.logpmf(d - 1, 3, 0.6), atol=1e-12)
    po = get_duration("poisson", D)
    np.testing.assert_allclose(po.log_pmf({"lam": np.array([4.5])})[0], stats.poisson.logpmf(d - 1, 4.5), atol=1e-12)


@pytest.mark.parametrize("name,kw", [("geometric", {}), ("negbin", {"r": 2.5}), ("poisson", {"a": 2.0, "b": 0.5})])
def test_map_maximises_posterior_and_vi_terms(name, kw):
    fam = get_duration(name, D, **kw)
    rng = np.random.default_rng(0)
    N = rng.uniform(0, 3, size=(1, D))
    S = fam.stats(N)
    key = "lam" if name == "poisson" else "p"
    prior = (stats.gamma(fam.a, scale=1 / fam.b) if name == "poisson" else stats.beta(fam.a, fam.b))

    def neg_post(v):
        return -(np.sum(N * fam.log_pmf({key: np.array([v])})) + prior.logpdf(v))

    bounds = (1e-6, 50.0) if name == "poisson" else (1e-6, 1 - 1e-6)
    best = optimize.minimize_scalar(neg_post, bounds=bounds, method="bounded", options={"xatol": 1e-10}).x
    assert fam.point_estimate(S)[key][0] == pytest.approx(best, rel=1e-5)
    # E_q log pmf and KL(q || prior) by Monte Carlo over q
    A, B = fam.posterior(S)
    q = stats.gamma(A[0], scale=1 / B[0]) if name == "poisson" else stats.beta(A[0], B[0])
    draws = q.rvs(size=200_000, random_state=1)
    mc = np.mean([fam.log_pmf({key: draws[i::1000]})[:, :].mean(axis=0) for i in range(1000)], axis=0)
    np.testing.assert_allclose(fam.expected_log_pmf(S)[0], mc, rtol=0.02, atol=0.02)
    kl = np.mean(q.logpdf(draws) - prior.logpdf(draws))
    assert fam.kl(S) == pytest.approx(kl, abs=0.02)


def test_bad_names_and_settings():
    with pytest.raises(ConfigError):
        get_duration("lognormal", D)
    with pytest.raises(ConfigError):
        get_duration("poisson", 0)
    with pytest.raises(ConfigError):
        get_duration("negbin", D, r=0.0)
