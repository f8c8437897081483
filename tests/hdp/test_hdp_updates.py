"""HDP global updates (thesis 5.3): closed forms are the zeros of the gradients used by SCVI."""

import numpy as np
import pytest
from scipy.special import digamma

from induce.infer import hdp


def test_table_counts_match_crp_expectation():
    """Eq. 5.35 with q(C > 0) = 1 is the CRP expectation sum_{l<C} a / (a + l) (eq. 5.87)."""
    a = np.array([0.3, 1.7])
    C = np.array([[5.0, 12.0], [0.0, 1.0]])
    got = hdp.expected_tables(C, (C > 0).astype(float), a)
    ref = np.array([[sum(a[k] / (a[k] + l) for l in range(int(C[j, k]))) for k in range(2)] for j in range(2)])
    np.testing.assert_allclose(got, ref)


def test_sticks_zero_the_stick_gradients():
    rng = np.random.default_rng(0)
    tables = rng.exponential(3.0, size=6)
    u, v = hdp.sticks_from_tables(tables, 2.5)
    du, dv = hdp.grad_sticks(u, v, tables, 2.5)
    np.testing.assert_allclose(du, 0, atol=1e-10)
    np.testing.assert_allclose(dv, 0, atol=1e-10)
    np.testing.assert_allclose(v, 2.5 + np.cumsum(tables[::-1])[::-1] - tables)


def test_gamma_update_zeroes_its_gradient():
    rng = np.random.default_rng(1)
    u, v = 1 + rng.exponential(2, 5), 1 + rng.exponential(2, 5)
    assert abs(hdp.grad_gamma(u, v, hdp.gamma_update(u, v))) < 1e-10


def test_sigma_fixed_point_zeroes_its_gradient():
    rows = np.array([40.0, 10.0, 3.0])
    q = np.array([1.0, 0.9, 0.5])
    tables = 12.0
    sigma = 1.0
    for _ in range(200):
        sigma = hdp.sigma_update(tables, rows, q, sigma)
    assert abs(hdp.grad_sigma(tables, rows, q, sigma)) < 1e-8


def test_geometric_pi_is_a_sub_stick():
    u, v = np.array([3.0, 2.0, 1.5]), np.array([4.0, 2.0, 1.0])
    G = hdp.geometric_pi(u, v)
    ref0 = np.exp(digamma(3.0) - digamma(7.0))
    ref1 = np.exp(digamma(2.0) - digamma(4.0) + digamma(4.0) - digamma(7.0))
    np.testing.assert_allclose(G[:2], [ref0, ref1])
    assert G.sum() < 1


def test_effective_states_cover_99_percent():
    assert hdp.effective_states(np.array([50.0, 30.0, 19.5, 0.3, 0.2])) == 3
    assert hdp.effective_states(np.array([0.0, 10.0])) == 1
    assert hdp.effective_states(np.array([1.0, 1.0, 1.0])) == 3


def test_preconditioned_steps_land_on_the_closed_forms():
    """SCVI's eq. 5.40 steps: rho = 1 gives the batch updates 5.25-5.26, 5.17 and 5.20."""
    rng = np.random.default_rng(3)
    tables = rng.exponential(5.0, size=5)
    u, v = 1 + rng.exponential(2, 5), 1 + rng.exponential(2, 5)
    nu, nv = hdp.natural_stick_step(u, v, tables, 2.0, 1.0)
    ru, rv = hdp.sticks_from_tables(tables, 2.0)
    np.testing.assert_allclose(nu, ru, rtol=1e-8)
    np.testing.assert_allclose(nv, rv, rtol=1e-8)
    assert hdp.scaled_gamma_step(u, v, 3.0, 1.0) == pytest.approx(hdp.gamma_update(u, v))
    rows, q = np.array([40.0, 10.0, 3.0]), np.array([1.0, 0.9, 0.5])
    assert hdp.scaled_sigma_step(12.0, rows, q, 2.0, 1.0) == pytest.approx(hdp.sigma_update(12.0, rows, q, 2.0))
    half = hdp.natural_stick_step(u, v, tables, 2.0, 0.5)[0]
    np.testing.assert_allclose(half, 0.5 * u + 0.5 * ru, rtol=1e-8)  # paper 004 eq. 14
