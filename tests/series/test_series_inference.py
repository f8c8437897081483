"""Series inference: forward-backward with family rows vs enumeration, VI bound, parameter recovery."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from induce.emissions import get_family
from induce.infer.series import SeriesFit, chain_posterior, emission_rows, transition_params, viterbi_path
from induce.series import HMMSegmenter


def sample_hmm(A, draw, T, rng):
    """States from ``A`` ((K+1, K), start row first) and one emission per step from ``draw(k, rng)``."""
    K = A.shape[1]
    z = np.empty(T, dtype=int)
    z[0] = rng.choice(K, p=A[0])
    for t in range(1, T):
        z[t] = rng.choice(K, p=A[z[t - 1] + 1])
    return np.array([draw(k, rng) for k in z]), z


@pytest.mark.parametrize("name,K", [("gaussian", 2), ("poisson", 3), ("diag-gaussian", 3)])
def test_forward_backward_with_family_rows_matches_enumeration(name, K):
    rng = np.random.default_rng(K)
    T = 4
    X = rng.poisson(4.0, size=(T, 2)).astype(float) if name == "poisson" else rng.normal(size=(T, 2))
    f = get_family(name).default_prior(X)
    S = f.stats(X, rng.dirichlet(np.ones(K), size=T))
    logE = f.log_predictive(X, S)
    A = rng.dirichlet(np.ones(K), size=K + 1)
    logz, gamma, trans = chain_posterior(A, logE)
    paths = list(itertools.product(range(K), repeat=T))
    lp = np.array([np.log(A[0, p[0]]) + sum(np.log(A[p[t - 1] + 1, p[t]]) for t in range(1, T))
                   + sum(logE[t, p[t]] for t in range(T)) for p in paths])
    assert logz == pytest.approx(logsumexp(lp), rel=1e-10)
    w = np.exp(lp - logsumexp(lp))
    ref_gamma = np.zeros((T, K))
    ref_trans = np.zeros((K + 1, K))
    for p, wp in zip(paths, w):
        ref_trans[0, p[0]] += wp
        for t in range(T):
            ref_gamma[t, p[t]] += wp
            if t:
                ref_trans[p[t - 1] + 1, p[t]] += wp
    np.testing.assert_allclose(gamma, ref_gamma, atol=1e-10)
    np.testing.assert_allclose(trans, ref_trans, atol=1e-10)
    assert tuple(viterbi_path(A, logE)) == paths[int(np.argmax(lp))]


def _gaussian_hmm_data(n_seq=4, T=300, seed=0):
    rng = np.random.default_rng(seed)
    means = np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])
    covs = np.array([np.eye(2) * 0.5, [[1.0, 0.6], [0.6, 1.0]], np.eye(2) * 0.3])
    A = np.array([[1 / 3] * 3, [0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]])
    seqs = [sample_hmm(A, lambda k, r: r.multivariate_normal(means[k], covs[k]), T, rng)[0] for _ in range(n_seq)]
    return seqs, means, A


def _matched(est, true):
    cost = ((est[:, None, :] - true[None, :, :]) ** 2).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return est[rows][np.argsort(cols)], rows[np.argsort(cols)]


@pytest.mark.parametrize("infer", ["em", "vi", "cvi2", "scvi", "svi"])
def test_recovers_a_sampled_gaussian_hmm(infer):
    seqs, means, A = _gaussian_hmm_data()
    model = HMMSegmenter(3, "gaussian", infer=infer, n_iter=60, random_state=1).fit(seqs)
    est = model.family_.point_estimate(model.stats_)["means"]
    matched, order = _matched(est, means)
    np.testing.assert_allclose(matched, means, atol=0.25)
    T_hat = model._decoding_transitions()[1:][np.ix_(order, order)]
    np.testing.assert_allclose(np.diag(T_hat), 0.9, atol=0.06)


@pytest.mark.parametrize("infer", ["em", "vi", "cvi2"])
def test_recovers_a_sampled_poisson_hmm(infer):
    rng = np.random.default_rng(3)
    rates = np.array([2.0, 10.0, 25.0])
    A = np.array([[1 / 3] * 3, [0.85, 0.1, 0.05], [0.1, 0.85, 0.05], [0.05, 0.1, 0.85]])
    seqs = [sample_hmm(A, lambda k, r: [r.poisson(rates[k])], 400, rng)[0].astype(float) for _ in range(3)]
    model = HMMSegmenter(3, "poisson", infer=infer, n_iter=60, random_state=0).fit(seqs)
    est = model.family_.point_estimate(model.stats_)["rates"]
    matched, _ = _matched(est, rates[:, None])
    np.testing.assert_allclose(matched[:, 0], rates, rtol=0.1)


@pytest.mark.parametrize("name", ["gaussian", "diag-gaussian", "poisson", "categorical"])
def test_vi_bound_never_decreases(name):
    rng = np.random.default_rng(11)
    if name == "poisson":
        seqs = [rng.poisson(rng.choice([1.0, 8.0]), size=(60, 1)).astype(float) for _ in range(4)]
    elif name == "categorical":
        seqs = [rng.integers(0, 5, size=(60, 1)).astype(float) for _ in range(4)]
    else:
        seqs = _gaussian_hmm_data(4, 60, seed=2)[0]
    family = get_family(name).default_prior(np.vstack(seqs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = SeriesFit(family, 3, "vi", n_iter=25, tol=0.0).run(seqs)
    trace = np.array(result.trace)
    assert len(trace) >= 10 and np.all(np.isfinite(trace))  # may stop early once exactly stationary
    assert np.all(np.diff(trace) >= -1e-8 * np.abs(trace[1:]))


def test_cvi2_keeps_global_statistics_equal_to_the_sum_of_items():
    seqs, _, _ = _gaussian_hmm_data(3, 80)
    family = get_family("gaussian").default_prior(np.vstack(seqs))
    seen = {}

    def check(it, objective, state):
        seen[it] = (np.allclose(state["S"], np.sum(state["own_S"], axis=0)),
                    np.allclose(state["C"], np.sum(state["own_C"], axis=0)),
                    np.isclose(state["C"].sum(), sum(x.shape[0] for x in seqs)))

    SeriesFit(family, 3, "cvi2", n_iter=3, tol=0.0, subsequence_length=20, callback=check).run(seqs)  # tol 0: no warning
    assert seen and all(all(v) for v in seen.values())


@pytest.mark.parametrize("name", ["gaussian", "diag-gaussian", "poisson"])
def test_compiled_cvi2_sweep_equals_the_item_by_item_sweep(name):
    """The one-loop compiled cvi2 sweep (kernels.series.cvi2_series_pass) and the per-item Python sweep a family
    without a compiled predictive takes (the old path) give the same statistics and objectives; the batch em
    E-step (sequences on the threads) equals the per-sequence chain_posterior sums."""
    rng = np.random.default_rng(5)
    seqs = [rng.poisson(3.0, size=(n, 2)).astype(float) + (name != "poisson") * rng.normal(size=(n, 2))
            for n in (40, 1, 65)]
    family = get_family(name).default_prior(np.vstack(seqs))

    class ItemByItem(family.__class__):
        def predictive_kernel(self):
            return None

        def log_predictive(self, X, S):
            return family.log_predictive(X, S)

    slow = ItemByItem()
    slow.__dict__.update(family.__dict__)
    runs = [SeriesFit(f, 3, "cvi2", n_iter=3, tol=0.0, subsequence_length=15).run(seqs) for f in (family, slow)]
    np.testing.assert_allclose(runs[0].trace, runs[1].trace, rtol=1e-10)
    np.testing.assert_allclose(runs[0].stats, runs[1].stats, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(runs[0].trans, runs[1].trans, rtol=1e-9, atol=1e-9)
    seqs = [rng.poisson(3.0, size=(n, 2)).astype(float) for n in (1500, 2000, 1, 1000)]  # >= 4096 steps: threads
    family = get_family(name).default_prior(np.vstack(seqs))
    fit = SeriesFit(family, 3, "em", n_iter=1, tol=0.0)
    state = fit._initial_state(seqs)
    A = transition_params("em", state["C"], 1.0)
    rows = emission_rows("em", family, state["stacked"], state["S"])
    parts = [chain_posterior(A, rows[lo:hi]) for lo, hi in state["bounds"]]
    total = fit._batch_pass(seqs, state)
    assert total == pytest.approx(sum(p[0] for p in parts), rel=1e-12)
    np.testing.assert_allclose(state["C"], sum(p[2] for p in parts), rtol=1e-10)
    np.testing.assert_allclose(state["S"], sum(family.stats(x, p[1]) for x, p in zip(seqs, parts)), rtol=1e-10)


def test_convergence_flags_and_warning():
    seqs, _, _ = _gaussian_hmm_data(2, 100)
    with pytest.warns(ConvergenceWarning):
        m = HMMSegmenter(3, "gaussian", infer="em", n_iter=2).fit(seqs)
    assert m.n_iter_ == 2 and not m.converged_
    m = HMMSegmenter(3, "gaussian", infer="em", n_iter=200, tol=1e-3).fit(seqs)
    assert m.converged_ and m.n_iter_ < 200


def test_score_with_context_is_a_conditional_log_likelihood():
    seqs, _, _ = _gaussian_hmm_data(1, 200)
    m = HMMSegmenter(3, "gaussian", infer="vi", n_iter=30).fit(seqs[0][:150])
    head, tail = seqs[0][:150], seqs[0][150:]
    cond = m.score(tail, context=head) * 50
    assert cond == pytest.approx(m.log_likelihood(seqs[0]) - m.log_likelihood(head), rel=1e-12)
    probs = m.predict_proba(seqs[0])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("infer", ["hdp-cvi", "hdp-scvi", "hdp-svi"])
def test_hdp_finds_the_sampled_states_and_learns_its_hyperparameters(infer):
    seqs, means, _ = _gaussian_hmm_data(10, 200, seed=4)
    m = HMMSegmenter(6, "gaussian", infer=infer, n_iter=40, batch_size=2, random_state=0).fit(seqs)
    usage = m.family_.counts(m.stats_)
    used = usage > 0.05 * usage.sum()
    est = m.family_.point_estimate(m.stats_)["means"][used]
    # every true mean has a heavily used state next to it, and no heavy state sits elsewhere
    dist = np.linalg.norm(est[:, None, :] - means[None], axis=2)
    assert np.all(dist.min(axis=0) < 0.3) and np.all(dist.min(axis=1) < 1.0)  # clusters are >= 5.6 apart
    if infer != "hdp-svi":
        assert m.trans_prior_total_ != 1.0  # sigma was learned
    A = m._decoding_transitions()
    # eq. 5.38 rows are sub-normalised: sum_k G[pi_k] < 1 leaves the mass of states beyond the truncation
    assert np.all(A.sum(axis=1) <= 1.0 + 1e-12) and np.all(A.sum(axis=1) > 0.9)
    assert np.isfinite(m.score(seqs))


def test_fits_are_deterministic_and_clonable():
    from sklearn.base import clone

    seqs, _, _ = _gaussian_hmm_data(3, 100)
    a = HMMSegmenter(3, get_family("diag-gaussian", kappa0=0.1), infer="scvi", n_iter=5, tol=0.0, random_state=7)
    a.fit(seqs)  # tol 0: a fixed number of passes, no ConvergenceWarning
    b = clone(a).fit(seqs)
    assert not a.warnings_
    np.testing.assert_array_equal(a.stats_, b.stats_)
    assert a.trace_ == b.trace_
    assert a.emission.m0 is None  # fitting resolves the prior on a copy, never on the parameter
