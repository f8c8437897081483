"""The HDP-HMM's learned gamma and sigma: the updates against brute force, and recovery with the defaults.

docs/experiments/hdp_defaults.md: the sigma update is the
EM fixed point of the Dirichlet-multinomial evidence (thesis eq. 5.10); at a
symmetric q(z) that evidence grows with sigma without bound, which is why the
default cvi holds gamma and sigma until the symmetric start has broken.
"""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import digamma, gammaln

from induce import HDPHMMTagger
from induce.infer import hdp
from induce.taggers.synthetic import sample_zhang


def _log_evidence(sigma, counts, pi):
    """Thesis eq. 5.10 written out with one Dirichlet-multinomial per row (cross-checks the library's)."""
    value = 0.0
    for row in counts:
        value += gammaln(sigma) - gammaln(sigma + row.sum()) + np.sum(gammaln(sigma * pi + row) - gammaln(sigma * pi))
    assert value == pytest.approx(hdp.transition_log_evidence(counts, pi, sigma), rel=1e-12, abs=1e-9)
    return float(value)


def _em_sigma(counts, pi, sigma=1.0, n=5000):
    """Eq. 5.35 (tables, exact for known counts: q(C > 0) = [C > 0]) and eq. 5.20, alternated to convergence."""
    qpos = (counts > 0).astype(float)
    qrow = (counts.sum(axis=1) > 0).astype(float)
    for _ in range(n):
        tables = hdp.expected_tables(counts, qpos, sigma * pi).sum()
        new = hdp.sigma_update(tables, counts.sum(axis=1), qrow, sigma)
        if abs(new - sigma) < 1e-11 * sigma:
            return new
        sigma = new
    return sigma


def _brute_force(f, lo=-8.0, hi=8.0):
    """Maximiser of ``f(sigma)`` over ``log sigma`` in ``[lo, hi]``: a grid, then a bounded scalar search."""
    grid = np.linspace(lo, hi, 801)
    best = grid[np.argmax([f(np.exp(x)) for x in grid])]
    res = minimize_scalar(lambda x: -f(np.exp(x)), bounds=(best - 0.02, best + 0.02), method="bounded",
                          options={"xatol": 1e-10})
    return float(np.exp(res.x))


def test_sigma_update_maximises_the_evidence_of_eq_5_10():
    """Tables (5.35) and sigma (5.20) alternated: EM for sigma; it lands on the brute-force maximiser of 5.10."""
    counts = np.array([[1.0, 1.0, 0.0], [9.0, 1.0, 0.0], [0.0, 2.0, 6.0], [3.0, 0.0, 4.0]])  # row 0: start
    pi = np.array([0.5, 0.3, 0.2])
    sigma = _em_sigma(counts, pi)
    assert sigma == pytest.approx(_brute_force(lambda s: _log_evidence(s, counts, pi)), rel=1e-5)


def test_sigma_step_maximises_its_objective_for_fixed_tables():
    """Eq. 5.20 iterated with the tables held: the maximiser of eq. 5.18's sigma terms (concentration_objective)."""
    tables, rows = 7.3, np.array([3.0, 12.0, 40.0, 1.0])
    sigma = 1.0
    for _ in range(10000):
        sigma = hdp.sigma_update(tables, rows, np.ones(4), sigma)
    best = _brute_force(lambda s: hdp.concentration_objective(s, tables, rows))
    assert sigma == pytest.approx(best, rel=1e-6)


def test_gamma_update_maximises_its_objective():
    """Eq. 5.17 is the argmax of eq. 5.15 in gamma: ``K log gamma + (gamma - 1) sum_k E[log(1 - pi~_k)]``."""
    u, v = np.array([5.0, 3.0, 1.5, 1.0]), np.array([4.0, 2.5, 1.2, 0.8])
    e_log_rest = digamma(v) - digamma(u + v)
    best = _brute_force(lambda g: len(u) * np.log(g) + (g - 1.0) * e_log_rest.sum())
    assert hdp.gamma_update(u, v) == pytest.approx(best, rel=1e-6)


def test_symmetric_counts_make_the_evidence_grow_with_sigma():
    """The runaway is the model's answer at a symmetric q(z), not a bug.

    With every row proportional to pi (what near-uniform local posteriors give)
    eq. 5.10 increases in sigma without bound and each EM step raises sigma; a
    sticky chain's counts have a finite maximiser below 1.
    """
    pi = np.full(4, 0.25)
    symmetric = np.vstack([np.full(4, 25.0), np.full((4, 4), 250.0)])
    values = [_log_evidence(s, symmetric, pi) for s in (1.0, 10.0, 100.0, 1000.0, 1e4)]
    assert np.all(np.diff(values) > 0)
    assert _em_sigma(symmetric, pi, n=50) > 10.0  # still climbing after 50 steps from 1
    sticky = np.vstack([np.full(4, 25.0), 990.0 * np.eye(4) + 10.0 * np.roll(np.eye(4), 1, axis=1)])
    assert _em_sigma(sticky, pi) < 1.0


@pytest.fixture(scope="module")
def theta_pos():
    return sample_zhang("pos", seed=1007)


def test_defaults_recover_four_states_on_theta_pos(theta_pos):
    """Learned gamma and sigma (the default) with the thesis's beta = 1: exactly 4 states (truth) in 450 passes.

    The adaptive burn-in holds gamma = sigma = 1 until the objective leaves the
    symmetric start; learning from the first pass instead keeps all 10 states
    with sigma in the hundreds.
    """
    m = HDPHMMTagger(truncation=10, n_iter=450, beta=1.0, random_state=7).fit(theta_pos)
    assert m.effective_states_ == 4
    held = m.hyper_burn_in_
    assert 1 <= held < 200
    assert {r["sigma"] for r in m.trace_[:held]} == {1.0} and m.trace_[held]["sigma"] != 1.0
    assert m.sigma_ < 1.0 and m.gamma_ != 1.0  # broken symmetry: sparse rows
    runaway = HDPHMMTagger(truncation=10, n_iter=150, beta=1.0, random_state=7, hyper_burn_in=0,
                           merge_moves=False).fit(theta_pos)  # (the split-merge moves get out of it; hdp_defaults.md)
    assert runaway.effective_states_ == 10 and runaway.sigma_ > 50.0 and runaway.hyper_burn_in_ == 0
